package proxy

import (
	"net/http"
	"strings"

	"github.com/metaclaw-go/metaclaw/host/core"
)

// traceID returns the trace id of a W3C traceparent header
// ("00-<32 hex trace id>-<16 hex span id>-<2 hex flags>"), or "".
func traceID(traceparent string) string {
	parts := strings.Split(strings.TrimSpace(traceparent), "-")
	if len(parts) < 4 || len(parts[0]) != 2 || parts[0] == "ff" || len(parts[1]) != 32 || len(parts[2]) != 16 {
		return ""
	}
	id := strings.ToLower(parts[1])
	if strings.Trim(id, "0123456789abcdef") != "" || id == strings.Repeat("0", 32) {
		return ""
	}
	return id
}

// applyTrace fills the identity a request left open from what a client hook
// registered for its trace id: the agent when neither the path nor
// X-Agent-Id named one, the session when it was only derived, and a side
// turn type when none was given.
func (s *Server) applyTrace(r *http.Request, id *identity) {
	tid := traceID(r.Header.Get("traceparent"))
	if tid == "" {
		return
	}
	agent, session, turnType, ok := s.o.ResolveTrace(tid)
	if !ok {
		return
	}
	if r.PathValue("agent") == "" && strings.TrimSpace(r.Header.Get("X-Agent-Id")) == "" && agent != "" && validAgentID(agent) {
		id.agent = agent
	}
	if id.derived && session != "" && len(session) <= 256 {
		id.session, id.derived = session, false
	}
	if turnType == core.TurnSide && r.Header.Get("X-Turn-Type") == "" {
		id.turnType = core.TurnSide
	}
}

// applyBlock does what applyTrace does for clients that send no trace id:
// a request that already carries an injected block is matched, through the
// block's key, to the hook that injected it.
func (s *Server) applyBlock(r *http.Request, req *request, id *identity) {
	block := req.injectedBlock()
	if block == "" {
		return
	}
	agent, session, turnType, ok := s.o.ResolveTrace(core.BlockKey(block))
	if !ok {
		return
	}
	if r.PathValue("agent") == "" && strings.TrimSpace(r.Header.Get("X-Agent-Id")) == "" && agent != "" && validAgentID(agent) {
		id.agent = agent
	}
	if id.derived && session != "" && len(session) <= 256 {
		id.session, id.derived = session, false
	}
	if turnType == core.TurnSide && r.Header.Get("X-Turn-Type") == "" {
		id.turnType = core.TurnSide
	}
}

// hookInjection records, with a request that already carries the block, the
// ids and tokens of what the hook injected (found by trace id, else by the
// block's key), so the turn's record says what was in it.
func (s *Server) hookInjection(r *http.Request, t *turn) {
	if s.o.ResolveInjected == nil {
		return
	}
	keys := []string{traceID(r.Header.Get("traceparent"))}
	if b := t.req.injectedBlock(); b != "" {
		keys = append(keys, core.BlockKey(b))
	}
	for _, k := range keys {
		if k == "" {
			continue
		}
		if ids, tokens, ok := s.o.ResolveInjected(k); ok {
			t.inj.IDs, t.inj.Tokens = ids, tokens
			return
		}
	}
}
