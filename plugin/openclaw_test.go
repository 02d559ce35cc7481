package plugin_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/block"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/rpc"
	"github.com/metaclaw-go/metaclaw/host/rpc/protocol"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/host/transcript"
	"github.com/metaclaw-go/metaclaw/internal/testhost"
	"github.com/metaclaw-go/metaclaw/plugin"
	"github.com/metaclaw-go/metaclaw/plugin/plugintest"
)

// TestOpenClawCapturedHooks drives the openclaw.* methods with the hook
// payloads captured from real OpenClaw 2026.9.6.
func TestOpenClawCapturedHooks(t *testing.T) {
	bpb := example(t, "before_prompt_build.turn2")
	home := plugintest.Home(t)
	h := plugintest.Start(t, home)
	s := serve(t, home, plugin.ClientOpenClaw, false)
	s.call(t, plugin.MethodInitialize, map[string]any{"client": "openclaw", "config": map[string]any{}}, nil)

	// before_prompt_build → appendSystemContext with the core's block.
	var ret map[string]string
	s.call(t, plugin.MethodOCBeforePromptBuild, bpb, &ret)
	injected := ret["appendSystemContext"]
	if !strings.HasPrefix(injected, block.Begin) || !strings.Contains(injected, plugintest.Memory) || len(ret) != 1 {
		t.Fatalf("before_prompt_build returned %v", ret)
	}
	q := h.Provider.Last()
	if q.Agent != "main" || q.SessionID != "fx-openai" || len(q.UserTexts) != 2 ||
		q.UserTexts[0] != "Hello from fixture turn one" || q.UserTexts[1] != "Second turn in the same session" {
		t.Fatalf("query %+v", q)
	}
	// llm_input re-registers; harmless.
	s.call(t, plugin.MethodOCLLMInput, example(t, "llm_input.turn2.slim"), &ret)

	// agent_end records the turn (once, even if llm_output follows).
	s.call(t, plugin.MethodOCAgentEnd, example(t, "agent_end.turn2"), &ret)
	turns := h.Turns(t, "fx-openai")
	if len(turns) != 1 {
		t.Fatalf("turns %d", len(turns))
	}
	tr := turns[0]
	if tr.ClientAPI != "hook:openclaw" || tr.Agent != "main" || tr.ResponseText != "FAKE-REPLY-OK" ||
		!strings.Contains(tr.RequestJSON, "Second turn in the same session") || tr.InputTokens != 100 || tr.OutputTokens != 5 ||
		tr.InjectedJSON != `["mem:tea"]` || tr.InjectedTokens == 0 || tr.Model != "fake-model" {
		t.Fatalf("turn %+v", tr)
	}

	// …and the trace was registered for the proxy (checked after the turn
	// was recorded: a proxy lookup marks the trace as proxied).
	if a, sess, tt, ok := h.RPC.ResolveTrace("ebd93f181f7b5879645305304c7a2faf"); !ok || a != "main" || sess != "fx-openai" || tt != "main" {
		t.Fatalf("trace %q %q %q %v", a, sess, tt, ok)
	}

	// Tool turn: llm_output first (gateway order), then agent_end: one turn
	// with the tool call.
	s.call(t, plugin.MethodOCAgentEnd, example(t, "agent_end.tool-turn"), &ret)
	s.call(t, plugin.MethodOCLLMOutput, example(t, "llm_output.tool-turn"), &ret)
	tool := h.Turns(t, "fx-tool")
	if len(tool) != 1 || !strings.Contains(tool[0].ToolCallsJSON, `"read"`) || !strings.Contains(tool[0].ResponseText, "PINEAPPLE") && tool[0].ResponseText == "" {
		t.Fatalf("tool turn %+v", tool)
	}
	// llm_output alone (run never seen before) records its assistant text.
	s.call(t, plugin.MethodOCLLMOutput, example(t, "llm_output.anthropic"), &ret)
	if an := h.Turns(t, "fx-anthropic"); len(an) != 1 || an[0].ResponseText == "" {
		t.Fatalf("anthropic turn %+v", an)
	}

	// Gateway /new: before_reset then session_end(new) end gw-1 once.
	s.call(t, plugin.MethodOCBeforePromptBuild, example(t, "gateway.before_prompt_build"), &ret)
	s.call(t, plugin.MethodOCAgentEnd, example(t, "gateway.agent_end.after-new"), &ret)
	s.call(t, plugin.MethodOCBeforeReset, example(t, "gateway.before_reset.on-new"), &ret)
	s.call(t, plugin.MethodOCSessionEnd, example(t, "gateway.session_end.on-new"), &ret)
	gw := h.Session(t, "gw-1")
	if gw.EndedAt == nil || gw.EndReason != "new" {
		t.Fatalf("gw-1 %+v", gw)
	}
	// Gateway shutdown does not end the conversation.
	s.call(t, plugin.MethodOCBeforePromptBuild, example(t, "gateway.before_prompt_build"), &ret)
	h.Turns(t, "gw-1")
	var obs protocol.ObserveResult
	_ = s.relay.Call(t.Context(), protocol.MethodObserve, protocol.ObserveParams{Identity: protocol.Identity{Agent: "main", Session: "gw-1"}, UserText: "u", AssistantText: "a"}, &obs)
	s.call(t, plugin.MethodOCSessionEnd, example(t, "gateway.session_end.on-shutdown"), &ret)
	if gw := h.Session(t, "gw-1"); gw.EndedAt != nil {
		t.Fatalf("gateway shutdown ended the session: %+v", gw)
	}
}

func TestOpenClawConfig(t *testing.T) {
	bpb := example(t, "before_prompt_build.turn1")
	home := plugintest.Home(t)
	h := plugintest.Start(t, home)
	s := serve(t, home, plugin.ClientOpenClaw, false)

	// Agent not in the allow list: nothing injected, nothing recorded.
	s.call(t, plugin.MethodInitialize, map[string]any{"client": "openclaw", "config": map[string]any{"agents": []string{"work"}}}, nil)
	var ret map[string]string
	s.call(t, plugin.MethodOCBeforePromptBuild, bpb, &ret)
	if len(ret) != 0 || len(h.Provider.Queries) != 0 {
		t.Fatalf("disallowed agent served: %v", ret)
	}
	s.call(t, plugin.MethodOCLLMOutput, example(t, "llm_output.turn1"), &ret)
	if n := len(h.Turns(t, "fx-openai")); n != 0 {
		t.Fatalf("disallowed agent recorded %d turns", n)
	}
	// inject:false still observes.
	s.call(t, plugin.MethodInitialize, map[string]any{"config": map[string]any{"agents": []string{"main"}, "inject": false}}, nil)
	s.call(t, plugin.MethodOCBeforePromptBuild, bpb, &ret)
	if len(ret) != 0 {
		t.Fatalf("inject:false returned %v", ret)
	}
	s.call(t, plugin.MethodOCLLMOutput, example(t, "llm_output.turn1"), &ret)
	if n := len(h.Turns(t, "fx-openai")); n != 1 {
		t.Fatalf("inject:false recorded %d turns", n)
	}
	// Side triggers are side turns: no block.
	var side map[string]any
	_ = json.Unmarshal(bpb, &side)
	side["ctx"].(map[string]any)["trigger"] = "heartbeat"
	s.call(t, plugin.MethodInitialize, map[string]any{"config": map[string]any{}}, nil)
	s.call(t, plugin.MethodOCBeforePromptBuild, side, &ret)
	if len(ret) != 0 {
		t.Fatalf("heartbeat turn injected: %v", ret)
	}
	// A bad config is refused.
	if err := s.client.Call(t.Context(), plugin.MethodInitialize, map[string]any{"config": map[string]any{"observe": "sometimes"}}, nil); !protocol.IsCode(err, protocol.CodeInvalidParams) {
		t.Fatalf("bad config: %v", err)
	}
	// Hostile payloads: wrong types are invalid params; the server lives on.
	for _, bad := range []any{
		map[string]any{"event": "x", "ctx": 1},
		map[string]any{"event": map[string]any{"messages": "nope"}},
		[]int{1, 2},
	} {
		if err := s.client.Call(t.Context(), plugin.MethodOCBeforePromptBuild, bad, nil); !protocol.IsCode(err, protocol.CodeInvalidParams) {
			t.Fatalf("%v: %v", bad, err)
		}
	}
	s.call(t, protocol.MethodPing, nil, nil)
}

// TestTraceCorrelationThroughProxy: OpenClaw's before_prompt_build (via
// plugin serve) registers the run's trace id; the upstream request that then
// reaches the proxy with that traceparent is recorded under the hook's agent
// and session, is not injected twice (the block is already in the system
// prompt, where appendSystemContext puts it), and the hook's own
// observation of that turn is not recorded a second time.
func TestTraceCorrelationThroughProxy(t *testing.T) {
	bpb := example(t, "before_prompt_build.turn1")
	reqFile, err := os.ReadFile(filepath.Join(fixtures, "requests", "01-openai-completions.turn1.request.json"))
	if err != nil {
		t.Fatalf("captured OpenClaw request missing from the repository: %v", err)
	}
	home := plugintest.Home(t)
	var srv *rpc.Server
	provider := &plugintest.Provider{}
	th := testhost.Start(t, testhost.Options{
		Setup: func(c *core.Core, st *store.SQLite) []route.Route {
			c.AddProvider(provider)
			srv = rpc.New(rpc.Options{Core: c, Log: zerolog.Nop()})
			if err := srv.Listen(protocol.SocketPath(home)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close() })
			return nil
		},
		Mutate: func(o *proxy.Options) { o.ResolveTrace, o.ResolveInjected = srv.ResolveTrace, srv.Injected },
	})
	s := serve(t, home, plugin.ClientOpenClaw, false)

	var ret map[string]string
	s.call(t, plugin.MethodOCBeforePromptBuild, bpb, &ret)
	injected := ret["appendSystemContext"]
	if injected == "" {
		t.Fatalf("no injected: %v", ret)
	}
	// What OpenClaw sends upstream: the captured request with the block at
	// the end of the system prompt (appendSystemContext's place, see
	// prompt-build-effects.json).
	var capt struct {
		Headers map[string]string `json:"headers"`
		Body    map[string]any    `json:"body"`
	}
	if err := json.Unmarshal(reqFile, &capt); err != nil {
		t.Fatal(err)
	}
	msgs := capt.Body["messages"].([]any)
	// The capture plugin also returned prependContext "MC-PREPEND"; ours
	// does not.
	user := msgs[1].(map[string]any)
	user["content"] = strings.Replace(user["content"].(string), "MC-PREPEND\n\n", "", 1)
	sys := msgs[0].(map[string]any)
	sys["content"] = sys["content"].(string) + "\n\n---\n\nOpenClaw plugin-injected system context. This block is not workspace file content.\n\n" + injected + "\n\n---"
	body, _ := json.Marshal(capt.Body)
	req, _ := http.NewRequest(http.MethodPost, th.URL+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", capt.Headers["traceparent"])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	// Read the whole (streamed) answer: the proxy records the turn before the
	// stream's last event, so the turn is in the store once the client has it.
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Metaclaw-Session-Id") != "fx-openai" {
		t.Fatalf("proxy answered %d, session %q", resp.StatusCode, resp.Header.Get("X-Metaclaw-Session-Id"))
	}
	up := th.Upstream.Last().Body["messages"].([]any)[0].(map[string]any)["content"].(string)
	if strings.Count(up, block.Begin) != 1 {
		t.Fatalf("block injected %d times upstream", strings.Count(up, block.Begin))
	}
	// The hook reports the same turn: not recorded again.
	s.call(t, plugin.MethodOCLLMOutput, example(t, "llm_output.turn1"), &ret)
	th.Flush(t)
	turns, err := th.Store.SessionTurns(t.Context(), "fx-openai")
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 1 || turns[0].Agent != "main" || turns[0].ClientAPI != "openai" {
		recent, _ := th.Store.RecentTurns(t.Context(), 10)
		t.Fatalf("turns %+v; recent %+v", turns, recent)
	}
	// The one record has everything: the proxy's full request and answer,
	// the ids and tokens of what the hook injected, and a user text that
	// learning reads without OpenClaw's envelope.
	want := core.Render([]core.Section{{Title: "Memories", Body: "- " + plugintest.Memory}}).Tokens
	if turns[0].InjectedJSON != `["mem:tea"]` || turns[0].InjectedTokens != want || turns[0].ResponseText != "FAKE-REPLY-OK" {
		t.Fatalf("recorded injected=%s tokens=%d (want %d) response=%q", turns[0].InjectedJSON, turns[0].InjectedTokens, want, turns[0].ResponseText)
	}
	if u := transcript.FromTurn(turns[0]).User; u != "Hello from fixture turn one" {
		t.Fatalf("learning reads %q", u)
	}
}
