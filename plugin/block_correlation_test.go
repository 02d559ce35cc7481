package plugin_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/block"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/rpc"
	"github.com/metaclaw-go/metaclaw/host/rpc/protocol"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/testhost"
	"github.com/metaclaw-go/metaclaw/internal/testwait"
	"github.com/metaclaw-go/metaclaw/plugin"
	"github.com/metaclaw-go/metaclaw/plugin/plugintest"
)

// TestBlockCorrelationWithoutTraceID covers clients whose hooks inject
// context but whose requests carry no trace id (Claude Code): the proxy
// recognises the hook's block in the request, files the turn under the
// hook's agent and session, and the hook's own report of the turn is not
// recorded a second time.
func TestBlockCorrelationWithoutTraceID(t *testing.T) {
	home := plugintest.Home(t)
	var srv *rpc.Server
	provider := &plugintest.Provider{}
	th := testhost.Start(t, testhost.Options{
		UpstreamAPI: apiformat.Anthropic,
		Setup: func(c *core.Core, st *store.SQLite) []route.Route {
			c.AddProvider(provider)
			srv = rpc.New(rpc.Options{Core: c, Log: zerolog.Nop()})
			if err := srv.Listen(protocol.SocketPath(home)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close() })
			return nil
		},
		Mutate: func(o *proxy.Options) { o.ResolveTrace = srv.ResolveTrace },
	})
	s := serve(t, home, plugin.ClientClaude, false)
	// The host answers; serve's 500 ms budgets are for the fail-open tests
	// and were overrun under -race on a loaded machine.
	s.relay.ContextTimeout, s.relay.CallTimeout = testwait.Deadline, testwait.Deadline
	id := protocol.Identity{Agent: "nano", Session: "cc-session-1"}

	var ctxRes protocol.ContextResult
	if err := s.relay.Call(t.Context(), protocol.MethodContext, protocol.ContextParams{Identity: id, UserTexts: []string{"What tea do I like?"}}, &ctxRes); err != nil {
		t.Fatal(err)
	}
	if ctxRes.Block == "" {
		t.Fatalf("no block: %+v", ctxRes)
	}
	// Claude Code puts the hook's additionalContext into the user turn.
	body, _ := json.Marshal(map[string]any{
		"model": "claude", "max_tokens": 50,
		"messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "text", "text": "<system-reminder>\nUserPromptSubmit hook additional context: " + ctxRes.Block + "\n</system-reminder>"},
			map[string]any{"type": "text", "text": "What tea do I like?"},
		}}},
	})
	req, _ := http.NewRequest(http.MethodPost, th.URL+"/v1/messages", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("X-Metaclaw-Session-Id") != "cc-session-1" {
		t.Fatalf("proxy answered %d, session %q", resp.StatusCode, resp.Header.Get("X-Metaclaw-Session-Id"))
	}
	last := string(th.Upstream.Last().Raw)
	if n := strings.Count(last, block.Begin) + strings.Count(last, `\u003cmetaclaw_context\u003e`); n != 1 {
		t.Fatalf("block sent upstream %d times", n)
	}
	// The Stop hook reports the turn: already recorded by the proxy.
	var obs protocol.ObserveResult
	if err := s.relay.Call(t.Context(), protocol.MethodObserve, protocol.ObserveParams{Identity: id, UserText: "What tea do I like?", AssistantText: "FAKE-REPLY-OK"}, &obs); err != nil {
		t.Fatal(err)
	}
	if obs.Recorded || !strings.Contains(obs.Reason, "injected block") {
		t.Fatalf("hook turn recorded again: %+v", obs)
	}
	th.Flush(t)
	turns, err := th.Store.SessionTurns(t.Context(), "cc-session-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 1 || turns[0].Agent != "nano" || turns[0].ClientAPI != "anthropic" {
		t.Fatalf("turns %+v", turns)
	}
	// A later turn whose block the proxy never saw is recorded from the hook.
	if err := s.relay.Call(t.Context(), protocol.MethodObserve, protocol.ObserveParams{Identity: id, UserText: "next", AssistantText: "ok"}, &obs); err != nil {
		t.Fatal(err)
	}
	if !obs.Recorded {
		t.Fatalf("unrelated hook turn skipped: %+v", obs)
	}
}
