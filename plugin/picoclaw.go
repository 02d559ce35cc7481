package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/msgcontent"
	"github.com/metaclaw-go/metaclaw/host/rpc/protocol"
)

// PicoClaw's process-hook protocol (pkg/agent/hook_process.go): PicoClaw
// starts the hook process, sends hook.hello (must be answered), then
// requests hook.before_llm / hook.after_llm / hook.before_tool /
// hook.after_tool / hook.approve_tool and notifications hook.runtime_event
// (older builds: hook.event), one JSON object per line on stdio. Results are
// {action: continue|modify|…, request|response|…}; a "modify" replaces the
// request, so the whole request is echoed back.
const (
	MethodPCHello        = "hook.hello"
	MethodPCBeforeLLM    = "hook.before_llm"
	MethodPCAfterLLM     = "hook.after_llm"
	MethodPCBeforeTool   = "hook.before_tool"
	MethodPCAfterTool    = "hook.after_tool"
	MethodPCApproveTool  = "hook.approve_tool"
	MethodPCRuntimeEvent = "hook.runtime_event"
	MethodPCEventLegacy  = "hook.event"
)

type picoclaw struct {
	relay *Relay
	agent string
	log   zerolog.Logger

	mu    sync.Mutex
	turns map[string]*pcTurn
}

// pcTurn is one PicoClaw turn (several LLM calls when tools run).
type pcTurn struct {
	agent, session, prompt string
	block                  string
	ids                    []string
	tokens                 int
	started                time.Time
	toolCalls              []json.RawMessage
	usage                  protocol.Usage
	fetched, observed      bool
}

func newPicoClaw(r *Relay, agent string, log zerolog.Logger) *picoclaw {
	return &picoclaw{relay: r, agent: agent, log: log, turns: map[string]*pcTurn{}}
}

func (p *picoclaw) routes(m *protocol.Mux) {
	m.Handle(MethodPCHello, func(ctx context.Context, raw json.RawMessage) (any, error) {
		return map[string]any{"ok": true, "name": "metaclaw", "version": 1}, nil
	})
	m.Handle(MethodPCBeforeLLM, p.beforeLLM)
	m.Handle(MethodPCAfterLLM, p.afterLLM)
	cont := func(ctx context.Context, raw json.RawMessage) (any, error) {
		return map[string]string{"action": "continue"}, nil
	}
	m.Handle(MethodPCBeforeTool, cont)
	m.Handle(MethodPCAfterTool, cont)
	m.Handle(MethodPCApproveTool, func(ctx context.Context, raw json.RawMessage) (any, error) {
		return map[string]any{"approved": true}, nil
	})
	m.Handle(MethodPCRuntimeEvent, p.runtimeEvent)
	m.Handle(MethodPCEventLegacy, p.runtimeEvent)
}

// pcMeta reads PicoClaw's meta, whose keys are Go field names (HookMeta has
// no JSON tags); snake_case is accepted too.
type pcMeta struct {
	AgentID    string `json:"AgentID"`
	TurnID     string `json:"TurnID"`
	SessionKey string `json:"SessionKey"`
	Iteration  int    `json:"Iteration"`
	Agent2     string `json:"agent_id"`
	Turn2      string `json:"turn_id"`
	Session2   string `json:"session_key"`
}

func (m pcMeta) ids() (agent, turn, session string) {
	return first(m.AgentID, m.Agent2), first(m.TurnID, m.Turn2), first(m.SessionKey, m.Session2)
}

func first(v ...string) string {
	for _, s := range v {
		if s != "" {
			return s
		}
	}
	return ""
}

type pcMessage struct {
	Role         string          `json:"role"`
	Content      string          `json:"content"`
	ContentParts json.RawMessage `json:"content_parts"`
	ToolCalls    json.RawMessage `json:"tool_calls"`
}

// text is the message's content, or else the text of its parts (msgcontent
// decides which parts are text, for every reader).
func (m pcMessage) text() string {
	if strings.TrimSpace(m.Content) != "" {
		return m.Content
	}
	return msgcontent.Text(m.ContentParts)
}

func (p *picoclaw) turnKey(session, turn string) string { return session + "\x00" + turn }

func (p *picoclaw) turn(key string) *pcTurn {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.turns[key]
	if t == nil {
		if len(p.turns) >= maxRuns {
			var oldest string
			var at time.Time
			for k, v := range p.turns {
				if oldest == "" || v.started.Before(at) {
					oldest, at = k, v.started
				}
			}
			delete(p.turns, oldest)
		}
		t = &pcTurn{started: time.Now()}
		p.turns[key] = t
	}
	return t
}

// beforeLLM adds MetaClaw's block as a user message right after the newest
// user message: PicoClaw discards hook changes to system messages (compared
// with their indexes) and to the tool list, so the system prompt is left
// alone. When a system message follows the newest user message (inserting
// would shift its index), the block is prepended to that user message
// instead. The block is fetched once per turn and reused for the turn's
// later LLM calls (tool rounds).
func (p *picoclaw) beforeLLM(ctx context.Context, raw json.RawMessage) (any, error) {
	var req map[string]json.RawMessage
	if err := protocol.Decode(raw, &req); err != nil {
		return nil, err
	}
	var meta pcMeta
	if m, ok := req["meta"]; ok {
		if err := json.Unmarshal(m, &meta); err != nil {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: meta must be an object")
		}
	}
	var msgs []json.RawMessage
	if m, ok := req["messages"]; ok && string(bytes.TrimSpace(m)) != "null" {
		if err := json.Unmarshal(m, &msgs); err != nil {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "invalid params: messages must be an array")
		}
	}
	parsed := make([]pcMessage, len(msgs))
	lastUser, lastSystem := -1, -1
	var texts []string
	for i, m := range msgs {
		_ = json.Unmarshal(m, &parsed[i])
		switch parsed[i].Role {
		case "user":
			lastUser = i
			if t := parsed[i].text(); strings.TrimSpace(t) != "" && !strings.Contains(t, "<metaclaw_context>") {
				texts = append(texts, t)
			}
		case "system":
			lastSystem = i
		}
	}
	cont := map[string]string{"action": "continue"}
	if lastUser < 0 {
		return cont, nil
	}
	if strings.Contains(parsed[lastUser].text(), "<metaclaw_context>") {
		return cont, nil // already carries the block
	}
	agentID, turnID, session := meta.ids()
	agent := first(agentID, p.agent)
	t := p.turn(p.turnKey(session, turnID))
	p.mu.Lock()
	need := !t.fetched
	p.mu.Unlock()
	if need {
		if len(texts) > 3 {
			texts = texts[len(texts)-3:]
		}
		res := p.relay.Context(ctx, protocol.ContextParams{
			Identity: protocol.Identity{Agent: agent, Session: session, Client: ClientPicoClaw}, UserTexts: texts,
		})
		p.mu.Lock()
		t.agent, t.session, t.block, t.ids, t.tokens, t.fetched = agent, session, res.Block, res.IDs, res.Tokens, true
		if len(texts) > 0 {
			t.prompt = texts[len(texts)-1]
		}
		p.mu.Unlock()
	}
	p.mu.Lock()
	block := t.block
	p.mu.Unlock()
	if block == "" {
		return cont, nil
	}
	if lastSystem > lastUser {
		var m map[string]json.RawMessage
		if json.Unmarshal(msgs[lastUser], &m) != nil {
			return cont, nil
		}
		content, _ := json.Marshal(block + "\n\n" + parsed[lastUser].Content)
		m["content"] = content
		msgs[lastUser], _ = json.Marshal(m)
	} else {
		extra, _ := json.Marshal(map[string]string{"role": "user", "content": block})
		msgs = append(msgs[:lastUser+1], append([]json.RawMessage{extra}, msgs[lastUser+1:]...)...)
	}
	req["messages"], _ = json.Marshal(msgs)
	return map[string]any{"action": "modify", "request": req}, nil
}

// afterLLM accumulates tool calls and usage; the response without tool calls
// is the turn's answer and is recorded.
func (p *picoclaw) afterLLM(ctx context.Context, raw json.RawMessage) (any, error) {
	var resp struct {
		Meta     pcMeta `json:"meta"`
		Model    string `json:"model"`
		Response *struct {
			Content   string            `json:"content"`
			ToolCalls []json.RawMessage `json:"tool_calls"`
			Usage     *struct {
				PromptTokens     int `json:"prompt_tokens"`
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		} `json:"response"`
	}
	cont := map[string]string{"action": "continue"}
	if err := protocol.Decode(raw, &resp); err != nil {
		return nil, err
	}
	if resp.Response == nil {
		return cont, nil
	}
	agentID, turnID, session := resp.Meta.ids()
	if session == "" {
		return cont, nil
	}
	t := p.turn(p.turnKey(session, turnID))
	p.mu.Lock()
	if resp.Response.Usage != nil {
		t.usage.InputTokens += resp.Response.Usage.PromptTokens
		t.usage.OutputTokens += resp.Response.Usage.CompletionTokens
	}
	t.toolCalls = append(t.toolCalls, resp.Response.ToolCalls...)
	final := len(resp.Response.ToolCalls) == 0 && !t.observed
	if final {
		t.observed = true
	}
	obs := protocol.ObserveParams{
		Identity:      protocol.Identity{Agent: first(agentID, t.agent, p.agent), Session: session, Client: ClientPicoClaw},
		UserText:      t.prompt,
		AssistantText: resp.Response.Content,
		Model:         resp.Model,
		Usage:         t.usage,
		LatencyMS:     time.Since(t.started).Milliseconds(),
		InjectedIDs:   t.ids, InjectedTokens: t.tokens,
		At: time.Now().UTC(),
	}
	if turnID != "" {
		obs.TurnKey = "picoclaw:" + session + ":" + turnID
	}
	if len(t.toolCalls) > 0 {
		obs.ToolCalls, _ = json.Marshal(t.toolCalls)
	}
	p.mu.Unlock()
	if final {
		if _, err := p.relay.Deliver(ctx, protocol.MethodObserve, obs); err != nil {
			p.log.Warn().Err(err).Msg("observe refused by the host")
		}
	}
	return cont, nil
}

// runtimeEvent reads turn starts (the user's message, for turns whose
// before_llm is not intercepted) and turn ends (drops the turn's state).
func (p *picoclaw) runtimeEvent(ctx context.Context, raw json.RawMessage) (any, error) {
	var ev struct {
		Kind  string `json:"kind"`
		Kind2 string `json:"Kind"`
		Scope struct {
			SessionKey string `json:"session_key"`
			TurnID     string `json:"turn_id"`
			AgentID    string `json:"agent_id"`
		} `json:"scope"`
		Meta    pcMeta `json:"Meta"`
		Payload struct {
			UserMessage string `json:"UserMessage"`
			User2       string `json:"user_message"`
		} `json:"payload"`
		Payload2 struct {
			UserMessage string `json:"UserMessage"`
		} `json:"Payload"`
	}
	if err := protocol.Decode(raw, &ev); err != nil {
		return nil, err
	}
	_, mTurn, mSession := ev.Meta.ids()
	session := first(ev.Scope.SessionKey, mSession)
	turn := first(ev.Scope.TurnID, mTurn)
	kind := first(ev.Kind, ev.Kind2)
	switch kind {
	case "agent.turn.start", "turn_start":
		if msg := first(ev.Payload.UserMessage, ev.Payload.User2, ev.Payload2.UserMessage); msg != "" && session != "" {
			t := p.turn(p.turnKey(session, turn))
			p.mu.Lock()
			if t.prompt == "" {
				t.prompt = msg
			}
			p.mu.Unlock()
		}
	case "agent.turn.end", "turn_end":
		p.mu.Lock()
		delete(p.turns, p.turnKey(session, turn))
		p.mu.Unlock()
	}
	return map[string]any{}, nil
}
