package plugin

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/msgcontent"
	"github.com/metaclaw-go/metaclaw/host/rpc/protocol"
)

// One-shot command hooks: `metaclaw plugin hook --client <c> <event>` reads
// one JSON payload on stdin and writes one JSON answer on stdout, then exits
// 0. It never blocks or fails the client's turn: on any problem the answer
// is "{}" (no context) and events are spooled.
const (
	ClientHermes = "hermes"
	ClientClaude = "claude" // Claude Code command hooks, as NanoClaw's agent runner uses them
)

// HookClients maps accepted --client names to the protocol they speak.
var HookClients = map[string]string{
	"hermes": ClientHermes, "claude": ClientClaude, "claude-code": ClientClaude, "nanoclaw": ClientClaude,
}

// HookOptions configure one hook run.
type HookOptions struct {
	Client string // hermes | claude (see HookClients)
	Agent  string
	Relay  *Relay
	Log    zerolog.Logger
	// MaxInput bounds the payload (default 8 MiB).
	MaxInput int64
}

// RunHook handles one event. It always writes a JSON object to out.
func RunHook(ctx context.Context, event string, in io.Reader, out io.Writer, o HookOptions) error {
	if o.MaxInput <= 0 {
		o.MaxInput = protocol.DefaultMaxMessage
	}
	if o.Agent == "" {
		o.Agent = defaultAgent(o.Client)
	}
	answer := any(map[string]any{})
	defer func() {
		b, err := json.Marshal(answer)
		if err != nil {
			b = []byte("{}")
		}
		out.Write(append(b, '\n'))
	}()
	raw, err := io.ReadAll(io.LimitReader(in, o.MaxInput+1))
	if err != nil || int64(len(raw)) > o.MaxInput {
		o.Log.Warn().Msg("hook payload unreadable or too large; ignoring it")
		return nil
	}
	var payload map[string]json.RawMessage
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := json.Unmarshal(raw, &payload); err != nil {
			o.Log.Warn().Err(err).Msg("hook payload is not a JSON object; ignoring it")
			return nil
		}
	}
	if payload == nil {
		payload = map[string]json.RawMessage{}
	}
	if event == "" {
		event = str(payload["hook_event_name"])
	}
	switch o.Client {
	case ClientHermes:
		answer = hermesHook(ctx, event, payload, o)
	case ClientClaude:
		answer = claudeHook(ctx, event, payload, o)
	default:
		o.Log.Warn().Str("client", o.Client).Msg("unknown hook client")
	}
	if answer == nil {
		answer = map[string]any{}
	}
	// Leave a moment for spooled events of earlier runs, if the host is up.
	if o.Relay.Host.Connected() && o.Relay.Spool.Len() > 0 {
		rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		o.Relay.Replay(rctx)
		cancel()
	}
	return nil
}

func str(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

func obj(raw json.RawMessage) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	_ = json.Unmarshal(raw, &m)
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	return m
}

func turnKey(client, session string, parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return client + ":" + session + ":" + hex.EncodeToString(h.Sum(nil)[:12])
}

// hermesHook speaks Hermes shell hooks (agent/shell_hooks.py): stdin
// {hook_event_name, tool_name, tool_input, session_id, cwd, profile, extra};
// pre_llm_call answers {"context": "..."} (Hermes appends it to the user
// message); everything else answers {}.
func hermesHook(ctx context.Context, event string, p map[string]json.RawMessage, o HookOptions) any {
	extra := obj(p["extra"])
	session := str(p["session_id"])
	id := protocol.Identity{Agent: o.Agent, Session: session, Client: ClientHermes}
	switch event {
	case "pre_llm_call":
		texts := hermesUserTexts(extra)
		res := o.Relay.Context(ctx, protocol.ContextParams{Identity: id, UserTexts: texts})
		if res.Block == "" {
			return map[string]any{}
		}
		return map[string]string{"context": res.Block}
	case "post_llm_call":
		user, assistant := str(extra["user_message"]), str(extra["assistant_response"])
		if session == "" || (user == "" && assistant == "") {
			return map[string]any{}
		}
		obs := protocol.ObserveParams{
			Identity: id, UserText: user, AssistantText: assistant, Model: str(extra["model"]),
			TurnKey: turnKey(ClientHermes, session, user, assistant), At: time.Now().UTC(),
		}
		deliver(ctx, o, protocol.MethodObserve, obs)
	case "on_session_start", "on_session_reset":
		// on_session_start: a new session's first turn. on_session_reset:
		// /new or /reset rotated the id; session_id (gateway: also
		// extra.new_session_id) is the new session, the outgoing one was
		// finalized just before. Either way the agent's earlier pending
		// turns are ingested before the new session's first retrieval.
		id.Session = first(str(extra["new_session_id"]), session)
		reason := "session_start"
		if event == "on_session_reset" {
			reason = "reset"
		}
		startSession(ctx, o, id, reason)
	case "on_session_finalize":
		// The real end of a session (CLI exit, /new, gateway reset).
		// on_session_end is not one: Hermes fires it at the end of every
		// turn, so it is ignored. A gateway shutdown or restart is not one
		// either: the chat goes on after it (the host's idle timer ends
		// sessions that do not), as with OpenClaw's session_end.
		reason := strings.TrimSpace(str(extra["reason"]))
		if session == "" || reason == "shutdown" || reason == "restart" {
			return map[string]any{}
		}
		if reason == "" || len(reason) > 64 {
			reason = "end"
		}
		deliver(ctx, o, protocol.MethodSessionEnd, protocol.SessionEndParams{Identity: id, Reason: reason})
	}
	return map[string]any{}
}

// startSession announces a new session to the host (session.start), which
// catches up on the agent's earlier sessions within
// memory.session_start_wait_ms. It is not spooled: when the host is away,
// the session's first context call starts it as well.
func startSession(ctx context.Context, o HookOptions, id protocol.Identity, reason string) {
	if id.Session == "" {
		return
	}
	var res protocol.SessionStartResult
	if err := o.Relay.Call(ctx, protocol.MethodSessionStart, protocol.SessionStartParams{Identity: id, Reason: reason}, &res); err != nil {
		o.Log.Debug().Err(err).Msg("session.start")
	}
}

func hermesUserTexts(extra map[string]json.RawMessage) []string {
	var texts []string
	var hist []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(extra["conversation_history"], &hist)
	for _, m := range hist {
		if m.Role == "user" {
			if t := msgcontent.Text(m.Content); t != "" {
				texts = append(texts, t)
			}
		}
	}
	if u := str(extra["user_message"]); u != "" && (len(texts) == 0 || texts[len(texts)-1] != u) {
		texts = append(texts, u)
	}
	if len(texts) > 3 {
		texts = texts[len(texts)-3:]
	}
	return texts
}

func deliver(ctx context.Context, o HookOptions, method string, params any) {
	d, err := o.Relay.Deliver(ctx, method, params)
	switch {
	case err != nil:
		o.Log.Warn().Err(err).Str("method", method).Msg("the host refused the event")
	case d.Spooled:
		o.Log.Info().Str("method", method).Msg("host unavailable; event spooled")
	}
}

// claudeHook speaks Claude Code command hooks (as NanoClaw's agent runner
// loads them from settings.json): stdin {session_id, transcript_path, cwd,
// hook_event_name, …}. UserPromptSubmit answers
// {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit",
// "additionalContext": "..."}}; SessionStart, Stop and SessionEnd answer
// {} (never a "decision": the turn is never blocked).
func claudeHook(ctx context.Context, event string, p map[string]json.RawMessage, o HookOptions) any {
	session := str(p["session_id"])
	id := protocol.Identity{Agent: o.Agent, Session: session, Client: ClientClaude}
	switch event {
	case "UserPromptSubmit":
		prompt := str(p["prompt"])
		if prompt == "" {
			return map[string]any{}
		}
		res := o.Relay.Context(ctx, protocol.ContextParams{Identity: id, UserTexts: []string{prompt}})
		if res.Block == "" {
			return map[string]any{}
		}
		return map[string]any{"hookSpecificOutput": map[string]string{
			"hookEventName": "UserPromptSubmit", "additionalContext": res.Block,
		}}
	case "Stop", "SubagentStop":
		if session == "" || event == "SubagentStop" {
			return map[string]any{}
		}
		tr := readTranscriptTail(str(p["transcript_path"]), 512<<10)
		assistant := str(p["last_assistant_message"])
		if assistant == "" {
			assistant = tr.assistant
		}
		if assistant == "" && tr.user == "" {
			return map[string]any{}
		}
		obs := protocol.ObserveParams{
			Identity: id, UserText: tr.user, AssistantText: assistant, Model: tr.model, Usage: tr.usage,
			TurnKey: turnKey(ClientClaude, session, tr.userUUID, tr.user, assistant), At: time.Now().UTC(),
		}
		if len(tr.toolCalls) > 0 {
			obs.ToolCalls, _ = json.Marshal(tr.toolCalls)
		}
		deliver(ctx, o, protocol.MethodObserve, obs)
	case "SessionStart":
		// source startup|resume|clear|compact; a session the host already
		// knows (resume, compact) is a no-op there.
		startSession(ctx, o, id, "session_start")
	case "SessionEnd":
		if session == "" {
			return map[string]any{}
		}
		reason := str(p["reason"])
		method := protocol.MethodSessionEnd
		if reason == "clear" {
			method = protocol.MethodSessionReset
		}
		if reason == "" {
			reason = "end"
		}
		deliver(ctx, o, method, protocol.SessionEndParams{Identity: id, Reason: reason})
	}
	return map[string]any{}
}

// transcriptTurn is the last exchange of a Claude Code transcript (JSONL:
// {type: user|assistant, uuid, message: {role, content, model, usage}}).
type transcriptTurn struct {
	user, userUUID, assistant, model string
	usage                            protocol.Usage
	toolCalls                        []map[string]any
}

func readTranscriptTail(path string, maxBytes int64) transcriptTurn {
	var t transcriptTurn
	if path == "" {
		return t
	}
	f, err := os.Open(path)
	if err != nil {
		return t
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return t
	}
	if fi.Size() > maxBytes {
		if _, err := f.Seek(fi.Size()-maxBytes, io.SeekStart); err != nil {
			return t
		}
	}
	type line struct {
		Type    string `json:"type"`
		UUID    string `json:"uuid"`
		Message struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
			Model   string          `json:"model"`
			Usage   *struct {
				InputTokens  int `json:"input_tokens"`
				OutputTokens int `json:"output_tokens"`
			} `json:"usage"`
		} `json:"message"`
	}
	var lines []line
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), int(maxBytes)+1)
	for sc.Scan() {
		var l line
		if json.Unmarshal(sc.Bytes(), &l) == nil && (l.Type == "user" || l.Type == "assistant") {
			lines = append(lines, l)
		}
	}
	// The prompt is the newest user entry with text (tool results are user
	// entries too, but carry tool_result blocks).
	start := -1
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i].Type != "user" {
			continue
		}
		if txt := msgcontent.Text(lines[i].Message.Content); txt != "" {
			t.user, t.userUUID, start = txt, lines[i].UUID, i
			break
		}
	}
	for _, l := range lines[start+1:] {
		if l.Type != "assistant" {
			continue
		}
		if txt := msgcontent.Text(l.Message.Content); txt != "" {
			t.assistant = txt
		}
		if l.Message.Model != "" {
			t.model = l.Message.Model
		}
		if u := l.Message.Usage; u != nil {
			t.usage.InputTokens += u.InputTokens
			t.usage.OutputTokens += u.OutputTokens
		}
		var blocks []struct {
			Type  string          `json:"type"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		}
		if json.Unmarshal(l.Message.Content, &blocks) == nil {
			for _, b := range blocks {
				if b.Type == "tool_use" {
					t.toolCalls = append(t.toolCalls, map[string]any{"id": b.ID, "name": b.Name, "arguments": b.Input})
				}
			}
		}
	}
	return t
}

// HookClientsHelp is for the CLI's help text.
const HookClientsHelp = "hermes (pre_llm_call, post_llm_call, on_session_start, on_session_reset, on_session_finalize), " +
	"claude|claude-code|nanoclaw (SessionStart, UserPromptSubmit, Stop, SessionEnd)"
