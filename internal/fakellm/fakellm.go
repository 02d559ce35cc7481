// Package fakellm is a local fake upstream that speaks the real OpenAI Chat
// Completions and Anthropic Messages wire formats, streaming and not, with
// tool calls. Tests, benchmarks and end-to-end runs point the proxy at it.
//
// Behaviour is driven by the newest user text:
//   - "USE-TOOL" (and no tool result after it): one call of tool `read` {"path":"NOTE.txt"};
//   - after a tool result: "TOOL-RESULT: <result text>";
//   - "FAIL-<status>" (e.g. FAIL-429): an error of that status in the format's error shape;
//   - "SLOW-<ms>": waits that long before answering;
//   - "BIG-<n>MB": an OpenAI answer of n MiB of text, generated as it is sent;
//   - "ECHO-BACK": answers "Noted: <the user text>" (an assistant repeating a secret);
//   - "ECHO-AUTH": a 401 whose message repeats the credentials it received
//     (as some providers do), in the format's error shape;
//   - otherwise Reply (default "FAKE-REPLY-OK").
package fakellm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Request is one request the fake received.
type Request struct {
	Path   string
	Header http.Header
	Body   map[string]any
	Raw    []byte
}

// Server is the fake upstream.
type Server struct {
	*httptest.Server
	// Reply is the answer text; split on spaces into stream chunks.
	Reply string
	// EventDelay is slept between stream events (to observe real streaming).
	EventDelay time.Duration
	// Record keeps every request (off in benchmarks).
	Record bool
	// Respond, when set, scripts the model: it gets each chat request's
	// decoded body and returns the answer text (ok false: Reply answers).
	// It may be called concurrently.
	Respond func(body map[string]any) (text string, ok bool)

	mu   sync.Mutex
	reqs []Request
	hold chan struct{} // while open, chat requests wait (Hold)
}

// Hold makes every chat request from now on wait, after it is recorded,
// until release is called: a slow upstream whose pace the test controls.
func (s *Server) Hold() (release func()) {
	ch := make(chan struct{})
	s.mu.Lock()
	s.hold = ch
	s.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			s.mu.Lock()
			if s.hold == ch {
				s.hold = nil
			}
			s.mu.Unlock()
			close(ch)
		})
	}
}

// held waits while the server is held; false when the client went away.
func (s *Server) held(r *http.Request) bool {
	s.mu.Lock()
	ch := s.hold
	s.mu.Unlock()
	if ch == nil {
		return true
	}
	select {
	case <-ch:
		return true
	case <-r.Context().Done():
		return false
	}
}

// New starts a fake upstream on a loopback port.
func New() *Server {
	s := &Server{Reply: "FAKE-REPLY-OK", Record: true}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.openai)
	mux.HandleFunc("POST /v1/messages", s.anthropic)
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		if s.Record {
			s.mu.Lock()
			s.reqs = append(s.reqs, Request{Path: r.URL.Path, Header: r.Header.Clone()})
			s.mu.Unlock()
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"fake-model","object":"model","created":0,"owned_by":"fake"}]}`)
	})
	s.Server = httptest.NewServer(mux)
	return s
}

// Requests returns what was received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Last returns the newest request (zero if none).
func (s *Server) Last() Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) == 0 {
		return Request{}
	}
	return s.reqs[len(s.reqs)-1]
}

// chatRequest is what the fake reads of a chat request to decide its
// answer: the model, the stream flags and each message's role, with the
// content kept raw (a slice of the body, not a copy) and decoded only for
// the user and tool messages the decision reads. A real LLM parses the
// prompt on its own machine; the fake shares the benchmarks' CPU with the
// client and the proxy, so it does not decode a 50 KB system prompt into
// maps on every request (that made a proxy that injects a block look slower
// by the fake's own parse of it).
type chatRequest struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []chatMessage `json:"messages"`
}

type chatMessage struct {
	Role    string   `json:"role"`
	Content rawValue `json:"content"`
}

// rawValue keeps a JSON value as the slice of the body it was read from:
// json.RawMessage would copy it.
type rawValue []byte

func (v *rawValue) UnmarshalJSON(b []byte) error {
	*v = b
	return nil
}

// content decodes a message's content (nil when absent or not JSON).
func (m chatMessage) content() any {
	if len(m.Content) == 0 {
		return nil
	}
	var c any
	if json.Unmarshal(m.Content, &c) != nil {
		return nil
	}
	return c
}

// call is one chat request as received: its raw body, what the decision
// reads of it, and the whole body decoded when asked for (Respond).
type call struct {
	raw []byte
	req chatRequest
	// body is the decoded body when it was needed (Record or Respond).
	body map[string]any
}

// decoded returns the whole body as a map, decoding it on first use.
func (c *call) decoded() map[string]any {
	if c.body == nil {
		_ = json.Unmarshal(c.raw, &c.body)
	}
	return c.body
}

// record reads a chat request: false when it is not a JSON object. The
// whole body is decoded into a map only when requests are kept (Record):
// tests read Request.Body.
func (s *Server) record(r *http.Request) (*call, bool) {
	raw, err := readAll(r)
	if err != nil {
		return nil, false
	}
	c := &call{raw: raw}
	if err := json.Unmarshal(raw, &c.req); err != nil {
		// A field of another type than the decision reads (a numeric
		// model) is ignored, as a map lookup would; bad JSON is refused.
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) {
			return nil, false
		}
	}
	if !isObject(raw) {
		return nil, false
	}
	if s.Record {
		s.mu.Lock()
		s.reqs = append(s.reqs, Request{Path: r.URL.Path, Header: r.Header.Clone(), Body: c.decoded(), Raw: raw})
		s.mu.Unlock()
	}
	return c, true
}

// readAll reads a request body into one buffer of its announced size (the
// proxy announces it; io.ReadAll would grow its buffer a few times).
func readAll(r *http.Request) ([]byte, error) {
	if r.ContentLength <= 0 || r.ContentLength > 64<<20 {
		return io.ReadAll(r.Body)
	}
	b := make([]byte, r.ContentLength)
	n, err := io.ReadFull(r.Body, b)
	return b[:n], err
}

// isObject reports whether valid JSON raw decodes into a map: an object
// or null (not an array, a string, …).
func isObject(raw []byte) bool {
	for _, c := range raw {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return c == '{' || c == 'n'
	}
	return false
}

// respond asks Respond, when set, for the answer text.
func (s *Server) respond(c *call, p *plan) {
	if s.Respond == nil {
		return
	}
	if text, ok := s.Respond(c.decoded()); ok {
		p.text = text
	}
}

// plan is what to answer.
type plan struct {
	status   int
	text     string
	toolCall bool
	delay    time.Duration
}

var (
	failRe = regexp.MustCompile(`FAIL-(\d{3})`)
	slowRe = regexp.MustCompile(`SLOW-(\d+)`)
)

// SetReply changes the answer text while the server runs (scripted
// conversations set each turn's answer before sending it).
func (s *Server) SetReply(text string) {
	s.mu.Lock()
	s.Reply = text
	s.mu.Unlock()
}

func (s *Server) decide(lastUser string, toolResult *string) plan {
	s.mu.Lock()
	p := plan{status: 200, text: s.Reply}
	s.mu.Unlock()
	if m := slowRe.FindStringSubmatch(lastUser); m != nil {
		ms, _ := strconv.Atoi(m[1])
		p.delay = time.Duration(ms) * time.Millisecond
	}
	if m := failRe.FindStringSubmatch(lastUser); m != nil {
		p.status, _ = strconv.Atoi(m[1])
		return p
	}
	if toolResult != nil {
		p.text = "TOOL-RESULT: " + *toolResult
		return p
	}
	if strings.Contains(lastUser, "USE-TOOL") {
		p.toolCall = true
	}
	if strings.Contains(lastUser, "ECHO-BACK") {
		p.text = "Noted: " + lastUser
	}
	return p
}

func text(content any) string {
	switch c := content.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, part := range c {
			if m, ok := part.(map[string]any); ok {
				if t, ok := m["text"].(string); ok {
					b.WriteString(t)
				}
				if m["type"] == "tool_result" {
					b.WriteString(text(m["content"]))
				}
			}
		}
		return b.String()
	}
	return ""
}

func chunks(s string) []string {
	words := strings.SplitAfter(s, " ")
	out := words[:0]
	for _, w := range words {
		if w != "" {
			out = append(out, w)
		}
	}
	return out
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *Server) sleep(r *http.Request, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	select {
	case <-time.After(d):
		return true
	case <-r.Context().Done():
		return false
	}
}

// ---- OpenAI ----

func (s *Server) openai(w http.ResponseWriter, r *http.Request) {
	c, ok := s.record(r)
	if ok && !s.held(r) {
		return
	}
	if !ok {
		writeJSON(w, 400, map[string]any{"error": map[string]any{"message": "bad json", "type": "invalid_request_error"}})
		return
	}
	var lastUser string
	var toolResult *string
	for _, m := range c.req.Messages {
		switch m.Role {
		case "user":
			if t := text(m.content()); !strings.HasPrefix(t, "<<<BEGIN_") {
				lastUser, toolResult = t, nil
			}
		case "tool":
			t := text(m.content())
			toolResult = &t
		}
	}
	p := s.decide(lastUser, toolResult)
	s.respond(c, &p)
	if !s.sleep(r, p.delay) {
		return
	}
	if strings.Contains(lastUser, "ECHO-AUTH") {
		writeJSON(w, 401, map[string]any{"error": map[string]any{"message": "Incorrect API key provided: " + r.Header.Get("Authorization"), "type": "invalid_request_error", "code": "invalid_api_key"}})
		return
	}
	if p.status != 200 {
		writeJSON(w, p.status, map[string]any{"error": map[string]any{"message": fmt.Sprintf("fake upstream error %d", p.status), "type": "fake_error", "code": p.status}})
		return
	}
	if mb := bigMB(lastUser); mb > 0 {
		s.openaiBig(w, r, mb, c.req.Stream)
		return
	}
	model := c.req.Model
	id := "chatcmpl-fake"
	if c.req.Stream {
		s.openaiStream(w, r, id, model, p, c.req.StreamOptions.IncludeUsage)
		return
	}
	msg := map[string]any{"role": "assistant", "content": p.text}
	finish := "stop"
	if p.toolCall {
		msg["content"] = nil
		msg["tool_calls"] = []any{map[string]any{"id": "call_fake_1", "type": "function", "function": map[string]any{"name": "read", "arguments": `{"path":"NOTE.txt"}`}}}
		finish = "tool_calls"
	}
	writeJSON(w, 200, map[string]any{
		"id": id, "object": "chat.completion", "created": 1764472580, "model": model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   map[string]any{"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49},
	})
}

func (s *Server) openaiStream(w http.ResponseWriter, r *http.Request, id, model string, p plan, usage bool) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	send := func(v any) bool {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		flush(w)
		return s.sleep(r, s.EventDelay)
	}
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1764472580, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
	}
	if !send(chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	finish := "stop"
	if p.toolCall {
		finish = "tool_calls"
		if !send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_fake_1", "type": "function", "function": map[string]any{"name": "read", "arguments": ""}}}}, nil)) {
			return
		}
		for _, frag := range []string{`{"path":`, `"NOTE.txt"}`} {
			if !send(chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": frag}}}}, nil)) {
				return
			}
		}
	} else {
		for _, c := range chunks(p.text) {
			if !send(chunk(map[string]any{"content": c}, nil)) {
				return
			}
		}
	}
	if !send(chunk(map[string]any{}, finish)) {
		return
	}
	if usage {
		send(map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1764472580, "model": model, "choices": []any{},
			"usage": map[string]any{"prompt_tokens": 42, "completion_tokens": 7, "total_tokens": 49}})
	}
	io.WriteString(w, "data: [DONE]\n\n")
	flush(w)
}

// ---- Anthropic ----

func (s *Server) anthropic(w http.ResponseWriter, r *http.Request) {
	c, ok := s.record(r)
	if ok && !s.held(r) {
		return
	}
	if !ok {
		writeJSON(w, 400, map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": "bad json"}})
		return
	}
	var lastUser string
	var toolResult *string
	for _, m := range c.req.Messages {
		if m.Role != "user" {
			continue
		}
		content := m.content()
		if parts, ok := content.([]any); ok {
			for _, part := range parts {
				pm, _ := part.(map[string]any)
				if pm["type"] == "tool_result" {
					t := text(pm["content"])
					toolResult = &t
				}
			}
		}
		if t := text(content); t != "" && !strings.HasPrefix(t, "<<<BEGIN_") {
			if toolResult == nil || !strings.Contains(t, *toolResult) {
				lastUser, toolResult = t, nil
			}
		}
	}
	p := s.decide(lastUser, toolResult)
	s.respond(c, &p)
	if !s.sleep(r, p.delay) {
		return
	}
	if strings.Contains(lastUser, "ECHO-AUTH") {
		writeJSON(w, 401, map[string]any{"type": "error", "error": map[string]any{"type": "authentication_error", "message": "invalid x-api-key: " + r.Header.Get("x-api-key")}})
		return
	}
	if p.status != 200 {
		typ := "api_error"
		switch p.status {
		case 429:
			typ = "rate_limit_error"
		case 400:
			typ = "invalid_request_error"
		case 401:
			typ = "authentication_error"
		case 529:
			typ = "overloaded_error"
		}
		writeJSON(w, p.status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": fmt.Sprintf("fake upstream error %d", p.status)}})
		return
	}
	model := c.req.Model
	if c.req.Stream {
		s.anthropicStream(w, r, model, p)
		return
	}
	content := []any{map[string]any{"type": "text", "text": p.text}}
	stop := "end_turn"
	if p.toolCall {
		content = []any{map[string]any{"type": "tool_use", "id": "toolu_fake_1", "name": "read", "input": map[string]any{"path": "NOTE.txt"}}}
		stop = "tool_use"
	}
	writeJSON(w, 200, map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": content,
		"stop_reason": stop, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 42, "output_tokens": 7},
	})
}

func (s *Server) anthropicStream(w http.ResponseWriter, r *http.Request, model string, p plan) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	send := func(name string, v any) bool {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		flush(w)
		return s.sleep(r, s.EventDelay)
	}
	if !send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_fake", "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": 42, "output_tokens": 1}}}) {
		return
	}
	send("ping", map[string]any{"type": "ping"})
	stop := "end_turn"
	if p.toolCall {
		stop = "tool_use"
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "tool_use", "id": "toolu_fake_1", "name": "read", "input": map[string]any{}}})
		for _, frag := range []string{`{"path":`, `"NOTE.txt"}`} {
			if !send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": frag}}) {
				return
			}
		}
	} else {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, c := range chunks(p.text) {
			if !send("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "text_delta", "text": c}}) {
				return
			}
		}
	}
	send("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 7}})
	send("message_stop", map[string]any{"type": "message_stop"})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}
