package apiformat

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// nowUnix is the clock for "created"; tests replace it.
var nowUnix = func() int64 { return time.Now().Unix() }

// OpenAIToAnthropicResponse translates a non-streaming chat.completion body
// into an Anthropic message body. Only choices[0] is used (Anthropic has no n).
func OpenAIToAnthropicResponse(body []byte) ([]byte, error) {
	var in oaiResponse
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("apiformat: openai response: %w", err)
	}
	out := antResponseOut{
		ID:      in.ID,
		Type:    "message",
		Role:    "assistant",
		Model:   in.Model,
		Content: make([]any, 0, 2),
	}
	if out.ID == "" {
		out.ID = newID("msg_")
	}
	var finish string
	if len(in.Choices) > 0 {
		c := &in.Choices[0]
		finish = string(c.FinishReason)
		msg := &c.Message
		if r := msg.reasoning(); r != "" {
			out.Content = append(out.Content, antThinkingOut{Type: "thinking", Thinking: r})
		}
		text, err := openAIContentText(msg.Content, "")
		if err != nil {
			return nil, fmt.Errorf("apiformat: openai response: content: %w", err)
		}
		if text == "" {
			text = string(msg.Refusal)
		}
		if text != "" {
			out.Content = append(out.Content, antTextOut{Type: "text", Text: text})
		}
		for i := range msg.ToolCalls {
			tc := &msg.ToolCalls[i]
			out.Content = append(out.Content, antToolUseOut{
				Type: "tool_use", ID: anthropicToolID(tc.ID), Name: tc.Function.Name,
				Input: toolInput(string(tc.Function.Arguments)),
			})
		}
		out.StopReason = anthropicStopReason(finish, len(msg.ToolCalls) > 0)
	} else {
		out.StopReason = anthropicStopReason("", false)
	}
	out.Usage = anthropicUsage(in.Usage)
	return marshal(&out, len(body)+128)
}

// anthropicUsage splits OpenAI's prompt_tokens: Anthropic's input_tokens
// excludes cache reads, which are reported separately.
func anthropicUsage(u *oaiUsage) antUsageOut {
	if u == nil {
		return antUsageOut{}
	}
	cached := u.cached()
	in := u.PromptTokens - cached
	if in < 0 {
		in = 0
	}
	return antUsageOut{InputTokens: in, OutputTokens: u.CompletionTokens, CacheReadInputTokens: cached}
}

// anthropicStopReason maps an OpenAI finish_reason. content_filter has no
// Anthropic equivalent a client would handle, so it ends the turn normally.
// A response with tool calls always says tool_use: some servers send "stop",
// and Anthropic clients only run tools on tool_use.
func anthropicStopReason(finish string, hasTools bool) string {
	if hasTools && (finish == "" || finish == "stop" || finish == "tool_calls" || finish == "function_call") {
		return "tool_use"
	}
	switch finish {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	default: // stop, content_filter, null, unknown
		return "end_turn"
	}
}

// openAIFinishReason maps an Anthropic stop_reason.
func openAIFinishReason(stop string, hasTools bool) string {
	switch stop {
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	}
	if hasTools {
		return "tool_calls"
	}
	return "stop" // end_turn, stop_sequence, pause_turn, refusal, unknown
}

// AnthropicToOpenAIResponse translates a non-streaming Anthropic message body
// into a chat.completion body.
func AnthropicToOpenAIResponse(body []byte) ([]byte, error) {
	var in antResponse
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("apiformat: anthropic response: %w", err)
	}
	var text, reasoning strings.Builder
	var calls []oaiToolCall
	for i := range in.Content {
		b := &in.Content[i]
		switch b.Type {
		case "text":
			// Joined without a separator, exactly as the streamed deltas would be.
			text.WriteString(b.Text)
		case "thinking":
			reasoning.WriteString(b.Thinking)
		case "tool_use":
			calls = append(calls, oaiToolCall{
				ID: openAIToolID(b.ID), Type: "function",
				Function: oaiFunctionCall{Name: b.Name, Arguments: argString(compactJSON(b.Input))},
			})
		}
	}
	msg := oaiRespMsgOut{Role: "assistant", ReasoningContent: reasoning.String(), ToolCalls: calls}
	if text.Len() > 0 || len(calls) == 0 {
		s := text.String()
		msg.Content = &s
	}
	id := in.ID
	if id == "" {
		id = newID("chatcmpl-")
	}
	out := oaiResponseOut{
		ID: id, Object: "chat.completion", Created: nowUnix(), Model: in.Model,
		Choices: []oaiChoiceOut{{
			Message: msg, Logprobs: jsonNull,
			FinishReason: openAIFinishReason(string(in.StopReason), len(calls) > 0),
		}},
		Usage: openAIUsage(in.Usage),
	}
	return marshal(&out, len(body)+128)
}

var jsonNull = json.RawMessage("null")

// openAIUsage folds Anthropic's cache counters into prompt_tokens, which in
// OpenAI counts every prompt token, cached or not.
func openAIUsage(u *antUsage) oaiUsageOut {
	if u == nil {
		return oaiUsageOut{}
	}
	read := intOr0(u.CacheReadInputTokens)
	prompt := intOr0(u.InputTokens) + read + intOr0(u.CacheCreationInputTokens)
	out := oaiUsageOut{PromptTokens: prompt, CompletionTokens: intOr0(u.OutputTokens)}
	out.TotalTokens = out.PromptTokens + out.CompletionTokens
	if read > 0 {
		out.PromptTokensDetails = &oaiPromptDetail{CachedTokens: read}
	}
	return out
}
