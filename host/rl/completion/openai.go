package completion

import (
	"encoding/json"
)

// Stop reasons of a sampler (Tinker's SampledSequence.stop_reason).
const (
	StopStop   = "stop"   // a stop token or sequence
	StopLength = "length" // max_tokens reached
)

// FinishReason is OpenAI's finish_reason for a message the sampler ended
// with stop: "length" when cut, "tool_calls" when the message calls tools
// (clients run tools only then), else "stop".
func FinishReason(stop string, m Message) string {
	switch {
	case stop == StopLength:
		return "length"
	case len(m.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

// Usage counts a turn's tokens.
type Usage struct {
	PromptTokens     int
	CompletionTokens int
}

// TokenLogprob is one sampled token, for logprobs.content.
type TokenLogprob struct {
	Token   string  // the token's text (may be part of a character)
	Bytes   []byte  // its raw bytes
	Logprob float64 // the sampler's log-probability
}

// Response is what OpenAIResponse needs besides the message.
type Response struct {
	ID         string
	Model      string
	Created    int64
	StopReason string // StopStop or StopLength
	Usage      Usage
	// Logprobs, when not nil, fill choices[0].logprobs.content (the client
	// asked for logprobs).
	Logprobs []TokenLogprob
}

type oaiFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

type oaiToolCall struct {
	Index    *int        `json:"index,omitempty"`
	ID       string      `json:"id"`
	Type     string      `json:"type"`
	Function oaiFunction `json:"function"`
}

type oaiMessage struct {
	Role             string        `json:"role"`
	Content          *string       `json:"content"`
	ReasoningContent string        `json:"reasoning_content,omitempty"`
	ToolCalls        []oaiToolCall `json:"tool_calls,omitempty"`
	Refusal          *string       `json:"refusal"`
}

type oaiLogprob struct {
	Token       string  `json:"token"`
	Logprob     float64 `json:"logprob"`
	Bytes       []int   `json:"bytes"`
	TopLogprobs []any   `json:"top_logprobs"`
}

type oaiUsage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

func toolCalls(calls []ToolCall, indexed bool, first int) []oaiToolCall {
	out := make([]oaiToolCall, len(calls))
	for i, c := range calls {
		out[i] = oaiToolCall{ID: c.ID, Type: "function", Function: oaiFunction{Name: c.Name, Arguments: c.Arguments}}
		if indexed {
			idx := first + i
			out[i].Index = &idx
		}
	}
	return out
}

func logprobsJSON(lp []TokenLogprob) any {
	if lp == nil {
		return nil
	}
	content := make([]oaiLogprob, len(lp))
	for i, t := range lp {
		b := make([]int, len(t.Bytes))
		for j, x := range t.Bytes {
			b[j] = int(x)
		}
		content[i] = oaiLogprob{Token: t.Token, Logprob: t.Logprob, Bytes: b, TopLogprobs: []any{}}
	}
	return map[string]any{"content": content}
}

// OpenAIResponse builds a chat.completion body for m. host/apiformat's
// OpenAIToAnthropicResponse turns it into an Anthropic message.
func OpenAIResponse(m Message, r Response) ([]byte, error) {
	msg := oaiMessage{Role: "assistant", ReasoningContent: m.Reasoning, ToolCalls: toolCalls(m.ToolCalls, false, 0)}
	if m.Content != "" || len(m.ToolCalls) == 0 {
		c := m.Content
		msg.Content = &c
	}
	body := map[string]any{
		"id":      r.ID,
		"object":  "chat.completion",
		"created": r.Created,
		"model":   r.Model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       msg,
			"logprobs":      logprobsJSON(r.Logprobs),
			"finish_reason": FinishReason(r.StopReason, m),
		}},
		"usage": oaiUsage{r.Usage.PromptTokens, r.Usage.CompletionTokens, r.Usage.PromptTokens + r.Usage.CompletionTokens},
	}
	return marshal(body)
}

// marshal writes JSON without HTML escaping: answers are full of '<'.
func marshal(v any) ([]byte, error) {
	var b jsonBuffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.data[:len(b.data)-1], nil // Encode appends '\n'
}

type jsonBuffer struct{ data []byte }

func (b *jsonBuffer) Write(p []byte) (int, error) {
	b.data = append(b.data, p...)
	return len(p), nil
}

// ChunkWriter builds the chat.completion.chunk payloads of a streamed
// answer (without the "data: " framing). Use one per response. host/apiformat's
// NewOpenAIToAnthropicStream turns them into Anthropic events.
type ChunkWriter struct {
	ID      string
	Model   string
	Created int64
	started bool
}

func (w *ChunkWriter) chunk(delta map[string]any, finish any, logprobs any) ([]byte, error) {
	return marshal(map[string]any{
		"id":      w.ID,
		"object":  "chat.completion.chunk",
		"created": w.Created,
		"model":   w.Model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish}},
	})
}

// Deltas returns one chunk per delta; the first chunk of the response also
// carries role "assistant".
func (w *ChunkWriter) Deltas(ds []Delta) ([][]byte, error) {
	var out [][]byte
	for _, d := range ds {
		delta := map[string]any{}
		if !w.started {
			delta["role"] = "assistant"
			w.started = true
		}
		switch {
		case d.ToolCall != nil:
			delta["tool_calls"] = toolCalls([]ToolCall{*d.ToolCall}, true, d.Index)
		case d.Reasoning != "":
			delta["reasoning_content"] = d.Reasoning
		default:
			delta["content"] = d.Content
		}
		c, err := w.chunk(delta, nil, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, nil
}

// Finish returns the closing chunks: one with finish_reason (and role, if
// nothing was sent yet), then, when usage is given, a usage chunk with no
// choices, as OpenAI sends for stream_options.include_usage. The caller
// writes "data: [DONE]" after them.
func (w *ChunkWriter) Finish(finishReason string, usage *Usage) ([][]byte, error) {
	delta := map[string]any{}
	if !w.started {
		delta["role"] = "assistant"
		delta["content"] = ""
		w.started = true
	}
	c, err := w.chunk(delta, finishReason, nil)
	if err != nil {
		return nil, err
	}
	out := [][]byte{c}
	if usage != nil {
		u, err := marshal(map[string]any{
			"id": w.ID, "object": "chat.completion.chunk", "created": w.Created, "model": w.Model,
			"choices": []any{},
			"usage":   oaiUsage{usage.PromptTokens, usage.CompletionTokens, usage.PromptTokens + usage.CompletionTokens},
		})
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, nil
}
