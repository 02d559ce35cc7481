package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/store"
)

// TestIngestJobYieldsToRequests: an ingestion run by a job waits for a gap
// between answers (core.WaitForGap) before its extraction and before its
// transaction, never inside it; one a caller waits for (the session-start
// catch-up, the HTTP API) does not wait.
func TestIngestJobYieldsToRequests(t *testing.T) {
	ctx := context.Background()
	s, st := openStore(t, Options{})
	c := core.New(core.Options{Store: st, Log: zerolog.Nop()})
	t.Cleanup(func() { c.Close() })
	in := NewIngester(st, s, IngesterOptions{})
	in.Register(c, false)
	real := in.yield
	var events []string
	in.yield = func(ctx context.Context) {
		events = append(events, "yield")
		real(ctx)
	}
	in.testHookInTx = func() { events = append(events, "tx") }

	record := func(session string) {
		var turns []*store.Turn
		for i := 0; i < 3; i++ {
			body, _ := json.Marshal(map[string]any{"messages": []map[string]any{{"role": "user", "content": fmt.Sprintf("Remember that build box %d sits in rack %d.", i, 40+i)}}})
			turns = append(turns, &store.Turn{SessionID: session, Agent: "main", TurnType: core.TurnMain, ClientAPI: "openai",
				UpstreamAPI: "openai", RequestJSON: string(body), ResponseText: "ok", Status: 200, MemoryScope: "user:y"})
		}
		if err := st.RecordTurns(ctx, turns); err != nil {
			t.Fatal(err)
		}
	}

	// A request is being answered while the job runs: the job still ends
	// (each wait is bounded), having waited before each step.
	record("job")
	done := c.Answering()
	payload, _ := json.Marshal(IngestJob{SessionID: "job"})
	if err := in.HandleIngest(ctx, payload); err != nil {
		t.Fatal(err)
	}
	done()
	if want := []string{"yield", "yield", "tx"}; fmt.Sprint(events) != fmt.Sprint(want) {
		t.Fatalf("job ingestion steps %v, want %v", events, want)
	}
	if n, _ := in.Pending(ctx); n != 0 {
		t.Fatalf("%d turns still pending after the job", n)
	}

	events = nil
	record("direct")
	if _, err := in.IngestSession(ctx, "direct", false); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(events) != "[tx]" {
		t.Fatalf("a direct ingestion (a caller waits for it) yielded: %v", events)
	}
}
