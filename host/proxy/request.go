package proxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/wire"
)

// identityFields are MetaClaw's body extensions: read, then removed before the
// body goes upstream (strict upstreams reject unknown fields).
var identityFields = []string{"session_id", "session_done", "turn_type", "memory_scope", "user_id", "workspace_id"}

// request is a parsed client body. Top-level fields are kept raw so anything
// we do not touch is forwarded untouched.
type request struct {
	api      wire.API
	raw      []byte
	fields   map[string]json.RawMessage
	messages []json.RawMessage
	model    string
	stream   bool
	changed  bool // fields or messages must be re-encoded
}

// message is the part of a chat message we read (both formats share it).
type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type part struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func parseRequest(api wire.API, body []byte) (*request, error) {
	r := &request{api: api, raw: body}
	if err := json.Unmarshal(body, &r.fields); err != nil {
		return nil, fmt.Errorf("request body is not a JSON object: %w", err)
	}
	if r.fields == nil {
		return nil, fmt.Errorf("request body must be a JSON object")
	}
	msgs, ok := r.fields["messages"]
	if !ok {
		return nil, fmt.Errorf("`messages` is required")
	}
	if err := json.Unmarshal(msgs, &r.messages); err != nil || len(r.messages) == 0 {
		return nil, fmt.Errorf("`messages` must be a non-empty array")
	}
	if m, ok := r.fields["model"]; ok {
		if err := json.Unmarshal(m, &r.model); err != nil {
			return nil, fmt.Errorf("`model` must be a string")
		}
	}
	if s, ok := r.fields["stream"]; ok && !isNull(s) {
		if err := json.Unmarshal(s, &r.stream); err != nil {
			return nil, fmt.Errorf("`stream` must be a boolean")
		}
	}
	return r, nil
}

func isNull(b json.RawMessage) bool {
	return len(bytes.TrimSpace(b)) == 0 || string(bytes.TrimSpace(b)) == "null"
}

// stringField returns a string-valued body field ("" if absent or not a string).
func (r *request) stringField(name string) string {
	raw, ok := r.fields[name]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		var b bool
		if json.Unmarshal(raw, &b) == nil && b {
			return "true"
		}
		return ""
	}
	return s
}

func (r *request) set(name string, v any) {
	b, _ := json.Marshal(v)
	r.fields[name] = b
	r.changed = true
}

// encode returns the body to forward: the original bytes when nothing changed.
func (r *request) encode() ([]byte, error) {
	if !r.changed {
		return r.raw, nil
	}
	msgs, err := json.Marshal(r.messages)
	if err != nil {
		return nil, err
	}
	r.fields["messages"] = msgs
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep "<", ">" and "&" readable for the model
	if err := enc.Encode(r.fields); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// identity is who a turn belongs to.
type identity struct {
	agent       string
	session     string
	derived     bool // session id derived from the conversation, not given
	turnType    string
	sessionDone bool
	scope       core.Scope
}

var agentIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$`)

func truthy(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}

// resolveIdentity reads headers first, then MetaClaw's body fields, and
// strips the body fields.
func resolveIdentity(hr *http.Request, r *request, pathAgent string) (identity, error) {
	pick := func(header, field string) string {
		if v := strings.TrimSpace(hr.Header.Get(header)); v != "" {
			return v
		}
		return strings.TrimSpace(r.stringField(field))
	}
	id := identity{
		agent:       pathAgent,
		session:     pick("X-Session-Id", "session_id"),
		turnType:    strings.ToLower(pick("X-Turn-Type", "turn_type")),
		sessionDone: truthy(pick("X-Session-Done", "session_done")),
		scope: core.Scope{
			UserID:      pick("X-User-Id", "user_id"),
			WorkspaceID: pick("X-Workspace-Id", "workspace_id"),
			Explicit:    pick("X-Memory-Scope", "memory_scope"),
		},
	}
	for _, f := range identityFields {
		if _, ok := r.fields[f]; ok {
			delete(r.fields, f)
			r.changed = true
		}
	}
	if id.agent == "" {
		id.agent = strings.TrimSpace(hr.Header.Get("X-Agent-Id"))
	}
	if id.agent == "" {
		id.agent = "default"
	}
	if !agentIDPattern.MatchString(id.agent) {
		return id, fmt.Errorf("agent id %q is invalid: use letters, digits and . _ : @ - (at most 128)", id.agent)
	}
	switch id.turnType {
	case "":
		id.turnType = core.TurnMain
	case core.TurnMain, core.TurnSide:
	default:
		return id, fmt.Errorf("X-Turn-Type must be `main` or `side`, not %q", id.turnType)
	}
	if len(id.session) > 256 {
		return id, fmt.Errorf("session id is longer than 256 characters")
	}
	if id.session == "" {
		id.session = deriveSession(id.agent, r)
		id.derived = true
	}
	return id, nil
}

// deriveSession names a conversation by its agent and first user message:
// stable across the turns of one conversation (clients replay history), new
// for a new conversation.
func deriveSession(agent string, r *request) string {
	h := sha256.New()
	h.Write([]byte(agent))
	h.Write([]byte{0})
	for _, raw := range r.messages {
		var m message
		if json.Unmarshal(raw, &m) == nil && m.Role == "user" {
			h.Write([]byte(contentText(m.Content)))
			break
		}
	}
	return "auto-" + hex.EncodeToString(h.Sum(nil)[:8])
}

// contentText flattens a string or an array of text parts/blocks.
func contentText(c json.RawMessage) string {
	c = bytes.TrimSpace(c)
	if len(c) == 0 {
		return ""
	}
	switch c[0] {
	case '"':
		var s string
		_ = json.Unmarshal(c, &s)
		return s
	case '[':
		var parts []part
		if json.Unmarshal(c, &parts) != nil {
			return ""
		}
		var b strings.Builder
		for _, p := range parts {
			if p.Type == "text" || p.Type == "input_text" {
				if b.Len() > 0 {
					b.WriteString("\n")
				}
				b.WriteString(p.Text)
			}
		}
		return b.String()
	}
	return ""
}

// internalContext matches agent-internal blocks such as OpenClaw's
// <<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>> … <<<END_OPENCLAW_INTERNAL_CONTEXT>>>:
// runtime bookkeeping, not what the user said.
var internalContext = regexp.MustCompile(`(?s)<<<BEGIN_[A-Z_]*INTERNAL_CONTEXT>>>.*?(<<<END_[A-Z_]*INTERNAL_CONTEXT>>>|$)`)

// recentUserTexts returns up to n recent user texts, oldest first, without
// injected blocks or agent-internal context.
func (r *request) recentUserTexts(n int) []string {
	var out []string
	for i := len(r.messages) - 1; i >= 0 && len(out) < n; i-- {
		var m message
		if json.Unmarshal(r.messages[i], &m) != nil || m.Role != "user" {
			continue
		}
		t := contentText(m.Content)
		if strings.Contains(t, "<<<BEGIN_") {
			t = internalContext.ReplaceAllString(t, "")
		}
		t = strings.TrimSpace(core.Strip(t))
		if t != "" {
			out = append(out, t)
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// maxTokens is the completion budget the client asked for (or 0).
func (r *request) maxTokens() int {
	for _, f := range []string{"max_completion_tokens", "max_tokens"} {
		if raw, ok := r.fields[f]; ok {
			var n int
			if json.Unmarshal(raw, &n) == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}
