//go:build e2e

package openclawe2e

import (
	"strings"
	"testing"
	"time"
)

// TestOpenClawThroughTheProxy: `metaclaw wire openclaw --via proxy --agent
// main`. Only main goes through MetaClaw (coder inherits the default model
// and stays direct); with the host stopped main's turn fails over to the
// user's own provider instead of failing; unwire restores every byte.
func TestOpenClawThroughTheProxy(t *testing.T) {
	w := newWorld(t)
	w.setUp()
	files := w.metaclawFiles()
	w.mustMC("wire", "openclaw", "--via", "proxy", "--agent", "main", "--yes")
	out, err := w.mc(2*time.Minute, "doctor", "openclaw")
	if err != nil || !strings.Contains(out, "agents coder (not enabled) inherit agents.defaults.model") {
		t.Fatalf("doctor: %v\n%s", err, out)
	}

	viaProxy := func(r upRequest) bool { return strings.HasPrefix(r.UserAgent, "metaclaw/") }

	n0 := len(w.up.requests())
	reply, _, up := w.turn("main", "px-1", "Never run rm -rf without asking me first.")
	reqs := w.since(n0)
	if reply != "FAKE-REPLY-OK" || len(reqs) != 1 || !viaProxy(reqs[0]) || block(reqs[0]) == "" {
		t.Fatalf("main through the proxy: %q, %d requests", reply, len(reqs))
	}

	n1 := len(w.up.requests())
	_, _, direct := w.turn("coder", "px-coder", "hello")
	for _, r := range w.since(n1) {
		if viaProxy(r) || block(r) != "" {
			t.Fatal("the agent that was not enabled went through MetaClaw")
		}
	}

	// The host stops: main's turn fails over to its original provider.
	w.mustMC("stop")
	if w.healthy() {
		t.Fatal("the proxy still answers after metaclaw stop")
	}
	n2 := len(w.up.requests())
	reply, res, down := w.turn("main", "px-2", "What does git stash do?")
	reqs = w.since(n2)
	if reply != "FAKE-REPLY-OK" || len(reqs) != 1 || viaProxy(reqs[0]) {
		t.Fatalf("with the host stopped: %q, %d requests: %v", reply, len(reqs), res["meta"])
	}
	meta, _ := res["meta"].(map[string]any)
	agentMeta, _ := meta["agentMeta"].(map[string]any)
	t.Logf("OpenClaw's fallback attempts with the host stopped: %v", agentMeta["fallbackAttempts"])
	t.Logf("MEASURED: OpenClaw turn through MetaClaw %v; with the host stopped (failover to the original provider) %v; coder straight to the provider %v",
		up.Round(time.Millisecond), down.Round(time.Millisecond), direct.Round(time.Millisecond))

	w.mustMC("unwire", "openclaw", "--yes")
	sameFiles(t, "after unwire", files, w.metaclawFiles())
}
