package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

func openTest(t *testing.T) (*SQLite, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), DBFile)
	s, err := OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func TestRecordTurnsAssignsIndicesAndReopens(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	mk := func(session, typ string) *Turn {
		return &Turn{SessionID: session, Agent: "main", TurnType: typ, ClientAPI: "openai", UpstreamAPI: "openai", RequestJSON: `{}`, Status: 200}
	}
	batch := []*Turn{mk("s1", "main"), mk("s1", "side"), mk("s1", "main"), mk("s2", "main")}
	if err := s.RecordTurns(ctx, batch); err != nil {
		t.Fatal(err)
	}
	want := []int{1, 1, 2, 1}
	for i, tr := range batch {
		if tr.TurnIndex != want[i] || tr.ID == 0 {
			t.Errorf("turn %d: index %d id %d, want index %d", i, tr.TurnIndex, tr.ID, want[i])
		}
	}
	if err := s.EndSession(ctx, "s1", "client", time.Now()); err != nil {
		t.Fatal(err)
	}
	sess, err := s.Session(ctx, "s1")
	if err != nil || sess.EndedAt == nil || sess.EndReason != "client" || sess.MainTurns != 2 || sess.SideTurns != 1 {
		t.Fatalf("session after end: %+v %v", sess, err)
	}
	// A new turn reopens the session and continues its numbering.
	next := mk("s1", "main")
	if err := s.RecordTurns(ctx, []*Turn{next}); err != nil {
		t.Fatal(err)
	}
	sess, _ = s.Session(ctx, "s1")
	if sess.EndedAt != nil || next.TurnIndex != 3 {
		t.Fatalf("reopen: ended=%v index=%d", sess.EndedAt, next.TurnIndex)
	}
	turns, err := s.SessionTurns(ctx, "s1")
	if err != nil || len(turns) != 4 {
		t.Fatalf("session turns: %d %v", len(turns), err)
	}
	c, err := s.Counts(ctx)
	if err != nil || c.Turns != 5 || c.Sessions != 2 || c.OpenSessions != 2 {
		t.Fatalf("counts %+v %v", c, err)
	}
	if _, err := s.Session(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing session: %v", err)
	}
}

func TestIdleSessions(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	old := time.Now().Add(-2 * time.Hour)
	if err := s.RecordTurns(ctx, []*Turn{
		{SessionID: "old", Agent: "a", TurnType: "main", RequestJSON: "{}", Status: 200, CreatedAt: old},
		{SessionID: "new", Agent: "a", TurnType: "main", RequestJSON: "{}", Status: 200},
	}); err != nil {
		t.Fatal(err)
	}
	ids, err := s.IdleSessions(ctx, time.Now().Add(-time.Hour))
	if err != nil || len(ids) != 1 || ids[0] != "old" {
		t.Fatalf("idle: %v %v", ids, err)
	}
}

func TestJobsLifecycle(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	now := time.Now()
	id1, _ := s.EnqueueJob(ctx, "ingest", `{"s":1}`, now)
	_, _ = s.EnqueueJob(ctx, "ingest", `{"s":2}`, now.Add(time.Hour)) // not ready yet
	_, _ = s.EnqueueJob(ctx, "other", `{}`, now)

	if _, err := s.ClaimJob(ctx, []string{"nothing"}, now); !errors.Is(err, ErrNotFound) {
		t.Fatalf("claim of unknown kind: %v", err)
	}
	j, err := s.ClaimJob(ctx, []string{"ingest"}, now)
	if err != nil || j.ID != id1 || j.State != "running" || j.Attempts != 1 || j.Payload != `{"s":1}` {
		t.Fatalf("claim: %+v %v", j, err)
	}
	if _, err := s.ClaimJob(ctx, []string{"ingest"}, now); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second claim should find nothing ready: %v", err)
	}
	// Crash recovery: running goes back to pending.
	if n, err := s.RequeueRunning(ctx); err != nil || n != 1 {
		t.Fatalf("requeue: %d %v", n, err)
	}
	j, _ = s.ClaimJob(ctx, []string{"ingest"}, now)
	if err := s.FailJob(ctx, j.ID, "boom", now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimJob(ctx, []string{"ingest"}, now); !errors.Is(err, ErrNotFound) {
		t.Fatal("retry must wait for its time")
	}
	j, err = s.ClaimJob(ctx, []string{"ingest"}, now.Add(2*time.Minute))
	if err != nil || j.Attempts != 3 || j.LastError != "boom" {
		t.Fatalf("retry claim: %+v %v", j, err)
	}
	if err := s.FailJob(ctx, j.ID, "fatal", time.Time{}); err != nil {
		t.Fatal(err)
	}
	c, _ := s.Counts(ctx)
	if c.FailedJobs != 1 || c.PendingJobs != 2 {
		t.Fatalf("counts %+v", c)
	}
	j, _ = s.ClaimJob(ctx, []string{"other", "ingest"}, now)
	if err := s.FinishJob(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	c, _ = s.Counts(ctx)
	if c.PendingJobs != 1 {
		t.Fatalf("pending after finish: %+v", c)
	}
}

func TestConcurrentWritersAndReaders(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := 0; w < 8; w++ {
		wg.Add(2)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				tr := &Turn{SessionID: fmt.Sprintf("s%d", w%3), Agent: "a", TurnType: "main", RequestJSON: "{}", Status: 200}
				if err := s.RecordTurns(ctx, []*Turn{tr}); err != nil {
					errs <- err
					return
				}
			}
		}(w)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				if _, err := s.Counts(ctx); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	c, _ := s.Counts(ctx)
	if c.Turns != 160 {
		t.Fatalf("turns = %d, want 160", c.Turns)
	}
	// Indices per session are dense 1..n even under concurrency.
	for i := 0; i < 3; i++ {
		turns, _ := s.SessionTurns(ctx, fmt.Sprintf("s%d", i))
		for k, tr := range turns {
			if tr.TurnIndex != k+1 {
				t.Fatalf("session s%d turn %d has index %d", i, k, tr.TurnIndex)
			}
		}
	}
}

func TestReopenKeepsDataAndIsPrivate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, DBFile)
	ctx := context.Background()
	s, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordTurns(ctx, []*Turn{{SessionID: "x", Agent: "a", TurnType: "main", RequestJSON: "{}", Status: 200}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("db mode %v %v", fi.Mode(), err)
	}
	s, err = OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, _ := s.Counts(ctx)
	if c.Turns != 1 {
		t.Fatalf("reopened turns = %d", c.Turns)
	}
}

func TestUsage(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	for _, u := range []Usage{
		{Purpose: "evolver", Model: "m", InputTokens: 100, OutputTokens: 20, OK: true},
		{Purpose: "evolver", Model: "m", InputTokens: 50, OutputTokens: 0, OK: false},
		{Purpose: "extractor", InputTokens: 7, OutputTokens: 3, OK: true},
	} {
		if err := s.RecordUsage(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.UsageByPurpose(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if e := got["evolver"]; e.Calls != 2 || e.Failed != 1 || e.InputTokens != 150 || e.OutputTokens != 20 {
		t.Fatalf("evolver %+v", e)
	}
	if x := got["extractor"]; x.Calls != 1 || x.InputTokens != 7 {
		t.Fatalf("extractor %+v", x)
	}
}

func TestRecentTurnsAndActivity(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	day1 := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	day2 := day1.Add(24 * time.Hour)
	turns := []*Turn{
		{SessionID: "a1", Agent: "main", TurnType: "main", RequestJSON: "{}", Status: 200, InjectedJSON: `["skill:x@1"]`, InjectedTokens: 30, CreatedAt: day1},
		{SessionID: "a1", Agent: "main", TurnType: "main", RequestJSON: "{}", Status: 200, InjectedTokens: 10, CreatedAt: day1.Add(time.Hour)},
		{SessionID: "b1", Agent: "coder", TurnType: "side", RequestJSON: "{}", Status: 502, CreatedAt: day2},
	}
	if err := s.RecordTurns(ctx, turns); err != nil {
		t.Fatal(err)
	}
	recent, err := s.RecentTurns(ctx, 2)
	if err != nil || len(recent) != 2 || recent[0].Agent != "coder" || recent[1].InjectedTokens != 10 {
		t.Fatalf("recent %+v %v", recent, err)
	}
	all, _ := s.RecentTurns(ctx, 10)
	if len(all[2].Injected) != 1 || all[2].Injected[0] != "skill:x@1" {
		t.Fatalf("injected ids %+v", all[2])
	}
	act, err := s.Activity(ctx, day1.Add(-time.Hour))
	if err != nil || len(act) != 2 {
		t.Fatalf("activity %+v %v", act, err)
	}
	if act[0].Day != "2026-11-28" || act[0].Agent != "main" || act[0].Turns != 2 || act[0].Sessions != 1 || act[0].InjectedTokens != 40 {
		t.Fatalf("bucket %+v", act[0])
	}
}

// TestReadsDoNotWaitForTheWriter: in WAL a read never waits for a write
// transaction — including a read that opens a new connection of the read
// pool, which must not run a write-capable pragma (auto_vacuum) on open.
// The writer may itself wait for such a read inside its transaction (memory
// advances its cursor that way), which otherwise deadlocks until
// busy_timeout and fails with SQLITE_BUSY.
func TestReadsDoNotWaitForTheWriter(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO jobs (kind, run_after, created_at, updated_at) VALUES ('t', 0, 0, 0)`); err != nil {
		t.Fatal(err)
	}
	// Every connection of the read pool at once: each is new (the writer ran
	// the migrations), opened while the transaction holds the write lock.
	errs := make(chan error, readers)
	for range readers {
		go func() {
			c, err := s.r.Conn(ctx)
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			var n int
			errs <- c.QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs`).Scan(&n)
		}()
	}
	for range readers {
		if err := <-errs; err != nil {
			t.Fatalf("a read waited for the open write transaction: %v", err)
		}
	}
}
