package core

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// Transient jobs run with the kind's handler beside durable ones, leave no
// row in the store when they succeed, and become durable jobs (retried,
// counted) when they fail or panic.
func TestTransientJobs(t *testing.T) {
	c, st := newCore(t, Options{})
	rows := func(state string) (n int) {
		t.Helper()
		if err := st.Reader().QueryRow(`SELECT COUNT(*) FROM jobs WHERE kind = 'ingest' AND state LIKE ?`, state).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := c.EnqueueTransient("ingest", map[string]string{"s": "x"}); err == nil {
		t.Fatal("a kind without a handler took a transient job")
	}
	type run struct {
		p       string
		attempt int
	}
	ran := make(chan run, 20)
	seen := map[string]int{}
	c.HandleJobs("ingest", func(_ context.Context, p json.RawMessage) error {
		var v struct{ S string }
		json.Unmarshal(p, &v)
		seen[v.S]++ // one worker: no race
		ran <- run{v.S, seen[v.S]}
		switch {
		case v.S == "fails" && seen[v.S] == 1:
			return errors.New("extractor down")
		case v.S == "panics" && seen[v.S] == 1:
			panic("bad payload")
		}
		return nil
	})
	for _, s := range []string{"ok", "fails", "panics"} {
		if err := c.EnqueueTransient("ingest", map[string]string{"s": s}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Enqueue(context.Background(), "ingest", map[string]string{"s": "durable"}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"ok": 1, "fails": 2, "panics": 2, "durable": 1}
	got := map[string]int{}
	deadline := time.After(30 * time.Second)
	for n := 0; n < 6; n++ {
		select {
		case r := <-ran:
			got[r.p] = r.attempt
		case <-deadline:
			t.Fatalf("ran %v, want %v", got, want)
		}
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("runs %v, want %v", got, want)
		}
	}
	// The two failures were retried as durable jobs; the first runs of
	// transient jobs wrote nothing. Finishing lands after the handler.
	waitUntil(t, func() bool { return rows("done") == 3 })
	if n := rows("%"); n != 3 || c.TransientQueued("ingest") != 0 {
		t.Fatalf("%d job rows, %d queued in memory; want 3 durable (one enqueued, two retried) and none", n, c.TransientQueued("ingest"))
	}
}

// A transient job queued when the core closes is dropped, not persisted:
// its input is durable elsewhere.
func TestTransientJobAtClose(t *testing.T) {
	c, st := newCore(t, Options{})
	hold := make(chan struct{})
	started := make(chan struct{}, 1)
	c.HandleJobs("ingest", func(ctx context.Context, _ json.RawMessage) error {
		started <- struct{}{}
		select {
		case <-hold:
		case <-ctx.Done():
			return ctx.Err()
		}
		return nil
	})
	for range 2 {
		if err := c.EnqueueTransient("ingest", map[string]string{}); err != nil {
			t.Fatal(err)
		}
	}
	<-started
	c.Close()
	if err := c.EnqueueTransient("ingest", map[string]string{}); err != nil {
		t.Fatalf("after close: %v", err)
	}
	var n int
	if err := st.Reader().QueryRow(`SELECT COUNT(*) FROM jobs`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d job rows after close (%v), want none", n, err)
	}
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatal("condition not met in 20 s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TransientInFlight counts a transient job from its queueing until its
// handler returns, so a caller polling it with the durable jobs sees
// learning's whole backlog.
func TestTransientInFlight(t *testing.T) {
	c, _ := newCore(t, Options{})
	started, release := make(chan struct{}), make(chan struct{})
	c.HandleJobs("ingest", func(context.Context, json.RawMessage) error {
		started <- struct{}{}
		<-release
		return nil
	})
	for range 2 {
		if err := c.EnqueueTransient("ingest", map[string]string{}); err != nil {
			t.Fatal(err)
		}
	}
	<-started // one running, one queued
	if n := c.TransientInFlight(); n != 2 {
		t.Fatalf("in flight %d with one running and one queued, want 2", n)
	}
	release <- struct{}{}
	<-started
	if n := c.TransientInFlight(); n != 1 {
		t.Fatalf("in flight %d with one running, want 1", n)
	}
	release <- struct{}{}
	waitUntil(t, func() bool { return c.TransientInFlight() == 0 })
}
