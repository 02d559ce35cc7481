package rpc_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/block"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/rpc"
	"github.com/metaclaw-go/metaclaw/host/rpc/protocol"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/testwait"
)

type provider struct{ body string }

func (p provider) Name() string { return "test" }
func (p provider) Context(_ context.Context, q core.Query) (core.Section, error) {
	return core.Section{Title: "Memories", Body: p.body + " (" + strings.Join(q.UserTexts, "|") + ")", IDs: []string{"mem:1"}}, nil
}

type env struct {
	core    *core.Core
	store   *store.SQLite
	srv     *rpc.Server
	socket  string
	stopped atomic.Int32
}

// shortDir keeps unix socket paths under the 108-byte limit.
func shortDir(t testing.TB) string {
	d, err := os.MkdirTemp("", "mcrpc")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func start(t testing.TB, mutate ...func(*rpc.Options)) *env {
	t.Helper()
	dir := shortDir(t)
	st, err := store.OpenSQLite(context.Background(), filepath.Join(dir, store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	e := &env{store: st, socket: protocol.SocketPath(dir)}
	e.core = core.New(core.Options{Store: st, Log: zerolog.Nop()})
	e.core.AddProvider(provider{body: "The user prefers tea."})
	o := rpc.Options{Core: e.core, Log: zerolog.Nop(), Version: "test", ShutdownToken: "tok", Shutdown: func() { e.stopped.Add(1) }}
	for _, m := range mutate {
		m(&o)
	}
	e.srv = rpc.New(o)
	if err := e.srv.Listen(e.socket); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		e.srv.Close()
		e.core.Close()
		st.Close()
	})
	return e
}

func (e *env) client(t testing.TB) *protocol.Client {
	t.Helper()
	c, err := protocol.Dial(context.Background(), e.socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func call(t testing.TB, c *protocol.Client, method string, params, result any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Call(ctx, method, params, result); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

func (e *env) turns(t testing.TB, session string) []store.Turn {
	t.Helper()
	if err := e.core.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	turns, err := e.store.SessionTurns(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	return turns
}

func TestSocketMode(t *testing.T) {
	e := start(t)
	fi, err := os.Stat(e.socket)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v", fi.Mode())
	}
	e.srv.Close()
	if _, err := os.Stat(e.socket); !os.IsNotExist(err) {
		t.Fatalf("socket not removed at close: %v", err)
	}
}

// TestContextSameAsCore: the hook path gets exactly the block the proxy path
// gets, because both call core.Context.
func TestContextSameAsCore(t *testing.T) {
	e := start(t)
	c := e.client(t)
	var res protocol.ContextResult
	call(t, c, protocol.MethodContext, protocol.ContextParams{
		Identity: protocol.Identity{Agent: "main", Session: "s1"},
		Messages: json.RawMessage(`[{"role":"system","content":"sys"},{"role":"user","content":"first"},{"role":"assistant","content":"ok"},
			{"role":"user","content":[{"type":"text","text":"second <metaclaw_context>old</metaclaw_context>"}]}]`),
	}, &res)
	want := e.core.Context(context.Background(), core.Query{Agent: "main", SessionID: "s1", UserTexts: []string{"first", "second"}})
	if res.Block == "" || res.Block != want.Block || res.Tokens != want.Tokens || len(res.IDs) != 1 {
		t.Fatalf("block %q\nwant %q", res.Block, want.Block)
	}
	if !strings.HasPrefix(res.Block, block.Begin) || res.Agent != "main" || res.Session != "s1" {
		t.Fatalf("result %+v", res)
	}
	// Side turns and turns without user text get nothing.
	call(t, c, protocol.MethodContext, protocol.ContextParams{UserTexts: []string{"x"}, TurnType: "side"}, &res)
	if res.Block != "" || res.Skipped != "side turn" {
		t.Fatalf("side %+v", res)
	}
	call(t, c, protocol.MethodContext, protocol.ContextParams{}, &res)
	if res.Block != "" || res.Skipped != "no user text" || res.Agent != "default" {
		t.Fatalf("empty %+v", res)
	}
}

func TestObserveRecordsAndDedupes(t *testing.T) {
	e := start(t)
	c := e.client(t)
	// The prompt seen by context is used when observe has no user text.
	var cres protocol.ContextResult
	call(t, c, protocol.MethodContext, protocol.ContextParams{Identity: protocol.Identity{Agent: "main", Session: "s2"}, UserTexts: []string{"what tea do I like?"}}, &cres)
	obs := protocol.ObserveParams{
		Identity: protocol.Identity{Agent: "main", Session: "s2", Client: "openclaw"}, AssistantText: "Green tea.",
		Model: "m", Usage: protocol.Usage{InputTokens: 10, OutputTokens: 3}, TurnKey: "openclaw:run-1",
		InjectedIDs: cres.IDs, InjectedTokens: cres.Tokens, ToolCalls: json.RawMessage(`[{"name":"read"}]`),
	}
	var res protocol.ObserveResult
	call(t, c, protocol.MethodObserve, obs, &res)
	if !res.Recorded {
		t.Fatalf("not recorded: %+v", res)
	}
	call(t, c, protocol.MethodObserve, obs, &res)
	if res.Recorded || res.Reason != "duplicate turn_key" {
		t.Fatalf("duplicate recorded: %+v", res)
	}
	turns := e.turns(t, "s2")
	if len(turns) != 1 {
		t.Fatalf("turns %d", len(turns))
	}
	tr := turns[0]
	if tr.ClientAPI != "hook:openclaw" || tr.Agent != "main" || tr.ResponseText != "Green tea." || tr.Status != 200 ||
		tr.InputTokens != 10 || tr.OutputTokens != 3 || tr.InjectedJSON != `["mem:1"]` || tr.ToolCallsJSON != `[{"name":"read"}]` ||
		!strings.Contains(tr.RequestJSON, "what tea do I like?") || tr.TurnType != "main" {
		t.Fatalf("turn %+v", tr)
	}
	// Wrong shapes are refused with invalid params, not recorded.
	for _, bad := range []any{
		map[string]any{"session": 5},
		map[string]any{"agent": "bad agent!", "session": "s"},
		map[string]any{"session": "s", "tool_calls": "x"},
		map[string]any{"session": "s", "mode": "sometimes"},
		map[string]any{"user_text": "no session"},
		map[string]any{"session": "s", "trace_id": "nothex"},
	} {
		err := c.Call(context.Background(), protocol.MethodObserve, bad, nil)
		if !protocol.IsCode(err, protocol.CodeInvalidParams) {
			t.Fatalf("%v: %v", bad, err)
		}
	}
}

// TestTraceRegisterAndProxyDedupe: the proxy finds what a hook registered,
// and a hook's observation of a turn the proxy carried is not recorded
// twice (mode auto), unless mode is always.
func TestTraceRegisterAndProxyDedupe(t *testing.T) {
	e := start(t)
	c := e.client(t)
	const trace = "eccc205835aed942eb4ab922a51a9e4b"
	var tr protocol.TraceResult
	call(t, c, protocol.MethodTraceRegister, protocol.TraceParams{Identity: protocol.Identity{Agent: "main", Session: "fx"}, TraceID: trace}, &tr)
	if !tr.OK || time.Until(tr.ExpiresAt) < 29*time.Minute {
		t.Fatalf("register %+v", tr)
	}
	agent, session, tt, ok := e.srv.ResolveTrace(trace)
	if !ok || agent != "main" || session != "fx" || tt != "main" {
		t.Fatalf("resolve %q %q %q %v", agent, session, tt, ok)
	}
	if _, _, _, ok := e.srv.ResolveTrace("ffffffffffffffffffffffffffffffff"); ok {
		t.Fatal("unknown trace resolved")
	}
	var res protocol.ObserveResult
	obs := protocol.ObserveParams{Identity: protocol.Identity{Agent: "main", Session: "fx"}, UserText: "u", AssistantText: "a", TraceID: trace}
	call(t, c, protocol.MethodObserve, obs, &res)
	if res.Recorded || !strings.Contains(res.Reason, "proxy") {
		t.Fatalf("proxied turn recorded again: %+v", res)
	}
	// A trace the proxy saw without any registration is also known.
	obs.TraceID = "ffffffffffffffffffffffffffffffff"
	call(t, c, protocol.MethodObserve, obs, &res)
	if res.Recorded {
		t.Fatalf("proxied (unregistered) turn recorded again: %+v", res)
	}
	obs.Mode = protocol.ObserveAlways
	call(t, c, protocol.MethodObserve, obs, &res)
	if !res.Recorded {
		t.Fatalf("mode always not recorded: %+v", res)
	}
	// Context with trace_id registers it too.
	var cres protocol.ContextResult
	call(t, c, protocol.MethodContext, protocol.ContextParams{Identity: protocol.Identity{Agent: "a2", Session: "s9"}, UserTexts: []string{"x"}, TraceID: "0123456789abcdef0123456789abcdef", TurnType: "side"}, &cres)
	if a, s, tt, ok := e.srv.ResolveTrace("0123456789abcdef0123456789abcdef"); !ok || a != "a2" || s != "s9" || tt != "side" {
		t.Fatalf("context trace %q %q %q %v", a, s, tt, ok)
	}
}

func TestSessionEndResetAgentEnd(t *testing.T) {
	e := start(t)
	c := e.client(t)
	id := protocol.Identity{Agent: "main", Session: "s3"}
	var ares protocol.AgentEndResult
	f := false
	call(t, c, protocol.MethodAgentEnd, protocol.AgentEndParams{Identity: id, Success: &f,
		Turn: &protocol.ObserveParams{UserText: "do it", AssistantText: ""}}, &ares)
	if !ares.OK || !ares.Recorded {
		t.Fatalf("agent.end %+v", ares)
	}
	if turns := e.turns(t, "s3"); len(turns) != 1 || turns[0].Status != 500 {
		t.Fatalf("failed run turn %+v", turns)
	}
	var res protocol.SessionEndResult
	call(t, c, protocol.MethodSessionReset, protocol.SessionEndParams{Identity: id, Reason: "new"}, &res)
	if !res.Ended {
		t.Fatalf("reset %+v", res)
	}
	s, err := e.store.Session(context.Background(), "s3")
	if err != nil || s.EndedAt == nil || s.EndReason != "new" {
		t.Fatalf("session %+v %v", s, err)
	}
	// OpenClaw sends session_end right after before_reset: a no-op.
	call(t, c, protocol.MethodSessionEnd, protocol.SessionEndParams{Identity: id, Reason: "new"}, &res)
	if res.Ended || res.Reason != "already ended" {
		t.Fatalf("second end %+v", res)
	}
	// A new turn reopens the session; ending it again works.
	call(t, c, protocol.MethodObserve, protocol.ObserveParams{Identity: id, UserText: "again", AssistantText: "ok"}, nil)
	call(t, c, protocol.MethodSessionEnd, protocol.SessionEndParams{Identity: id}, &res)
	if !res.Ended {
		t.Fatalf("end after new turn %+v", res)
	}
	if err := c.Call(context.Background(), protocol.MethodSessionEnd, map[string]any{"agent": "main"}, nil); !protocol.IsCode(err, protocol.CodeInvalidParams) {
		t.Fatalf("end without session: %v", err)
	}
}

func TestToolsAndStatus(t *testing.T) {
	e := start(t)
	e.core.RegisterTool(core.Tool{Name: "memory_search", Description: "search", InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`),
		Call: func(ctx context.Context, q core.Query, args json.RawMessage) (any, error) {
			var a struct{ Query string }
			json.Unmarshal(args, &a)
			return map[string]any{"agent": q.Agent, "session": q.SessionID, "query": a.Query}, nil
		}})
	e.core.RegisterTool(core.Tool{Name: "boom", InputSchema: json.RawMessage(`{"type":"object"}`),
		Call: func(ctx context.Context, q core.Query, args json.RawMessage) (any, error) { panic("kaboom") }})
	c := e.client(t)
	var list protocol.ToolsListResult
	call(t, c, protocol.MethodToolsList, nil, &list)
	var names []string
	for _, tl := range list.Tools {
		names = append(names, tl.Name)
	}
	if strings.Join(names, ",") != "boom,memory_search,metaclaw_status" {
		t.Fatalf("tools %v", names)
	}
	var out protocol.ToolsCallResult
	call(t, c, protocol.MethodToolsCall, protocol.ToolsCallParams{Identity: protocol.Identity{Agent: "main", Session: "s"}, Name: "memory_search", Arguments: json.RawMessage(`{"query":"tea"}`)}, &out)
	if string(out.Result) != `{"agent":"main","query":"tea","session":"s"}` {
		t.Fatalf("result %s", out.Result)
	}
	call(t, c, protocol.MethodToolsCall, protocol.ToolsCallParams{Name: rpc.StatusToolName}, &out)
	if !strings.Contains(string(out.Result), `"rpc"`) {
		t.Fatalf("status tool %s", out.Result)
	}
	if err := c.Call(context.Background(), protocol.MethodToolsCall, protocol.ToolsCallParams{Name: "nope"}, nil); !protocol.IsCode(err, protocol.CodeUnknownTool) {
		t.Fatalf("unknown tool: %v", err)
	}
	if err := c.Call(context.Background(), protocol.MethodToolsCall, protocol.ToolsCallParams{Name: "boom"}, nil); !protocol.IsCode(err, protocol.CodeToolFailed) {
		t.Fatalf("panicking tool: %v", err)
	}
	if err := c.Call(context.Background(), protocol.MethodToolsCall, map[string]any{"name": "memory_search", "arguments": []int{1}}, nil); !protocol.IsCode(err, protocol.CodeInvalidParams) {
		t.Fatalf("array arguments: %v", err)
	}
	var st rpc.StatusResult
	call(t, c, protocol.MethodStatus, nil, &st)
	if st.RPC.Connections < 1 || st.RPC.Socket != e.socket || st.Host == nil {
		t.Fatalf("status %+v", st)
	}
	var pong protocol.PingResult
	call(t, c, protocol.MethodPing, nil, &pong)
	if !pong.Pong || pong.PID != os.Getpid() {
		t.Fatalf("ping %+v", pong)
	}
}

func TestShutdownNeedsToken(t *testing.T) {
	e := start(t)
	c := e.client(t)
	var res protocol.ShutdownResult
	call(t, c, protocol.MethodShutdown, nil, &res)
	if !res.OK || res.Stopping {
		t.Fatalf("unauthorised shutdown %+v", res)
	}
	call(t, c, protocol.MethodShutdown, protocol.ShutdownParams{Token: "wrong"}, &res)
	if res.Stopping {
		t.Fatal("wrong token accepted")
	}
	call(t, c, protocol.MethodShutdown, protocol.ShutdownParams{Token: "tok"}, &res)
	testwait.For(t, "the authorised shutdown", func() bool { return e.stopped.Load() != 0 })
	if !res.Stopping || e.stopped.Load() != 1 {
		t.Fatalf("authorised shutdown %+v, stopped %d", res, e.stopped.Load())
	}
}

// rawConn writes lines and reads answers on the socket without a client.
type rawConn struct {
	c net.Conn
	r *bufio.Reader
}

func (e *env) raw(t testing.TB) *rawConn {
	c, err := net.Dial("unix", e.socket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{c: c, r: bufio.NewReaderSize(c, 1<<20)}
}

func (r *rawConn) send(t testing.TB, line string) {
	t.Helper()
	r.c.SetWriteDeadline(time.Now().Add(5 * time.Second))
	if _, err := r.c.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
}

func (r *rawConn) recv(t testing.TB) map[string]any {
	t.Helper()
	r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := r.r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("answer is not JSON: %q", line)
	}
	return m
}

func code(m map[string]any) int {
	e, _ := m["error"].(map[string]any)
	if e == nil {
		return 0
	}
	f, _ := e["code"].(float64)
	return int(f)
}

// TestHostileInput: garbage, wrong types, bad ids, huge lines and floods get
// JSON-RPC errors; the connection and the server stay up.
func TestHostileInput(t *testing.T) {
	e := start(t, func(o *rpc.Options) { o.MaxMessage = 64 << 10; o.MaxInFlight = 2 })
	r := e.raw(t)
	cases := []struct {
		line string
		code int
	}{
		{"this is not json", protocol.CodeParseError},
		{`{"jsonrpc":"2.0","id":1,"method":"ping"`, protocol.CodeParseError},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, protocol.CodeInvalidRequest},
		{`42`, protocol.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1,"method":7}`, protocol.CodeInvalidRequest},
		{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, protocol.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`, protocol.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, protocol.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":2,"method":"ping","params":"str"}`, protocol.CodeInvalidParams},
		{`{"jsonrpc":"2.0","id":3}`, protocol.CodeInvalidRequest},
		{`{"jsonrpc":"2.0","id":4,"method":"no.such"}`, protocol.CodeMethodNotFound},
		{`{"jsonrpc":"2.0","id":5,"method":"context","params":{"user_texts":"not a list"}}`, protocol.CodeInvalidParams},
		{`{"jsonrpc":"2.0","id":6,"method":"context","params":[1,2]}`, protocol.CodeInvalidParams},
		{`{"jsonrpc":"2.0","id":7,"method":"observe","params":{"session":"` + strings.Repeat("x", 300) + `"}}`, protocol.CodeInvalidParams},
		{`{"jsonrpc":"2.0","id":8,"method":"observe","params":{"session":"a\u0000b"}}`, protocol.CodeInvalidParams},
		{`{"jsonrpc":"2.0","id":9,"method":"context","params":{"messages":{"role":"user"}}}`, protocol.CodeInvalidParams},
		{`{"jsonrpc":"2.0","id":10,"method":"trace.register","params":{"trace_id":"` + strings.Repeat("0", 32) + `"}}`, protocol.CodeInvalidParams},
		{`{"jsonrpc":"2.0","id":11,"method":"ping","params":` + strings.Repeat(`{"a":`, 100) + `1` + strings.Repeat(`}`, 100) + `}`, 0},
	}
	for _, c := range cases {
		r.send(t, c.line)
		if got := code(r.recv(t)); got != c.code {
			t.Fatalf("%.80s: code %d, want %d", c.line, got, c.code)
		}
	}
	// A line over the limit is consumed and refused; the next one works.
	r.send(t, `{"jsonrpc":"2.0","id":12,"method":"ping","params":{"pad":"`+strings.Repeat("A", 100<<10)+`"}}`)
	if got := code(r.recv(t)); got != protocol.CodeTooLarge {
		t.Fatalf("huge line: code %d", got)
	}
	// A flood beyond the in-flight bound is answered busy, not queued
	// without limit; everything gets an answer.
	slow := make(chan struct{})
	e.core.RegisterTool(core.Tool{Name: "slow", InputSchema: json.RawMessage(`{"type":"object"}`),
		Call: func(ctx context.Context, q core.Query, a json.RawMessage) (any, error) { <-slow; return "done", nil }})
	var b strings.Builder
	for i := 0; i < 10; i++ {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools.call","params":{"name":"slow"}}`+"\n", 100+i)
	}
	r.c.Write([]byte(b.String()))
	busy := 0
	for i := 0; i < 8; i++ {
		if code(r.recv(t)) == protocol.CodeBusy {
			busy++
		}
	}
	close(slow)
	for i := 0; i < 2; i++ {
		if m := r.recv(t); code(m) != 0 {
			t.Fatalf("slow call: %v", m)
		}
	}
	if busy != 8 {
		t.Fatalf("busy answers %d, want 8", busy)
	}
	// Notifications get no answer, even when malformed in their params.
	// (After the flood: a notification holds its slot until its goroutine
	// runs, and no answer says when that was, so before the flood it could
	// leave the slow calls one slot.)
	r.send(t, `{"jsonrpc":"2.0","method":"observe","params":{"session":5}}`)
	r.send(t, `{"jsonrpc":"2.0","id":13,"method":"ping"}`)
	if m := r.recv(t); m["id"].(float64) != 13 || code(m) != 0 {
		t.Fatalf("after notification: %v", m)
	}
	// The server still serves new connections.
	var pong protocol.PingResult
	call(t, e.client(t), protocol.MethodPing, nil, &pong)
}

func TestConnectionLimit(t *testing.T) {
	e := start(t, func(o *rpc.Options) { o.MaxConns = 2 })
	a, b := e.raw(t), e.raw(t)
	for _, r := range []*rawConn{a, b} {
		r.send(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`)
		r.recv(t)
	}
	extra := e.raw(t)
	extra.c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := extra.r.ReadByte(); err == nil {
		t.Fatal("third connection was served")
	}
	a.c.Close()
	testwait.For(t, "a freed slot to be reused", func() bool {
		c, err := net.Dial("unix", e.socket)
		if err != nil {
			return false
		}
		defer c.Close()
		c.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"))
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		line, err := bufio.NewReader(c).ReadBytes('\n')
		return err == nil && strings.Contains(string(line), "pong")
	})
}

func TestConcurrentClients(t *testing.T) {
	e := start(t)
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := protocol.Dial(context.Background(), e.socket)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			for j := 0; j < 10; j++ {
				p := protocol.ObserveParams{Identity: protocol.Identity{Agent: "a", Session: "conc"}, UserText: "u", AssistantText: "a", TurnKey: fmt.Sprintf("k-%d-%d", i, j)}
				if err := c.Call(context.Background(), protocol.MethodObserve, p, nil); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := len(e.turns(t, "conc")); n != 100 {
		t.Fatalf("recorded %d turns, want 100", n)
	}
}

// TestManifestDocumentsMethods: manifest.json's jsonrpc.methods are exactly
// the socket's methods.
func TestManifestDocumentsMethods(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		JSONRPC struct {
			Methods []struct {
				Name   string          `json:"name"`
				Params json.RawMessage `json:"params"`
				Result json.RawMessage `json:"result"`
				Doc    string          `json:"doc"`
			} `json:"methods"`
		} `json:"jsonrpc"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, x := range m.JSONRPC.Methods {
		if len(x.Params) == 0 || len(x.Result) == 0 || x.Doc == "" {
			t.Fatalf("method %s lacks params/result/doc", x.Name)
		}
		names = append(names, x.Name)
	}
	if strings.Join(names, ",") != strings.Join(protocol.HostMethods, ",") {
		t.Fatalf("manifest documents %v, the socket serves %v", names, protocol.HostMethods)
	}
}
