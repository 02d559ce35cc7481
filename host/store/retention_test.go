package store

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestPruneKeepsWhatLearningNeeds(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	// Noon UTC, so the usage rows a few minutes apart share one day.
	old := time.Date(now.Year(), now.Month(), now.Day(), 12, 0, 0, 0, time.UTC).Add(-40 * 24 * time.Hour)
	cut := now.Add(-30 * 24 * time.Hour)

	// Memory has read "ended" and "job" to their end; "unmined" not at all.
	var mined ReadPosition
	setup := func(t *testing.T) *SQLite {
		s, _ := openTest(t)
		ids := map[string][]int64{}
		add := func(session string, at time.Time, status int) {
			tr := &Turn{SessionID: session, Agent: "a", TurnType: "main", ClientAPI: "openai", UpstreamAPI: "openai",
				RequestJSON: `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 4000) + `"}]}`, ResponseText: "answer", Status: status, CreatedAt: at}
			if err := s.RecordTurns(ctx, []*Turn{tr}); err != nil {
				t.Fatal(err)
			}
			ids[session] = append(ids[session], tr.ID)
		}
		for _, sess := range []string{"ended", "open", "job", "unmined"} {
			add(sess, old, 200)
			add(sess, old, 500)
		}
		add("recent", now, 200)
		for _, sess := range []string{"ended", "job", "unmined", "recent"} {
			if err := s.EndSession(ctx, sess, "test", now); err != nil {
				t.Fatal(err)
			}
		}
		mined = ReadPosition{Cursors: map[string]int64{"ended": ids["ended"][1], "job": ids["job"][1]}}
		if _, err := s.EnqueueJob(ctx, "skill_evolve", `{"session_id":"job"}`, now); err != nil {
			t.Fatal(err)
		}
		if _, err := s.EnqueueJob(ctx, "memory_ingest", `{}`, now); err != nil { // names no session: protects none
			t.Fatal(err)
		}
		for _, state := range []string{"done", "failed"} {
			if _, err := s.w.Exec(`INSERT INTO jobs (kind, payload, state, run_after, created_at, updated_at) VALUES ('k', '{"session_id":"ended"}', ?, 0, ?, ?)`, state, ms(old), ms(old)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.w.Exec(`INSERT INTO jobs (kind, payload, state, run_after, created_at, updated_at) VALUES ('k', '{}', 'done', 0, ?, ?)`, ms(now), ms(now)); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if err := s.RecordUsage(ctx, Usage{Purpose: "evolver", Model: "m", InputTokens: 10, OutputTokens: 1, OK: i != 0, At: old.Add(time.Duration(i) * time.Minute)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.RecordUsage(ctx, Usage{Purpose: "evolver", Model: "m", InputTokens: 5, OutputTokens: 5, OK: true, At: now}); err != nil {
			t.Fatal(err)
		}
		return s
	}

	tests := []struct {
		name        string
		keepUnmined bool
		gone, kept  []string // sessions whose old turns go / stay
		keptUnmined int64
	}{
		{"memory on", true, []string{"ended"}, []string{"open", "job", "unmined", "recent"}, 1},
		{"memory off", false, []string{"ended", "unmined"}, []string{"open", "job", "recent"}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := setup(t)
			var keep PositionFunc
			if tc.keepUnmined {
				keep = func(context.Context) (ReadPosition, error) { return mined, nil }
			}
			usageBefore, err := s.UsageByPurpose(ctx)
			if err != nil {
				t.Fatal(err)
			}
			dry, err := s.Prune(ctx, PruneOptions{Before: cut, KeepUnmined: keep, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := s.Prune(ctx, PruneOptions{Before: cut, KeepUnmined: keep, Batch: 1})
			if err != nil {
				t.Fatal(err)
			}
			wantTurns := int64(2 * len(tc.gone))
			if tc.keepUnmined {
				wantTurns++ // the failed turn of "unmined" was never going to be mined
			}
			if rep.Turns != wantTurns || dry.Turns != rep.Turns || dry.TurnBytes == 0 {
				t.Errorf("turns pruned %d (dry run %d, %d bytes), want %d", rep.Turns, dry.Turns, dry.TurnBytes, wantTurns)
			}
			if rep.KeptOpenSession != 2 || rep.KeptPendingJob != 2 || rep.KeptUnmined != tc.keptUnmined {
				t.Errorf("kept: %+v", rep)
			}
			if rep.Jobs != 2 || dry.Jobs != 2 || rep.UsageRows != 2 || dry.UsageRows != 2 {
				t.Errorf("jobs %d (dry %d), usage rows folded %d (dry %d), want 2 and 2", rep.Jobs, dry.Jobs, rep.UsageRows, dry.UsageRows)
			}
			for _, sess := range tc.gone {
				if n := countTurns(t, s, sess); n != 0 {
					t.Errorf("session %s still has %d turns", sess, n)
				}
			}
			for _, sess := range tc.kept {
				if n := countTurns(t, s, sess); n < 1 {
					t.Errorf("session %s lost its turns", sess)
				}
			}
			if tc.keepUnmined {
				if n := countTurns(t, s, "unmined"); n != 1 {
					t.Errorf("unmined session has %d turns, want its 1 successful one", n)
				}
			}
			if _, err := s.Session(ctx, "ended"); err == nil {
				t.Error("session left without turns was not pruned")
			}
			if _, err := s.Session(ctx, "job"); err != nil {
				t.Errorf("session named by a pending job was pruned: %v", err)
			}
			usageAfter, err := s.UsageByPurpose(ctx)
			if err != nil || usageAfter["evolver"] != usageBefore["evolver"] {
				t.Errorf("usage totals changed by folding: before %+v after %+v (%v)", usageBefore, usageAfter, err)
			}
			var usageRows int
			s.r.QueryRow(`SELECT COUNT(*) FROM llm_usage`).Scan(&usageRows)
			if usageRows != 3 { // the old day: the failed call and one folded row for the two ok ones; today's row untouched
				t.Errorf("llm_usage rows after fold: %d, want 3", usageRows)
			}
			again, err := s.Prune(ctx, PruneOptions{Before: cut, KeepUnmined: keep})
			if err != nil || again.Turns != 0 || again.Jobs != 0 || again.UsageRows != 0 {
				t.Errorf("second prune is not a no-op: %+v %v", again, err)
			}
		})
	}
}

// TestPruneUsesTheFloor: turns at or below memory's floor count as mined
// without a cursor, those above it are kept, and a position that cannot be
// read stops the prune before anything is deleted.
func TestPruneUsesTheFloor(t *testing.T) {
	ctx := context.Background()
	old := time.Now().Add(-40 * 24 * time.Hour)
	s, _ := openTest(t)
	var ids []int64
	for i := 0; i < 4; i++ {
		tr := &Turn{SessionID: "s", Agent: "a", TurnType: "main", ClientAPI: "openai", UpstreamAPI: "openai",
			RequestJSON: `{}`, ResponseText: "a", Status: 200, CreatedAt: old}
		if err := s.RecordTurns(ctx, []*Turn{tr}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tr.ID)
	}
	if err := s.EndSession(ctx, "s", "test", time.Now()); err != nil {
		t.Fatal(err)
	}
	cut := time.Now().Add(-30 * 24 * time.Hour)
	broken := func(context.Context) (ReadPosition, error) {
		return ReadPosition{}, errors.New("memory tables unreadable")
	}
	if _, err := s.Prune(ctx, PruneOptions{Before: cut, KeepUnmined: broken}); err == nil || !strings.Contains(err.Error(), "memory tables unreadable") {
		t.Fatalf("prune with an unreadable position: %v", err)
	}
	if n := countTurns(t, s, "s"); n != 4 {
		t.Fatalf("a failed prune deleted turns: %d left", n)
	}
	// The floor covers the first two; a cursor below the floor adds nothing.
	pos := ReadPosition{Floor: ids[1], Cursors: map[string]int64{"s": ids[0]}}
	rep, err := s.Prune(ctx, PruneOptions{Before: cut, KeepUnmined: func(context.Context) (ReadPosition, error) { return pos, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Turns != 2 || rep.KeptUnmined != 2 || countTurns(t, s, "s") != 2 {
		t.Fatalf("pruned %d, kept unmined %d, left %d; want 2, 2, 2", rep.Turns, rep.KeptUnmined, countTurns(t, s, "s"))
	}
}

func countTurns(t *testing.T, s *SQLite, session string) int {
	t.Helper()
	var n int
	if err := s.r.QueryRow(`SELECT COUNT(*) FROM turns WHERE session_id = ?`, session).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestIncrementalVacuumShrinksTheFile(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)
	old := time.Now().Add(-100 * 24 * time.Hour)
	big := strings.Repeat("y", 64<<10)
	for i := 0; i < 80; i++ {
		tr := &Turn{SessionID: "s", Agent: "a", TurnType: "main", ClientAPI: "openai", UpstreamAPI: "openai", RequestJSON: `{}`, ResponseText: big, Status: 200, CreatedAt: old}
		if err := s.RecordTurns(ctx, []*Turn{tr}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.EndSession(ctx, "s", "test", old); err != nil {
		t.Fatal(err)
	}
	if err := s.checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	before, _ := s.Stats(ctx, path)
	if before.AutoVacuum != "incremental" || before.Rows["turns"] != 80 {
		t.Fatalf("new database: %+v", before)
	}
	if _, err := s.Prune(ctx, PruneOptions{Before: time.Now()}); err != nil {
		t.Fatal(err)
	}
	freed, err := s.IncrementalVacuum(ctx, 1<<30)
	if err != nil || freed == 0 {
		t.Fatalf("incremental vacuum freed %d pages: %v", freed, err)
	}
	// IncrementalVacuum's own checkpoint has shrunk the file, even with the
	// background checkpointer running.
	after, _ := s.Stats(ctx, path)
	if after.FreePages != 0 || after.FileBytes >= before.FileBytes/2 || after.Rows["turns"] != 0 {
		t.Errorf("file %d -> %d bytes, free pages %d, turns %d", before.FileBytes, after.FileBytes, after.FreePages, after.Rows["turns"])
	}
}

// A reader holding the log makes the TRUNCATE checkpoint answer busy; the
// checkpoint retries until it is gone instead of leaving the log in place.
func TestCheckpointRetriesWhileBusy(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	record := func() {
		tr := &Turn{SessionID: "s", Agent: "a", TurnType: "main", ClientAPI: "openai", UpstreamAPI: "openai", RequestJSON: `{}`, Status: 200}
		if err := s.RecordTurns(ctx, []*Turn{tr}); err != nil {
			t.Fatal(err)
		}
	}
	record()
	// the writer's busy handler would otherwise wait 10 s per try
	if _, err := s.w.Exec("PRAGMA busy_timeout = 20"); err != nil {
		t.Fatal(err)
	}
	defer s.w.Exec("PRAGMA busy_timeout = 10000")
	reader, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback()
	var n int
	if err := reader.QueryRow(`SELECT COUNT(*) FROM turns`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	record() // frames the reader's snapshot does not see

	busyTries := 0
	checkpointBusy = func(int) {
		busyTries++
		if busyTries == 2 {
			reader.Rollback()
		}
	}
	defer func() { checkpointBusy = func(int) {} }()
	if err := s.checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if busyTries < 2 {
		t.Fatalf("the held reader never made the checkpoint busy (%d busy tries)", busyTries)
	}
	if fi, err := os.Stat(s.path + "-wal"); err != nil || fi.Size() != 0 {
		t.Fatalf("log not truncated: %v %v", fi.Size(), err)
	}
}

func TestVacuumConvertsAnOldDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), DBFile)
	// A database created before incremental auto-vacuum: a table exists
	// before the pragma can apply.
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`CREATE TABLE legacy (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	s, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st, _ := s.Stats(ctx, path)
	if st.AutoVacuum != "none" {
		t.Fatalf("old database reports auto_vacuum %s", st.AutoVacuum)
	}
	if n, err := s.IncrementalVacuum(ctx, 100); err != nil || n != 0 {
		t.Fatalf("incremental vacuum on an old database: %d %v", n, err)
	}
	if err := s.Vacuum(ctx); err != nil {
		t.Fatal(err)
	}
	st, _ = s.Stats(ctx, path)
	if st.AutoVacuum != "incremental" {
		t.Fatalf("after vacuum: auto_vacuum %s", st.AutoVacuum)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatal(err)
	}
}
