package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/fakellm"
)

// Latency from "said" to "available in a new session", through the real
// proxy with the heuristic extractor (docs/memory.md quotes these):
//
//	go test -run '^$' -bench 'NewSession|Durable' -benchtime 200x ./host/memory/
//
// NewSessionFirstTurn times the first request of a new session after an
// earlier session of the same agent left `pending` turns (its catch-up runs
// before retrieval); SameSessionTurn is the same request in a session that
// is not new (no catch-up). DurableIngested times a "never …" statement
// from the end of its request until it is stored (the background job).
func BenchmarkNewSessionFirstTurn(b *testing.B) {
	for _, pending := range []int{0, 3, 12} {
		b.Run(fmt.Sprintf("pending=%d", pending), func(b *testing.B) {
			h := startHost(b, testCfg(b, func(m *config.Memory) { m.SessionStartWaitMS = 5000; m.IngestEveryTurns = 100 }), AssembleOptions{}, "")
			var took []time.Duration
			b.ResetTimer()
			for i := range b.N {
				took = append(took, timeNewSession(b, h, i, pending, 3))
				b.StopTimer()
				h.Flush(b) // the next round starts with exactly `pending` turns
				if _, err := h.mem.Ingester.IngestSession(context.Background(), fmt.Sprintf("b%d", i), false); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			reportPercentiles(b, "", took)
		})
	}
}

// BenchmarkNewSessionFirstTurnLLM is the same with memory.extractor llm
// behind a fake upstream that answers at once: the first turn pays the
// provisional heuristic pass; replaced-ms is from the start of that turn
// until the LLM's units have replaced the provisional ones (a real LLM adds
// its own call time).
func BenchmarkNewSessionFirstTurnLLM(b *testing.B) {
	up := fakellm.New()
	b.Cleanup(up.Close)
	up.Record = false
	up.Reply = `{"memories":[{"type":"project_state","content":"The release uses a new tool.","turn":0}]}`
	cfg := testCfg(b, func(m *config.Memory) { m.SessionStartWaitMS = 5000; m.IngestEveryTurns = 100; m.Extractor = "llm" })
	cfg.LLM.APIBase, cfg.LLM.ModelID, cfg.LLM.API = up.URL+"/v1", "fake-model", "openai"
	h := startHost(b, cfg, AssembleOptions{}, "")
	ctx := context.Background()
	var took, replaced []time.Duration
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		took = append(took, timeNewSession(b, h, i, 3, 1))
		b.StopTimer()
		for {
			if j, _ := readJournal(ctx, h.Store.Reader(), fmt.Sprintf("a%d-0", i)); len(j) == 0 {
				break
			}
			if time.Since(start) > 30*time.Second {
				b.Fatal("the LLM's units did not replace the provisional ones")
			}
			time.Sleep(200 * time.Microsecond)
		}
		replaced = append(replaced, time.Since(start))
		b.StartTimer()
	}
	reportPercentiles(b, "", took)
	reportPercentiles(b, "replaced-", replaced)
}

// timeNewSession records pending turns of user u in earlier sessions
// a<i>-<n> (timer stopped) and times the first request of session b<i>.
func timeNewSession(b *testing.B, h *memHost, i, pending, sessions int) time.Duration {
	b.StopTimer()
	for j := range pending {
		observeTurn(h, fmt.Sprintf("a%d-%d", i, j%sessions), fmt.Sprintf("We use tool%d-%d for step %d of the release.", i, j, j))
	}
	h.Flush(b)
	b.StartTimer()
	start := time.Now()
	h.chat("Set up a new service for me.", chatOpts{session: fmt.Sprintf("b%d", i), user: "u"})
	return time.Since(start)
}

// observeTurn records a user message of user u as the proxy records a turn
// (without the request, so no session starts).
func observeTurn(h *memHost, session, text string) {
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": text}}})
	h.Core.Observe(&store.Turn{SessionID: session, Agent: "default", TurnType: "main", Status: 200,
		RequestJSON: string(body), ResponseText: "FAKE-REPLY-OK", UserID: "u", MemoryScope: "user:u"})
}

func BenchmarkSameSessionTurn(b *testing.B) {
	h := startHost(b, testCfg(b, func(m *config.Memory) { m.IngestEveryTurns = 100000 }), AssembleOptions{}, "")
	h.chat("Hello.", chatOpts{session: "same", user: "u"})
	var took []time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		h.chat("Set up a new service for me.", chatOpts{session: "same", user: "u"})
		took = append(took, time.Since(start))
	}
	reportPercentiles(b, "", took)
}

func BenchmarkDurableIngested(b *testing.B) {
	h := startHost(b, testCfg(b, nil), AssembleOptions{}, "")
	ctx := context.Background()
	var took []time.Duration
	b.ResetTimer()
	for i := range b.N {
		h.chat(fmt.Sprintf("Never deploy service%d on Fridays.", i), chatOpts{session: "rules", user: "u"})
		start := time.Now()
		for {
			if n, _ := h.mem.Store.ActiveCount(ctx); n == i+1 {
				break
			}
			if time.Since(start) > 10*time.Second {
				b.Fatal("durable statement not ingested")
			}
			time.Sleep(200 * time.Microsecond)
		}
		took = append(took, time.Since(start))
	}
	reportPercentiles(b, "", took)
}

func reportPercentiles(b *testing.B, prefix string, took []time.Duration) {
	b.Helper()
	if len(took) == 0 {
		return
	}
	sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
	at := func(p float64) float64 { return float64(took[int(p*float64(len(took)-1))].Microseconds()) / 1000 }
	b.ReportMetric(at(0.5), prefix+"p50-ms")
	b.ReportMetric(at(0.99), prefix+"p99-ms")
	b.ReportMetric(at(1), prefix+"max-ms")
}
