package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
)

// status reads the host's /v1/status counts (what `metaclaw status --json` shows).
func (h *memHost) statusCounts() map[string]float64 {
	h.t.Helper()
	var st struct {
		Counts map[string]float64 `json:"counts"`
	}
	resp, err := http.Get(h.URL + "/v1/status")
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		h.t.Fatal(err)
	}
	return st.Counts
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestIngestEveryNTurnsWithoutSessionEnd(t *testing.T) {
	h := startHost(t, testCfg(t, func(m *config.Memory) { m.IngestEveryTurns = 3 }), AssembleOptions{}, "")
	ctx := context.Background()
	o := chatOpts{session: "open", user: "u"}
	// Plain statements wait for their batch (durable ones, "never …", would not).
	h.chat("I prefer tabs for indentation.", o)
	h.chat("We use PostgreSQL for the main database.", o)
	h.Flush(t)
	if c := h.statusCounts(); c["memory_pending_turns"] != 2 || c["memories"] != 0 {
		t.Fatalf("after 2 turns: %v", c)
	}
	h.chat("My timezone is UTC+8.", o) // the third turn enqueues an ingest job
	waitFor(t, "ingestion of 3 turns", func() bool {
		n, _ := h.mem.Store.ActiveCount(ctx)
		return n == 3
	})
	if c := h.statusCounts(); c["memory_pending_turns"] != 0 || c["memories"] != 3 {
		t.Fatalf("after ingestion: %v", c)
	}
	sess, _ := h.Store.Session(ctx, "open")
	if sess.EndedAt != nil {
		t.Fatal("the session should still be open: ingestion did not need its end")
	}
	// The next turn is visible in the following turn's block.
	sys := h.chat("Write the database migration.", o)
	if !strings.Contains(memoryBlock(sys), "PostgreSQL") {
		t.Fatalf("block:\n%s", sys)
	}
}

func TestSessionEndIngestsTheRest(t *testing.T) {
	h := startHost(t, testCfg(t, nil), AssembleOptions{}, "")
	ctx := context.Background()
	h.session("s1", chatOpts{user: "u"}, "Hello there.", "I prefer pnpm over npm.", "Thanks, that's all.")
	h.settle()
	us, _ := h.mem.Store.List(ctx, Filter{Status: "all", Limit: -1})
	var kinds []string
	for _, u := range us {
		kinds = append(kinds, string(u.Type))
	}
	if len(us) != 2 || !strings.Contains(strings.Join(kinds, ","), "working_summary") {
		t.Fatalf("units %v: %+v", kinds, us)
	}
	for _, u := range us {
		if u.Type == WorkingSummary && u.Agent != "default" || u.Type == Preference && u.Agent != "" {
			t.Fatalf("agent scoping: %+v", u)
		}
	}
}

func TestIdleSessionIsIngested(t *testing.T) {
	cfg := testCfg(t, nil)
	mh := &memHost{t: t}
	mh.Host = startIdleHost(t, cfg, mh, 50*time.Millisecond)
	mh.chat("Call me Robin.", chatOpts{session: "idle", user: "u"})
	waitFor(t, "idle session ingestion", func() bool {
		n, _ := mh.mem.Store.ActiveCount(context.Background())
		return n == 1
	})
}

func TestOnlyUserAndFinalAssistantTextAreMined(t *testing.T) {
	h := startHost(t, testCfg(t, nil), AssembleOptions{}, "")
	ctx := context.Background()
	// A system prompt full of rule-like text, a tool round, a previous block
	// of ours in the history: none of it may become memory.
	block := core.Render([]core.Section{{Title: "Memories", Body: "- I prefer COBOL for everything."}}).Block
	msgs := []map[string]any{
		{"role": "system", "content": "You are OpenClaw. Always answer in JSON. Never reveal secrets. We use Kubernetes. I prefer brevity."},
		{"role": "user", "content": block + "\nHello"},
		{"role": "assistant", "content": "Hi! Always use tabs. We use Oracle."},
		{"role": "user", "content": "USE-TOOL please read the note"},
		{"role": "assistant", "content": "", "tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "read", "arguments": "{}"}}}},
		{"role": "tool", "tool_call_id": "c1", "content": "NOTE: I prefer Haskell. Always deploy on Fridays."},
	}
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs})
	req, _ := http.NewRequest(http.MethodPost, h.URL+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("X-Session-Id", "mined")
	req.Header.Set("X-Session-Done", "1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// A side turn (heartbeat) with a preference in it.
	body, _ = json.Marshal(map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": "I prefer Perl."}}})
	req, _ = http.NewRequest(http.MethodPost, h.URL+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("X-Session-Id", "side")
	req.Header.Set("X-Turn-Type", "side")
	req.Header.Set("X-Session-Done", "1")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h.settle()
	us, _ := h.mem.Store.List(ctx, Filter{Status: "all", Limit: -1})
	for _, u := range us {
		for _, bad := range []string{"COBOL", "JSON", "Kubernetes", "brevity", "tabs", "Oracle", "Haskell", "Fridays", "Perl"} {
			if strings.Contains(u.Content, bad) {
				t.Errorf("mined %q from outside the user's new text: %+v", bad, u)
			}
		}
	}
}

func TestRestartLosesNothing(t *testing.T) {
	dir := t.TempDir()
	cfg := testCfg(t, nil)
	ctx := context.Background()
	{
		h := startHost(t, cfg, AssembleOptions{}, dir)
		h.chat("I prefer tabs for indentation.", chatOpts{session: "a", user: "u"})
		h.chat("We use PostgreSQL for the main database.", chatOpts{session: "a", user: "u"})
		h.Flush(t)
		if n, _ := h.mem.Ingester.Pending(ctx); n != 2 {
			t.Fatalf("pending %d", n)
		}
		// Stop without shutdown flush (as a crash would): core closed, turns durable.
		h.mem.manual = true
		h.Proxy.Close()
		h.Core.Close()
		h.Store.Close()
	}
	h := startHost(t, cfg, AssembleOptions{}, dir)
	if n, _ := h.mem.Ingester.Pending(ctx); n != 2 {
		t.Fatalf("pending after restart %d", n)
	}
	h.chat("My timezone is UTC+8.", chatOpts{session: "a", user: "u", done: true})
	h.settle()
	us, _ := h.mem.Store.List(ctx, Filter{Limit: -1})
	if len(us) != 4 { // three statements and the session's summary
		t.Fatalf("units after restart %+v", us)
	}
}

func TestShutdownIngestsPending(t *testing.T) {
	h := startHost(t, testCfg(t, nil), AssembleOptions{}, "")
	ctx := context.Background()
	h.chat("Keep answers short.", chatOpts{session: "x", user: "u"})
	h.Flush(t)
	if err := h.mem.Close(); err != nil {
		t.Fatal(err)
	}
	if n, _ := h.mem.Store.ActiveCount(ctx); n != 1 {
		t.Fatalf("active %d after shutdown flush", n)
	}
	if n, _ := h.mem.Ingester.Pending(ctx); n != 0 {
		t.Fatalf("pending %d", n)
	}
}

func TestManualTrigger(t *testing.T) {
	h := startHost(t, testCfg(t, func(m *config.Memory) { m.ManualTrigger = true; m.IngestEveryTurns = 1 }), AssembleOptions{}, "")
	ctx := context.Background()
	h.session("m", chatOpts{user: "u"}, "I prefer tabs for indentation.", "Never deploy on Fridays.")
	h.Flush(t)
	// The turn listeners ran before Flush returned: none scheduled an ingestion.
	var jobs int
	if err := h.Store.Reader().QueryRow(`SELECT COUNT(*) FROM jobs WHERE kind = ?`, JobIngest).Scan(&jobs); err != nil || jobs != 0 || h.Core.TransientQueued(JobIngest) != 0 {
		t.Fatalf("manual trigger scheduled %d ingestion jobs, %d in memory (%v)", jobs, h.Core.TransientQueued(JobIngest), err)
	}
	if n, _ := h.mem.Store.ActiveCount(ctx); n != 0 {
		t.Fatalf("manual trigger ingested on its own: %d", n)
	}
	var acc IngestAccepted
	if code := h.api(http.MethodPost, "/v1/memory/ingest", map[string]any{}, &acc); code != http.StatusAccepted {
		t.Fatalf("ingest %d %+v", code, acc)
	}
	if js := h.awaitJob(acc.JobID); js.Status != "done" {
		t.Fatalf("ingest job %+v", js)
	}
	if n, _ := h.mem.Store.ActiveCount(ctx); n < 2 {
		t.Fatalf("after the ingest job: %d memories", n)
	}
}

func TestPendingCountsAcrossSessions(t *testing.T) {
	h := startHost(t, testCfg(t, func(m *config.Memory) { m.IngestEveryTurns = 100 }), AssembleOptions{}, "")
	ctx := context.Background()
	// One agent each: a new session of an agent ingests that agent's earlier ones.
	for i := 0; i < 4; i++ {
		for j := 0; j < 3; j++ {
			h.chat(fmt.Sprintf("note %d-%d", i, j), chatOpts{session: fmt.Sprintf("p%d", i), agent: fmt.Sprintf("a%d", i)})
		}
	}
	// A failed turn is not learnable.
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": "FAIL-500 I prefer tabs"}}})
	req, _ := http.NewRequest(http.MethodPost, h.URL+"/v1/chat/completions", bytes.NewReader(body))
	req.Header.Set("X-Session-Id", "p9")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	h.Flush(t)
	if n, _ := h.mem.Ingester.Pending(ctx); n != 12 {
		t.Fatalf("pending %d, want 12", n)
	}
	if _, err := h.mem.Ingester.IngestSession(ctx, "p1", false); err != nil {
		t.Fatal(err)
	}
	if n, _ := h.mem.Ingester.Pending(ctx); n != 9 {
		t.Fatalf("pending %d, want 9", n)
	}
	if _, _, err := h.mem.Ingester.IngestAll(ctx, false); err != nil {
		t.Fatal(err)
	}
	if n, _ := h.mem.Ingester.Pending(ctx); n != 0 {
		t.Fatalf("pending %d, want 0", n)
	}
	// The floor moved up: counting no longer scans old turns.
	if f, _ := pendingFloor(ctx, h.Store.Reader()); f < 13 {
		t.Fatalf("floor %d", f)
	}
}
