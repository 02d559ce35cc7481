package store

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/pressly/goose/v3"
)

// An existing database (migrated before jobs_pending) keeps its queue: its
// pending, running and finished jobs are claimed, requeued and counted as
// before, through the one partial index.
func TestJobsPendingMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), DBFile)
	old, err := openPool("file:" + path + "?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := fs.Sub(migrations, "migrations")
	p, err := goose.NewProvider(goose.DialectSQLite3, old, sub)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 9); err != nil {
		t.Fatal(err)
	}
	for _, st := range []string{"pending", "running", "done", "failed"} {
		if _, err := old.Exec(`INSERT INTO jobs (kind, payload, state, run_after, created_at, updated_at) VALUES ('k', ?, ?, 0, 0, 0)`, `{"was":"`+st+`"}`, st); err != nil {
			t.Fatal(err)
		}
	}
	old.Close()

	s, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var idx []string
	rows, err := s.r.Query(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'jobs' ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		rows.Scan(&n)
		idx = append(idx, n)
	}
	rows.Close()
	if strings.Join(idx, ",") != "jobs_pending" {
		t.Fatalf("indexes on jobs: %v, want jobs_pending only", idx)
	}
	if c, _ := s.Counts(ctx); c.PendingJobs != 2 || c.FailedJobs != 1 {
		t.Fatalf("counts %+v, want 2 pending or running and 1 failed", c)
	}
	if n, err := s.RequeueRunning(ctx); err != nil || n != 1 {
		t.Fatalf("requeue running: %d %v", n, err)
	}
	var got []string
	for range 3 {
		j, err := s.ClaimJob(ctx, []string{"k"}, time.Now())
		if err != nil {
			break
		}
		got = append(got, j.Payload)
	}
	if strings.Join(got, " ") != `{"was":"pending"} {"was":"running"}` {
		t.Fatalf("claimed %v, want the pending and the requeued job", got)
	}
}

// The claim reads the partial index, and finishing a job writes its row's
// page only (the index holds pending jobs: a running one is not in it).
func TestJobPages(t *testing.T) {
	s, path := openTest(t)
	ctx := context.Background()
	var detail string
	var id, parent, unused int
	if err := s.r.QueryRow(`EXPLAIN QUERY PLAN SELECT id FROM jobs WHERE state = 'pending' AND kind IN (?) AND run_after <= ? ORDER BY run_after, id LIMIT 1`, "k", 0).
		Scan(&id, &parent, &unused, &detail); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(detail, "INDEX jobs_pending (kind=? AND run_after<?)") {
		t.Fatalf("claim's plan: %s", detail)
	}
	for range 50 { // a queue with history
		if _, err := s.EnqueueJob(ctx, "k", `{}`, time.Time{}); err != nil {
			t.Fatal(err)
		}
		j, err := s.ClaimJob(ctx, []string{"k"}, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if err := s.FinishJob(ctx, j.ID); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.EnqueueJob(ctx, "k", `{}`, time.Time{}); err != nil {
		t.Fatal(err)
	}
	j, err := s.ClaimJob(ctx, []string{"k"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishJob(ctx, j.ID); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	var page int64
	s.r.QueryRow(`PRAGMA page_size`).Scan(&page)
	if frames := (fi.Size() - 32) / (page + 24); frames != 1 {
		t.Fatalf("finishing a job wrote %d pages, want 1", frames)
	}
}
