package proxy_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
)

// TestOpenAIStreamUsageOnlyWhenAsked: an OpenAI client gets the usage chunk
// (choices: [], usage) only when it set stream_options.include_usage, from
// either upstream format; the turn is recorded with its tokens either way.
func TestOpenAIStreamUsageOnlyWhenAsked(t *testing.T) {
	for _, upstream := range []apiformat.API{apiformat.OpenAI, apiformat.Anthropic} {
		for _, asked := range []bool{false, true} {
			t.Run(fmt.Sprintf("upstream=%s/include_usage=%v", upstream, asked), func(t *testing.T) {
				h := newHarness(t, upstream)
				c := openaiClient(h.proxy.URL+"/v1", option.WithHeader("X-Session-Id", "usage"))
				params := openai.ChatCompletionNewParams{
					Model:    "gpt-test",
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Hello there")},
				}
				if asked {
					params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				}
				s := c.Chat.Completions.NewStreaming(context.Background(), params)
				usageChunks, text := 0, ""
				for s.Next() {
					ch := s.Current()
					if len(ch.Choices) == 0 {
						if ch.Usage.TotalTokens == 0 {
							t.Fatalf("a chunk without choices and without usage: %s", ch.RawJSON())
						}
						usageChunks++
						continue
					}
					text += ch.Choices[0].Delta.Content
				}
				if err := s.Err(); err != nil {
					t.Fatal(err)
				}
				if text != "FAKE-REPLY-OK" {
					t.Fatalf("text %q", text)
				}
				if want := map[bool]int{false: 0, true: 1}[asked]; usageChunks != want {
					t.Fatalf("%d usage chunks, want %d", usageChunks, want)
				}
				turns := h.turns(t, "usage")
				if len(turns) != 1 || turns[0].InputTokens != 42 || turns[0].OutputTokens != 7 {
					t.Fatalf("recorded %+v", turns)
				}
			})
		}
	}
}
