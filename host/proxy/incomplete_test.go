package proxy_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/host/transcript"
)

// rawUpstream answers every request with the given body.
func rawUpstream(t *testing.T, contentType, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

const (
	openAICut = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"I prefer\"},\"finish_reason\":null}]}\n\n" +
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" half an\"},\"finish_reason\":null}]}\n\n"
	openAIWhole  = openAICut + "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"
	anthropicCut = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"stop_reason\":null,\"usage\":{\"input_tokens\":3,\"output_tokens\":0}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"I prefer half\"}}\n\n"
)

// TestIncompleteStreamIsAnError: an upstream stream cut before its final
// event reaches the official SDKs as an error (not a short answer), and the
// turn is recorded as failed, so nothing learns from it.
func TestIncompleteStreamIsAnError(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name             string
		upstream, client apiformat.API
		body             string
	}{
		{"openai", apiformat.OpenAI, apiformat.OpenAI, openAICut},
		{"anthropic", apiformat.Anthropic, apiformat.Anthropic, anthropicCut},
		{"anthropic to openai", apiformat.Anthropic, apiformat.OpenAI, anthropicCut},
		{"openai to anthropic", apiformat.OpenAI, apiformat.Anthropic, openAICut},
	} {
		base := rawUpstream(t, "text/event-stream", c.body)
		h := newHarness(t, c.upstream, func(o *proxy.Options) {
			o.UpstreamBase = base + map[apiformat.API]string{apiformat.OpenAI: "/v1", apiformat.Anthropic: ""}[c.upstream]
		})
		var got string
		var err error
		if c.client == apiformat.OpenAI {
			oc := openaiClient(h.proxy.URL+"/v1", option.WithHeader("X-Session-Id", "cut"))
			st := oc.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
				Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
			for st.Next() {
				if len(st.Current().Choices) > 0 {
					got += st.Current().Choices[0].Delta.Content
				}
			}
			err = st.Err()
		} else {
			ac := anthropicClient(h.proxy.URL, aoption.WithHeader("X-Session-Id", "cut"))
			st := ac.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
				Model: "m", MaxTokens: 9, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
			for st.Next() {
			}
			err = st.Err()
		}
		if err == nil || !strings.Contains(err.Error(), "incomplete") {
			t.Fatalf("%s: the client took a cut stream for a whole answer (%q), err %v", c.name, got, err)
		}
		turns := h.awaitTurns(t, "cut", 1) // recorded as the handler returns, maybe after the client saw the error
		if len(turns) != 1 || turns[0].Status != http.StatusBadGateway || !strings.Contains(turns[0].Error, "incomplete") || transcript.Learnable(turns[0]) {
			t.Fatalf("%s: recorded %+v", c.name, turns)
		}
	}
}

// TestWholeStreamWithoutDoneIsFine: a stream whose answer finished (a
// finish reason arrived) but that lacks [DONE] is completed for the client.
func TestWholeStreamWithoutDoneIsFine(t *testing.T) {
	h := newHarness(t, apiformat.OpenAI, func(o *proxy.Options) { o.UpstreamBase = rawUpstream(t, "text/event-stream", openAIWhole) + "/v1" })
	resp, out := post(t, h.proxy.URL+"/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, "X-Session-Id", "whole")
	if resp.StatusCode != 200 || !strings.HasSuffix(strings.TrimSpace(string(out)), "data: [DONE]") || strings.Contains(string(out), "error") {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	if turns := h.awaitTurns(t, "whole", 1); len(turns) != 1 || turns[0].Status != 200 || turns[0].ResponseText != "I prefer half an" {
		t.Fatalf("recorded %+v", turns)
	}
}

// TestUnparseableAnswerIsAnError: a 200 whose body is not a response of the
// upstream's format (an HTML page, an error object) is an error for the
// client, in its format, and a failed turn.
func TestUnparseableAnswerIsAnError(t *testing.T) {
	for i, body := range []string{"<html><body>Please log in to the Wi-Fi</body></html>", `{"error":{"message":"quota exceeded"}}`, `{"id":"x","choi`} {
		h := newHarness(t, apiformat.OpenAI, func(o *proxy.Options) { o.UpstreamBase = rawUpstream(t, "application/json", body) + "/v1" })
		oc := openaiClient(h.proxy.URL+"/v1", option.WithHeader("X-Session-Id", "bad"))
		_, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("I prefer tabs.")}})
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadGateway || !strings.Contains(apiErr.Message, "not a valid openai response") {
			t.Fatalf("body %d: %v", i, err)
		}
		if turns := h.awaitTurns(t, "bad", 1); len(turns) != 1 || turns[0].Status != http.StatusBadGateway || transcript.Learnable(turns[0]) {
			t.Fatalf("body %d: recorded %+v", i, turns)
		}
	}
}
