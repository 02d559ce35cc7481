//go:build e2e

// Package nanoclawe2e runs NanoClaw's engine for real: the Claude Agent SDK
// (npm @anthropic-ai/claude-agent-sdk, which bundles the Claude Code CLI) on
// Node 24, its query() pointed at the MetaClaw proxy with ANTHROPIC_BASE_URL
// (http://127.0.0.1:<port>/a/nano) and MetaClaw's Claude Code command hooks
// in $HOME/.claude/settings.json (UserPromptSubmit, Stop, SessionEnd →
// `metaclaw plugin hook --client claude <event>`), as NanoClaw's agent runner
// loads them. The MetaClaw host (store, core with a fixed memory, socket,
// proxy) and the fake Anthropic upstream (internal/fakellm) run in this test
// process; everything is on loopback. Run it through `make e2e-nanoclaw`
// (run.sh installs Node and the SDK into a cache dir and sets NODE_BIN_DIR,
// SDK_ENTRY and METACLAW_BIN).
package nanoclawe2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/block"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/internal/fakellm"
	"github.com/metaclaw-go/metaclaw/plugin/plugintest"
)

// e2eProxyKey is the proxy key, required as in a default install (issue 11):
// the client sends it the way `metaclaw wire` configures it.
const e2eProxyKey = "mck-e2e-0123456789abcdefghijklmnopqrstuvwxyzABCDEF"

func need(t *testing.T, name string) string {
	v := os.Getenv(name)
	if v == "" {
		t.Skipf("%s is not set: run `make e2e-nanoclaw`", name)
	}
	return v
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestNanoClawEngineWithHooks(t *testing.T) {
	nodeDir, sdkEntry, mcBin := need(t, "NODE_BIN_DIR"), need(t, "SDK_ENTRY"), need(t, "METACLAW_BIN")
	dir, err := os.MkdirTemp("", "mcnano")
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
	mcHome := filepath.Join(dir, "mc")
	home := filepath.Join(dir, "home")
	cwd := filepath.Join(dir, "group")
	for _, d := range []string{mcHome, filepath.Join(home, ".claude"), cwd} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}

	// The MetaClaw host: store, core (fixed memory), socket, proxy → fake Anthropic upstream.
	up := fakellm.New()
	t.Cleanup(up.Close)
	h := plugintest.Start(t, mcHome)
	px, err := proxy.New(proxy.Options{
		Core: h.Core, Log: zerolog.Nop(), UpstreamAPI: apiformat.Anthropic, UpstreamBase: up.URL + "/v1", UpstreamKey: "sk-ant-up",
		UpstreamTimeout: 60 * time.Second, ResolveTrace: h.RPC.ResolveTrace, APIKey: e2eProxyKey, // as a default install: a key is required
	})
	if err != nil {
		t.Fatal(err)
	}
	proxySrv := httptest.NewServer(px.Handler())
	t.Cleanup(proxySrv.Close)

	// The hooks, as NanoClaw's mounted ~/.claude/settings.json would carry them.
	hook := func(event string) []any {
		return []any{map[string]any{"hooks": []any{map[string]any{
			"type": "command", "timeout": 30,
			"command": mcBin + " plugin hook --client claude --agent nano --no-start " + event,
		}}}}
	}
	settings := map[string]any{"hooks": map[string]any{
		"UserPromptSubmit": hook("UserPromptSubmit"), "Stop": hook("Stop"), "SessionEnd": hook("SessionEnd"),
	}}
	b, _ := json.MarshalIndent(settings, "", "  ")
	if err := os.WriteFile(filepath.Join(home, ".claude", "settings.json"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs("query.mjs")
	if err != nil {
		t.Fatal(err)
	}

	const prompt = "What tea do I like? Answer briefly."
	env := []string{
		"PATH=" + nodeDir + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + home,
		"METACLAW_HOME=" + mcHome,
		"ANTHROPIC_BASE_URL=" + proxySrv.URL + "/a/nano",
		"ANTHROPIC_API_KEY=" + e2eProxyKey, // what `metaclaw wire nanoclaw` writes
		"SDK_ENTRY=" + sdkEntry, "E2E_PROMPT=" + prompt, "E2E_CWD=" + cwd, "E2E_TIMEOUT_MS=150000",
		// offline: no telemetry, updates, error reports or other non-essential calls
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1",
		"DISABLE_ERROR_REPORTING=1", "DISABLE_BUG_COMMAND=1", "CLAUDE_CODE_ENABLE_TELEMETRY=0",
		"NO_PROXY=127.0.0.1,localhost", "TMPDIR=" + dir,
	}
	ctx, cancel := context.WithTimeout(context.Background(), 180*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(nodeDir, "node"), script)
	cmd.Env, cmd.Dir = env, cwd
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// on timeout, stop the whole process group we started (node, claude, hooks)
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	t.Logf("node query.mjs: %v in %v", err, time.Since(start).Round(time.Millisecond))
	if cmd.Process != nil {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // anything of ours still alive
	}
	if err != nil {
		t.Fatalf("the SDK run failed: %v\nstdout:\n%s\nstderr:\n%s", err, tail(stdout.String()), tail(stderr.String()))
	}

	// The SDK's result: the fake's reply, and the session id Claude Code used.
	var session, result string
	for _, line := range strings.Split(stdout.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		if s, _ := m["session_id"].(string); s != "" {
			session = s
		}
		if m["type"] == "result" {
			result, _ = m["result"].(string)
		}
	}
	if session == "" || !strings.Contains(result, "FAKE-REPLY-OK") {
		t.Fatalf("no result with the fake reply (session %q, result %q)\nstdout:\n%s\nstderr:\n%s", session, result, tail(stdout.String()), tail(stderr.String()))
	}

	// 1. The upstream got the prompt with the injected block exactly once
	// (the UserPromptSubmit hook put it in; the proxy saw it and did not add
	// a second copy).
	var turnReq *fakellm.Request
	for _, r := range up.Requests() {
		if r.Path == "/v1/messages" && strings.Contains(string(r.Raw), "What tea do I like?") {
			r := r
			turnReq = &r
		}
	}
	if turnReq == nil {
		t.Fatalf("the upstream never got the prompt; requests: %d", len(up.Requests()))
	}
	raw := jsonUnescaped(turnReq.Raw)
	if n := strings.Count(raw, block.Begin); n != 1 {
		t.Fatalf("injected block %d times, want exactly once:\n%s", n, clip(raw))
	}
	if n := strings.Count(raw, plugintest.Memory); n != 1 {
		t.Fatalf("memory text %d times, want exactly once:\n%s", n, clip(raw))
	}

	// 2. The hooks reached the host: UserPromptSubmit asked the core for
	// context with Claude Code's session id under agent nano …
	var sawHookContext bool
	for _, q := range h.Provider.All() {
		if q.Agent == "nano" && q.SessionID == session {
			sawHookContext = true
		}
	}
	if !sawHookContext {
		t.Fatalf("no context query from the UserPromptSubmit hook (agent nano, session %s)", session)
	}
	// … Stop observed the turn, and the core recorded it …
	waitFor(t, 20*time.Second, "the Stop hook's turn in the store", func() bool {
		for _, tr := range h.Turns(t, session) {
			if tr.Agent == "nano" && strings.Contains(tr.ResponseText, "FAKE-REPLY-OK") {
				return true
			}
		}
		return false
	})
	// … and SessionEnd ended the session.
	waitFor(t, 20*time.Second, "the SessionEnd hook", func() bool {
		return h.Session(t, session).EndedAt != nil
	})
	s := h.Session(t, session)
	if recent, err := h.Store.RecentTurns(context.Background(), 20); err == nil {
		for _, tr := range recent {
			t.Logf("stored turn %d: agent %s session %s type %s model %s injected %v", tr.ID, tr.Agent, tr.SessionID, tr.TurnType, tr.Model, tr.Injected)
		}
	}
	t.Logf("session %s: agent %s, main turns %d, ended (%s); upstream requests %d", s.ID, s.Agent, s.MainTurns, s.EndReason, len(up.Requests()))
	// Proxy and hooks both saw the turn; it is recorded once, under Claude
	// Code's session (the proxy matched the hook's block).
	if recent, err := h.Store.RecentTurns(context.Background(), 20); err != nil || len(recent) != 1 || recent[0].SessionID != session {
		t.Fatalf("want exactly one stored turn, in session %s: %+v (%v)", session, recent, err)
	}
}

// jsonUnescaped undoes the JSON escapes of < and > so markers can be counted.
func jsonUnescaped(b []byte) string {
	return strings.NewReplacer(`\u003c`, "<", `\u003e`, ">").Replace(string(b))
}

func tail(s string) string {
	if len(s) > 6000 {
		return "…" + s[len(s)-6000:]
	}
	return s
}

func clip(s string) string {
	if len(s) > 4000 {
		return s[:4000] + "…"
	}
	return s
}
