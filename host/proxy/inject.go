package proxy

import (
	"bytes"
	"encoding/json"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/block"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/msgcontent"
	"github.com/metaclaw-go/metaclaw/internal/jsonstr"
)

var (
	markerPlain   = []byte(block.Begin)
	markerEscaped = []byte(`\u003cmetaclaw_context\u003e`) // as Go's encoding/json writes it
)

func hasMarker(b []byte) bool {
	return bytes.Contains(b, markerPlain) || bytes.Contains(b, markerEscaped)
}

// alreadyInjected reports whether the block is already in the system prompt
// or the newest user message (a hook shim on the same client put it there).
func (r *request) alreadyInjected() bool {
	if r.api == apiformat.Anthropic {
		if sys, ok := lookup(r.fields, "system"); ok && hasMarker(sys) {
			return true
		}
	}
	lastUserSeen := false
	for i := len(r.messages) - 1; i >= 0; i-- {
		m := r.messages[i]
		if (m.role == "system" || m.role == "developer") && hasMarker(m.raw) {
			return true
		}
		if m.role == "user" && !lastUserSeen {
			lastUserSeen = true
			if hasMarker(m.raw) {
				return true
			}
		}
	}
	return false
}

// injectedBlock returns the block a hook put into the system prompt or the
// newest user message, as text ("" when there is none).
func (r *request) injectedBlock() string {
	if r.api == apiformat.Anthropic {
		if sys, ok := lookup(r.fields, "system"); ok && hasMarker(sys) {
			if b := core.FindBlock(msgcontent.Text(sys)); b != "" {
				return b
			}
		}
	}
	lastUserSeen := false
	for i := len(r.messages) - 1; i >= 0; i-- {
		m := r.messages[i]
		isSystem := m.role == "system" || m.role == "developer"
		isLastUser := m.role == "user" && !lastUserSeen
		if m.role == "user" {
			lastUserSeen = true
		}
		if (isSystem || isLastUser) && hasMarker(m.raw) {
			if b := core.FindBlock(msgcontent.Text(m.content())); b != "" {
				return b
			}
		}
	}
	return ""
}

// inject appends the block to the system prompt: OpenAI's first
// system/developer message (or a new one at the top), Anthropic's `system`
// string or block list (a new trailing block, so cached blocks stay intact).
func (r *request) inject(block text) {
	if block == nil || block.Len() == 0 {
		return
	}
	if r.api == apiformat.Anthropic {
		sys, _ := lookup(r.fields, "system")
		r.setRaw("system", appendToContent(sys, block.String()))
		return
	}
	r.changed = true
	for i, m := range r.messages {
		if m.role != "system" && m.role != "developer" {
			continue
		}
		fields := objectFields(m.raw)
		content, _ := lookup(fields, "content")
		if c := bytes.TrimSpace(content); m.appended == nil && len(c) > 2 && c[0] == '"' && countKey(fields, "content") == 1 {
			// A non-empty string: the block goes inside its closing quote
			// when the body is encoded (msg.appendTo).
			r.messages[i].appended = block
			r.messages[i].quote = offsetIn(m.raw, c) + len(c) - 1
			return
		}
		updated := appendToContent(content, block.String())
		replaced := false
		for j := range fields {
			if fields[j].key == "content" {
				fields[j].val = updated
				replaced = true
			}
		}
		if !replaced {
			fields = append(fields, field{key: "content", val: updated})
		}
		r.messages[i].raw = appendObject(make([]byte, 0, len(m.raw)+block.Len()+64), fields)
		return
	}
	sys := msg{raw: mustJSON(map[string]string{"role": "system", "content": block.String()}), role: "system"}
	r.messages = append([]msg{sys}, r.messages...)
}

func countKey(fields []field, key string) (n int) {
	for _, f := range fields {
		if f.key == key {
			n++
		}
	}
	return n
}

// offsetIn is where inner, a subslice of outer (objectFields and
// TrimSpace slice, never copy), starts in outer.
func offsetIn(outer, inner []byte) int { return cap(outer) - cap(inner) }

// appendToContent appends text to a content value that is absent, a string,
// or an array of text parts/blocks. A string is extended in place (its JSON
// is spliced, not decoded and re-encoded: system prompts are large).
func appendToContent(content []byte, text string) []byte {
	content = bytes.TrimSpace(content)
	if len(content) == 0 || string(content) == "null" || string(content) == `""` {
		return mustJSON(text)
	}
	switch content[0] {
	case '"':
		return spliceString(content, text)
	case '[':
		partJSON := mustJSON(map[string]string{"type": "text", "text": text})
		end := bytes.LastIndexByte(content, ']')
		inner := bytes.TrimSpace(content[1:end])
		out := make([]byte, 0, len(content)+len(partJSON)+2)
		out = append(out, content[:end]...)
		if len(inner) > 0 {
			out = append(out, ',')
		}
		out = append(out, partJSON...)
		return append(out, ']')
	}
	// Some other shape: leave the client's content alone, add nothing.
	return content
}

// spliceString appends "\n\n"+text inside a JSON string literal.
func spliceString(lit []byte, text string) []byte {
	return appendSpliced(make([]byte, 0, len(lit)+len(text)+len(text)/8+16), lit, text)
}

// appendSpliced appends the JSON string literal lit with "\n\n"+text
// added inside its closing quote.
func appendSpliced(dst, lit []byte, text string) []byte {
	dst = append(dst, lit[:len(lit)-1]...)
	dst = append(dst, `\n\n`...)
	dst = jsonstr.AppendBody(dst, text)
	return append(dst, '"')
}

func mustJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err) // only called with values that always encode
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}
