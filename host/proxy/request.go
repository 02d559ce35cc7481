package proxy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/msgcontent"
	"github.com/metaclaw-go/metaclaw/host/usertext"
	"github.com/metaclaw-go/metaclaw/internal/jsonscan"
	"github.com/metaclaw-go/metaclaw/internal/jsonstr"
)

// identityFields are MetaClaw's body extensions: read, then removed before the
// body goes upstream (strict upstreams reject unknown fields).
var identityFields = []string{"session_id", "session_done", "turn_type", "memory_scope", "user_id", "workspace_id"}

// request is a parsed client body. Top-level fields are kept raw and in
// order, so anything we do not touch is forwarded untouched.
type request struct {
	api      apiformat.API
	raw      []byte
	fields   []field
	messages []msg
	model    string
	stream   bool
	changed  bool // fields or messages must be re-encoded
}

// msg is one raw chat message and its role.
type msg struct {
	raw  []byte
	role string
	// appended, when set, is text added at the end of the message's string
	// content, whose closing quote is raw[quote]: encode writes it in
	// place, so a system prompt of several KB is copied once, into the
	// forwarded body, not first into a new message (and the block, which
	// the core renders lazily, is written there escaped, never as a
	// string of its own).
	appended text
	quote    int
}

// text is what injection adds: the core's lazily rendered block (tests
// also inject plain strings, to compare the two encodings).
type text interface {
	Len() int
	String() string
	// AppendJSON appends the text escaped as the inside of a JSON string.
	AppendJSON(dst []byte) []byte
}

// bytes is the message as it is forwarded.
func (m msg) bytes() []byte {
	if m.appended == nil {
		return m.raw
	}
	return m.appendTo(make([]byte, 0, m.size()))
}

// appendTo appends the message as it is forwarded to dst: with appended
// text, the content's literal up to its closing quote, "\n\n", the text
// escaped, and the rest (what appendSpliced writes).
func (m msg) appendTo(dst []byte) []byte {
	if m.appended == nil {
		return append(dst, m.raw...)
	}
	dst = append(dst, m.raw[:m.quote]...)
	dst = append(dst, `\n\n`...)
	dst = m.appended.AppendJSON(dst)
	return append(dst, m.raw[m.quote:]...)
}

// size bounds the length appendTo writes (escapes included, mostly).
func (m msg) size() int {
	if m.appended == nil {
		return len(m.raw)
	}
	n := m.appended.Len()
	return len(m.raw) + 4 + n + n/8
}

// content returns the message's raw content value.
func (m msg) content() []byte {
	c, _ := lookup(objectFields(m.bytes()), "content")
	return c
}

func parseRequest(api apiformat.API, body []byte) (*request, error) {
	if !jsonscan.Valid(body) {
		return nil, fmt.Errorf("request body is not a JSON object: invalid JSON")
	}
	if i := jsonscan.SkipWS(body, 0); i >= len(body) || body[i] != '{' {
		return nil, fmt.Errorf("request body is not a JSON object")
	}
	r := &request{api: api, raw: body, fields: objectFields(body)}
	msgs, ok := lookup(r.fields, "messages")
	if !ok {
		return nil, fmt.Errorf("`messages` is required")
	}
	if i := jsonscan.SkipWS(msgs, 0); i >= len(msgs) || msgs[i] != '[' {
		return nil, fmt.Errorf("`messages` must be a non-empty array")
	}
	for _, item := range arrayItems(msgs) {
		m := msg{raw: item}
		if len(item) > 0 && item[0] == '{' {
			if role, ok := lookup(objectFields(item), "role"); ok {
				m.role, _ = stringValue(role)
			}
		}
		r.messages = append(r.messages, m)
	}
	if len(r.messages) == 0 {
		return nil, fmt.Errorf("`messages` must be a non-empty array")
	}
	if m, ok := lookup(r.fields, "model"); ok && !isNull(m) {
		var isStr bool
		if r.model, isStr = stringValue(m); !isStr {
			return nil, fmt.Errorf("`model` must be a string")
		}
	}
	if s, ok := lookup(r.fields, "stream"); ok && !isNull(s) {
		if err := json.Unmarshal(s, &r.stream); err != nil {
			return nil, fmt.Errorf("`stream` must be a boolean")
		}
	}
	return r, nil
}

func isNull(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) == 0 || string(b) == "null"
}

// stringField returns a string-valued body field ("" if absent; "true" for a true boolean).
func (r *request) stringField(name string) string {
	raw, ok := lookup(r.fields, name)
	if !ok {
		return ""
	}
	if s, ok := stringValue(raw); ok {
		return s
	}
	if string(bytes.TrimSpace(raw)) == "true" {
		return "true"
	}
	return ""
}

// setRaw replaces (or appends) a top-level field.
func (r *request) setRaw(name string, val []byte) {
	r.changed = true
	for i := range r.fields {
		if r.fields[i].key == name {
			r.fields[i].val = val
			return
		}
	}
	r.fields = append(r.fields, field{key: name, val: val})
}

func (r *request) set(name string, v any) { r.setRaw(name, mustJSON(v)) }

// del removes a top-level field.
func (r *request) del(name string) {
	for i := range r.fields {
		if r.fields[i].key == name {
			r.fields = append(r.fields[:i], r.fields[i+1:]...)
			r.changed = true
			return
		}
	}
}

// encode returns the body to forward: the original bytes when nothing
// changed, else the fields in their original order with new values spliced in
// (the messages written straight into the body, not assembled apart first).
func (r *request) encode() ([]byte, error) {
	if !r.changed {
		return r.raw, nil
	}
	size := 2
	for _, m := range r.messages {
		size += m.size() + 1
	}
	for _, f := range r.fields {
		size += len(f.key) + 4 // quotes, colon, comma
		if f.key != "messages" {
			size += len(f.val)
		}
	}
	dst := make([]byte, 0, size+2+64) // +64: keys that need escaping
	dst = append(dst, '{')
	for i, f := range r.fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, f.key)
		dst = append(dst, ':')
		if f.key != "messages" {
			dst = append(dst, f.val...)
			continue
		}
		dst = append(dst, '[')
		for j, m := range r.messages {
			if j > 0 {
				dst = append(dst, ',')
			}
			dst = m.appendTo(dst)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), nil
}

// readBody reads a request body whole, into one buffer of the announced size
// when there is one (io.ReadAll would grow and copy its buffer a dozen times
// for a 50 KB agent prompt). limit bounds the buffer a client can make us
// allocate up front; the reader enforces it.
func readBody(body io.Reader, contentLength, limit int64) ([]byte, error) {
	if contentLength <= 0 || contentLength > limit {
		return io.ReadAll(body)
	}
	b := make([]byte, 0, contentLength+1) // +1: room to see EOF without growing
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := body.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
	}
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

// validAgentID reports whether id matches ^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$
// (checked on every request: without the regexp's machine, which its
// pool drops at each GC).
func validAgentID(id string) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		alnum := (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
		if !alnum && (i == 0 || (c != '.' && c != '_' && c != ':' && c != '@' && c != '-')) {
			return false
		}
	}
	return true
}

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
		r.del(f)
	}
	if id.agent == "" {
		id.agent = strings.TrimSpace(hr.Header.Get("X-Agent-Id"))
	}
	if id.agent == "" {
		id.agent = "default"
	}
	if !validAgentID(id.agent) {
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
	for _, m := range r.messages {
		if m.role == "user" {
			h.Write([]byte(msgcontent.Text(m.content())))
			break
		}
	}
	return "auto-" + hex.EncodeToString(h.Sum(nil)[:8])
}

// recentUserTexts returns up to n recent user texts, oldest first, without
// injected blocks or agent-internal context.
func (r *request) recentUserTexts(n int) []string {
	var out []string
	for i := len(r.messages) - 1; i >= 0 && len(out) < n; i-- {
		if r.messages[i].role != "user" {
			continue
		}
		if t := usertext.Clean(msgcontent.Text(r.messages[i].content())); t != "" {
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
		if raw, ok := lookup(r.fields, f); ok {
			var n int
			if json.Unmarshal(raw, &n) == nil && n > 0 {
				return n
			}
		}
	}
	return 0
}
