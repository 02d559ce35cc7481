package completion_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/rl/completion"
)

// sampled is a completion as Qwen3 writes it: reasoning, a sentence, two
// parallel tool calls.
const sampled = "<think>\nThe user wants the note; read it.\n</think>\n\nReading it now.\n<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"NOTE.txt\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"exec\", \"arguments\": {\"command\": \"echo <ok> & done\"}}\n</tool_call>"

// serveSampled answers both APIs from the sampled text, the way RL serving
// will: parse (streaming in token-sized pieces, or whole), build the OpenAI
// shape, and translate to Anthropic with host/apiformat.
func serveSampled(t *testing.T) *httptest.Server {
	t.Helper()
	opts := func() completion.Options {
		ids := 0 // per response
		return completion.Options{NewID: func() string { ids++; return fmt.Sprintf("call_%d", ids) }}
	}
	usage := completion.Usage{PromptTokens: 42, CompletionTokens: 57}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Stream bool `json:"stream"`
		}
		_ = decodeJSON(r, &req)
		anth := r.URL.Path == "/v1/messages"
		if !req.Stream {
			m := completion.Parse(sampled, opts())
			body, err := completion.OpenAIResponse(m, completion.Response{ID: "chatcmpl-1", Model: "qwen3-lora", Created: 1700000000, StopReason: completion.StopStop, Usage: usage})
			if err == nil && anth {
				body, err = apiformat.OpenAIToAnthropicResponse(body)
			}
			if err != nil {
				http.Error(w, err.Error(), 500)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(body)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		var tr apiformat.StreamTranslator
		if anth {
			tr = apiformat.NewOpenAIToAnthropicStream("qwen3-lora")
		}
		send := func(data []byte) {
			ev := apiformat.Event{Data: data}
			evs := []apiformat.Event{ev}
			if tr != nil {
				var err error
				if evs, err = tr.Translate(ev); err != nil {
					t.Error(err)
				}
			}
			for _, e := range evs {
				_ = apiformat.WriteEvent(w, e)
			}
		}
		p := completion.NewStreamParser(opts())
		cw := &completion.ChunkWriter{ID: "chatcmpl-1", Model: "qwen3-lora", Created: 1700000000}
		for i := 0; i < len(sampled); i += 3 { // token-sized pieces
			chunks, err := cw.Deltas(p.Feed(sampled[i:min(i+3, len(sampled))]))
			if err != nil {
				t.Error(err)
			}
			for _, c := range chunks {
				send(c)
			}
		}
		chunks, _ := cw.Deltas(p.Finish())
		fin, _ := cw.Finish(completion.FinishReason(completion.StopStop, p.Message()), &usage)
		for _, c := range append(chunks, fin...) {
			send(c)
		}
		send([]byte("[DONE]"))
	}))
}

func TestOpenAIClientsReadParsedCompletion(t *testing.T) {
	srv := serveSampled(t)
	defer srv.Close()
	c := openai.NewClient(option.WithBaseURL(srv.URL+"/v1"), option.WithAPIKey("k"))
	params := openai.ChatCompletionNewParams{Model: "qwen3-lora", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("read NOTE.txt")}}
	check := func(t *testing.T, cc openai.ChatCompletion, reasoning string) {
		t.Helper()
		ch := cc.Choices[0]
		if ch.FinishReason != "tool_calls" || ch.Message.Content != "Reading it now." || len(ch.Message.ToolCalls) != 2 {
			t.Fatalf("got %+v", ch)
		}
		if tc := ch.Message.ToolCalls[1]; tc.ID != "call_2" || tc.Function.Name != "exec" || tc.Function.Arguments != `{"command": "echo <ok> & done"}` {
			t.Errorf("tool call %+v", tc)
		}
		if reasoning != "The user wants the note; read it." {
			t.Errorf("reasoning_content %q", reasoning)
		}
		if cc.Usage.PromptTokens != 42 || cc.Usage.CompletionTokens != 57 {
			t.Errorf("usage %+v", cc.Usage)
		}
	}
	t.Run("whole", func(t *testing.T) {
		cc, err := c.Chat.Completions.New(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		var reasoning string
		if err := jsonUnmarshal(cc.Choices[0].Message.JSON.ExtraFields["reasoning_content"].Raw(), &reasoning); err != nil {
			t.Fatal(err)
		}
		check(t, *cc, reasoning)
	})
	t.Run("stream", func(t *testing.T) {
		s := c.Chat.Completions.NewStreaming(context.Background(), params)
		acc := openai.ChatCompletionAccumulator{}
		reasoning := ""
		for s.Next() {
			ch := s.Current()
			acc.AddChunk(ch)
			if len(ch.Choices) > 0 {
				if f, ok := ch.Choices[0].Delta.JSON.ExtraFields["reasoning_content"]; ok {
					var r string
					_ = jsonUnmarshal(f.Raw(), &r)
					reasoning += r
				}
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		check(t, acc.ChatCompletion, reasoning)
	})
}

func TestAnthropicClientsReadParsedCompletion(t *testing.T) {
	srv := serveSampled(t)
	defer srv.Close()
	c := anthropic.NewClient(aoption.WithBaseURL(srv.URL), aoption.WithAPIKey("k"))
	params := anthropic.MessageNewParams{Model: "qwen3-lora", MaxTokens: 256,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("read NOTE.txt"))}}
	check := func(t *testing.T, m anthropic.Message) {
		t.Helper()
		if m.StopReason != "tool_use" || len(m.Content) != 4 {
			t.Fatalf("got %+v", m)
		}
		if b := m.Content[0].AsThinking(); b.Thinking != "The user wants the note; read it." {
			t.Errorf("thinking %+v", m.Content[0])
		}
		if b := m.Content[1].AsText(); b.Text != "Reading it now." {
			t.Errorf("text %+v", m.Content[1])
		}
		tu := m.Content[3].AsToolUse()
		var input map[string]string
		if err := jsonUnmarshal(tu.Input, &input); err != nil || tu.Name != "exec" || input["command"] != "echo <ok> & done" {
			t.Errorf("tool_use %+v %v", tu, err)
		}
		if m.Usage.InputTokens != 42 || m.Usage.OutputTokens != 57 {
			t.Errorf("usage %+v", m.Usage)
		}
	}
	t.Run("whole", func(t *testing.T) {
		m, err := c.Messages.New(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		check(t, *m)
	})
	t.Run("stream", func(t *testing.T) {
		s := c.Messages.NewStreaming(context.Background(), params)
		var m anthropic.Message
		for s.Next() {
			if err := m.Accumulate(s.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		check(t, m)
	})
}
