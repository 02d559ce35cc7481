package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"time"
	"unicode"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/msgcontent"
	"github.com/metaclaw-go/metaclaw/host/rpc/protocol"
	"github.com/metaclaw-go/metaclaw/host/usertext"
	"github.com/metaclaw-go/metaclaw/host/version"
	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// Limits on what one call may carry.
const (
	maxUserTexts  = 3
	maxTextBytes  = 256 << 10
	maxTTL        = 24 * time.Hour
	endDedupe     = 30 * time.Second // a second end of a silent session within this is a no-op
	endedTraceTTL = 2 * time.Minute
)

var (
	agentPattern   = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$`)
	tracePattern   = regexp.MustCompile(`^[0-9a-f]{32}$`)
	allZeroTraceID = strings.Repeat("0", 32)
)

func validTraceID(id string) bool { return tracePattern.MatchString(id) && id != allZeroTraceID }

func (s *Server) routes() {
	m := s.mux
	m.Handle(protocol.MethodPing, func(ctx context.Context, _ json.RawMessage) (any, error) {
		v := s.o.Version
		if v == "" {
			v = version.Version
		}
		return protocol.PingResult{Pong: true, Version: v, PID: os.Getpid()}, nil
	})
	m.Handle(protocol.MethodStatus, func(ctx context.Context, _ json.RawMessage) (any, error) {
		return s.status(ctx), nil
	})
	m.Handle(protocol.MethodContext, s.handleContext)
	m.Handle(protocol.MethodTraceRegister, s.handleTrace)
	m.Handle(protocol.MethodObserve, func(ctx context.Context, raw json.RawMessage) (any, error) {
		var p protocol.ObserveParams
		if err := protocol.Decode(raw, &p); err != nil {
			return nil, err
		}
		return s.observe(p)
	})
	m.Handle(protocol.MethodAgentEnd, s.handleAgentEnd)
	m.Handle(protocol.MethodSessionStart, s.handleStart)
	m.Handle(protocol.MethodSessionEnd, func(ctx context.Context, raw json.RawMessage) (any, error) {
		return s.handleEnd(ctx, raw, false)
	})
	m.Handle(protocol.MethodSessionReset, func(ctx context.Context, raw json.RawMessage) (any, error) {
		return s.handleEnd(ctx, raw, true)
	})
	m.Handle(protocol.MethodToolsList, s.handleToolsList)
	m.Handle(protocol.MethodToolsCall, s.handleToolsCall)
	m.Handle(protocol.MethodShutdown, func(ctx context.Context, raw json.RawMessage) (any, error) {
		var p protocol.ShutdownParams
		if err := protocol.Decode(raw, &p); err != nil {
			return nil, err
		}
		if !s.checkToken(p.Token) {
			return protocol.ShutdownResult{OK: true, Stopping: false,
				Reason: "acknowledged; the host keeps running (stopping it needs the token in run/rpc.token, or `metaclaw stop`)"}, nil
		}
		s.o.Log.Info().Msg("shutdown requested over the rpc socket")
		go s.o.Shutdown()
		return protocol.ShutdownResult{OK: true, Stopping: true}, nil
	})
}

// identity validates and defaults an Identity.
func identity(id protocol.Identity, needSession bool) (agent string, err error) {
	agent = strings.TrimSpace(id.Agent)
	if agent == "" {
		agent = "default"
	}
	if !agentPattern.MatchString(agent) {
		return "", protocol.Errorf(protocol.CodeInvalidParams, "invalid params: agent %q: use letters, digits and . _ : @ - (at most 128)", textclip.Prefix(agent, 64))
	}
	if needSession && strings.TrimSpace(id.Session) == "" {
		return "", protocol.Errorf(protocol.CodeInvalidParams, "invalid params: session is required")
	}
	if err := checkID("session", id.Session, 256); err != nil {
		return "", err
	}
	for name, v := range map[string]string{"scope.user_id": id.Scope.UserID, "scope.workspace_id": id.Scope.WorkspaceID, "scope.memory_scope": id.Scope.MemoryScope, "client": id.Client} {
		if err := checkID(name, v, 256); err != nil {
			return "", err
		}
	}
	return agent, nil
}

func checkID(name, v string, max int) error {
	if len(v) > max {
		return protocol.Errorf(protocol.CodeInvalidParams, "invalid params: %s is longer than %d bytes", name, max)
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return protocol.Errorf(protocol.CodeInvalidParams, "invalid params: %s contains control characters", name)
		}
	}
	return nil
}

func turnType(tt string) (string, error) {
	switch strings.ToLower(strings.TrimSpace(tt)) {
	case "", core.TurnMain:
		return core.TurnMain, nil
	case core.TurnSide:
		return core.TurnSide, nil
	}
	return "", protocol.Errorf(protocol.CodeInvalidParams, "invalid params: turn_type must be main or side")
}

func scopeOf(id protocol.Identity) core.Scope {
	return core.Scope{UserID: id.Scope.UserID, WorkspaceID: id.Scope.WorkspaceID, Explicit: id.Scope.MemoryScope}
}

func promptKey(agent, session string) string { return agent + "\x00" + session }

func (s *Server) handleContext(ctx context.Context, raw json.RawMessage) (any, error) {
	var p protocol.ContextParams
	if err := protocol.Decode(raw, &p); err != nil {
		return nil, err
	}
	agent, err := identity(p.Identity, false)
	if err != nil {
		return nil, err
	}
	tt, err := turnType(p.TurnType)
	if err != nil {
		return nil, err
	}
	if s.o.Activity != nil && tt == core.TurnMain {
		s.o.Activity() // the user is at their agent (the training scheduler steps aside)
	}
	if p.TraceID != "" {
		if !validTraceID(p.TraceID) {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: trace_id must be 32 lowercase hex digits")
		}
		s.traces.register(p.TraceID, TraceInfo{Agent: agent, Session: p.Session, TurnType: tt, Client: p.Client}, s.o.TraceTTL)
	}
	texts, err := userTexts(p.UserTexts, p.Messages)
	if err != nil {
		return nil, err
	}
	res := protocol.ContextResult{Agent: agent, Session: p.Session, IDs: []string{}}
	if p.Session != "" && len(texts) > 0 {
		s.prompts.put(promptKey(agent, p.Session), texts[len(texts)-1])
	}
	if tt == core.TurnSide {
		res.Skipped = "side turn"
		return res, nil
	}
	if len(texts) == 0 {
		res.Skipped = "no user text"
		return res, nil
	}
	inj := s.o.Core.Context(ctx, core.Query{Agent: agent, SessionID: p.Session, Scope: scopeOf(p.Identity), UserTexts: texts})
	res.Block, res.Tokens = inj.Block, inj.Tokens
	if inj.IDs != nil {
		res.IDs = inj.IDs
	}
	info := TraceInfo{Agent: agent, Session: p.Session, TurnType: tt, Client: p.Client, InjectedIDs: res.IDs, InjectedTokens: res.Tokens}
	if p.TraceID != "" && inj.Block != "" {
		// The proxy records the turn (--via both): it files the ids and
		// tokens of what this hook injected.
		s.traces.register(p.TraceID, info, s.o.TraceTTL)
	}
	if inj.Block != "" && p.Session != "" {
		// Clients without trace ids (Claude Code): the block itself links the
		// proxied request to this hook's identity.
		key := core.BlockKey(inj.Block)
		s.traces.register(key, info, s.o.TraceTTL)
		s.blocks.put(promptKey(agent, p.Session), key)
	}
	return res, nil
}

// userTexts returns the last few user texts, oldest first, cleaned of
// injected blocks and agent-internal context.
func userTexts(given []string, messages json.RawMessage) ([]string, error) {
	var out []string
	if len(given) > 0 {
		for _, t := range given {
			if len(t) > maxTextBytes {
				t = t[len(t)-maxTextBytes:]
			}
			if t = usertext.Clean(t); t != "" {
				out = append(out, t)
			}
		}
	} else if m := bytes.TrimSpace(messages); len(m) > 0 && string(m) != "null" {
		var msgs []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		}
		if err := json.Unmarshal(m, &msgs); err != nil {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: messages must be an array of {role, content}")
		}
		for i := len(msgs) - 1; i >= 0 && len(out) < maxUserTexts; i-- {
			if msgs[i].Role != "user" {
				continue
			}
			if t := usertext.Clean(msgcontent.Text(msgs[i].Content)); t != "" {
				out = append([]string{t}, out...)
			}
		}
	}
	if len(out) > maxUserTexts {
		out = out[len(out)-maxUserTexts:]
	}
	return out, nil
}

func (s *Server) handleTrace(ctx context.Context, raw json.RawMessage) (any, error) {
	var p protocol.TraceParams
	if err := protocol.Decode(raw, &p); err != nil {
		return nil, err
	}
	if !validTraceID(p.TraceID) {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: trace_id must be 32 lowercase hex digits (the traceparent trace id)")
	}
	agent, err := identity(p.Identity, false)
	if err != nil {
		return nil, err
	}
	tt, err := turnType(p.TurnType)
	if err != nil {
		return nil, err
	}
	ttl := s.o.TraceTTL
	if p.TTLSeconds > 0 {
		ttl = min(time.Duration(p.TTLSeconds)*time.Second, maxTTL)
	}
	exp := s.traces.register(p.TraceID, TraceInfo{Agent: agent, Session: p.Session, TurnType: tt, Client: p.Client}, ttl)
	return protocol.TraceResult{OK: true, ExpiresAt: exp}, nil
}

// observe records one hook-observed turn, unless it is a duplicate or the
// proxy already recorded it.
func (s *Server) observe(p protocol.ObserveParams) (protocol.ObserveResult, error) {
	agent, err := identity(p.Identity, true)
	if err != nil {
		return protocol.ObserveResult{}, err
	}
	tt, err := turnType(p.TurnType)
	if err != nil {
		return protocol.ObserveResult{}, err
	}
	mode := strings.ToLower(p.Mode)
	switch mode {
	case "", protocol.ObserveAuto:
		mode = protocol.ObserveAuto
	case protocol.ObserveAlways:
	default:
		return protocol.ObserveResult{}, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: mode must be auto or always")
	}
	if p.TraceID != "" && !validTraceID(p.TraceID) {
		return protocol.ObserveResult{}, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: trace_id must be 32 lowercase hex digits")
	}
	if err := checkID("turn_key", p.TurnKey, 512); err != nil {
		return protocol.ObserveResult{}, err
	}
	if len(p.ToolCalls) > 0 {
		if tc := bytes.TrimSpace(p.ToolCalls); len(tc) == 0 || tc[0] != '[' {
			return protocol.ObserveResult{}, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: tool_calls must be an array")
		}
	}
	res := protocol.ObserveResult{Session: p.Session}
	if mode == protocol.ObserveAuto && p.TraceID != "" && s.traces.proxied(p.TraceID) {
		res.Reason = "recorded by the proxy (same trace id)"
		return res, nil
	}
	if mode == protocol.ObserveAuto && p.TraceID == "" {
		if key, ok := s.blocks.get(promptKey(agent, p.Session)); ok && s.traces.proxied(key) {
			s.blocks.del(promptKey(agent, p.Session))
			res.Reason = "recorded by the proxy (same injected block)"
			return res, nil
		}
	}
	if p.TurnKey != "" {
		if _, seen := s.turns.get(p.TurnKey); seen {
			res.Reason = "duplicate turn_key"
			return res, nil
		}
	}
	if p.UserText == "" {
		p.UserText, _ = s.prompts.get(promptKey(agent, p.Session))
	}
	p.UserText = usertext.Clean(textclip.Suffix(p.UserText, maxTextBytes))
	p.AssistantText = textclip.Prefix(p.AssistantText, 4*maxTextBytes)
	if p.UserText == "" && strings.TrimSpace(p.AssistantText) == "" && p.Error == "" {
		res.Reason = "empty turn"
		return res, nil
	}
	if p.At.IsZero() || p.At.After(time.Now().Add(time.Minute)) {
		p.At = time.Now()
	}
	if p.TurnKey != "" && !s.turns.add(p.TurnKey, struct{}{}) {
		res.Reason = "duplicate turn_key"
		return res, nil
	}
	s.o.Core.Observe(turnOf(p, agent, tt))
	s.ended.del(p.Session)
	res.Recorded = true
	return res, nil
}

func (s *Server) handleAgentEnd(ctx context.Context, raw json.RawMessage) (any, error) {
	var p protocol.AgentEndParams
	if err := protocol.Decode(raw, &p); err != nil {
		return nil, err
	}
	if _, err := identity(p.Identity, false); err != nil {
		return nil, err
	}
	res := protocol.AgentEndResult{OK: true}
	if p.Turn != nil {
		t := *p.Turn
		if t.Agent == "" {
			t.Identity = p.Identity
		}
		if t.TraceID == "" {
			t.TraceID = p.TraceID
		}
		if t.Error == "" && p.Success != nil && !*p.Success {
			t.Error = "agent run failed"
		}
		o, err := s.observe(t)
		if err != nil {
			return nil, err
		}
		res.Recorded, res.Reason = o.Recorded, o.Reason
	}
	if validTraceID(p.TraceID) {
		s.traces.shorten(p.TraceID, endedTraceTTL)
	}
	return res, nil
}

// sessionParams decodes the params of session.start/end/reset; the reason
// defaults to def.
func sessionParams(raw json.RawMessage, def string) (p protocol.SessionEndParams, agent, reason string, err error) {
	if err = protocol.Decode(raw, &p); err != nil {
		return p, "", "", err
	}
	if agent, err = identity(p.Identity, true); err != nil {
		return p, "", "", err
	}
	reason = strings.TrimSpace(p.Reason)
	if reason == "" {
		reason = def
	}
	return p, agent, reason, checkID("reason", reason, 64)
}

func (s *Server) handleStart(ctx context.Context, raw json.RawMessage) (any, error) {
	p, agent, reason, err := sessionParams(raw, core.StartAnnounced)
	if err != nil {
		return nil, err
	}
	if !s.o.Core.StartSession(ctx, core.SessionStart{SessionID: p.Session, Agent: agent, Scope: scopeOf(p.Identity), Reason: reason}) {
		return protocol.SessionStartResult{Reason: "seen before"}, nil
	}
	return protocol.SessionStartResult{Started: true}, nil
}

func (s *Server) handleEnd(ctx context.Context, raw json.RawMessage, reset bool) (any, error) {
	def := "end"
	if reset {
		def = "reset"
	}
	p, agent, reason, err := sessionParams(raw, def)
	if err != nil {
		return nil, err
	}
	if reset {
		s.prompts.del(promptKey(agent, p.Session))
		s.traces.dropSession(p.Session)
	}
	if at, ok := s.ended.get(p.Session); ok && time.Since(at) < endDedupe {
		return protocol.SessionEndResult{Ended: false, Reason: "already ended"}, nil
	}
	if err := s.o.Core.EndSession(ctx, p.Session, reason); err != nil {
		return nil, protocol.Errorf(protocol.CodeInternal, "end session: %v", err)
	}
	s.ended.put(p.Session, time.Now())
	return protocol.SessionEndResult{Ended: true}, nil
}

func (s *Server) handleToolsList(ctx context.Context, _ json.RawMessage) (any, error) {
	tools := s.o.Core.Tools()
	out := protocol.ToolsListResult{Tools: make([]protocol.ToolInfo, 0, len(tools))}
	for _, t := range tools {
		schema := t.InputSchema
		if len(bytes.TrimSpace(schema)) == 0 || !json.Valid(schema) {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		out.Tools = append(out.Tools, protocol.ToolInfo{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return out, nil
}

func (s *Server) handleToolsCall(ctx context.Context, raw json.RawMessage) (any, error) {
	var p protocol.ToolsCallParams
	if err := protocol.Decode(raw, &p); err != nil {
		return nil, err
	}
	agent, err := identity(p.Identity, false)
	if err != nil {
		return nil, err
	}
	if p.Name == "" {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: name is required")
	}
	args := bytes.TrimSpace(p.Arguments)
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	if args[0] != '{' {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: arguments must be an object")
	}
	q := core.Query{Agent: agent, SessionID: p.Session, Scope: scopeOf(p.Identity)}
	result, err := s.o.Core.CallTool(ctx, p.Name, q, usertext.CleanToolArgs(args))
	if err != nil {
		var unknown core.ErrUnknownTool
		if errors.As(err, &unknown) {
			return nil, protocol.Errorf(protocol.CodeUnknownTool, "%v", err)
		}
		return nil, protocol.Errorf(protocol.CodeToolFailed, "tool %s failed: %v", textclip.Prefix(p.Name, 64), err)
	}
	b, err := json.Marshal(result)
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeToolFailed, "tool %s returned an unencodable result: %v", textclip.Prefix(p.Name, 64), err)
	}
	return protocol.ToolsCallResult{Result: b}, nil
}
