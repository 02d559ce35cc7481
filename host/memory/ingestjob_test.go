package memory

import (
	"github.com/metaclaw-go/metaclaw/host/config"

	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// gateExtractor blocks in Extract until released (or its context ends) and
// records the longest text it was handed.
type gateExtractor struct {
	Heuristic
	entered chan struct{}
	release chan struct{}
	once    sync.Once
	mu      sync.Mutex
	longest int
	ctxErr  error
}

func newGate() *gateExtractor {
	return &gateExtractor{entered: make(chan struct{}), release: make(chan struct{})}
}

func (g *gateExtractor) Extract(ctx context.Context, turns []Turn) ([]Candidate, error) {
	g.mu.Lock()
	for _, t := range turns {
		g.longest = max(g.longest, len(t.User), len(t.Assistant))
	}
	g.mu.Unlock()
	g.once.Do(func() { close(g.entered) })
	select {
	case <-g.release:
	case <-ctx.Done():
		g.mu.Lock()
		g.ctxErr = ctx.Err()
		g.mu.Unlock()
		return nil, ctx.Err()
	}
	return g.Heuristic.Extract(ctx, turns)
}

func waitChan(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// TestIngestReturnsAtOnce: POST /v1/memory/ingest answers 202 with a job id
// while extraction has not even finished; /v1/status and the memory status
// answer while the ingestion is running; what reaches the extractor is
// capped per turn; the job reports done afterwards.
func TestIngestReturnsAtOnce(t *testing.T) {
	gate := newGate()
	h := startHost(t, testCfg(t, nil), AssembleOptions{Extractor: gate}, "")
	huge := strings.Repeat("I really like long pasted logs. ", 200_000) // ~6 MB in one turn
	var acc IngestAccepted
	code := h.api(http.MethodPost, "/v1/memory/ingest", map[string]any{"session_id": "big", "scope_id": "u", "turns": []map[string]any{
		{"prompt_text": "I prefer tabs for indentation.", "response_text": "OK."},
		{"prompt_text": huge, "response_text": huge[:1<<20]},
	}}, &acc)
	if code != http.StatusAccepted || acc.JobID == 0 || acc.Status != "queued" {
		t.Fatalf("ingest: HTTP %d %+v", code, acc)
	}
	waitChan(t, gate.entered, "the ingest job to reach the extractor")
	// Ingestion is under way (blocked in the extractor): status still answers.
	var top map[string]any
	if code := h.api(http.MethodGet, "/v1/status", nil, &top); code != 200 || top["ok"] != true {
		t.Fatalf("/v1/status during ingestion: %d %v", code, top)
	}
	var st StatusResponse
	if code := h.api(http.MethodGet, "/v1/memory/status", nil, &st); code != 200 {
		t.Fatalf("/v1/memory/status during ingestion: %d", code)
	}
	var js IngestJobStatus
	if h.api(http.MethodGet, "/v1/memory/ingest/"+itoa(int(acc.JobID)), nil, &js); js.Status != "running" {
		t.Fatalf("job while extracting: %+v", js)
	}
	close(gate.release)
	if js := h.awaitJob(acc.JobID); js.Status != "done" {
		t.Fatalf("job: %+v", js)
	}
	if gate.longest > maxTurnText {
		t.Fatalf("the extractor got %d bytes of one turn; the cap is %d", gate.longest, maxTurnText)
	}
	if res, _ := h.mem.Store.Search(context.Background(), SearchQuery{Scope: "u", Agent: "default", Text: "indentation tabs", Limit: 5}); len(res) == 0 {
		t.Fatal("the preference was not learned")
	}
	if code := h.api(http.MethodGet, "/v1/memory/ingest/999999", nil, nil); code != http.StatusNotFound {
		t.Fatalf("unknown job: %d", code)
	}
}

// TestIngestWaitHonoursDisconnect: with ?wait=1 the ingestion runs in the
// request; a client that goes away cancels it and nothing is stored.
func TestIngestWaitHonoursDisconnect(t *testing.T) {
	gate := newGate()
	h := startHost(t, testCfg(t, nil), AssembleOptions{Extractor: gate}, "")
	ctx, cancel := context.WithCancel(context.Background())
	body, _ := json.Marshal(map[string]any{"session_id": "gone", "scope_id": "u", "turns": []map[string]any{{"prompt_text": "I prefer spaces for indentation."}}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.URL+"/v1/memory/ingest?wait=1", strings.NewReader(string(body)))
	req.Header.Set("Content-Type", "application/json")
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	waitChan(t, gate.entered, "the request to reach the extractor")
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("client: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		gate.mu.Lock()
		err := gate.ctxErr
		gate.mu.Unlock()
		if err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the ingestion did not stop when the client went away")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n, _ := h.mem.Store.ActiveCount(context.Background()); n != 0 {
		t.Fatalf("%d units stored for a request the client abandoned", n)
	}
}

// TestRecordedTurnsAreCapped: a huge recorded message feeds at most
// maxTurnText bytes to redaction and extraction.
func TestRecordedTurnsAreCapped(t *testing.T) {
	gate := newGate()
	close(gate.release)
	h := startHost(t, testCfg(t, func(m *config.Memory) { m.IngestEveryTurns = 100 }), AssembleOptions{Extractor: gate}, "")
	h.chat(strings.Repeat("Here is a very long paste of my notes. ", 100_000), chatOpts{session: "rec", user: "u"}) // ~4 MB
	h.Flush(t)
	var acc IngestAccepted
	if code := h.api(http.MethodPost, "/v1/memory/ingest", map[string]any{"session_id": "rec"}, &acc); code != http.StatusAccepted {
		t.Fatalf("ingest: %d", code)
	}
	if js := h.awaitJob(acc.JobID); js.Status != "done" {
		t.Fatalf("job %+v", js)
	}
	if gate.longest == 0 || gate.longest > maxTurnText {
		t.Fatalf("extractor got %d bytes; the cap is %d", gate.longest, maxTurnText)
	}
}
