package memory

import (
	"context"
	"strconv"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/sqlconn"
)

// BenchmarkFoldInjections is one fold of the injection log as the ingest
// job that takes it to injectFoldAt rows does it, committed: 512 rows over
// 40 units of a 10,000-unit store (BenchmarkIngestJob's turns) or over 512
// (proxybench's, whose questions inject facts from all over the library).
// Refilling the log is outside the timing.
func BenchmarkFoldInjections(b *testing.B) {
	for _, spread := range []int{40, 512} {
		b.Run("units="+strconv.Itoa(spread), func(b *testing.B) { benchFold(b, spread) })
	}
}

func benchFold(b *testing.B, spread int) {
	s := seeded(b, 10_000, "fold")
	st := s.turns.(*store.SQLite)
	ctx := context.Background()
	units, err := s.List(ctx, Filter{Limit: spread})
	if err != nil || len(units) < spread {
		b.Fatalf("%d units, %v", len(units), err)
	}
	fill := func() {
		if _, err := s.w.ExecContext(ctx, `DELETE FROM memory_injections`); err != nil {
			b.Fatal(err)
		}
		for i := range injectFoldAt {
			if _, err := s.w.ExecContext(ctx, `INSERT INTO memory_injections (unit, n, at) SELECT id, 1, ? FROM memory_units WHERE uid = ?`,
				1_700_000_000_000+i, units[(i*7)%len(units)].ID); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := st.Writer().Exec("PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			b.Fatal(err)
		}
	}
	frames := 0
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		fill()
		before := walFrames(b, st)
		b.StartTimer()
		tx, err := sqlconn.Begin(ctx, s.w)
		if err != nil {
			b.Fatal(err)
		}
		if err := foldInjections(ctx, tx); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		frames += walFrames(b, st) - before
		b.StartTimer()
	}
	b.ReportMetric(float64(frames)/float64(b.N), "pages/op")
}
