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
	var jobs int
	if err := h.Store.Reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs WHERE kind = ?`, JobIngest).Scan(&jobs); err != nil {
		t.Fatal(err)
	}
	if jobs > 2 || jobs == 0 {
		t.Fatalf("%d ingest jobs for %d turns due every 2 while ingestion was held, want 1 or 2 (one running, one queued)", jobs, turns)
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
