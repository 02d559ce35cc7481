package proxy

import (
	"bytes"
	"encoding/json"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/wire"
)

var (
	markerPlain   = []byte(core.BeginMarker)
	markerEscaped = []byte(`\u003cmetaclaw_context\u003e`) // as Go's encoding/json writes it
)

func hasMarker(b []byte) bool {
	return bytes.Contains(b, markerPlain) || bytes.Contains(b, markerEscaped)
}

// alreadyInjected reports whether the block is already in the system prompt
// or the newest user message (a hook shim on the same client put it there).
func (r *request) alreadyInjected() bool {
	if r.api == wire.Anthropic {
		if sys, ok := r.fields["system"]; ok && hasMarker(sys) {
			return true
		}
	}
	lastUser := -1
	for i := len(r.messages) - 1; i >= 0; i-- {
		var m message
		if json.Unmarshal(r.messages[i], &m) != nil {
			continue
		}
		if (m.Role == "system" || m.Role == "developer") && hasMarker(r.messages[i]) {
			return true
		}
		if m.Role == "user" && lastUser < 0 {
			lastUser = i
			if hasMarker(r.messages[i]) {
				return true
			}
		}
	}
	return false
}

// inject appends the block to the system prompt: OpenAI's first
// system/developer message (or a new one at the top), Anthropic's `system`
// string or block list (a new trailing block, so cached blocks stay intact).
func (r *request) inject(block string) {
	if block == "" {
		return
	}
	if r.api == wire.Anthropic {
		r.injectAnthropic(block)
	} else {
		r.injectOpenAI(block)
	}
	r.changed = true
}

func (r *request) injectOpenAI(block string) {
	for i, raw := range r.messages {
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			continue
		}
		var role string
		_ = json.Unmarshal(m["role"], &role)
		if role != "system" && role != "developer" {
			continue
		}
		m["content"] = appendToContent(m["content"], block)
		r.messages[i] = mustJSON(m)
		return
	}
	sys := mustJSON(map[string]string{"role": "system", "content": block})
	r.messages = append([]json.RawMessage{sys}, r.messages...)
}

func (r *request) injectAnthropic(block string) {
	r.fields["system"] = appendToContent(r.fields["system"], block)
}

// appendToContent appends text to a content value that is absent, a string,
// or an array of text parts/blocks.
func appendToContent(content json.RawMessage, text string) json.RawMessage {
	content = bytes.TrimSpace(content)
	if len(content) == 0 || string(content) == "null" {
		return mustJSON(text)
	}
	switch content[0] {
	case '"':
		var s string
		if json.Unmarshal(content, &s) == nil {
			if s == "" {
				return mustJSON(text)
			}
			return mustJSON(s + "\n\n" + text)
		}
	case '[':
		var parts []json.RawMessage
		if json.Unmarshal(content, &parts) == nil {
			parts = append(parts, mustJSON(map[string]string{"type": "text", "text": text}))
			return mustJSON(parts)
		}
	}
	// Some other shape: leave the client's content alone, add nothing.
	return content
}

func mustJSON(v any) json.RawMessage {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only called with values that always encode
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}
