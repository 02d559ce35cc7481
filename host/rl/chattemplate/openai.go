package chattemplate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/metaclaw-go/metaclaw/host/msgcontent"
)

// Conversation is what a chat template renders: the messages and the tool
// definitions (nil when the request had none).
type Conversation struct {
	Messages []Message
	Tools    []json.RawMessage
}

type oaiRequest struct {
	Messages []oaiMessage     `json:"messages"`
	Tools    *json.RawMessage `json:"tools"`
}

type oaiMessage struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent *string         `json:"reasoning_content"`
	Reasoning        *string         `json:"reasoning"`
	ToolCalls        []struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
	ToolCallID string `json:"tool_call_id"`
	Name       string `json:"name"`
}

// FromOpenAI reads the messages and tools of an OpenAI Chat Completions
// request body and normalizes them for a text-only chat template:
//
//   - developer messages become system messages, legacy function messages
//     tool messages;
//   - null or missing content becomes ""; list content becomes the text of
//     its text parts joined with "\n" (vLLM's rule); images, audio and files
//     are dropped, since the template cannot show them;
//   - an assistant's reasoning_content (or reasoning) is kept;
//   - tool call arguments given as JSON values instead of JSON text are
//     turned into text.
//
// Anthropic Messages requests are first translated with
// apiformat.AnthropicToOpenAIRequest.
func FromOpenAI(body []byte) (Conversation, error) {
	var req oaiRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return Conversation{}, fmt.Errorf("chat request: %w", err)
	}
	if len(req.Messages) == 0 {
		return Conversation{}, fmt.Errorf("chat request: `messages` is empty")
	}
	var conv Conversation
	for i, m := range req.Messages {
		msg, err := m.normalize()
		if err != nil {
			return Conversation{}, fmt.Errorf("chat request: messages[%d]: %w", i, err)
		}
		conv.Messages = append(conv.Messages, msg)
	}
	if req.Tools != nil && string(*req.Tools) != "null" {
		if err := json.Unmarshal(*req.Tools, &conv.Tools); err != nil {
			return Conversation{}, fmt.Errorf("chat request: `tools` is not a list: %w", err)
		}
		if conv.Tools == nil {
			conv.Tools = []json.RawMessage{}
		}
		for i, t := range conv.Tools {
			if bytes.TrimSpace(t)[0] != '{' {
				return Conversation{}, fmt.Errorf("chat request: tools[%d] is not an object", i)
			}
		}
	}
	return conv, nil
}

func (m oaiMessage) normalize() (Message, error) {
	out := Message{Role: m.Role, ToolCallID: m.ToolCallID, Name: m.Name}
	switch m.Role {
	case "system", "user", "assistant", "tool":
	case "developer":
		out.Role = "system"
	case "function":
		out.Role = "tool"
	case "":
		return Message{}, fmt.Errorf("`role` is missing")
	default:
		return Message{}, fmt.Errorf("`role` %q is not system, developer, user, assistant or tool", m.Role)
	}
	text, err := contentText(m.Content)
	if err != nil {
		return Message{}, err
	}
	out.Content = text
	if out.Role == "assistant" {
		switch {
		case m.ReasoningContent != nil:
			out.ReasoningContent = m.ReasoningContent
		case m.Reasoning != nil:
			out.ReasoningContent = m.Reasoning
		}
		for j, c := range m.ToolCalls {
			if c.Function.Name == "" {
				return Message{}, fmt.Errorf("tool_calls[%d] has no function name", j)
			}
			args, err := argumentsText(c.Function.Arguments)
			if err != nil {
				return Message{}, fmt.Errorf("tool_calls[%d].function.arguments: %w", j, err)
			}
			out.ToolCalls = append(out.ToolCalls, ToolCall{ID: c.ID, Type: c.Type, Name: c.Function.Name, Arguments: args})
		}
	}
	if out.Role != "tool" {
		// tool_call_id and name only mean something on tool results.
		out.ToolCallID, out.Name = "", ""
	}
	return out, nil
}

// contentText flattens OpenAI content (string, null or a list of parts).
func contentText(raw json.RawMessage) (string, error) {
	c, err := msgcontent.Read(raw, msgcontent.Options{Sep: "\n"})
	switch {
	case errors.Is(err, msgcontent.ErrNotContent):
		return "", fmt.Errorf("`content` must be a string, null or a list of parts")
	case err != nil:
		return "", fmt.Errorf("`content`: %w", err)
	}
	return c.Text, nil
}

// argumentsText returns tool call arguments as JSON text.
func argumentsText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", err
		}
		return s, nil
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return "", err
	}
	return compact.String(), nil
}
