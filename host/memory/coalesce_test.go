package memory

import (
	"context"
	"fmt"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/config"
)

// TestBurstCoalescesAndCatchesUp: turns arriving while the session's
// ingestion is held up enqueue at most one more job (it will read them
// all), and once learning gets to run, every turn of the burst is
// ingested — none lost, none left pending.
func TestBurstCoalescesAndCatchesUp(t *testing.T) {
	h := startHost(t, testCfg(t, func(m *config.Memory) { m.IngestEveryTurns = 2 }), AssembleOptions{}, "")
	ctx := context.Background()
	in := h.mem.Ingester
	// Hold the session's ingestion: its first job starts and waits here,
	// as a long step would under load.
	hold := in.lockFor(&in.locks, "burst")
	hold.Lock()
	const turns = 30
	o := chatOpts{session: "burst", user: "u"}
	for i := range turns {
		h.chat(fmt.Sprintf("The build box number %d sits in rack %d.", i, 100+i), o)
	}
	h.Flush(t)
	// Ingest jobs are queued in memory (the turns are the durable part):
	// none in the store, and at most one waiting behind the held one.
	var durable int
	if err := h.Store.Reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs WHERE kind = ?`, JobIngest).Scan(&durable); err != nil {
		t.Fatal(err)
	}
	if queued := h.Core.TransientQueued(JobIngest); queued > 1 || durable != 0 {
		t.Fatalf("%d ingest jobs queued in memory and %d in the store for %d turns due every 2 while ingestion was held, want at most 1 and 0 (one running, one queued)", queued, durable, turns)
	}
	if n, _ := in.Pending(ctx); n != turns {
		t.Fatalf("%d turns pending while ingestion was held, want %d", n, turns)
	}
	hold.Unlock()
	waitFor(t, "the burst to be ingested", func() bool {
		n, err := in.Pending(ctx)
		return err == nil && n == 0
	})
	var mined int
	if err := h.Store.Reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM memory_sources`).Scan(&mined); err != nil {
		t.Fatal(err)
	}
	if mined != turns {
		t.Fatalf("%d turns mined, want %d", mined, turns)
	}
}
