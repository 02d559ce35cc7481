package store

import (
	"context"
	"database/sql"
	"errors"
	"runtime/metrics"
	"testing"
	"time"
)

func goroutinesCreated() uint64 {
	m := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(m)
	return m[0].Value.Uint64()
}

// A failed or panicking transaction leaves nothing behind, and the writer's
// connection goes back to the pool outside any transaction.
func TestConnTxRollsBack(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	insert := func(ctx context.Context, c *sql.Conn) error {
		_, err := c.ExecContext(ctx, `INSERT INTO sessions (id, agent, scope, started_at, last_at) VALUES ('gone', 'a', '', 0, 0)`)
		return err
	}
	boom := errors.New("boom")
	if err := s.connTx(ctx, func(ctx context.Context, c *sql.Conn) error {
		if err := insert(ctx, c); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatalf("connTx returned %v, want fn's error", err)
	}
	func() {
		defer func() { recover() }()
		s.connTx(ctx, func(ctx context.Context, c *sql.Conn) error {
			insert(ctx, c)
			panic("bad row")
		})
	}()
	if _, err := s.Session(ctx, "gone"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a rolled-back session is there: %v", err)
	}
	// The connection is usable and not inside a transaction: this commits.
	if err := s.RecordTurns(ctx, []*Turn{{SessionID: "kept", Agent: "a", TurnType: "main", RequestJSON: `{}`, Status: 200}}); err != nil {
		t.Fatal(err)
	}
	if sess, err := s.Session(ctx, "kept"); err != nil || sess.MainTurns != 1 {
		t.Fatalf("after the rollbacks: %+v %v", sess, err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := s.RecordTurns(cctx, []*Turn{{SessionID: "late", Agent: "a", TurnType: "main", RequestJSON: `{}`}}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled context began a batch: %v", err)
	}
}

// Recording a batch starts no goroutine, even on a cancellable context:
// database/sql's Tx would start one for the transaction and one per query
// (each upsert returns the session's counts).
func TestRecordTurnsStartsNoWatchers(t *testing.T) {
	s, _ := openTest(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	batch := func() []*Turn {
		var ts []*Turn
		for range 20 {
			ts = append(ts, &Turn{SessionID: "w", Agent: "a", TurnType: "main", RequestJSON: `{}`, Status: 200})
		}
		return ts
	}
	if err := s.RecordTurns(ctx, batch()); err != nil { // statements prepared and cached
		t.Fatal(err)
	}
	g0 := goroutinesCreated()
	if err := s.RecordTurns(ctx, batch()); err != nil {
		t.Fatal(err)
	}
	// Not 0: the store's checkpointer may tick meanwhile.
	if n := goroutinesCreated() - g0; n > 3 {
		t.Fatalf("recording 20 turns started %d goroutines", n)
	}
}
