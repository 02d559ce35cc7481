package plugin_test

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/block"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/rpc/protocol"
	"github.com/metaclaw-go/metaclaw/plugin"
	"github.com/metaclaw-go/metaclaw/plugin/plugintest"
)

// fixtures are the real OpenClaw 2026.9.6 captures (testdata/SOURCES.md).
var fixtures = filepath.Join("..", "testdata", "openclaw-2026.9.6")

// example returns {event, ctx} of a captured OpenClaw hook call.
func example(t *testing.T, name string) json.RawMessage {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, "hooks", "examples", name+".json"))
	if err != nil {
		t.Fatalf("captured OpenClaw hook payload missing from the repository: %v", err)
	}
	var full struct {
		Event json.RawMessage `json:"event"`
		Ctx   json.RawMessage `json:"ctx"`
	}
	if err := json.Unmarshal(b, &full); err != nil {
		t.Fatal(err)
	}
	out, _ := json.Marshal(full)
	return out
}

type served struct {
	client *protocol.Client
	relay  *plugin.Relay
	done   chan struct{}
	stdin  *io.PipeWriter
}

// serve runs `plugin serve` in-process on pipes and returns a JSON-RPC
// client speaking to its stdio.
func serve(t testing.TB, home, client string, autoStart bool) *served {
	t.Helper()
	relay := plugin.NewRelay(home, client, autoStart, false, zerolog.Nop())
	relay.ContextTimeout = 500 * time.Millisecond
	relay.CallTimeout = time.Second
	return serveRelay(t, client, relay)
}

func (s *served) call(t testing.TB, method string, params, result any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.client.Call(ctx, method, params, result); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

func TestServeRelaysToHost(t *testing.T) {
	home := plugintest.Home(t)
	h := plugintest.Start(t, home)
	s := serve(t, home, "generic", false)

	var init plugin.InitializeResult
	s.call(t, plugin.MethodInitialize, map[string]any{"client": "generic"}, &init)
	if init.Server != "metaclaw" || len(init.Methods) < 10 {
		t.Fatalf("initialize %+v", init)
	}
	var pong protocol.PingResult
	s.call(t, protocol.MethodPing, nil, &pong)
	if !pong.Pong || pong.Host == nil || !*pong.Host {
		t.Fatalf("ping %+v", pong)
	}
	var ctxRes protocol.ContextResult
	s.call(t, protocol.MethodContext, protocol.ContextParams{Identity: protocol.Identity{Session: "g1"}, UserTexts: []string{"which tea?"}}, &ctxRes)
	if !strings.Contains(ctxRes.Block, plugintest.Memory) || !strings.HasPrefix(ctxRes.Block, block.Begin) {
		t.Fatalf("context %+v", ctxRes)
	}
	if q := h.Provider.Last(); q.Agent != "generic" || q.SessionID != "g1" {
		t.Fatalf("query %+v (the plugin's default agent is the client name)", q)
	}
	var d plugin.Delivery
	s.call(t, protocol.MethodObserve, protocol.ObserveParams{Identity: protocol.Identity{Session: "g1"}, AssistantText: "Genmaicha."}, &d)
	if !d.Delivered || d.Spooled {
		t.Fatalf("observe %+v", d)
	}
	turns := h.Turns(t, "g1")
	if len(turns) != 1 || turns[0].ClientAPI != "hook:generic" || !strings.Contains(turns[0].RequestJSON, "which tea?") {
		t.Fatalf("turns %+v", turns)
	}
	var tools protocol.ToolsListResult
	s.call(t, protocol.MethodToolsList, nil, &tools)
	if len(tools.Tools) != 2 {
		t.Fatalf("tools %+v", tools)
	}
	var out protocol.ToolsCallResult
	s.call(t, protocol.MethodToolsCall, protocol.ToolsCallParams{Name: core.ToolMemorySearch, Arguments: json.RawMessage(`{"query":"genmaicha"}`)}, &out)
	if !strings.Contains(string(out.Result), "genmaicha") {
		t.Fatalf("tool %s", out.Result)
	}
	var status map[string]any
	s.call(t, protocol.MethodStatus, nil, &status)
	if status["plugin"] == nil || status["rpc"] == nil {
		t.Fatalf("status %v", status)
	}
	var sres plugin.Delivery
	s.call(t, protocol.MethodSessionEnd, protocol.SessionEndParams{Identity: protocol.Identity{Session: "g1"}}, &sres)
	if ended := h.Session(t, "g1"); ended.EndedAt == nil {
		t.Fatal("session not ended")
	}
	// Bad params are refused here, not spooled.
	if err := s.client.Call(context.Background(), protocol.MethodObserve, map[string]any{"session": []int{1}}, nil); !protocol.IsCode(err, protocol.CodeInvalidParams) {
		t.Fatalf("bad observe: %v", err)
	}
	if n := s.relay.Spool.Len(); n != 0 {
		t.Fatalf("spooled %d", n)
	}
	// shutdown stops the plugin process only.
	var sd protocol.ShutdownResult
	s.call(t, protocol.MethodShutdown, nil, &sd)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		t.Fatal("shutdown did not stop plugin serve")
	}
	var p2 protocol.PingResult
	if err := plugin.NewRelay(home, "x", false, false, zerolog.Nop()).Call(context.Background(), protocol.MethodPing, nil, &p2); err != nil || !p2.Pong {
		t.Fatalf("host stopped with the plugin: %v", err)
	}
}

// TestFailOpenSpoolReplay: with no host, context answers empty within its
// deadline and events are spooled (0600 files in a 0700 dir); once a host
// serves the socket they are replayed and land in the store, keeping their
// time.
func TestFailOpenSpoolReplay(t *testing.T) {
	home := plugintest.Home(t)
	s := serve(t, home, "generic", false)

	start := time.Now()
	var res protocol.ContextResult
	s.call(t, protocol.MethodContext, protocol.ContextParams{Identity: protocol.Identity{Session: "s1"}, UserTexts: []string{"hello"}}, &res)
	if el := time.Since(start); el > 1500*time.Millisecond {
		t.Fatalf("context took %v with no host", el)
	}
	if res.Block != "" || res.Skipped != "host unavailable" {
		t.Fatalf("context without host %+v", res)
	}
	at := time.Now().Add(-time.Hour).UTC().Truncate(time.Millisecond)
	var d plugin.Delivery
	s.call(t, protocol.MethodObserve, protocol.ObserveParams{Identity: protocol.Identity{Session: "s1"}, UserText: "hello", AssistantText: "hi there", TurnKey: "k1", At: at}, &d)
	if !d.Spooled || d.Delivered {
		t.Fatalf("observe without host %+v", d)
	}
	s.call(t, protocol.MethodSessionEnd, protocol.SessionEndParams{Identity: protocol.Identity{Session: "s1"}, Reason: "done"}, &d)
	if !d.Spooled {
		t.Fatalf("session.end without host %+v", d)
	}
	dir := plugin.SpoolDir(home)
	fi, err := os.Stat(dir)
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Fatalf("spool dir %v %v", fi.Mode(), err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Fatalf("spool holds %d files", len(ents))
	}
	for _, e := range ents {
		info, _ := e.Info()
		if info.Mode().Perm() != 0o600 || !strings.HasSuffix(e.Name(), ".json") {
			t.Fatalf("spool file %s %v", e.Name(), info.Mode())
		}
	}

	h := plugintest.Start(t, home)
	// The next call connects; the new connection replays the spool.
	var pong protocol.PingResult
	s.call(t, protocol.MethodPing, nil, &pong)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if s.relay.Spool.Len() == 0 && h.Session(t, "s1").EndedAt != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	turns := h.Turns(t, "s1")
	if len(turns) != 1 || turns[0].ResponseText != "hi there" || !turns[0].CreatedAt.Equal(at) {
		t.Fatalf("replayed turns %+v (want created at %v)", turns, at)
	}
	if sess := h.Session(t, "s1"); sess.EndedAt == nil || sess.EndReason != "done" {
		t.Fatalf("session %+v", sess)
	}
	// Replaying the same event again is harmless (turn_key).
	var o protocol.ObserveResult
	if err := s.relay.Call(context.Background(), protocol.MethodObserve, protocol.ObserveParams{Identity: protocol.Identity{Agent: "generic", Session: "s1"}, UserText: "hello", AssistantText: "hi there", TurnKey: "k1"}, &o); err != nil || o.Recorded {
		t.Fatalf("duplicate %+v %v", o, err)
	}
}

func TestSpoolBounded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	sp := plugin.NewSpool(dir, 2000, 5)
	for i := 0; i < 20; i++ {
		c, err := sp.Claim(plugin.Entry{Method: "observe", Params: json.RawMessage(`{"pad":"` + strings.Repeat("x", 300) + `"}`)})
		if err != nil {
			t.Fatal(err)
		}
		c.Release()
	}
	if n := sp.Len(); n > 5 || n < 3 {
		t.Fatalf("spool holds %d events", n)
	}
	if sp.Dropped() < 15 {
		t.Fatalf("dropped %d", sp.Dropped())
	}
	if _, err := sp.Claim(plugin.Entry{Method: "observe", Params: json.RawMessage(`"` + strings.Repeat("y", 5<<20) + `"`)}); err == nil {
		t.Fatal("oversized event accepted")
	}
	// A claim left by a dead process is released on replay.
	c, _ := sp.Claim(plugin.Entry{Method: "observe", Params: json.RawMessage(`{}`)})
	_ = c
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".claim") {
			dead := strings.Replace(e.Name(), "."+strconv.Itoa(os.Getpid())+".claim", ".999999999.claim", 1)
			os.Rename(filepath.Join(dir, e.Name()), filepath.Join(dir, dead))
		}
	}
	sent := 0
	n, err := sp.Replay(context.Background(), func(ctx context.Context, e plugin.Entry) error { sent++; return nil }, func(error) bool { return true })
	if err != nil || n != sent || sp.Len() != 0 {
		t.Fatalf("replay %d %d %v left %d", n, sent, err, sp.Len())
	}
}
