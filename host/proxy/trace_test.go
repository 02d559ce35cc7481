package proxy_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/proxy"
)

// TestTraceCorrelation: a request carrying a traceparent whose trace id a
// client hook registered is recorded under the hook's agent and session;
// explicit identity in the request still wins, and unknown or malformed
// trace ids change nothing.
func TestTraceCorrelation(t *testing.T) {
	const trace = "eccc205835aed942eb4ab922a51a9e4b"
	var mu sync.Mutex
	var seen []string
	h := newHarness(t, "openai", func(o *proxy.Options) {
		o.ResolveTrace = func(id string) (string, string, string, bool) {
			mu.Lock()
			seen = append(seen, id)
			mu.Unlock()
			if id == trace {
				return "main", "fx-openai", "main", true
			}
			if id == "0123456789abcdef0123456789abcdef" {
				return "cron-agent", "cron-session", "side", true
			}
			return "", "", "", false
		}
	})
	body := `{"model":"m","messages":[{"role":"user","content":"hello"}]}`
	tp := "00-" + trace + "-ef3484a2ca541127-01"

	resp, b := post(t, h.proxy.URL+"/v1/chat/completions", body, "traceparent", tp)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if got := resp.Header.Get("X-Metaclaw-Session-Id"); got != "fx-openai" {
		t.Fatalf("session header %q", got)
	}
	turns := h.turns(t, "fx-openai")
	if len(turns) != 1 || turns[0].Agent != "main" || turns[0].TurnType != "main" {
		t.Fatalf("turns %+v", turns)
	}
	if q := h.provider.last(); q.Agent != "main" || q.SessionID != "fx-openai" {
		t.Fatalf("context query %+v", q)
	}

	// Explicit identity wins over the trace.
	resp, _ = post(t, h.proxy.URL+"/a/other/v1/chat/completions", body, "traceparent", tp, "X-Session-Id", "explicit-1")
	if resp.Header.Get("X-Metaclaw-Session-Id") != "explicit-1" {
		t.Fatalf("explicit session lost: %q", resp.Header.Get("X-Metaclaw-Session-Id"))
	}
	if turns := h.turns(t, "explicit-1"); len(turns) != 1 || turns[0].Agent != "other" {
		t.Fatalf("explicit turns %+v", turns)
	}

	// A side turn registered by the hook is not injected.
	count := func() int { h.provider.mu.Lock(); defer h.provider.mu.Unlock(); return len(h.provider.queries) }
	n := count()
	resp, _ = post(t, h.proxy.URL+"/v1/chat/completions", body, "traceparent", "00-0123456789abcdef0123456789abcdef-ef3484a2ca541127-01")
	if resp.Header.Get("X-Metaclaw-Session-Id") != "cron-session" {
		t.Fatalf("side session %q", resp.Header.Get("X-Metaclaw-Session-Id"))
	}
	if turns := h.turns(t, "cron-session"); len(turns) != 1 || turns[0].TurnType != "side" || turns[0].Agent != "cron-agent" {
		t.Fatalf("side turns %+v", turns)
	}
	if count() != n {
		t.Fatal("side turn was injected")
	}

	// Unknown and malformed trace ids: derived identity, as without a hook.
	for _, bad := range []string{"00-ffffffffffffffffffffffffffffffff-ef3484a2ca541127-01", "garbage", "00-" + strings.Repeat("0", 32) + "-ef3484a2ca541127-01", "ff-" + trace + "-ef3484a2ca541127-01"} {
		resp, _ = post(t, h.proxy.URL+"/v1/chat/completions", body, "traceparent", bad)
		if s := resp.Header.Get("X-Metaclaw-Session-Id"); !strings.HasPrefix(s, "auto-") {
			t.Fatalf("traceparent %q gave session %q", bad, s)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 4 { // the three valid ids above and ffff…; malformed ones never reach the hook
		t.Fatalf("ResolveTrace calls %v", seen)
	}
}
