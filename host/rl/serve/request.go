package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/rl/chattemplate"
	"github.com/metaclaw-go/metaclaw/host/usertext"
	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// params are what a request asks of the sampler and of the answer.
type params struct {
	maxTokens   int // 0 = the default
	temperature *float64
	topP        *float64
	topK        *int
	seed        *int64
	stop        []string // cut the answer before the first of these
	logprobs    bool     // OpenAI logprobs: true
	usageChunk  bool     // OpenAI stream_options.include_usage
	thinking    *bool    // chat_template_kwargs.enable_thinking / Anthropic thinking.type
}

// requestFields are the sampling fields of both formats.
type requestFields struct {
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MaxTokens           *int            `json:"max_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	TopK                *int            `json:"top_k"`
	Seed                *int64          `json:"seed"`
	Stop                json.RawMessage `json:"stop"`
	StopSequences       []string        `json:"stop_sequences"`
	Logprobs            *bool           `json:"logprobs"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	ChatTemplateKwargs *struct {
		EnableThinking *bool `json:"enable_thinking"`
	} `json:"chat_template_kwargs"`
	Thinking *struct {
		Type string `json:"type"`
	} `json:"thinking"`
}

// readParams reads the sampling fields of a request in api's format.
func readParams(api apiformat.API, body []byte) (params, error) {
	var f requestFields
	if err := json.Unmarshal(body, &f); err != nil {
		return params{}, fmt.Errorf("request: %w", err)
	}
	p := params{temperature: f.Temperature, topP: f.TopP, topK: f.TopK, seed: f.Seed}
	switch {
	case f.MaxCompletionTokens != nil:
		p.maxTokens = *f.MaxCompletionTokens
	case f.MaxTokens != nil:
		p.maxTokens = *f.MaxTokens
	}
	if p.maxTokens < 0 {
		return p, fmt.Errorf("max_tokens must not be negative")
	}
	if t := p.temperature; t != nil && *t < 0 {
		return p, fmt.Errorf("temperature must not be negative")
	}
	if tp := p.topP; tp != nil && (*tp < 0 || *tp > 1) {
		return p, fmt.Errorf("top_p must be between 0 and 1")
	}
	if api == apiformat.Anthropic {
		p.stop = f.StopSequences
		p.usageChunk = true // the Anthropic translation reads token counts from it
		if f.Thinking != nil {
			on := f.Thinking.Type == "enabled"
			p.thinking = &on
		}
	} else {
		stop, err := stopStrings(f.Stop)
		if err != nil {
			return p, err
		}
		p.stop = stop
		p.logprobs = f.Logprobs != nil && *f.Logprobs
		p.usageChunk = f.StreamOptions != nil && f.StreamOptions.IncludeUsage
		if k := f.ChatTemplateKwargs; k != nil && k.EnableThinking != nil {
			p.thinking = k.EnableThinking
		}
	}
	p.stop = nonEmpty(p.stop)
	return p, nil
}

// stopStrings reads OpenAI's stop: a string, a list of strings, or null.
func stopStrings(raw json.RawMessage) ([]string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("stop must be a string or a list of strings")
	}
	return list, nil
}

func nonEmpty(v []string) []string {
	var out []string
	for _, s := range v {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// openAIBody is the request as the chat template reads it (OpenAI's shape).
func openAIBody(api apiformat.API, body []byte) ([]byte, error) {
	if api != apiformat.Anthropic {
		return body, nil
	}
	out, err := apiformat.AnthropicToOpenAIRequest(body)
	if err != nil {
		return nil, fmt.Errorf("request: %w", err)
	}
	return out, nil
}

// Limits of the texts kept with a sample for the judge.
const (
	maxInstruction = 8000
	maxMessage     = 4000
	maxResponse    = 16000
)

// instruction is the user's newest message, without injected blocks or
// agent-internal context: what the judge checks the answer against.
func instruction(conv chattemplate.Conversation) string {
	for i := len(conv.Messages) - 1; i >= 0; i-- {
		if m := conv.Messages[i]; m.Role == "user" {
			return textclip.Ellipsis(usertext.Clean(m.Content), maxInstruction)
		}
	}
	return ""
}

// lastMessage describes the request's newest message (a user message or a
// tool result): the next state of the session's previous turn.
func lastMessage(conv chattemplate.Conversation) string {
	if len(conv.Messages) == 0 {
		return ""
	}
	m := conv.Messages[len(conv.Messages)-1]
	role := m.Role
	if m.Role == "tool" && m.Name != "" {
		role = "tool (" + m.Name + ")"
	}
	return textclip.Ellipsis(role+": "+usertext.Clean(m.Content), maxMessage)
}

// judgeText is the answer as the judge reads it: the text, then each tool
// call on its own line.
func judgeText(content string, calls []struct{ Name, Arguments string }) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(content))
	for _, c := range calls {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "[tool call] %s(%s)", c.Name, c.Arguments)
	}
	return textclip.Ellipsis(b.String(), maxResponse)
}
