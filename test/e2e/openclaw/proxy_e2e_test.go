//go:build e2e

package openclawe2e

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/block"
	"github.com/metaclaw-go/metaclaw/host/store"
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

	// The default install requires a proxy key; wire gave OpenClaw that key.
	sec, _ := os.ReadFile(filepath.Join(w.mcHome, "secrets.yaml"))
	key := regexp.MustCompile(`mck-[A-Za-z0-9_-]{20,}`).FindString(string(sec))
	if cfg, _ := os.ReadFile(w.cfg); key == "" || !strings.Contains(string(cfg), `"apiKey": "`+key+`"`) {
		t.Fatalf("the wired provider does not carry the generated proxy key (secrets.yaml has %d bytes)", len(sec))
	}

	viaProxy := func(r upRequest) bool { return strings.HasPrefix(r.UserAgent, "metaclaw/") }
	blocks := func(r upRequest) int {
		return strings.Count(r.system(), block.Begin) + strings.Count(strings.Join(r.userTexts(), "\n"), block.Begin)
	}

	n0 := len(w.up.requests())
	reply, _, up := w.turn("main", "px-1", "Never run rm -rf without asking me first.")
	reqs := w.since(n0)
	if reply != "FAKE-REPLY-OK" || len(reqs) != 1 || !viaProxy(reqs[0]) || blocks(reqs[0]) != 1 {
		t.Fatalf("main through the proxy: %q, %d requests, %d blocks", reply, len(reqs), blocks(reqs[0]))
	}

	n1 := len(w.up.requests())
	_, _, direct := w.turn("coder", "px-coder", "hello")
	for _, r := range w.since(n1) {
		if viaProxy(r) || injectedBlock(r) != "" {
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

	// --via both: the hook injects, the proxy sees the block and does not
	// inject again, and the turn is recorded once with what was injected.
	w.mustMC("start")
	w.waitHost()
	w.mustMC("wire", "openclaw", "--via", "both", "--agent", "main", "--yes")
	n3 := len(w.up.requests())
	reply, _, both := w.turn("main", "px-both", "Which port does the staging host use?")
	reqs = w.since(n3)
	if reply != "FAKE-REPLY-OK" || len(reqs) != 1 || !viaProxy(reqs[0]) || blocks(reqs[0]) != 1 {
		t.Fatalf("--via both: %q, %d requests, blocks %d", reply, len(reqs), blocks(reqs[0]))
	}
	t.Logf("MEASURED: --via both turn %v", both.Round(time.Millisecond))
	w.mustMC("stop")
	st, err := store.OpenSQLite(context.Background(), filepath.Join(w.mcHome, store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	turns, err := st.SessionTurns(context.Background(), "px-both")
	st.Close()
	if err != nil || len(turns) != 1 || turns[0].InjectedTokens == 0 || !strings.Contains(turns[0].RequestJSON, "staging host") || turns[0].ResponseText != "FAKE-REPLY-OK" {
		t.Fatalf("--via both recorded %d turns (want one, with the request, answer and injection): %v %+v", len(turns), err, turns)
	}

	w.mustMC("unwire", "openclaw", "--yes")
	sameFiles(t, "after unwire", files, w.metaclawFiles())
}
