//go:build e2e

package openclawe2e

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"time"
)

// upstream is the fake OpenAI-compatible model server behind everything:
// OpenClaw's own custom provider, and MetaClaw's upstream. The newest user
// turn decides the answer:
//   - "CALL-TOOL <name> <query>": one call of tool <name> (directly when the
//     request offers it, else through OpenClaw's tool_call), until a tool
//     result follows; then "TOOL-RESULT-OK";
//   - otherwise "FAKE-REPLY-OK".
//
// Every request is kept with its headers.
type upstream struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []upRequest
}

type upRequest struct {
	At        time.Time
	UserAgent string
	Auth      string
	Body      map[string]any
}

func newUpstream() *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	return u
}

func (u *upstream) requests() []upRequest {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]upRequest(nil), u.reqs...)
}

func textOf(c any) string {
	switch v := c.(type) {
	case string:
		return v
	case []any:
		var parts []string
		for _, p := range v {
			if m, ok := p.(map[string]any); ok {
				if s, ok := m["text"].(string); ok {
					parts = append(parts, s)
				}
			}
		}
		return strings.Join(parts, "\n")
	}
	return ""
}

func (r upRequest) messages() []map[string]any {
	var out []map[string]any
	list, _ := r.Body["messages"].([]any)
	for _, m := range list {
		if mm, ok := m.(map[string]any); ok {
			out = append(out, mm)
		}
	}
	return out
}

// system is the request's system prompt.
func (r upRequest) system() string {
	for _, m := range r.messages() {
		if m["role"] == "system" || m["role"] == "developer" {
			return textOf(m["content"])
		}
	}
	return ""
}

// userTexts are the request's user messages, in order.
func (r upRequest) userTexts() []string {
	var out []string
	for _, m := range r.messages() {
		if m["role"] == "user" {
			out = append(out, textOf(m["content"]))
		}
	}
	return out
}

// heartbeatPrompts open the user message of OpenClaw's heartbeat turns
// (HEARTBEAT_CONTEXT_PROMPT and the older default prompt in OpenClaw's
// dist); the system prompt quotes them too, so only the last user message
// tells.
var heartbeatPrompts = []string{
	"Follow the heartbeat monitor scratch context when provided.",
	"Read HEARTBEAT.md if it exists",
}

// heartbeat reports whether the request is OpenClaw's own heartbeat turn.
func (r upRequest) heartbeat() bool {
	us := r.userTexts()
	if len(us) == 0 {
		return false
	}
	last := us[len(us)-1]
	for _, p := range heartbeatPrompts {
		if strings.Contains(last, p) {
			return true
		}
	}
	return false
}

// has reports whether a user message contains s.
func (r upRequest) has(s string) bool {
	for _, t := range r.userTexts() {
		if strings.Contains(t, s) {
			return true
		}
	}
	return false
}

var callTool = regexp.MustCompile(`CALL-TOOL (\S+) (.+)`)

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	req := upRequest{At: time.Now(), UserAgent: r.Header.Get("User-Agent"), Auth: r.Header.Get("Authorization"), Body: body}
	u.mu.Lock()
	u.reqs = append(u.reqs, req)
	n := len(u.reqs)
	u.mu.Unlock()

	reply, toolName, toolArgs := "FAKE-REPLY-OK", "", ""
	msgs := req.messages()
	ask, result := -1, ""
	for i, m := range msgs {
		if m["role"] == "user" && !strings.Contains(textOf(m["content"]), "OPENCLAW_INTERNAL_CONTEXT") {
			ask, result = -1, "" // a new user turn; a tool call only for CALL-TOOL
			if callTool.MatchString(textOf(m["content"])) {
				ask = i
			}
		}
		if m["role"] == "tool" && ask >= 0 {
			result = textOf(m["content"])
		}
	}
	if ask >= 0 {
		mm := callTool.FindStringSubmatch(textOf(msgs[ask]["content"]))
		name, query := mm[1], strings.TrimSpace(mm[2])
		switch {
		case result != "":
			reply = "TOOL-RESULT-OK" // what the model saw is in the request (the tool message)
		case offers(body, name):
			toolName, toolArgs = name, mustJSON(map[string]any{"query": query})
		default: // behind OpenClaw's tool search: call it by its exact name
			toolName, toolArgs = "tool_call", mustJSON(map[string]any{"id": name, "args": map[string]any{"query": query}})
		}
	}
	id := fmt.Sprintf("chatcmpl-e2e-%d", n)
	if stream, _ := body["stream"].(bool); !stream {
		msg := map[string]any{"role": "assistant", "content": reply}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(mustJSON(map[string]any{"id": id, "object": "chat.completion", "created": time.Now().Unix(), "model": body["model"],
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": "stop"}},
			"usage":   map[string]any{"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}})))
		return
	}
	base := map[string]any{"id": id, "object": "chat.completion.chunk", "created": time.Now().Unix(), "model": body["model"]}
	chunk := func(delta map[string]any, finish any) map[string]any {
		c := map[string]any{}
		for k, v := range base {
			c[k] = v
		}
		c["choices"] = []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}
		return c
	}
	events := []any{chunk(map[string]any{"role": "assistant", "content": ""}, nil)}
	if toolName != "" {
		events = append(events,
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": fmt.Sprintf("call_e2e_%d", n), "type": "function",
				"function": map[string]any{"name": toolName, "arguments": ""}}}}, nil),
			chunk(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": toolArgs}}}}, nil),
			chunk(map[string]any{}, "tool_calls"))
	} else {
		events = append(events, chunk(map[string]any{"content": reply}, nil), chunk(map[string]any{}, "stop"))
	}
	usage := map[string]any{}
	for k, v := range base {
		usage[k] = v
	}
	usage["choices"] = []any{}
	usage["usage"] = map[string]any{"prompt_tokens": 100, "completion_tokens": 5, "total_tokens": 105}
	events = append(events, usage)
	w.Header().Set("Content-Type", "text/event-stream")
	for _, e := range events {
		fmt.Fprintf(w, "data: %s\n\n", mustJSON(e))
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// offers reports whether the request lists a function tool by that name.
func offers(body map[string]any, name string) bool {
	tools, _ := body["tools"].([]any)
	for _, t := range tools {
		tm, _ := t.(map[string]any)
		f, _ := tm["function"].(map[string]any)
		if f["name"] == name {
			return true
		}
	}
	return false
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
