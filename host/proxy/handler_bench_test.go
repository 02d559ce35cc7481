package proxy_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/host/store"
)

// cannedUpstream answers every request in process with a fixed OpenAI
// answer after reading the request whole, as an upstream would: the
// benchmark then measures the proxy's own work, not a network.
type cannedUpstream struct{ answer []byte }

func (u cannedUpstream) RoundTrip(r *http.Request) (*http.Response, error) {
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	return &http.Response{
		StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, ContentLength: int64(len(u.answer)),
		Body: io.NopCloser(bytes.NewReader(u.answer)), Request: r,
	}, nil
}

// sizedSection is a provider's section of a realistic size (skills and
// memories render ~1-3 KB each and measure their own tokens).
type sizedSection struct{ title, body string }

func (p sizedSection) Name() string { return p.title }
func (p sizedSection) Context(context.Context, core.Query) (core.Section, error) {
	return core.Section{Title: p.title, Body: p.body, IDs: []string{p.title + ":1", p.title + ":2"}, Tokens: len(p.body) / 4}, nil
}

// BenchmarkAgentTurn is the proxy's whole request path on proxybench's
// loaded scenario shape (a 6 KB system prompt and a new question, two
// providers' sections injected, the turn journaled before the answer),
// in process: handler, parse, context, injection, encoding, the answer's
// parse, recording, the write. The upstream is a canned answer, so ns/op
// and allocs/op are the proxy's own (plus the recorder's background
// commits, which share the CPU as in the host).
func BenchmarkAgentTurn(b *testing.B) {
	dir := b.TempDir()
	st, err := store.OpenSQLite(context.Background(), filepath.Join(dir, store.DBFile))
	if err != nil {
		b.Fatal(err)
	}
	c := core.New(core.Options{Store: st, Log: zerolog.Nop(), SpoolDir: filepath.Join(dir, "turn-spool")})
	defer func() { c.Close(); st.Close() }()
	c.AddProvider(sizedSection{"Skills", strings.Repeat("### debugging\nReproduce the failure, bisect, fix, add a test.\n\n", 30)})
	c.AddProvider(sizedSection{"Memories", strings.Repeat("- The user prefers short answers with code first.\n", 30)})
	answer := []byte(`{"id":"chatcmpl-fake","object":"chat.completion","created":1764472580,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Here is the change you asked for, with a test."},"finish_reason":"stop"}],"usage":{"prompt_tokens":1500,"completion_tokens":12,"total_tokens":1512}}`)
	px, err := proxy.New(proxy.Options{Core: c, Log: zerolog.Nop(), UpstreamAPI: apiformat.OpenAI, UpstreamBase: "http://upstream.invalid/v1", UpstreamKey: "k",
		Transport: cannedUpstream{answer}})
	if err != nil {
		b.Fatal(err)
	}
	h := px.Handler()
	sys := strings.Repeat("You are a coding agent working in the user's repository. Follow the workspace rules and keep answers short. ", 56)[:6000]
	body := []byte(`{"model":"m","messages":[{"role":"system","content":"` + sys + `"},{"role":"user","content":"Can you help me refactor the parser and make sure it handles unicode?"}]}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
		r.Header.Set("X-Session-Id", "bench")
		r.Header.Set("X-User-Id", "bench")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}
