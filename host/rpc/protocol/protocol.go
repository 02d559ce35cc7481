// Package protocol is the wire contract of the host's JSON-RPC socket and of
// the plugin processes' stdio servers: method names, parameter and result
// types, error codes, a bounded NDJSON stream, a request multiplexer and a
// client. It is deliberately light (no store, no tokenizer) so that one-shot
// hook processes start fast.
//
// Framing is JSON-RPC 2.0, one JSON object per line (NDJSON), as written by
// sourcegraph/jsonrpc2's plain object codec. Unlike that codec, the stream
// here bounds the size of a line and answers a malformed line with a JSON-RPC
// error instead of closing the connection.
package protocol

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// Methods served by the host socket (and relayed by `metaclaw plugin serve`).
const (
	MethodPing          = "ping"
	MethodStatus        = "status"
	MethodContext       = "context"
	MethodTraceRegister = "trace.register"
	MethodObserve       = "observe"
	MethodAgentEnd      = "agent.end"
	MethodSessionStart  = "session.start"
	MethodSessionEnd    = "session.end"
	MethodSessionReset  = "session.reset"
	MethodToolsList     = "tools.list"
	MethodToolsCall     = "tools.call"
	MethodShutdown      = "shutdown"
)

// HostMethods lists the host socket's methods in documentation order.
var HostMethods = []string{
	MethodPing, MethodStatus, MethodContext, MethodTraceRegister, MethodObserve, MethodAgentEnd,
	MethodSessionStart, MethodSessionEnd, MethodSessionReset, MethodToolsList, MethodToolsCall, MethodShutdown,
}

// Error codes. The -327xx/-326xx range is JSON-RPC's own; -320xx are ours.
const (
	CodeParseError      = -32700
	CodeInvalidRequest  = -32600
	CodeMethodNotFound  = -32601
	CodeInvalidParams   = -32602
	CodeInternal        = -32603
	CodeHostUnavailable = -32000 // the host could not be reached in time (plugin side)
	CodeUnknownTool     = -32001
	CodeToolFailed      = -32002
	CodeUnauthorized    = -32003
	CodeTooLarge        = -32004
	CodeBusy            = -32005 // too many requests in flight on this connection
	CodeTimeout         = -32006
)

// DefaultMaxMessage bounds one JSON-RPC message (one line) in bytes.
const DefaultMaxMessage = 8 << 20

// SocketPath is the host's JSON-RPC socket for a state dir.
func SocketPath(home string) string { return filepath.Join(home, "run", "metaclaw.sock") }

// TokenPath holds the token that authorises `shutdown` over the socket.
func TokenPath(home string) string { return filepath.Join(home, "run", "rpc.token") }

// Errorf builds a JSON-RPC error.
func Errorf(code int64, format string, args ...any) *jsonrpc2.Error {
	return &jsonrpc2.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// IsCode reports whether err is (or wraps) a JSON-RPC error with the code.
func IsCode(err error, code int64) bool {
	var e *jsonrpc2.Error
	return errors.As(err, &e) && e.Code == code
}

// Scope names whose memory a turn may see (MetaClaw's X-User-Id,
// X-Workspace-Id and X-Memory-Scope).
type Scope struct {
	UserID      string `json:"user_id,omitempty"`
	WorkspaceID string `json:"workspace_id,omitempty"`
	MemoryScope string `json:"memory_scope,omitempty"`
}

// Identity says on whose behalf a call is made.
type Identity struct {
	Agent   string `json:"agent,omitempty"`   // default "default"
	Session string `json:"session,omitempty"` // the client's session id
	Scope   Scope  `json:"scope,omitempty"`
	Client  string `json:"client,omitempty"` // openclaw, picoclaw, hermes, claude, mcp, …
}

// ContextParams asks for the block to inject before an LLM call. Give either
// user_texts (oldest first) or messages (an OpenAI- or Anthropic-style chat
// message array; the last three user texts are used).
type ContextParams struct {
	Identity
	TurnType  string          `json:"turn_type,omitempty"` // main (default) | side: side turns get nothing
	UserTexts []string        `json:"user_texts,omitempty"`
	Messages  json.RawMessage `json:"messages,omitempty"`
	// TraceID, when set, is registered like trace.register so that the proxy
	// files the upstream request under this agent and session.
	TraceID string `json:"trace_id,omitempty"`
}

// ContextResult is the rendered block (markers included) or empty.
type ContextResult struct {
	Block   string   `json:"block"`
	IDs     []string `json:"ids"`
	Tokens  int      `json:"tokens"`
	Agent   string   `json:"agent,omitempty"`
	Session string   `json:"session,omitempty"`
	// Skipped says why the block is empty when it is not simply "nothing
	// relevant" (side turn, host unavailable, agent not allowed).
	Skipped string `json:"skipped,omitempty"`
}

// TraceParams maps a W3C trace id (the traceparent the client's LLM request
// will carry) to an agent and session.
type TraceParams struct {
	Identity
	TraceID    string `json:"trace_id"`
	TurnType   string `json:"turn_type,omitempty"`
	TTLSeconds int    `json:"ttl_seconds,omitempty"` // default 1800, at most 86400
}

// TraceResult acknowledges a registration.
type TraceResult struct {
	OK        bool      `json:"ok"`
	ExpiresAt time.Time `json:"expires_at"`
}

// Usage is token accounting as the client reported it.
type Usage struct {
	InputTokens  int `json:"input_tokens,omitempty"`
	OutputTokens int `json:"output_tokens,omitempty"`
}

// Observe modes.
const (
	ObserveAuto   = "auto"   // skip turns the proxy already recorded (same trace id)
	ObserveAlways = "always" // record even so
)

// ObserveParams is one completed turn seen by a hook.
type ObserveParams struct {
	Identity
	TurnType      string          `json:"turn_type,omitempty"`
	UserText      string          `json:"user_text,omitempty"` // empty: the last prompt seen by `context` for this session
	AssistantText string          `json:"assistant_text,omitempty"`
	Model         string          `json:"model,omitempty"`
	Usage         Usage           `json:"usage,omitempty"`
	LatencyMS     int64           `json:"latency_ms,omitempty"`
	ToolCalls     json.RawMessage `json:"tool_calls,omitempty"` // JSON array
	Error         string          `json:"error,omitempty"`      // the turn failed
	TraceID       string          `json:"trace_id,omitempty"`
	// TurnKey makes recording idempotent: a key seen before is not recorded
	// again (spool replays, two hooks reporting one turn).
	TurnKey        string    `json:"turn_key,omitempty"`
	InjectedIDs    []string  `json:"injected_ids,omitempty"`
	InjectedTokens int       `json:"injected_tokens,omitempty"`
	Mode           string    `json:"mode,omitempty"` // auto (default) | always
	At             time.Time `json:"at,omitempty"`   // when the turn ended (kept across spooling)
}

// ObserveResult says whether a store.Turn was recorded.
type ObserveResult struct {
	Recorded bool   `json:"recorded"`
	Reason   string `json:"reason,omitempty"` // why not: duplicate, proxy, side, …
	Session  string `json:"session,omitempty"`
}

// AgentEndParams closes one agent run (a turn, possibly several LLM calls).
// Turn, when given, is recorded exactly like observe.
type AgentEndParams struct {
	Identity
	TraceID string         `json:"trace_id,omitempty"`
	RunID   string         `json:"run_id,omitempty"`
	Success *bool          `json:"success,omitempty"`
	Turn    *ObserveParams `json:"turn,omitempty"`
}

// AgentEndResult acknowledges agent.end.
type AgentEndResult struct {
	OK       bool   `json:"ok"`
	Recorded bool   `json:"recorded"`
	Reason   string `json:"reason,omitempty"`
}

// SessionStartParams announces a new session (a client's session-start
// hook): the agent's earlier pending turns are ingested into memory now,
// before the session's first retrieval.
type SessionStartParams = SessionEndParams

// SessionStartResult says whether the session was new to the host.
type SessionStartResult struct {
	Started bool   `json:"started"`
	Reason  string `json:"reason,omitempty"` // why not
}

// SessionEndParams ends (session.end) or resets (session.reset) a session
// (and, as SessionStartParams, starts one).
type SessionEndParams struct {
	Identity
	Reason string `json:"reason,omitempty"`
}

// SessionEndResult says whether core.EndSession ran.
type SessionEndResult struct {
	Ended  bool   `json:"ended"`
	Reason string `json:"reason,omitempty"` // why not
}

// ToolInfo describes one core tool.
type ToolInfo struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// ToolsListResult lists the core's tools, by name.
type ToolsListResult struct {
	Tools []ToolInfo `json:"tools"`
}

// ToolsCallParams runs one tool on behalf of an agent and session.
type ToolsCallParams struct {
	Identity
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// ToolsCallResult is the tool's JSON result.
type ToolsCallResult struct {
	Result json.RawMessage `json:"result"`
}

// PingResult answers ping.
type PingResult struct {
	Pong    bool   `json:"pong"`
	Version string `json:"version,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Host    *bool  `json:"host,omitempty"` // plugin side: whether the host answered
}

// ShutdownParams may carry the token from run/rpc.token.
type ShutdownParams struct {
	Token string `json:"token,omitempty"`
}

// ShutdownResult acknowledges shutdown; Stopping says whether anything stops.
type ShutdownResult struct {
	OK       bool   `json:"ok"`
	Stopping bool   `json:"stopping"`
	Reason   string `json:"reason,omitempty"`
}
