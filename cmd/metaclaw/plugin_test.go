package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/block"
	"github.com/metaclaw-go/metaclaw/plugin"
	"github.com/metaclaw-go/metaclaw/plugin/plugintest"
)

// pluginEnv is the environment of a plugin process for home: no inherited
// METACLAW_* settings.
func pluginEnv(home string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "METACLAW_") {
			env = append(env, kv)
		}
	}
	return append(append(env, "METACLAW_HOME="+home), extra...)
}

// hook runs `metaclaw plugin hook` like a command-hook client does: JSON on
// stdin, JSON on stdout.
func hook(t testing.TB, home, client, event string, payload any) (map[string]any, time.Duration) {
	t.Helper()
	b, _ := json.Marshal(payload)
	bin := binary(t) // built before the deadline starts
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "plugin", "hook", "--client", client, "--no-start", event)
	cmd.Env = pluginEnv(home)
	cmd.Stdin = bytes.NewReader(b)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("hook %s %s: %v\n%s", client, event, err, stderr.String())
	}
	el := time.Since(start)
	var out map[string]any
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || strings.Count(stdout.String(), "\n") != 1 {
		t.Fatalf("hook stdout is not one JSON object: %q (%v)", stdout.String(), err)
	}
	return out, el
}

// hermesPayload is what Hermes' shell_hooks._serialize_payload writes.
func hermesPayload(event, session string, extra map[string]any) map[string]any {
	return map[string]any{"hook_event_name": event, "tool_name": nil, "tool_input": nil, "session_id": session,
		"cwd": "/home/u", "profile": "default", "extra": extra}
}

func TestHermesShellHooks(t *testing.T) {
	home := plugintest.Home(t)
	h := plugintest.Start(t, home)

	out, el := hook(t, home, "hermes", "pre_llm_call", hermesPayload("pre_llm_call", "h-1", map[string]any{
		"session_id": "h-1", "user_message": "Which tea should I buy?", "is_first_turn": false, "model": "m", "platform": "cli",
		"conversation_history": []map[string]any{{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}},
	}))
	// Hermes' _parse_context: {"context": non-empty string}.
	ctxText, _ := out["context"].(string)
	if len(out) != 1 || !strings.HasPrefix(ctxText, block.Begin) || !strings.Contains(ctxText, plugintest.Memory) {
		t.Fatalf("pre_llm_call answered %v", out)
	}
	t.Logf("pre_llm_call took %v", el)
	if q := h.Provider.Last(); q.Agent != "hermes" || q.SessionID != "h-1" || strings.Join(q.UserTexts, "|") != "hi|Which tea should I buy?" {
		t.Fatalf("query %+v", q)
	}
	out, _ = hook(t, home, "hermes", "post_llm_call", hermesPayload("post_llm_call", "h-1", map[string]any{
		"user_message": "Which tea should I buy?", "assistant_response": "Genmaicha, as usual.", "model": "m", "platform": "cli",
	}))
	if len(out) != 0 {
		t.Fatalf("post_llm_call answered %v", out)
	}
	turns := h.Turns(t, "h-1")
	if len(turns) != 1 || turns[0].ClientAPI != "hook:hermes" || turns[0].ResponseText != "Genmaicha, as usual." {
		t.Fatalf("turns %+v", turns)
	}
	// on_session_end fires after every Hermes turn: the session goes on.
	hook(t, home, "hermes", "on_session_end", hermesPayload("on_session_end", "h-1", map[string]any{"completed": true, "interrupted": false}))
	if s := h.Session(t, "h-1"); s.EndedAt != nil {
		t.Fatalf("on_session_end ended the session: %+v", s)
	}
	// A gateway shutdown finalizes sessions that go on after the restart.
	hook(t, home, "hermes", "on_session_finalize", hermesPayload("on_session_finalize", "h-1", map[string]any{"platform": "telegram", "reason": "shutdown"}))
	if s := h.Session(t, "h-1"); s.EndedAt != nil {
		t.Fatalf("a gateway shutdown ended the session: %+v", s)
	}
	hook(t, home, "hermes", "on_session_finalize", hermesPayload("on_session_finalize", "h-1", map[string]any{"platform": "cli", "reason": "exit"}))
	if s := h.Session(t, "h-1"); s.EndedAt == nil || s.EndReason != "exit" {
		t.Fatalf("session %+v", s)
	}
	// Events a plugin does not handle, and garbage, answer {} and exit 0.
	if out, _ := hook(t, home, "hermes", "pre_tool_call", hermesPayload("pre_tool_call", "h-1", nil)); len(out) != 0 {
		t.Fatalf("pre_tool_call answered %v", out)
	}
	if out, _ := hook(t, home, "hermes", "pre_llm_call", "not an object"); len(out) != 0 {
		t.Fatalf("garbage answered %v", out)
	}
}

func TestClaudeCodeHooks(t *testing.T) {
	home := plugintest.Home(t)
	h := plugintest.Start(t, home)
	session := "0b6c3a4e-claude-session"
	out, _ := hook(t, home, "nanoclaw", "UserPromptSubmit", map[string]any{
		"session_id": session, "transcript_path": "/nonexistent.jsonl", "cwd": "/workspace/group", "permission_mode": "default",
		"hook_event_name": "UserPromptSubmit", "prompt": "What do I drink in the morning?",
	})
	hso, _ := out["hookSpecificOutput"].(map[string]any)
	if hso["hookEventName"] != "UserPromptSubmit" || !strings.Contains(fmt.Sprint(hso["additionalContext"]), plugintest.Memory) {
		t.Fatalf("UserPromptSubmit answered %v", out)
	}
	// Stop: the turn is read from the transcript (Claude Code JSONL).
	tr := filepath.Join(t.TempDir(), "t.jsonl")
	lines := []string{
		`{"type":"user","uuid":"u1","message":{"role":"user","content":"What do I drink in the morning?"}}`,
		`{"type":"assistant","uuid":"a1","message":{"role":"assistant","model":"claude-x","content":[{"type":"tool_use","id":"toolu_1","name":"mcp__metaclaw__metaclaw_memory_search","input":{"query":"tea"}}],"usage":{"input_tokens":50,"output_tokens":7}}}`,
		`{"type":"user","uuid":"u2","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"genmaicha"}]}}`,
		`{"type":"assistant","uuid":"a2","message":{"role":"assistant","model":"claude-x","content":[{"type":"text","text":"Genmaicha."}],"usage":{"input_tokens":60,"output_tokens":3}}}`,
	}
	os.WriteFile(tr, []byte(strings.Join(lines, "\n")+"\n"), 0o600)
	out, _ = hook(t, home, "claude", "Stop", map[string]any{
		"session_id": session, "transcript_path": tr, "cwd": "/workspace/group", "permission_mode": "default",
		"hook_event_name": "Stop", "stop_hook_active": false,
	})
	if len(out) != 0 {
		t.Fatalf("Stop answered %v (must never block)", out)
	}
	turns := h.Turns(t, session)
	if len(turns) != 1 || turns[0].ResponseText != "Genmaicha." || turns[0].InputTokens != 110 || turns[0].Model != "claude-x" ||
		!strings.Contains(turns[0].RequestJSON, "What do I drink") || !strings.Contains(turns[0].ToolCallsJSON, "memory_search") ||
		turns[0].ClientAPI != "hook:claude" || turns[0].Agent != "claude" {
		t.Fatalf("turns %+v", turns)
	}
	// The same Stop again (a retry) is not recorded twice.
	hook(t, home, "claude", "Stop", map[string]any{"session_id": session, "transcript_path": tr, "hook_event_name": "Stop"})
	if n := len(h.Turns(t, session)); n != 1 {
		t.Fatalf("turns after a repeated Stop: %d", n)
	}
	hook(t, home, "claude", "SessionEnd", map[string]any{"session_id": session, "transcript_path": tr, "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"})
	if s := h.Session(t, session); s.EndedAt == nil || s.EndReason != "prompt_input_exit" {
		t.Fatalf("session %+v", s)
	}
	// No event argument: hook_event_name decides.
	out, _ = hook(t, home, "claude", "", map[string]any{"session_id": "x", "hook_event_name": "UserPromptSubmit", "prompt": "tea?"})
	if out["hookSpecificOutput"] == nil {
		t.Fatalf("event from payload: %v", out)
	}
}

// TestHookFailOpen: without a host, hooks answer at once with no context and
// spool their events; the next hook that reaches a host replays them.
func TestHookFailOpen(t *testing.T) {
	home := plugintest.Home(t)
	out, el := hook(t, home, "hermes", "pre_llm_call", hermesPayload("pre_llm_call", "f-1", map[string]any{"user_message": "hello"}))
	if len(out) != 0 || el > 3*time.Second {
		t.Fatalf("pre_llm_call without host: %v in %v", out, el)
	}
	hook(t, home, "hermes", "post_llm_call", hermesPayload("post_llm_call", "f-1", map[string]any{"user_message": "hello", "assistant_response": "hi!"}))
	hook(t, home, "claude", "SessionEnd", map[string]any{"session_id": "f-1", "hook_event_name": "SessionEnd", "reason": "other"})
	if n := plugin.NewSpool(plugin.SpoolDir(home), 0, 0).Len(); n != 2 {
		t.Fatalf("spooled %d events, want 2", n)
	}
	h := plugintest.Start(t, home)
	hook(t, home, "hermes", "pre_llm_call", hermesPayload("pre_llm_call", "f-3", map[string]any{"user_message": "again"}))
	deadline := time.Now().Add(10 * time.Second)
	for plugin.NewSpool(plugin.SpoolDir(home), 0, 0).Len() > 0 && time.Now().Before(deadline) {
		hook(t, home, "hermes", "pre_llm_call", hermesPayload("pre_llm_call", "f-3", map[string]any{"user_message": "again"}))
	}
	if turns := h.Turns(t, "f-1"); len(turns) != 1 || turns[0].ResponseText != "hi!" {
		t.Fatalf("replayed turns %+v", turns)
	}
	if s := h.Session(t, "f-1"); s.EndedAt == nil || s.EndReason != "other" {
		t.Fatal("spooled session end not replayed")
	}
}

// picoHost plays PicoClaw's side of its process-hook protocol
// (pkg/agent/hook_process.go): it starts the hook command with pipes,
// sends hook.hello, requests and notifications as NDJSON JSON-RPC 2.0.
type picoHost struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan []byte
	nextID int
	done   chan struct{}
}

func startPico(t *testing.T, home string) *picoHost {
	t.Helper()
	cmd := exec.Command(binary(t), "plugin", "serve", "--client", "picoclaw", "--no-start")
	cmd.Env = pluginEnv(home)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &picoHost{t: t, cmd: cmd, stdin: stdin, lines: make(chan []byte, 64), done: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			p.lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(p.lines)
	}()
	go func() { cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func (p *picoHost) notify(method string, params any) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	p.stdin.Write(append(b, '\n'))
}

func (p *picoHost) call(method string, params any) map[string]any {
	p.t.Helper()
	p.nextID++
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": p.nextID, "method": method, "params": params})
	p.stdin.Write(append(b, '\n'))
	return p.read(p.nextID)
}

func (p *picoHost) read(id int) map[string]any {
	p.t.Helper()
	timeout := time.After(5 * time.Second) // PicoClaw's default interceptor timeout
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				p.t.Fatal("hook process closed stdout")
			}
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				p.t.Fatalf("stdout carried a non-JSON line: %q", line)
			}
			if f, _ := m["id"].(float64); int(f) == id {
				if m["error"] != nil {
					p.t.Fatalf("error %v", m["error"])
				}
				res, _ := m["result"].(map[string]any)
				return res
			}
		case <-timeout:
			p.t.Fatalf("no answer to request %d within 5s", id)
		}
	}
}

func TestPicoClawProcessHook(t *testing.T) {
	home := plugintest.Home(t)
	h := plugintest.Start(t, home)
	p := startPico(t, home)

	if res := p.call("hook.hello", map[string]any{"name": "metaclaw", "version": 1, "modes": []string{"observe", "llm"}}); res == nil {
		t.Fatal("hello not answered")
	}
	meta := map[string]any{"AgentID": "main", "TurnID": "turn-1", "StateID": "", "ParentTurnID": "", "SessionKey": "agent:main:chat-1",
		"Iteration": 1, "TracePath": "", "Source": "cli", "Channel": "cli", "ChatID": "direct"}
	p.notify("hook.runtime_event", map[string]any{"kind": "agent.turn.start", "scope": map[string]any{"session_key": "agent:main:chat-1", "turn_id": "turn-1"},
		"payload": map[string]any{"UserMessage": "Which tea do I like?"}})
	system := map[string]any{"role": "system", "content": "You are PicoClaw."}
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "read_file", "description": "Read", "parameters": map[string]any{"type": "object"}}}}
	msgs := []any{system,
		// An earlier message whose words are only in its parts (an image beside them).
		map[string]any{"role": "user", "content": "", "content_parts": []any{map[string]any{"type": "text", "text": "hi, here is my tea"},
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": "data:image/png;base64,AAAA"}}}},
		map[string]any{"role": "assistant", "content": "hello"},
		map[string]any{"role": "user", "content": "Which tea do I like?"}}
	req := map[string]any{"meta": meta, "context": map[string]any{"inbound": map[string]any{"channel": "cli"}}, "model": "metaclaw",
		"messages": msgs, "tools": tools, "options": map[string]any{"max_tokens": 1024, "temperature": 0.7}}
	res := p.call("hook.before_llm", req)
	if res["action"] != "modify" {
		t.Fatalf("before_llm %v", res)
	}
	got := res["request"].(map[string]any)
	checkPicoControls(t, req, got)
	gm := got["messages"].([]any)
	if len(gm) != 5 || gm[4].(map[string]any)["role"] != "user" || !strings.Contains(gm[4].(map[string]any)["content"].(string), plugintest.Memory) {
		t.Fatalf("messages %v", gm)
	}
	if q := h.Provider.Last(); q.Agent != "main" || q.SessionID != "agent:main:chat-1" || !slices.Equal(q.UserTexts, []string{"hi, here is my tea", "Which tea do I like?"}) {
		t.Fatalf("query %+v", q)
	}
	// The model asks for a tool; PicoClaw runs it and calls the LLM again.
	p.call("hook.after_llm", map[string]any{"meta": meta, "model": "metaclaw", "response": map[string]any{"content": "",
		"tool_calls":    []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "read_file", "arguments": "{}"}}},
		"finish_reason": "tool_calls", "usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 10}}})
	meta["Iteration"] = 2
	req2 := map[string]any{"meta": meta, "model": "metaclaw", "tools": tools, "messages": append(append([]any{}, msgs...),
		map[string]any{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "read_file", "arguments": "{}"}}}},
		map[string]any{"role": "tool", "content": "file", "tool_call_id": "c1"})}
	res = p.call("hook.before_llm", req2)
	got2 := res["request"].(map[string]any)
	checkPicoControls(t, req2, got2)
	gm2 := got2["messages"].([]any)
	if len(gm2) != 7 || gm2[4].(map[string]any)["role"] != "user" || gm2[5].(map[string]any)["role"] != "assistant" || gm2[6].(map[string]any)["role"] != "tool" {
		t.Fatalf("tool round messages %v", gm2)
	}
	if n := len(h.Provider.Queries); n != 1 {
		t.Fatalf("context fetched %d times for one turn", n)
	}
	p.call("hook.after_llm", map[string]any{"meta": meta, "model": "metaclaw", "response": map[string]any{"content": "You like genmaicha.",
		"finish_reason": "stop", "usage": map[string]any{"prompt_tokens": 120, "completion_tokens": 6}}})
	p.notify("hook.runtime_event", map[string]any{"kind": "agent.turn.end", "scope": map[string]any{"session_key": "agent:main:chat-1", "turn_id": "turn-1"}})
	if res := p.call("hook.approve_tool", map[string]any{"meta": meta, "tool": "read_file"}); res["approved"] != true {
		t.Fatalf("approve_tool %v", res)
	}
	turns := h.Turns(t, "agent:main:chat-1")
	if len(turns) != 1 || turns[0].ResponseText != "You like genmaicha." || turns[0].InputTokens != 220 ||
		!strings.Contains(turns[0].ToolCallsJSON, "read_file") || !strings.Contains(turns[0].RequestJSON, "Which tea do I like?") {
		t.Fatalf("turns %+v", turns)
	}
	// Hostile lines get errors; the hook keeps serving.
	p.stdin.Write([]byte("not json\n" + `{"jsonrpc":"2.0","id":"x","method":"hook.before_llm","params":{"messages":"nope"}}` + "\n"))
	for i := 0; i < 2; i++ {
		select {
		case line := <-p.lines:
			var m map[string]any
			if json.Unmarshal(line, &m) != nil || m["error"] == nil {
				t.Fatalf("hostile line answered %q", line)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("no error answer")
		}
	}
	if res := p.call("hook.hello", map[string]any{"name": "again", "version": 1}); res == nil {
		t.Fatal("dead after hostile input")
	}
	// PicoClaw closes stdin and kills the process 2s later: it must be gone by then.
	start := time.Now()
	p.stdin.Close()
	select {
	case <-p.done:
		t.Logf("exited %v after stdin closed", time.Since(start))
	case <-time.After(2 * time.Second):
		t.Fatal("hook process still running 2s after stdin closed")
	}
}

// checkPicoControls applies PicoClaw's applyBeforeLLMControls: system
// messages (with their indexes) and tools must be unchanged, or PicoClaw
// discards the modification.
func checkPicoControls(t *testing.T, before, after map[string]any) {
	t.Helper()
	sys := func(m map[string]any) map[int]any {
		out := map[int]any{}
		for i, msg := range m["messages"].([]any) {
			if msg.(map[string]any)["role"] == "system" {
				out[i] = msg
			}
		}
		return out
	}
	norm := func(v any) any { b, _ := json.Marshal(v); var x any; json.Unmarshal(b, &x); return x }
	if !reflect.DeepEqual(norm(sys(before)), norm(sys(after))) {
		t.Fatalf("system messages changed: %v → %v", sys(before), sys(after))
	}
	if !reflect.DeepEqual(norm(before["tools"]), norm(after["tools"])) || !reflect.DeepEqual(norm(before["meta"]), norm(after["meta"])) ||
		!reflect.DeepEqual(norm(before["options"]), norm(after["options"])) || after["model"] != before["model"] {
		t.Fatal("tools, meta, options or model not echoed unchanged")
	}
}

// TestServeStartsHost: without --no-start, plugin serve starts the real
// host (detached) when none runs, and the host keeps running after the
// plugin exits.
func TestServeStartsHost(t *testing.T) {
	c := newCLI(t, "METACLAW_PROXY_PORT=0")
	cmd := exec.Command(binary(t), "plugin", "serve", "--client", "generic")
	cmd.Env = c.env
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer stdin.Close()
	sc := bufio.NewScanner(stdout)
	deadline := time.Now().Add(40 * time.Second)
	for id := 1; time.Now().Before(deadline); id++ {
		fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", id)
		if !sc.Scan() {
			t.Fatal("plugin serve exited")
		}
		if strings.Contains(sc.Text(), `"host":true`) {
			stdin.Close()
			if st := c.status(); !st.Running {
				t.Fatalf("status %+v", st)
			}
			sock := filepath.Join(c.home, "run", "metaclaw.sock")
			if fi, err := os.Stat(sock); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("socket %v %v", fi, err)
			}
			if out, code := c.run("stop", "--timeout", "30s"); code != 0 {
				t.Fatalf("stop: %s", out)
			}
			for _, f := range []string{sock, filepath.Join(c.home, "run", "rpc.token")} {
				if _, err := os.Stat(f); !os.IsNotExist(err) {
					t.Fatalf("%s left after stop (%v)", f, err)
				}
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("the host was not started")
}
