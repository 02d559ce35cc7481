package proxy_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/host/store"
)

// fakeResponder answers main turns with a fixed OpenAI answer, or forwards.
type fakeResponder struct {
	serving atomic.Bool
	forward atomic.Bool
	mu      sync.Mutex
	seen    []proxy.MainTurn
}

func (f *fakeResponder) Serving() bool { return f.serving.Load() }
func (f *fakeResponder) Respond(_ context.Context, mt proxy.MainTurn) (*http.Response, error) {
	f.mu.Lock()
	f.seen = append(f.seen, mt)
	f.mu.Unlock()
	if f.forward.Load() {
		return nil, proxy.ErrForward
	}
	mt.Sampled(42)
	body := []byte(`{"id":"chatcmpl-p","object":"chat.completion","created":1,"model":"policy","choices":[{"index":0,"message":{"role":"assistant","content":"from the policy"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`)
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(body))}, nil
}

func (f *fakeResponder) turns() []proxy.MainTurn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]proxy.MainTurn(nil), f.seen...)
}

func TestMainTurnResponder(t *testing.T) {
	resp := &fakeResponder{}
	resp.serving.Store(true)
	h := newHarness(t, apiformat.OpenAI, func(o *proxy.Options) { o.MainTurns = resp })
	var linked atomic.Int64
	h.core.OnTurn(func(_ context.Context, tr *store.Turn) { linked.Store(tr.SampleID) })
	ctx := context.Background()

	// An Anthropic client gets the responder's answer in its own format.
	ac := anthropicClient(h.proxy.URL, aoption.WithHeader("X-Session-Id", "mt"))
	m, err := ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude", MaxTokens: 64, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Content[0].AsText().Text != "from the policy" || len(h.up.Requests()) != 0 {
		t.Fatalf("answer %+v, upstream %d", m.Content, len(h.up.Requests()))
	}
	seen := resp.turns()
	if len(seen) != 1 || seen[0].API != apiformat.OpenAI || seen[0].Session != "mt" || !strings.Contains(string(seen[0].Body), "INJECTED-SKILL") {
		t.Fatalf("the responder saw %+v", seen)
	}
	turns := h.turns(t, "mt")
	if len(turns) != 1 || turns[0].ResponseText != "from the policy" || turns[0].Model != "policy" || linked.Load() != 42 {
		t.Fatalf("recorded %+v, linked sample %d", turns, linked.Load())
	}

	// Side turns never reach it; ErrForward sends a main turn upstream.
	oc := openaiClient(h.proxy.URL+"/v1", option.WithHeader("X-Turn-Type", "side"))
	if _, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("beat")}}); err != nil {
		t.Fatal(err)
	}
	resp.forward.Store(true)
	oc = openaiClient(h.proxy.URL + "/v1")
	cc, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}})
	if err != nil {
		t.Fatal(err)
	}
	if cc.Choices[0].Message.Content != "FAKE-REPLY-OK" || len(h.up.Requests()) != 2 || len(resp.turns()) != 2 {
		t.Fatalf("forwarded answer %q, upstream %d, responder %d", cc.Choices[0].Message.Content, len(h.up.Requests()), len(resp.turns()))
	}
}

func TestMainTurnResponderWithoutUpstream(t *testing.T) {
	resp := &fakeResponder{}
	resp.serving.Store(true)
	h := newHarness(t, apiformat.OpenAI, func(o *proxy.Options) { o.MainTurns = resp; o.NotConfigured = "no upstream configured" })
	oc := openaiClient(h.proxy.URL + "/v1")
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
	if cc, err := oc.Chat.Completions.New(ctx, params); err != nil || cc.Choices[0].Message.Content != "from the policy" {
		t.Fatalf("served main turn: %v", err)
	}
	// Forwarding, or not serving at all, meets the missing upstream.
	resp.forward.Store(true)
	for _, serving := range []bool{true, false} {
		resp.serving.Store(serving)
		_, err := oc.Chat.Completions.New(ctx, params)
		var apiErr *openai.Error
		if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusServiceUnavailable || !strings.Contains(apiErr.Message, "no upstream configured") {
			t.Fatalf("serving=%v, forwarded without an upstream: %v", serving, err)
		}
	}
	if len(h.up.Requests()) != 0 {
		t.Fatal("the unconfigured upstream was called")
	}
}
