package proxy_test

import (
	"strings"
	"sync/atomic"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/block"
	"github.com/metaclaw-go/metaclaw/host/proxy"
)

// TestPassThroughWhenDisabled: while `metaclaw disable` is in force the
// proxy forwards requests without injection and records nothing; when it
// is lifted the next request is injected and recorded again.
func TestPassThroughWhenDisabled(t *testing.T) {
	var off atomic.Bool
	off.Store(true)
	h := newHarness(t, apiformat.OpenAI, func(o *proxy.Options) { o.PassThrough = off.Load })
	body := `{"model":"m","messages":[{"role":"system","content":"SYS"},{"role":"user","content":"hello"}]}`
	resp, out := post(t, h.proxy.URL+"/v1/chat/completions", body, "X-Session-Id", "pt")
	if resp.StatusCode != 200 || !strings.Contains(string(out), "FAKE-REPLY-OK") {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	if sys := upstreamSystem(t, h); strings.Contains(sys, block.Begin) {
		t.Fatal("injected while disabled")
	}
	if n := len(h.provider.queries); n != 0 {
		t.Fatalf("%d context queries while disabled", n)
	}
	if turns := h.turns(t, "pt"); len(turns) != 0 {
		t.Fatalf("recorded %d turns while disabled", len(turns))
	}
	off.Store(false)
	post(t, h.proxy.URL+"/v1/chat/completions", body, "X-Session-Id", "pt")
	if sys := upstreamSystem(t, h); !strings.Contains(sys, block.Begin) {
		t.Fatal("not injected once enabled")
	}
	if turns := h.turns(t, "pt"); len(turns) != 1 {
		t.Fatalf("recorded %d turns once enabled", len(turns))
	}
}
