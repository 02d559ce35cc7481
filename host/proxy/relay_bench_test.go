package proxy_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
)

// BenchmarkStreamRelayEvents measures the proxy's cost per relayed stream
// event: one stream of 2,000 small events (an LLM answer of 2,000 tokens)
// from the fake upstream, through the proxy, to a client that reads it all.
func BenchmarkStreamRelayEvents(b *testing.B) {
	h := newHarness(b, apiformat.OpenAI)
	h.up.Record = false
	h.up.Reply = strings.TrimSpace(strings.Repeat("tok ", 2000))
	b.ReportAllocs()
	for b.Loop() {
		resp, err := http.Post(h.proxy.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/2000, "ns/event")
}
