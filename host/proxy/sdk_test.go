package proxy_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/block"
)

func openaiClient(base string, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(base), option.WithAPIKey("client-key"), option.WithMaxRetries(0)}, opts...)...)
}

func anthropicClient(base string, opts ...aoption.RequestOption) anthropic.Client {
	return anthropic.NewClient(append([]aoption.RequestOption{aoption.WithBaseURL(base), aoption.WithAPIKey("client-key"), aoption.WithMaxRetries(0)}, opts...)...)
}

var readTool = shared.FunctionDefinitionParam{
	Name:        "read",
	Description: openai.String("Read a file"),
	Parameters:  shared.FunctionParameters{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []string{"path"}},
}

// upstreamSystem returns the system prompt text the fake upstream received.
func upstreamSystem(t *testing.T, h *harness) string {
	t.Helper()
	req := h.up.Last()
	if strings.HasSuffix(req.Path, "/messages") {
		switch s := req.Body["system"].(type) {
		case string:
			return s
		case []any:
			var b strings.Builder
			for _, blk := range s {
				m, _ := blk.(map[string]any)
				b.WriteString(fmt.Sprint(m["text"]))
				b.WriteString("\n")
			}
			return b.String()
		}
		return ""
	}
	msgs, _ := req.Body["messages"].([]any)
	var b strings.Builder
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["role"] == "system" || mm["role"] == "developer" {
			b.WriteString(fmt.Sprint(mm["content"]))
		}
	}
	return b.String()
}

func TestOpenAIClientMatrix(t *testing.T) {
	for _, upstream := range []apiformat.API{apiformat.OpenAI, apiformat.Anthropic} {
		for _, stream := range []bool{false, true} {
			for _, tool := range []bool{false, true} {
				name := fmt.Sprintf("upstream=%s/stream=%v/tool=%v", upstream, stream, tool)
				t.Run(name, func(t *testing.T) {
					h := newHarness(t, upstream)
					c := openaiClient(h.proxy.URL+"/a/coder/v1", option.WithHeader("X-Session-Id", "sess-oa"))
					user := "Hello there"
					if tool {
						user = "Please USE-TOOL to read NOTE.txt"
					}
					params := openai.ChatCompletionNewParams{
						Model:    "gpt-test",
						Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are helpful."), openai.UserMessage(user)},
						Tools:    []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(readTool)},
					}
					var got openai.ChatCompletion
					if stream {
						s := c.Chat.Completions.NewStreaming(context.Background(), params)
						acc := openai.ChatCompletionAccumulator{}
						n := 0
						for s.Next() {
							acc.AddChunk(s.Current())
							n++
						}
						if err := s.Err(); err != nil {
							t.Fatal(err)
						}
						if n < 2 {
							t.Fatalf("only %d chunks: not a real stream", n)
						}
						got = acc.ChatCompletion
					} else {
						resp, err := c.Chat.Completions.New(context.Background(), params)
						if err != nil {
							t.Fatal(err)
						}
						got = *resp
					}
					if len(got.Choices) != 1 {
						t.Fatalf("choices: %+v", got.Choices)
					}
					msg := got.Choices[0].Message
					if tool {
						if len(msg.ToolCalls) != 1 || msg.ToolCalls[0].Function.Name != "read" {
							t.Fatalf("tool calls: %+v", msg.ToolCalls)
						}
						var args map[string]string
						if err := json.Unmarshal([]byte(msg.ToolCalls[0].Function.Arguments), &args); err != nil || args["path"] != "NOTE.txt" {
							t.Fatalf("arguments %q: %v", msg.ToolCalls[0].Function.Arguments, err)
						}
						if got.Choices[0].FinishReason != "tool_calls" {
							t.Fatalf("finish reason %q", got.Choices[0].FinishReason)
						}
						// Second round: the tool result goes back and the upstream sees it.
						params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage("The secret is PINEAPPLE-42.", msg.ToolCalls[0].ID))
						resp, err := c.Chat.Completions.New(context.Background(), params)
						if err != nil {
							t.Fatal(err)
						}
						if want := "TOOL-RESULT: The secret is PINEAPPLE-42."; resp.Choices[0].Message.Content != want {
							t.Fatalf("after tool result: %q, want %q", resp.Choices[0].Message.Content, want)
						}
					} else if strings.TrimSpace(msg.Content) != "FAKE-REPLY-OK" {
						t.Fatalf("content %q", msg.Content)
					}
					if sys := upstreamSystem(t, h); !strings.Contains(sys, "You are helpful.") || !strings.Contains(sys, "INJECTED-SKILL") || strings.Count(sys, block.Begin) != 1 {
						t.Fatalf("upstream system prompt lacks client prompt or single injection: %q", sys)
					}
					if q := h.provider.last(); q.Agent != "coder" || q.SessionID != "sess-oa" || len(q.UserTexts) == 0 || q.UserTexts[len(q.UserTexts)-1] != user {
						t.Fatalf("provider query %+v", q)
					}
					turns := h.turns(t, "sess-oa")
					if len(turns) == 0 {
						t.Fatal("turn not recorded")
					}
					tr := turns[0]
					if tr.Status != 200 || tr.Agent != "coder" || tr.ClientAPI != "openai" || tr.UpstreamAPI != string(upstream) || tr.Stream != stream {
						t.Fatalf("recorded %+v", tr)
					}
					if tool && !strings.Contains(tr.ToolCallsJSON, "NOTE.txt") {
						t.Fatalf("recorded tool calls %s", tr.ToolCallsJSON)
					}
					if !tool && strings.TrimSpace(tr.ResponseText) != "FAKE-REPLY-OK" {
						t.Fatalf("recorded text %q", tr.ResponseText)
					}
					if tr.InputTokens != 42 || tr.OutputTokens != 7 {
						t.Fatalf("recorded usage %d/%d", tr.InputTokens, tr.OutputTokens)
					}
					if tr.InjectedJSON != `["test:1"]` || tr.InjectedTokens == 0 {
						t.Fatalf("recorded injection %s/%d", tr.InjectedJSON, tr.InjectedTokens)
					}
					if strings.Contains(tr.RequestJSON, block.Begin) {
						t.Fatal("recorded request must be the client's, without our block")
					}
				})
			}
		}
	}
}

func TestAnthropicClientMatrix(t *testing.T) {
	for _, upstream := range []apiformat.API{apiformat.Anthropic, apiformat.OpenAI} {
		for _, stream := range []bool{false, true} {
			for _, tool := range []bool{false, true} {
				name := fmt.Sprintf("upstream=%s/stream=%v/tool=%v", upstream, stream, tool)
				t.Run(name, func(t *testing.T) {
					h := newHarness(t, upstream)
					c := anthropicClient(h.proxy.URL+"/a/writer", aoption.WithHeader("X-Session-Id", "sess-an"))
					user := "Hello over anthropic"
					if tool {
						user = "Please USE-TOOL to read NOTE.txt"
					}
					params := anthropic.MessageNewParams{
						Model:     "claude-test",
						MaxTokens: 256,
						System:    []anthropic.TextBlockParam{{Text: "You are careful."}},
						Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(user))},
						Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
							Name: "read", Description: anthropic.String("Read a file"),
							InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"path": map[string]any{"type": "string"}}, Required: []string{"path"}},
						}}},
					}
					var msg anthropic.Message
					if stream {
						s := c.Messages.NewStreaming(context.Background(), params)
						n := 0
						for s.Next() {
							if err := msg.Accumulate(s.Current()); err != nil {
								t.Fatal(err)
							}
							n++
						}
						if err := s.Err(); err != nil {
							t.Fatal(err)
						}
						if n < 4 {
							t.Fatalf("only %d events", n)
						}
					} else {
						resp, err := c.Messages.New(context.Background(), params)
						if err != nil {
							t.Fatal(err)
						}
						msg = *resp
					}
					if tool {
						var use *anthropic.ToolUseBlock
						for _, b := range msg.Content {
							if b.Type == "tool_use" {
								tu := b.AsToolUse()
								use = &tu
							}
						}
						if use == nil || use.Name != "read" || !strings.Contains(string(use.Input), "NOTE.txt") {
							t.Fatalf("tool use missing: %+v", msg.Content)
						}
						if msg.StopReason != anthropic.StopReasonToolUse {
							t.Fatalf("stop reason %q", msg.StopReason)
						}
						params.Messages = append(params.Messages, msg.ToParam(),
							anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "The secret is PINEAPPLE-42.", false)))
						resp, err := c.Messages.New(context.Background(), params)
						if err != nil {
							t.Fatal(err)
						}
						if len(resp.Content) == 0 || resp.Content[0].Text != "TOOL-RESULT: The secret is PINEAPPLE-42." {
							t.Fatalf("after tool result: %+v", resp.Content)
						}
					} else {
						var text strings.Builder
						for _, b := range msg.Content {
							text.WriteString(b.Text)
						}
						if strings.TrimSpace(text.String()) != "FAKE-REPLY-OK" {
							t.Fatalf("text %q", text.String())
						}
					}
					if sys := upstreamSystem(t, h); !strings.Contains(sys, "You are careful.") || !strings.Contains(sys, "INJECTED-SKILL") {
						t.Fatalf("upstream system %q", sys)
					}
					turns := h.turns(t, "sess-an")
					if len(turns) == 0 || turns[0].Status != 200 || turns[0].Agent != "writer" || turns[0].ClientAPI != "anthropic" {
						t.Fatalf("recorded %+v", turns)
					}
					if turns[0].InputTokens != 42 || turns[0].OutputTokens != 7 {
						t.Fatalf("usage %d/%d", turns[0].InputTokens, turns[0].OutputTokens)
					}
				})
			}
		}
	}
}
