// Package rpc is the host's JSON-RPC 2.0 server on a unix socket
// ($METACLAW_HOME/run/metaclaw.sock, mode 0600, newline-delimited JSON).
// Plugin processes (`metaclaw plugin serve|hook`, `metaclaw mcp`) relay the
// hooks of agent clients to it; every method lands on the one learning core
// (core.Context, core.Observe, core.EndSession, core.Tools/CallTool), so the
// hook path injects exactly the block the proxy path would.
//
// The wire contract (methods, parameters, results, error codes) is in package
// protocol and documented in docs/plugin.md.
package rpc

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/rpc/protocol"
	"github.com/metaclaw-go/metaclaw/host/store"
)

// Options configure the server.
type Options struct {
	Core *core.Core
	Log  zerolog.Logger
	// Status renders the host status (the JSON of GET /v1/status).
	Status  func(ctx context.Context) any
	Version string
	// Shutdown stops the host; it runs only for a `shutdown` call carrying
	// ShutdownToken (empty token: never).
	Shutdown      func()
	ShutdownToken string
	// Activity, if set, is called (it must not block) for each main-turn
	// context request of a hook: the user is using their agent.
	Activity func()

	MaxMessage  int           // bytes per message (default protocol.DefaultMaxMessage)
	MaxConns    int           // concurrent connections (default 64)
	MaxInFlight int           // concurrent requests per connection (default 16)
	Timeout     time.Duration // per request (default 30s)
	TraceTTL    time.Duration // default trace registration lifetime (default 30m)
	MaxTraces   int           // default 10000
}

// Server serves the host socket.
type Server struct {
	o       Options
	mux     *protocol.Mux
	traces  *traceTable
	turns   *ttlSet[struct{}]  // turn keys already recorded
	prompts *ttlSet[string]    // agent\x00session → last user text seen by context
	blocks  *ttlSet[string]    // agent\x00session → key of the last block injected through a hook
	ended   *ttlSet[time.Time] // sessions ended and not observed since
	started time.Time

	mu      sync.Mutex
	ln      net.Listener
	path    string
	conns   map[*protocol.Conn]struct{}
	active  atomic.Int64
	served  atomic.Int64
	closing atomic.Bool
	wg      sync.WaitGroup
}

// StatusToolName is the one tool this package registers on the core.
const StatusToolName = core.ToolStatus

// New builds the server and registers the metaclaw_status tool on the core.
func New(o Options) *Server {
	if o.MaxConns <= 0 {
		o.MaxConns = 64
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = 16
	}
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if o.TraceTTL <= 0 {
		o.TraceTTL = 30 * time.Minute
	}
	if o.MaxTraces <= 0 {
		o.MaxTraces = 10000
	}
	s := &Server{
		o:       o,
		traces:  newTraceTable(o.MaxTraces, o.TraceTTL),
		turns:   newTTLSet[struct{}](20000, 48*time.Hour),
		prompts: newTTLSet[string](4096, 2*time.Hour),
		blocks:  newTTLSet[string](4096, 2*time.Hour),
		ended:   newTTLSet[time.Time](4096, time.Hour),
		started: time.Now(),
		conns:   map[*protocol.Conn]struct{}{},
	}
	s.mux = protocol.NewMux()
	s.mux.MaxInFlight = o.MaxInFlight
	s.mux.Timeout = o.Timeout
	s.mux.OnPanic = func(method string, v any) {
		s.o.Log.Error().Str("method", method).Interface("panic", v).Msg("rpc handler panicked")
	}
	s.routes()
	if o.Core != nil {
		s.registerStatusTool()
	}
	return s
}

// Listen serves on a unix socket at path (mode 0600), replacing a stale one.
func (s *Server) Listen(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("rpc socket: %w", err)
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode()&os.ModeSocket == 0 {
			return fmt.Errorf("rpc socket: %s exists and is not a socket", path)
		}
		// The host holds the state dir's lock, so a socket file here is stale.
		os.Remove(path)
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("rpc socket %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		os.Remove(path)
		return fmt.Errorf("rpc socket: %w", err)
	}
	s.mu.Lock()
	s.path = path
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = s.Serve(ln)
	}()
	return nil
}

// Serve accepts connections on ln until Close.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if s.closing.Load() || errors.Is(err, net.ErrClosed) {
				return nil
			}
			backoff = min(max(backoff*2, 5*time.Millisecond), time.Second)
			s.o.Log.Warn().Err(err).Msg("rpc accept")
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		if s.active.Load() >= int64(s.o.MaxConns) {
			s.o.Log.Warn().Int("max", s.o.MaxConns).Msg("rpc: too many connections; refusing one")
			c.Close()
			continue
		}
		s.serveConn(c)
	}
}

func (s *Server) serveConn(c net.Conn) {
	s.active.Add(1)
	s.served.Add(1)
	conn := s.mux.Serve(context.Background(), c, c, c, protocol.ServeOptions{
		MaxMessage: s.o.MaxMessage,
		Log:        func(msg string) { s.o.Log.Debug().Str("part", "rpc").Msg(msg) },
	})
	s.mu.Lock()
	s.conns[conn] = struct{}{}
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		<-conn.DisconnectNotify()
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
		s.active.Add(-1)
	}()
}

// Close stops accepting, lets in-flight requests finish (bounded), closes
// every connection and removes the socket file.
func (s *Server) Close() error {
	if s.closing.Swap(true) {
		return nil
	}
	s.mu.Lock()
	ln, path := s.ln, s.path
	conns := make([]*protocol.Conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	s.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	for _, c := range conns {
		c.Wait(2 * time.Second)
		c.Close()
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
	if path != "" {
		os.Remove(path)
	}
	return nil
}

// ResolveTrace is the proxy's trace correlation hook: the agent, session and
// turn type a hook registered for this trace id. Every lookup also marks the
// trace as seen by the proxy, so hook observations of the same turn are not
// recorded twice (observe mode "auto").
func (s *Server) ResolveTrace(traceID string) (agent, session, turnType string, ok bool) {
	if !validTraceID(traceID) {
		return "", "", "", false
	}
	info, ok := s.traces.resolve(traceID)
	return info.Agent, info.Session, info.TurnType, ok
}

// Injected is what a hook injected for a trace id or block key (see
// core.BlockKey): the proxy records it with a turn that arrives already
// carrying the block, so a turn seen by both paths is recorded once with
// everything.
func (s *Server) Injected(key string) (ids []string, tokens int, ok bool) {
	if !validTraceID(key) {
		return nil, 0, false
	}
	info, ok := s.traces.lookup(key)
	if !ok || (len(info.InjectedIDs) == 0 && info.InjectedTokens == 0) {
		return nil, 0, false
	}
	return append([]string(nil), info.InjectedIDs...), info.InjectedTokens, true
}

func (s *Server) registerStatusTool() {
	for _, t := range s.o.Core.Tools() {
		if t.Name == StatusToolName {
			return
		}
	}
	s.o.Core.RegisterTool(core.Tool{
		Name:        StatusToolName,
		Description: "MetaClaw's status: whether the learning host runs, its mode and version, and how many turns, sessions, skills and memories it holds.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		Call: func(ctx context.Context, _ core.Query, _ json.RawMessage) (any, error) {
			return s.status(ctx), nil
		},
	})
}

// StatusResult is the result of `status`.
type StatusResult struct {
	Host any      `json:"host"`
	RPC  RPCStats `json:"rpc"`
}

// RPCStats describe the socket server.
type RPCStats struct {
	Socket      string `json:"socket,omitempty"`
	Connections int64  `json:"connections"`
	Served      int64  `json:"connections_served"`
	Traces      int    `json:"traces"`
	Version     string `json:"version,omitempty"`
}

func (s *Server) status(ctx context.Context) StatusResult {
	var host any
	if s.o.Status != nil {
		host = s.o.Status(ctx)
	} else if s.o.Core != nil {
		st, err := s.o.Core.Stats(ctx)
		if err != nil {
			host = map[string]any{"ok": false, "error": err.Error()}
		} else {
			host = st
		}
	}
	s.mu.Lock()
	path := s.path
	s.mu.Unlock()
	return StatusResult{Host: host, RPC: RPCStats{
		Socket: path, Connections: s.active.Load(), Served: s.served.Load(), Traces: s.traces.len(), Version: s.o.Version,
	}}
}

// ShutdownToken is the token that authorises `shutdown` ("" = never).
func (s *Server) ShutdownToken() string { return s.o.ShutdownToken }

func (s *Server) checkToken(token string) bool {
	want := s.o.ShutdownToken
	return want != "" && s.o.Shutdown != nil && subtle.ConstantTimeCompare([]byte(token), []byte(want)) == 1
}

// turnOf builds the store record of a hook-observed turn.
func turnOf(p protocol.ObserveParams, agent, turnType string) *store.Turn {
	req := map[string]any{"messages": []map[string]string{{"role": "user", "content": p.UserText}}}
	if p.Model != "" {
		req["model"] = p.Model
	}
	reqJSON, _ := json.Marshal(req)
	injected, _ := json.Marshal(p.InjectedIDs)
	if p.InjectedIDs == nil {
		injected = []byte("[]")
	}
	status := 200
	if p.Error != "" {
		status = 500
	}
	client := p.Client
	if client == "" {
		client = "unknown"
	}
	scope := core.Scope{UserID: p.Scope.UserID, WorkspaceID: p.Scope.WorkspaceID, Explicit: p.Scope.MemoryScope}
	t := &store.Turn{
		SessionID: p.Session, Agent: agent, TurnType: turnType,
		ClientAPI: "hook:" + client, Model: p.Model,
		RequestJSON: string(reqJSON), ResponseText: p.AssistantText, ToolCallsJSON: string(p.ToolCalls),
		InputTokens: p.Usage.InputTokens, OutputTokens: p.Usage.OutputTokens, LatencyMS: p.LatencyMS,
		Status: status, Error: p.Error, InjectedJSON: string(injected), InjectedTokens: p.InjectedTokens,
		UserID: scope.UserID, WorkspaceID: scope.WorkspaceID, MemoryScope: scope.Key(), CreatedAt: p.At,
	}
	if len(p.ToolCalls) == 0 {
		t.ToolCallsJSON = "[]"
	}
	return t
}
