package store

import (
	"context"
	"os"
	"sync"
	"time"
)

// WAL sizes that trigger a checkpoint: a passive one (it never blocks the
// writer) from the read pool, and, should readers keep it from finishing
// while the log keeps growing, one that truncates the log.
const (
	walCheckpointBytes = 4 << 20
	walTruncateBytes   = 256 << 20
	checkpointEvery    = 500 * time.Millisecond
)

// checkpointer copies the write-ahead log into the database file in the
// background, off the commit path, and returns its stop function.
func (s *SQLite) checkpointer() func() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(checkpointEvery)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			fi, err := os.Stat(s.path + "-wal")
			if err != nil || fi.Size() < walCheckpointBytes {
				continue
			}
			db, mode := s.r, "PASSIVE"
			if fi.Size() >= walTruncateBytes {
				db, mode = s.w, "TRUNCATE"
			}
			var busy, logPages, copied int64
			_ = db.QueryRowContext(ctx, "PRAGMA wal_checkpoint("+mode+")").Scan(&busy, &logPages, &copied)
		}
	}()
	return func() {
		cancel()
		wg.Wait()
	}
}
