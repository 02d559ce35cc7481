package plugin

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/msgcontent"
	"github.com/metaclaw-go/metaclaw/host/rpc/protocol"
	"github.com/metaclaw-go/metaclaw/host/usertext"
)

// OpenClaw hook methods served by `plugin serve --client openclaw`. Params
// are {event, ctx} exactly as OpenClaw passes them to the hook (the shim
// drops the system prompt, the tool catalogue and old history first). The
// result is what the hook returns to OpenClaw ({} = nothing).
const (
	MethodOCBeforePromptBuild = "openclaw.before_prompt_build"
	MethodOCLLMInput          = "openclaw.llm_input"
	MethodOCLLMOutput         = "openclaw.llm_output"
	MethodOCAgentEnd          = "openclaw.agent_end"
	MethodOCSessionStart      = "openclaw.session_start"
	MethodOCSessionEnd        = "openclaw.session_end"
	MethodOCBeforeReset       = "openclaw.before_reset"
)

// OpenClawMethods lists them in documentation order.
var OpenClawMethods = []string{MethodOCBeforePromptBuild, MethodOCLLMInput, MethodOCLLMOutput, MethodOCAgentEnd, MethodOCSessionStart, MethodOCSessionEnd, MethodOCBeforeReset}

// OpenClawConfig is plugins.entries.metaclaw.config (see openclaw.plugin.json).
type OpenClawConfig struct {
	Agents       []string `json:"agents"`
	Inject       *bool    `json:"inject"`
	Observe      string   `json:"observe"`
	Tools        *bool    `json:"tools"`
	SideTriggers []string `json:"sideTriggers"`
	TimeoutMs    int      `json:"timeoutMs"`
	MemoryScope  string   `json:"memoryScope"`
	Binary       string   `json:"binary"`
	Home         string   `json:"home"`
}

var defaultSideTriggers = []string{"heartbeat", "cron", "memory"}

type openclaw struct {
	relay *Relay
	log   zerolog.Logger

	mu   sync.Mutex
	cfg  OpenClawConfig
	runs map[string]*ocRun
}

// ocRun is what one agent run (OpenClaw runId) left behind for later hooks.
type ocRun struct {
	agent, session, trace, turnType, prompt string
	ids                                     []string
	tokens                                  int
	started                                 time.Time
	observed                                bool
}

const maxRuns = 1024

func newOpenClaw(r *Relay, log zerolog.Logger) *openclaw {
	return &openclaw{relay: r, log: log, runs: map[string]*ocRun{}}
}

func (o *openclaw) configure(raw json.RawMessage) error {
	var c OpenClawConfig
	if err := protocol.Decode(raw, &c); err != nil {
		return err
	}
	switch c.Observe {
	case "", "auto", "always", "never":
	default:
		return protocol.Errorf(protocol.CodeInvalidParams, "invalid params: config.observe must be auto, always or never")
	}
	o.mu.Lock()
	o.cfg = c
	o.mu.Unlock()
	if c.TimeoutMs > 0 {
		o.relay.ContextTimeout = time.Duration(c.TimeoutMs) * time.Millisecond
	}
	return nil
}

func (o *openclaw) config() OpenClawConfig {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.cfg
}

// ocHook is the params of every openclaw.* method.
type ocHook struct {
	Event ocEvent `json:"event"`
	Ctx   ocCtx   `json:"ctx"`
}

type ocCtx struct {
	RunID string `json:"runId"`
	Trace struct {
		TraceID string `json:"traceId"`
	} `json:"trace"`
	AgentID         string `json:"agentId"`
	SessionKey      string `json:"sessionKey"`
	SessionID       string `json:"sessionId"`
	ModelProviderID string `json:"modelProviderId"`
	ModelID         string `json:"modelId"`
	Trigger         string `json:"trigger"`
}

type ocEvent struct {
	Prompt        string      `json:"prompt"`
	Messages      []ocMessage `json:"messages"`
	RunID         string      `json:"runId"`
	SessionID     string      `json:"sessionId"`
	Provider      string      `json:"provider"`
	Model         string      `json:"model"`
	AssistantText []string    `json:"assistantTexts"`
	LastAssistant *ocMessage  `json:"lastAssistant"`
	Usage         *ocUsage    `json:"usage"`
	Success       *bool       `json:"success"`
	Error         any         `json:"error"`
	DurationMs    int64       `json:"durationMs"`
	Reason        string      `json:"reason"`
}

type ocUsage struct {
	Input  int `json:"input"`
	Output int `json:"output"`
}

type ocMessage struct {
	Role     string          `json:"role"`
	Content  json.RawMessage `json:"content"`
	Usage    *ocUsage        `json:"usage"`
	Model    string          `json:"model"`
	Provider string          `json:"provider"`
}

type ocBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

func (m ocMessage) blocks() []ocBlock {
	c := strings.TrimSpace(string(m.Content))
	if c == "" || c == "null" {
		return nil
	}
	if c[0] == '"' {
		var s string
		_ = json.Unmarshal(m.Content, &s)
		return []ocBlock{{Type: "text", Text: s}}
	}
	var bs []ocBlock
	_ = json.Unmarshal(m.Content, &bs)
	return bs
}

// text is what the message says: its string, or its text blocks joined by
// newlines (msgcontent decides which blocks are text, for every reader).
func (m ocMessage) text() string { return msgcontent.Text(m.Content) }

// cleanUser is the user's own words of a stored OpenClaw message: without
// the timestamp, metadata blocks and runtime line OpenClaw wraps them in.
func cleanUser(s string) string { return usertext.Clean(s) }

func (o *openclaw) routes(m *protocol.Mux) {
	m.Handle(MethodOCBeforePromptBuild, o.hook(o.beforePromptBuild))
	m.Handle(MethodOCLLMInput, o.hook(o.llmInput))
	m.Handle(MethodOCLLMOutput, o.hook(o.llmOutput))
	m.Handle(MethodOCAgentEnd, o.hook(o.agentEnd))
	m.Handle(MethodOCSessionStart, o.hook(o.sessionStart))
	m.Handle(MethodOCSessionEnd, o.hook(o.sessionEnd))
	m.Handle(MethodOCBeforeReset, o.hook(o.beforeReset))
}

func (o *openclaw) hook(f func(context.Context, ocHook) (any, error)) protocol.HandlerFunc {
	return func(ctx context.Context, raw json.RawMessage) (any, error) {
		var h ocHook
		if err := protocol.Decode(raw, &h); err != nil {
			return nil, err
		}
		return f(ctx, h)
	}
}

// who resolves the agent/session/turn type of a hook, or ok=false when the
// agent is not in the allow list.
func (o *openclaw) who(c ocCtx, sessionFallback string) (agent, session, turnType string, ok bool) {
	cfg := o.config()
	agent = c.AgentID
	if agent == "" {
		agent = "main"
	}
	if len(cfg.Agents) > 0 && !slices.Contains(cfg.Agents, agent) {
		return "", "", "", false
	}
	session = c.SessionID
	if session == "" {
		session = sessionFallback
	}
	if session == "" {
		session = c.SessionKey
	}
	turnType = "main"
	side := cfg.SideTriggers
	if side == nil {
		side = defaultSideTriggers
	}
	if c.Trigger != "" && slices.Contains(side, c.Trigger) {
		turnType = "side"
	}
	return agent, session, turnType, true
}

func (o *openclaw) identity(agent, session string) protocol.Identity {
	id := protocol.Identity{Agent: agent, Session: session, Client: ClientOpenClaw}
	id.Scope.MemoryScope = o.config().MemoryScope
	return id
}

func (o *openclaw) run(id string) *ocRun {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.runs[id]
}

func (o *openclaw) remember(id string, r *ocRun) {
	if id == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.runs) >= maxRuns {
		var oldest string
		var at time.Time
		for k, v := range o.runs {
			if oldest == "" || v.started.Before(at) {
				oldest, at = k, v.started
			}
		}
		delete(o.runs, oldest)
	}
	o.runs[id] = r
}

var empty = struct{}{}

// beforePromptBuild asks the core for context and returns it as
// appendSystemContext: it lands at the end of the system prompt, where the
// proxy (if the client also goes through it) sees the markers and does not
// inject a second time.
func (o *openclaw) beforePromptBuild(ctx context.Context, h ocHook) (any, error) {
	agent, session, tt, ok := o.who(h.Ctx, "")
	if !ok {
		return empty, nil
	}
	var texts []string
	for _, m := range h.Event.Messages {
		if m.Role == "user" {
			if t := cleanUser(m.text()); t != "" {
				texts = append(texts, t)
			}
		}
	}
	prompt := cleanUser(h.Event.Prompt)
	if prompt != "" {
		texts = append(texts, prompt)
	}
	if len(texts) > 3 {
		texts = texts[len(texts)-3:]
	}
	runID := h.Ctx.RunID
	r := &ocRun{agent: agent, session: session, trace: h.Ctx.Trace.TraceID, turnType: tt, prompt: prompt, started: time.Now()}
	res := o.relay.Context(ctx, protocol.ContextParams{
		Identity: o.identity(agent, session), TurnType: tt, UserTexts: texts, TraceID: validTrace(h.Ctx.Trace.TraceID),
	})
	r.ids, r.tokens = res.IDs, res.Tokens
	o.remember(runID, r)
	cfg := o.config()
	if res.Block == "" || (cfg.Inject != nil && !*cfg.Inject) {
		return empty, nil
	}
	return map[string]string{"appendSystemContext": res.Block}, nil
}

func validTrace(id string) string {
	id = strings.ToLower(id)
	if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" || id == strings.Repeat("0", 32) {
		return ""
	}
	return id
}

// llmInput (re)registers the trace id, for runs whose before_prompt_build
// did not reach the host.
func (o *openclaw) llmInput(ctx context.Context, h ocHook) (any, error) {
	agent, session, tt, ok := o.who(h.Ctx, h.Event.SessionID)
	trace := validTrace(h.Ctx.Trace.TraceID)
	if !ok || trace == "" {
		return empty, nil
	}
	p := protocol.TraceParams{Identity: o.identity(agent, session), TraceID: trace, TurnType: tt}
	if err := o.relay.Call(ctx, protocol.MethodTraceRegister, p, nil); err != nil {
		o.log.Debug().Err(err).Msg("trace.register")
	}
	return empty, nil
}

// agentEnd records the turn: the prompt seen by before_prompt_build, the
// final assistant text, tool calls and usage of this run's messages.
func (o *openclaw) agentEnd(ctx context.Context, h ocHook) (any, error) {
	runID := h.Ctx.RunID
	if runID == "" {
		runID = h.Event.RunID
	}
	msgs := h.Event.Messages
	last := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			last = i
			break
		}
	}
	var prompt string
	if last >= 0 {
		prompt = cleanUser(msgs[last].text())
	}
	var assistant, model string
	var usage protocol.Usage
	var calls []map[string]any
	for _, m := range msgs[last+1:] {
		if m.Role != "assistant" {
			continue
		}
		if t := m.text(); t != "" {
			assistant = t
		}
		if m.Model != "" {
			model = m.Model
		}
		if m.Usage != nil {
			usage.InputTokens += m.Usage.Input
			usage.OutputTokens += m.Usage.Output
		}
		for _, b := range m.blocks() {
			if b.Type == "toolCall" || b.Type == "tool_use" {
				calls = append(calls, map[string]any{"id": b.ID, "name": b.Name, "arguments": b.Arguments})
			}
		}
	}
	errText := ""
	if h.Event.Success != nil && !*h.Event.Success {
		errText = "agent run failed"
		if s, ok := h.Event.Error.(string); ok && s != "" {
			errText = s
		}
	}
	return o.observe(ctx, h, runID, prompt, assistant, model, usage, calls, errText)
}

// llmOutput records the turn when agent_end did not (the Gateway runs
// agent_end fire-and-forget).
func (o *openclaw) llmOutput(ctx context.Context, h ocHook) (any, error) {
	runID := h.Ctx.RunID
	if runID == "" {
		runID = h.Event.RunID
	}
	assistant := ""
	if n := len(h.Event.AssistantText); n > 0 {
		assistant = h.Event.AssistantText[n-1]
	}
	if assistant == "" && h.Event.LastAssistant != nil {
		assistant = h.Event.LastAssistant.text()
	}
	var usage protocol.Usage
	if h.Event.Usage != nil {
		usage = protocol.Usage{InputTokens: h.Event.Usage.Input, OutputTokens: h.Event.Usage.Output}
	}
	return o.observe(ctx, h, runID, "", assistant, h.Event.Model, usage, nil, "")
}

func (o *openclaw) observe(ctx context.Context, h ocHook, runID, prompt, assistant, model string, usage protocol.Usage, calls []map[string]any, errText string) (any, error) {
	cfg := o.config()
	if cfg.Observe == "never" {
		return empty, nil
	}
	r := o.run(runID)
	agent, session, tt, ok := o.who(h.Ctx, h.Event.SessionID)
	if !ok {
		return empty, nil
	}
	o.mu.Lock()
	if r != nil {
		if r.observed {
			o.mu.Unlock()
			return empty, nil
		}
		r.observed = true
	}
	o.mu.Unlock()
	p := protocol.ObserveParams{
		Identity: o.identity(agent, session), TurnType: tt, UserText: prompt, AssistantText: assistant,
		Model: model, Usage: usage, Error: errText, TraceID: validTrace(h.Ctx.Trace.TraceID),
		Mode: cfg.Observe, At: time.Now().UTC(), LatencyMS: h.Event.DurationMs,
	}
	if p.Mode == "" {
		p.Mode = protocol.ObserveAuto
	}
	if p.Model == "" {
		p.Model = h.Ctx.ModelID
	}
	if runID != "" {
		p.TurnKey = "openclaw:" + runID
	}
	if r != nil {
		if r.prompt != "" {
			p.UserText = r.prompt
		}
		p.InjectedIDs, p.InjectedTokens = r.ids, r.tokens
		if p.LatencyMS == 0 {
			p.LatencyMS = time.Since(r.started).Milliseconds()
		}
	}
	if len(calls) > 0 {
		p.ToolCalls, _ = json.Marshal(calls)
	}
	if _, err := o.relay.Deliver(ctx, protocol.MethodObserve, p); err != nil {
		o.log.Warn().Err(err).Msg("observe refused by the host")
	}
	return empty, nil
}

// hookSession is the agent and session a session hook is about
// (event.sessionId wins over ctx's); ok false when there is none to act on.
func (o *openclaw) hookSession(h ocHook) (agent, session string, ok bool) {
	agent, session, _, ok = o.who(h.Ctx, h.Event.SessionID)
	if h.Event.SessionID != "" {
		session = h.Event.SessionID
	}
	return agent, session, ok && session != ""
}

// sessionStart (Gateway mode: a new chat, /new, /reset) lets the host
// ingest the agent's earlier pending turns before the first prompt of the
// new session; without it the first prompt does the same, a little later.
func (o *openclaw) sessionStart(ctx context.Context, h ocHook) (any, error) {
	agent, session, ok := o.hookSession(h)
	if !ok {
		return empty, nil
	}
	var res protocol.SessionStartResult
	if err := o.relay.Call(ctx, protocol.MethodSessionStart, protocol.SessionStartParams{Identity: o.identity(agent, session), Reason: "session_start"}, &res); err != nil {
		o.log.Debug().Err(err).Msg("session.start")
	}
	return empty, nil
}

// sessionEnd ends the session, except on gateway shutdown/restart: the
// conversation goes on after a restart, and idle sessions are ended by the
// host anyway.
func (o *openclaw) sessionEnd(ctx context.Context, h ocHook) (any, error) {
	agent, session, ok := o.hookSession(h)
	if !ok {
		return empty, nil
	}
	reason := h.Event.Reason
	if reason == "shutdown" || reason == "restart" {
		return empty, nil
	}
	if reason == "" {
		reason = "end"
	}
	_, err := o.relay.Deliver(ctx, protocol.MethodSessionEnd, protocol.SessionEndParams{Identity: o.identity(agent, session), Reason: reason})
	if err != nil {
		o.log.Warn().Err(err).Msg("session.end refused by the host")
	}
	return empty, nil
}

// beforeReset (/new, /reset) ends the old session as "reset".
func (o *openclaw) beforeReset(ctx context.Context, h ocHook) (any, error) {
	agent, session, _, ok := o.who(h.Ctx, h.Event.SessionID)
	if !ok || session == "" {
		return empty, nil
	}
	reason := h.Event.Reason
	if reason == "" {
		reason = "reset"
	}
	_, err := o.relay.Deliver(ctx, protocol.MethodSessionReset, protocol.SessionEndParams{Identity: o.identity(agent, session), Reason: reason})
	if err != nil {
		o.log.Warn().Err(err).Msg("session.reset refused by the host")
	}
	return empty, nil
}
