package sqlconn

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"runtime/metrics"
	"testing"

	_ "modernc.org/sqlite"
)

func openDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "t.db")+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1) // one writer, as the store has: a leaked transaction would block the next
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	return db
}

func count(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM kv`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func goroutinesCreated() uint64 {
	m := []metrics.Sample{{Name: "/sched/goroutines-created:goroutines"}}
	metrics.Read(m)
	return m[0].Value.Uint64()
}

// Run commits what fn wrote when it succeeds, and leaves nothing behind
// (and the connection usable, outside any transaction) when it fails,
// panics, or the context was cancelled before the begin.
func TestRun(t *testing.T) {
	boom := errors.New("boom")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	insert := func(ctx context.Context, c *sql.Conn) error {
		_, err := c.ExecContext(ctx, `INSERT INTO kv (k, v) VALUES ('a', 1)`)
		return err
	}
	for _, tc := range []struct {
		name    string
		ctx     context.Context
		fn      func(ctx context.Context, c *sql.Conn) error
		wantErr error
		kept    int
	}{
		{"commits", context.Background(), insert, nil, 1},
		{"fn fails", context.Background(), func(ctx context.Context, c *sql.Conn) error {
			if err := insert(ctx, c); err != nil {
				return err
			}
			return boom
		}, boom, 0},
		{"statement fails", context.Background(), func(ctx context.Context, c *sql.Conn) error {
			if err := insert(ctx, c); err != nil {
				return err
			}
			_, err := c.ExecContext(ctx, `INSERT INTO kv (k, v) VALUES ('b', NULL)`)
			return err
		}, nil, 0},
		{"cancelled before the begin", cancelled, insert, context.Canceled, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openDB(t)
			err := Run(tc.ctx, db, tc.fn)
			switch {
			case tc.wantErr != nil && !errors.Is(err, tc.wantErr):
				t.Fatalf("Run = %v, want %v", err, tc.wantErr)
			case tc.kept == 1 && err != nil:
				t.Fatalf("Run = %v", err)
			case tc.kept == 0 && err == nil:
				t.Fatal("Run succeeded, want an error")
			}
			if n := count(t, db); n != tc.kept {
				t.Fatalf("%d rows kept, want %d", n, tc.kept)
			}
			if err := Run(context.Background(), db, func(ctx context.Context, c *sql.Conn) error {
				_, err := c.ExecContext(ctx, `INSERT INTO kv (k, v) VALUES ('after', 1)`)
				return err
			}); err != nil {
				t.Fatalf("the connection is unusable afterwards: %v", err)
			}
		})
	}
}

func TestRunPanicRollsBack(t *testing.T) {
	db := openDB(t)
	func() {
		defer func() { recover() }()
		_ = Run(context.Background(), db, func(ctx context.Context, c *sql.Conn) error {
			if _, err := c.ExecContext(ctx, `INSERT INTO kv (k, v) VALUES ('a', 1)`); err != nil {
				return err
			}
			panic("bad row")
		})
	}()
	if n := count(t, db); n != 0 {
		t.Fatalf("%d rows after a panic, want 0", n)
	}
}

// A transaction's statements start no goroutine, on a cancellable context
// too (database/sql's Tx starts one for itself and one per query).
func TestTxStartsNoGoroutines(t *testing.T) {
	db := openDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	work := func() {
		tx, err := Begin(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO kv (k, v) VALUES ('a', 1)`); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.QueryContext(ctx, `SELECT k FROM kv`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
		}
		rows.Close()
		var v int
		if err := tx.QueryRowContext(ctx, `SELECT v FROM kv WHERE k = 'a'`).Scan(&v); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	work() // the pool's connection opened
	g0 := goroutinesCreated()
	for range 10 {
		work()
	}
	if n := goroutinesCreated() - g0; n != 0 {
		t.Fatalf("10 transactions started %d goroutines, want 0", n)
	}
	if err := (&Tx{done: true}).Commit(); !errors.Is(err, sql.ErrTxDone) {
		t.Fatalf("Commit after the end = %v", err)
	}
}
