package core

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/store"
)

func jobState(t *testing.T, st *store.SQLite, id int64) (state string, attempts int) {
	t.Helper()
	if err := st.Reader().QueryRow(`SELECT state, attempts FROM jobs WHERE id = ?`, id).Scan(&state, &attempts); err != nil {
		t.Fatal(err)
	}
	return state, attempts
}

func lastJobID(t *testing.T, st *store.SQLite, kind string) int64 {
	t.Helper()
	var id int64
	if err := st.Reader().QueryRow(`SELECT MAX(id) FROM jobs WHERE kind = ?`, kind).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestKindsRunIndependentlyAndCloseCancels(t *testing.T) {
	c, st := newCore(t, Options{})
	started := make(chan struct{}, 10)
	c.HandleJobs("evolve", func(ctx context.Context, _ json.RawMessage) error {
		started <- struct{}{}
		<-ctx.Done() // a long LLM call that honours cancellation
		return ctx.Err()
	})
	ingested := make(chan string, 10)
	c.HandleJobsWith("ingest", JobOptions{Concurrency: 2}, func(_ context.Context, p json.RawMessage) error {
		ingested <- string(p)
		return nil
	})
	for i := 0; i < 3; i++ {
		if err := c.Enqueue(context.Background(), "evolve", map[string]int{"n": i}, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	<-started
	evolveID := lastJobID(t, st, "evolve") - 2 // the first one is running
	for i := 0; i < 3; i++ {
		if err := c.Enqueue(context.Background(), "ingest", map[string]int{"n": i}, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		select {
		case <-ingested:
		case <-time.After(20 * time.Second):
			t.Fatal("ingest jobs wait behind a running evolve job")
		}
	}
	c.Close() // must not wait for the evolve call to finish on its own
	state, attempts := jobState(t, st, evolveID)
	if state != "pending" || attempts != 0 {
		t.Errorf("cancelled job: state %s attempts %d, want pending 0 (requeued, not failed)", state, attempts)
	}
}

func TestStuckJobDoesNotBlockClose(t *testing.T) {
	dir := t.TempDir()
	st, err := store.OpenSQLite(context.Background(), filepath.Join(dir, store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := New(Options{Store: st, Log: zerolog.Nop(), JobGrace: 50 * time.Millisecond})
	started, unblock := make(chan struct{}), make(chan struct{})
	defer close(unblock)
	c.HandleJobs("stuck", func(context.Context, json.RawMessage) error {
		close(started)
		<-unblock // ignores its context
		return nil
	})
	if err := c.Enqueue(context.Background(), "stuck", struct{}{}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	<-started
	c.Close()
	if state, _ := jobState(t, st, lastJobID(t, st, "stuck")); state != "running" {
		t.Fatalf("state %s", state)
	}
	// The next start requeues it.
	c2 := New(Options{Store: st, Log: zerolog.Nop()})
	defer c2.Close()
	if state, _ := jobState(t, st, lastJobID(t, st, "stuck")); state != "pending" {
		t.Fatalf("after restart: state %s", state)
	}
}

func TestEndSessionIsOneTransaction(t *testing.T) {
	c, st := newCore(t, Options{})
	c.OnSessionEnd("first_end", func(context.Context, json.RawMessage) error { return nil })
	c.OnSessionEnd("boom_end", func(context.Context, json.RawMessage) error { return nil })
	// The database refuses the second job: nothing of the end may remain.
	if _, err := st.Writer().Exec(`CREATE TRIGGER refuse_boom BEFORE INSERT ON jobs WHEN new.kind = 'boom_end' BEGIN SELECT RAISE(ABORT, 'refused'); END`); err != nil {
		t.Fatal(err)
	}
	c.Observe(turn("atomic", "{}"))
	if err := c.EndSession(context.Background(), "atomic", "client"); err == nil {
		t.Fatal("end session succeeded although a job was refused")
	}
	sess, _ := st.Session(context.Background(), "atomic")
	var jobs int
	st.Reader().QueryRow(`SELECT COUNT(*) FROM jobs`).Scan(&jobs)
	if sess.EndedAt != nil || jobs != 0 {
		t.Fatalf("half an end: ended %v, %d jobs", sess.EndedAt, jobs)
	}
	if _, err := st.Writer().Exec(`DROP TRIGGER refuse_boom`); err != nil {
		t.Fatal(err)
	}
	if err := c.EndSession(context.Background(), "atomic", "client"); err != nil {
		t.Fatal(err)
	}
	sess, _ = st.Session(context.Background(), "atomic")
	st.Reader().QueryRow(`SELECT COUNT(*) FROM jobs`).Scan(&jobs)
	if sess.EndedAt == nil || jobs != 2 {
		t.Fatalf("ended %v, %d jobs", sess.EndedAt, jobs)
	}
}
