package chattemplate

import (
	"bytes"
	"encoding/json"
	"errors"

	"github.com/ardanlabs/jinja"
)

// Message is one chat message in the shape chat templates read (OpenAI's,
// as Hugging Face's apply_chat_template takes it). Content is always a
// string: list content is flattened by FromOpenAI.
type Message struct {
	Role    string
	Content string
	// ReasoningContent is the assistant's reasoning kept beside the answer
	// (nil: absent, which templates test with "is defined").
	ReasoningContent *string
	ToolCalls        []ToolCall
	ToolCallID       string // role tool
	Name             string // role tool: the tool's name, when given
}

// ToolCall is one call an assistant message made.
type ToolCall struct {
	ID        string
	Type      string // "function" when empty
	Name      string
	Arguments string // JSON text, as OpenAI carries it
}

// MarshalJSON writes the message exactly as the template sees it: keys in
// this order, absent fields left out, and arguments that are a JSON object
// given as that object (as vLLM passes them, so templates print them with
// tojson in the model's own format; other arguments stay a string). The
// golden generator renders these documents with the reference engine.
func (m Message) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	field := func(key string, val []byte) {
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(val)
	}
	str := func(s string) []byte {
		var sb bytes.Buffer
		enc := json.NewEncoder(&sb)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		return bytes.TrimSuffix(sb.Bytes(), []byte("\n"))
	}
	field("role", str(m.Role))
	field("content", str(m.Content))
	if m.ReasoningContent != nil {
		field("reasoning_content", str(*m.ReasoningContent))
	}
	if len(m.ToolCalls) > 0 {
		var calls bytes.Buffer
		calls.WriteByte('[')
		for i, c := range m.ToolCalls {
			if i > 0 {
				calls.WriteByte(',')
			}
			typ := c.Type
			if typ == "" {
				typ = "function"
			}
			calls.WriteString(`{"id":`)
			calls.Write(str(c.ID))
			calls.WriteString(`,"type":`)
			calls.Write(str(typ))
			calls.WriteString(`,"function":{"name":`)
			calls.Write(str(c.Name))
			calls.WriteString(`,"arguments":`)
			if isJSONObject(c.Arguments) {
				var compact bytes.Buffer
				if err := json.Compact(&compact, []byte(c.Arguments)); err != nil {
					return nil, err
				}
				calls.Write(compact.Bytes())
			} else {
				calls.Write(str(c.Arguments))
			}
			calls.WriteString(`}}`)
		}
		calls.WriteByte(']')
		field("tool_calls", calls.Bytes())
	}
	if m.ToolCallID != "" {
		field("tool_call_id", str(m.ToolCallID))
	}
	if m.Name != "" {
		field("name", str(m.Name))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

func isJSONObject(s string) bool {
	t := bytes.TrimSpace([]byte(s))
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

// messagesValue converts messages to the template's messages list.
func messagesValue(msgs []Message) (jinja.Value, error) {
	items := make([]jinja.Value, 0, len(msgs))
	for _, m := range msgs {
		data, err := m.MarshalJSON()
		if err != nil {
			return jinja.Undefined(), err
		}
		v, err := jsonToValue(data)
		if err != nil {
			return jinja.Undefined(), err
		}
		items = append(items, v)
	}
	return jinja.NewList(items), nil
}

// toolsValue converts tool definitions (each one JSON object, e.g. OpenAI's
// {"type": "function", "function": {…}}) to the template's tools list.
func toolsValue(tools []json.RawMessage) (jinja.Value, error) {
	if tools == nil {
		return jinja.None(), nil
	}
	items := make([]jinja.Value, 0, len(tools))
	for _, t := range tools {
		v, err := jsonToValue(t)
		if err != nil {
			return jinja.Undefined(), err
		}
		if !v.IsDict() {
			return jinja.Undefined(), errors.New("a tool definition is not a JSON object")
		}
		items = append(items, v)
	}
	return jinja.NewList(items), nil
}
