//go:build e2e

// Package openclawe2e runs the real OpenClaw (npm openclaw@2026.9.6 on Node
// 24) with MetaClaw's extension installed, against a MetaClaw host (store,
// core with a fixed memory, JSON-RPC socket, proxy) and a fake upstream,
// all on loopback. Run it through `make e2e-openclaw` (run.sh installs Node
// and OpenClaw into a cache dir and sets OPENCLAW_BIN, NODE_BIN_DIR and
// METACLAW_BIN).
package openclawe2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/extensions"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/host/wire"
	"github.com/metaclaw-go/metaclaw/plugin/plugintest"
)

// e2eProxyKey is the proxy key, required as in a default install (issue 11):
// the client sends it the way `metaclaw wire` configures it.
const e2eProxyKey = "mck-e2e-0123456789abcdefghijklmnopqrstuvwxyzABCDEF"

// upstream is a fake OpenAI-compatible model server. The newest user turn
// decides: "CALL-MEMORY-SEARCH" → one call of the memory_search tool (until
// a tool result follows); after a tool result → "TOOL-RESULT: <result>";
// otherwise "FAKE-REPLY-OK".
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []map[string]any
}

func newUpstream() *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	return u
}

func (u *upstream) requests() []map[string]any {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]map[string]any(nil), u.reqs...)
}

func textOf(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case []any:
		var parts []string
		for _, p := range v {
			if m, ok := p.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					parts = append(parts, s)
				}
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	body["_traceparent"] = r.Header.Get("traceparent")
	u.mu.Lock()
	u.reqs = append(u.reqs, body)
	n := len(u.reqs)
	u.mu.Unlock()
	msgs, _ := body["messages"].([]any)
	ask, toolResult := -1, ""
	for i, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["role"] == "user" && strings.Contains(textOf(mm["content"]), "CALL-MEMORY-SEARCH") {
			ask, toolResult = i, ""
		}
		if mm["role"] == "tool" && ask >= 0 {
			toolResult = textOf(mm["content"])
		}
	}
	reply, tool := "FAKE-REPLY-OK", false
	switch {
	case ask >= 0 && toolResult != "":
		reply = "TOOL-RESULT: " + toolResult
	case ask >= 0:
		tool = true
	}
	id := fmt.Sprintf("chatcmpl-e2e-%d", n)
	base := map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": body["model"]}
	chunk := func(delta map[string]any, finish any) map[string]any {
		c := map[string]any{}
		for k, v := range base {
			c[k] = v
		}
		c["choices"] = []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}
		return c
	}
	var events []any
	events = append(events, chunk(map[string]any{"role": "assistant", "content": ""}, nil))
	if tool {
		events = append(events,
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": fmt.Sprintf("call_e2e_%d", n), "type": "function",
				"function": map[string]any{"name": "memory_search", "arguments": ""}}}}, nil),
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": `{"query":"genmaicha"}`}}}}, nil),
			chunk(map[string]any{}, "tool_calls"))
	} else {
		events = append(events, chunk(map[string]any{"content": reply}, nil), chunk(map[string]any{}, "stop"))
	}
	usage := map[string]any{}
	for k, v := range base {
		usage[k] = v
	}
	usage["choices"] = []any{}
	usage["usage"] = map[string]any{"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}
	events = append(events, usage)
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range events {
		b, _ := json.Marshal(e)
		fmt.Fprintf(w, "data: %s\n\n", b)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

type oc struct {
	t    *testing.T
	bin  string
	dir  string
	env  []string
	home string
}

func (o *oc) run(timeout time.Duration, args ...string) (string, string, error) {
	o.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, o.bin, args...)
	cmd.Env = o.env
	cmd.Dir = o.dir
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	o.t.Logf("openclaw %s: %v in %v", strings.Join(args, " "), err, time.Since(start).Round(time.Millisecond))
	return stdout.String(), stderr.String(), err
}

func need(t *testing.T, name string) string {
	v := os.Getenv(name)
	if v == "" {
		t.Skipf("%s is not set: run `make e2e-openclaw`", name)
	}
	return v
}

// world is one MetaClaw host, fake upstream and OpenClaw configuration.
type world struct {
	o              *oc
	h              *plugintest.Host
	up             *upstream
	ext, home, dir string
}

// setup builds the host (store, core with a memory provider and tools,
// socket, proxy with trace correlation), the fake upstream, the extension
// folder and the OpenClaw config, all under one temp dir.
func setup(t *testing.T, extraEnv ...string) *world {
	ocBin, nodeDir, mcBin := need(t, "OPENCLAW_BIN"), need(t, "NODE_BIN_DIR"), need(t, "METACLAW_BIN")
	dir, err := os.MkdirTemp("", "mce2e")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			os.RemoveAll(dir)
		} else {
			t.Logf("kept %s for inspection", dir)
		}
	})
	home := filepath.Join(dir, "mc")
	os.MkdirAll(home, 0o700)

	// The MetaClaw host: store, core (memory provider + tools), socket, proxy.
	up := newUpstream()
	t.Cleanup(up.Close)
	h := plugintest.Start(t, home)
	px, err := proxy.New(proxy.Options{
		Core: h.Core, Log: zerolog.Nop(), UpstreamAPI: wire.OpenAI, UpstreamBase: up.URL + "/v1", UpstreamKey: "sk-up",
		UpstreamTimeout: 60 * time.Second, ResolveTrace: h.RPC.ResolveTrace, APIKey: e2eProxyKey, // as a default install: a key is required
	})
	if err != nil {
		t.Fatal(err)
	}
	proxySrv := httptest.NewServer(px.Handler())
	t.Cleanup(proxySrv.Close)

	// The extension, installed as `metaclaw wire openclaw` would: the
	// embedded files plus bin/metaclaw.
	ext := filepath.Join(dir, "ext", "metaclaw")
	os.MkdirAll(filepath.Join(ext, "bin"), 0o755)
	if err := fs.WalkDir(extensions.OpenClaw(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(extensions.OpenClaw(), p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(ext, p), b, 0o644)
	}); err != nil {
		t.Fatal(err)
	}
	bin, err := os.ReadFile(mcBin)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(ext, "bin", "metaclaw"), bin, 0o755)

	ws := filepath.Join(dir, "ws")
	os.MkdirAll(ws, 0o700)
	model := func(id string) []any {
		return []any{map[string]any{"id": id, "name": id, "reasoning": false, "input": []string{"text"},
			"cost": map[string]int{"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}, "contextWindow": 131072, "maxTokens": 8192}}
	}
	cfg := map[string]any{
		"models": map[string]any{"mode": "merge", "providers": map[string]any{
			// Through the MetaClaw proxy (no /a/<agent>: the trace says who).
			"metaclaw": map[string]any{"baseUrl": proxySrv.URL + "/v1", "apiKey": e2eProxyKey, "api": "openai-completions", "models": model("fake-model")},
			// Straight to the model: only the hooks see the turn.
			"direct": map[string]any{"baseUrl": up.URL + "/v1", "apiKey": "direct", "api": "openai-completions", "models": model("fake-model")},
		}},
		"agents": map[string]any{"defaults": map[string]any{"workspace": ws, "model": map[string]any{"primary": "metaclaw/fake-model"}}},
		"tools":  map[string]any{"toolSearch": false},
		"plugins": map[string]any{
			"load":  map[string]any{"paths": []string{ext}},
			"allow": []string{"metaclaw"},
			"entries": map[string]any{"metaclaw": map[string]any{"enabled": true, "hooks": map[string]any{"allowConversationAccess": true},
				"config": map[string]any{"home": home, "timeoutMs": 3000}}},
		},
	}
	cfgPath := filepath.Join(dir, "openclaw.json")
	b, _ := json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(cfgPath, b, 0o600)
	for _, d := range []string{"home", "state"} {
		os.MkdirAll(filepath.Join(dir, d), 0o700)
	}
	env := append([]string{"PATH=" + nodeDir + ":/usr/bin:/bin", "HOME=" + filepath.Join(dir, "home"), "OPENCLAW_STATE_DIR=" + filepath.Join(dir, "state"),
		"OPENCLAW_CONFIG_PATH=" + cfgPath, "METACLAW_HOME=" + home, "NO_COLOR=1", "TMPDIR=" + dir}, extraEnv...)
	return &world{o: &oc{t: t, bin: ocBin, dir: dir, env: env, home: home}, h: h, up: up, ext: ext, home: home, dir: dir}

}

func TestOpenClawEndToEnd(t *testing.T) {
	w := setup(t)
	o, h, up, ext, home := w.o, w.h, w.up, w.ext, w.home
	out, errOut, err := o.run(2*time.Minute, "config", "validate")
	if err != nil || !strings.Contains(out+errOut, "Config valid") {
		t.Fatalf("config validate: %v\n%s\n%s", err, out, errOut)
	}
	out, errOut, err = o.run(2*time.Minute, "plugins", "inspect", "metaclaw", "--runtime", "--json")
	if err != nil {
		t.Fatalf("plugins inspect: %v\n%s", err, errOut)
	}
	var insp struct {
		TypedHooks []struct{ Name string } `json:"typedHooks"`
		Tools      []struct {
			Names []string `json:"names"`
		} `json:"tools"`
		Diagnostics []any `json:"diagnostics"`
	}
	if err := json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &insp); err != nil {
		t.Fatalf("inspect output: %v\n%s", err, out)
	}
	hooks := fmt.Sprint(insp.TypedHooks)
	if !strings.Contains(hooks, "before_prompt_build") || !strings.Contains(hooks, "agent_end") || len(insp.Tools) == 0 ||
		!strings.Contains(strings.Join(insp.Tools[0].Names, ","), "memory_search") || len(insp.Diagnostics) != 0 {
		t.Fatalf("plugin runtime: %+v", insp)
	}

	agent := func(session, message string, extra ...string) map[string]any {
		t.Helper()
		args := append([]string{"agent", "--local", "--agent", "main", "--session-id", session, "--message", message, "--json"}, extra...)
		out, errOut, err := o.run(4*time.Minute, args...)
		if err != nil {
			t.Fatalf("agent turn: %v\nstdout: %s\nstderr: %s", err, out, tail(errOut, 4000))
		}
		var res map[string]any
		if i := strings.Index(out, "{"); i < 0 || json.Unmarshal([]byte(out[i:]), &res) != nil {
			t.Fatalf("agent stdout is not JSON: %s", out)
		}
		return res
	}
	replyText := func(res map[string]any) string {
		ps, _ := res["payloads"].([]any)
		if len(ps) == 0 {
			return ""
		}
		p, _ := ps[0].(map[string]any)
		s, _ := p["text"].(string)
		return s
	}

	// 1. Through the proxy: the hook injects (appendSystemContext), the
	// proxy sees the markers and does not inject again, and files the turn
	// under the hook's agent/session (trace correlation); the hook's own
	// observation of that turn is not recorded a second time.
	n0 := len(up.requests())
	res := agent("e2e-proxy", "Which tea do I like?")
	if got := replyText(res); got != "FAKE-REPLY-OK" {
		t.Fatalf("reply %q: %v", got, res)
	}
	reqs := up.requests()[n0:]
	if len(reqs) != 1 {
		t.Fatalf("%d upstream requests", len(reqs))
	}
	sys := textOf(reqs[0]["messages"].([]any)[0].(map[string]any)["content"])
	if strings.Count(sys, core.BeginMarker) != 1 || !strings.Contains(sys, plugintest.Memory) {
		t.Fatalf("system prompt carries the block %d times", strings.Count(sys, core.BeginMarker))
	}
	if i, j := strings.Index(sys, "OpenClaw plugin-injected system context"), strings.Index(sys, core.BeginMarker); i < 0 || j < i {
		t.Fatal("the block did not come through before_prompt_build's appendSystemContext")
	}
	t.Logf("upstream system prompt ends with:\n%s", tail(sys, 600))
	turns := h.Turns(t, "e2e-proxy")
	if len(turns) != 1 || turns[0].Agent != "main" || turns[0].ClientAPI != "openai" || !strings.Contains(turns[0].RequestJSON, "Which tea do I like?") {
		t.Fatalf("proxy turns %+v", turns)
	}
	if q := h.Provider.Last(); q.Agent != "main" || q.SessionID != "e2e-proxy" {
		t.Fatalf("context query %+v", q)
	}
	// The shim cached the host's tool list (with schemas) for later processes.
	if b, err := os.ReadFile(filepath.Join(home, "cache", "openclaw-tools.json")); err != nil || !strings.Contains(string(b), `"required":["query"]`) {
		t.Fatalf("tools cache: %v %s", err, b)
	}

	// 2. Straight to the model: the hook injects and the hook records.
	n0 = len(up.requests())
	res = agent("e2e-direct", "Remind me of my tea", "--model", "direct/fake-model")
	if replyText(res) != "FAKE-REPLY-OK" {
		t.Fatalf("direct reply %v", res)
	}
	reqs = up.requests()[n0:]
	if len(reqs) != 1 || strings.Count(textOf(reqs[0]["messages"].([]any)[0].(map[string]any)["content"]), core.BeginMarker) != 1 {
		t.Fatal("direct turn not injected exactly once")
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(h.Turns(t, "e2e-direct")) == 0 && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	turns = h.Turns(t, "e2e-direct")
	if len(turns) != 1 || turns[0].ClientAPI != "hook:openclaw" || turns[0].ResponseText != "FAKE-REPLY-OK" ||
		!strings.Contains(turns[0].RequestJSON, "Remind me of my tea") || turns[0].InjectedTokens == 0 {
		t.Fatalf("hook turns %+v", turns)
	}

	// 3. The model calls MetaClaw's memory_search tool through OpenClaw.
	n0 = len(up.requests())
	res = agent("e2e-tool", "CALL-MEMORY-SEARCH: what is my tea?")
	reqs = up.requests()[n0:]
	if len(reqs) != 2 {
		t.Fatalf("tool turn made %d upstream requests", len(reqs))
	}
	var toolMsg string
	for _, m := range reqs[1]["messages"].([]any) {
		if mm := m.(map[string]any); mm["role"] == "tool" {
			toolMsg = textOf(mm["content"])
		}
	}
	if !strings.Contains(toolMsg, plugintest.Memory) || !strings.Contains(replyText(res), "genmaicha") {
		t.Fatalf("tool result %q, reply %q", toolMsg, replyText(res))
	}
	t.Logf("memory_search result seen by the model: %s", toolMsg)

	// No plugin process outlives OpenClaw.
	deadline = time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if !running(filepath.Join(ext, "bin", "metaclaw")) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatal("a metaclaw plugin process is still running after openclaw exited")
}

// running reports whether a process runs the given executable.
func running(exe string) bool {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		if target, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe")); err == nil && target == exe {
			return true
		}
	}
	return false
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// TestOpenClawGateway: the same extension under `openclaw gateway run`,
// where register() runs in full and discovery mode, the Gateway service
// starts the child, and /new fires before_reset and session_end.
func TestOpenClawGateway(t *testing.T) {
	port := freePort(t)
	w := setup(t, "OPENCLAW_GATEWAY_PORT="+port, "OPENCLAW_GATEWAY_TOKEN=e2e-gateway-token")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	gw := exec.CommandContext(ctx, w.o.bin, "gateway", "run", "--port", port, "--bind", "loopback", "--allow-unconfigured", "--auth", "token")
	gw.Env, gw.Dir = w.o.env, w.o.dir
	var gwOut bytes.Buffer
	gw.Stdout, gw.Stderr = &gwOut, &gwOut
	gw.Cancel = func() error { return gw.Process.Signal(syscall.SIGTERM) }
	gw.WaitDelay = 20 * time.Second
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- gw.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		gw.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-exited:
			t.Logf("gateway exited: %v", err)
		case <-time.After(30 * time.Second):
			gw.Process.Kill()
			<-exited
			t.Error("gateway did not stop within 30s of SIGTERM")
		}
	}
	defer stop()
	deadline := time.Now().Add(90 * time.Second)
	for {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway port %s not open after 90s:\n%s", port, tail(gwOut.String(), 3000))
		}
		select {
		case err := <-exited:
			t.Fatalf("gateway exited: %v\n%s", err, tail(gwOut.String(), 3000))
		case <-time.After(500 * time.Millisecond):
		}
	}
	turn := func(message string) string {
		t.Helper()
		out, errOut, err := w.o.run(4*time.Minute, "agent", "--agent", "main", "--session-id", "gw-e2e", "--message", message, "--json")
		if err != nil {
			t.Fatalf("gateway turn: %v\n%s\n%s\ngateway: %s", err, out, tail(errOut, 3000), tail(gwOut.String(), 3000))
		}
		return out
	}
	out := turn("Hello through the gateway")
	if !strings.Contains(out, "FAKE-REPLY-OK") {
		t.Fatalf("gateway reply: %s", out)
	}
	reqs := w.up.requests()
	if len(reqs) == 0 || strings.Count(textOf(reqs[len(reqs)-1]["messages"].([]any)[0].(map[string]any)["content"]), core.BeginMarker) != 1 {
		t.Fatal("gateway turn not injected exactly once")
	}
	if turns := w.h.Turns(t, "gw-e2e"); len(turns) != 1 || turns[0].Agent != "main" {
		t.Fatalf("gateway turns %+v", turns)
	}
	turn("/new")
	deadline = time.Now().Add(15 * time.Second)
	for w.h.Session(t, "gw-e2e").EndedAt == nil && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	if s := w.h.Session(t, "gw-e2e"); s.EndedAt == nil || s.EndReason != "new" {
		t.Fatalf("after /new the session is %+v", s)
	}
	stop()
	deadline = time.Now().Add(15 * time.Second)
	for running(filepath.Join(w.ext, "bin", "metaclaw")) {
		if time.Now().After(deadline) {
			t.Fatal("the plugin process outlived the gateway")
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}
