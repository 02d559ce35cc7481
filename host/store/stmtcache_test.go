package store

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"modernc.org/sqlite"
)

func openCachedTest(t *testing.T, size int) *sql.DB {
	t.Helper()
	c, err := openConnector(t, size)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	return db
}

func openConnector(t *testing.T, size int) (cachingConnector, error) {
	path := filepath.Join(t.TempDir(), "c.db")
	base, err := sqlite.NewConnector("file:" + path + "?_pragma=journal_mode(WAL)&_txlock=immediate")
	return cachingConnector{Connector: base, size: size}, err
}

// kept returns the SQL of the statements the pool's connection keeps.
func kept(t *testing.T, db *sql.DB) map[string]int {
	t.Helper()
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	out := map[string]int{}
	err = conn.Raw(func(dc any) error {
		c := dc.(*cachedConn)
		for e := c.lru.Front(); e != nil; e = e.Next() {
			s := e.Value.(*cachedStmt)
			out[s.query] = s.users
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestStmtCacheReusesAndStaysCorrect(t *testing.T) {
	db := openCachedTest(t, 8)
	ctx := context.Background()
	const ins = `INSERT INTO kv (k, v) VALUES (?, ?) ON CONFLICT(k) DO UPDATE SET v = v + excluded.v`
	const get = `SELECT v FROM kv WHERE k = ?`
	for i := range 50 {
		if _, err := db.ExecContext(ctx, ins, fmt.Sprint("k", i%5), 1); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 5 {
		var v int
		if err := db.QueryRowContext(ctx, get, fmt.Sprint("k", i)).Scan(&v); err != nil || v != 10 {
			t.Fatalf("k%d = %d, %v; want 10", i, v, err)
		}
	}
	k := kept(t, db)
	if _, ok := k[ins]; !ok {
		t.Fatalf("insert not kept: %v", k)
	}
	if users, ok := k[get]; !ok || users != 0 {
		t.Fatalf("select not kept idle: %v", k)
	}
}

// The same SQL used again while its rows are open (a query inside a loop
// over the same query) gets its own statement, and each result is right.
func TestStmtCacheSameSQLWhileRowsOpen(t *testing.T) {
	db := openCachedTest(t, 8)
	ctx := context.Background()
	for i := range 4 {
		if _, err := db.ExecContext(ctx, `INSERT INTO kv (k, v) VALUES (?, ?)`, fmt.Sprint("k", i), i); err != nil {
			t.Fatal(err)
		}
	}
	const q = `SELECT k, v FROM kv WHERE v >= ? ORDER BY v`
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, q, 0)
	if err != nil {
		t.Fatal(err)
	}
	var outer, inner int
	for rows.Next() {
		var k string
		var v int
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		outer++
		in, err := tx.QueryContext(ctx, q, v)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for in.Next() {
			n++
		}
		in.Close()
		inner += n
		// An exec of a kept statement meanwhile, through a handed-out one too.
		st, err := tx.PrepareContext(ctx, `UPDATE kv SET v = v WHERE k = ?`)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.ExecContext(ctx, k); err != nil {
			t.Fatal(err)
		}
		st.Close()
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if outer != 4 || inner != 4+3+2+1 {
		t.Fatalf("outer %d inner %d, want 4 and 10", outer, inner)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	for q, users := range kept(t, db) {
		if users != 0 {
			t.Fatalf("%q still has %d users after everything closed", q, users)
		}
	}
}

// Evicted statements are closed (or closed when their last user is done),
// and the cache stays within its size.
func TestStmtCacheEvicts(t *testing.T) {
	db := openCachedTest(t, 4)
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT k FROM kv WHERE v > ?`, -1) // in use while evicted
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf(`INSERT INTO kv (k, v) VALUES (?, %d)`, i), fmt.Sprint("k", i)); err != nil {
			t.Fatal(err)
		}
	}
	rows.Close()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if k := kept(t, db); len(k) > 4 {
		t.Fatalf("kept %d statements, want at most 4", len(k))
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM kv`).Scan(&n); err != nil || n != 20 {
		t.Fatalf("count %d, %v", n, err)
	}
}

// A kept statement holds no read snapshot: another connection's commit is
// seen by the next run, and a checkpoint can truncate the log.
func TestStmtCacheNoStaleSnapshot(t *testing.T) {
	st, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	read := func() int {
		var n int
		if err := st.Reader().QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i := range 3 {
		if got := read(); got != i {
			t.Fatalf("read %d jobs, want %d", got, i)
		}
		if _, err := st.EnqueueJob(ctx, "k", "{}", time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	var busy, logged, ckpt int
	if err := st.Writer().QueryRowContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`).Scan(&busy, &logged, &ckpt); err != nil {
		t.Fatal(err)
	}
	if busy != 0 {
		t.Fatalf("checkpoint blocked by a reader (busy=%d): a kept statement holds a snapshot", busy)
	}
}

// BenchmarkSmallStatement runs the kind of statement learning runs dozens
// of per batch (an upsert and a lookup), with and without kept statements.
func BenchmarkSmallStatement(b *testing.B) {
	for _, size := range []int{0, stmtCacheSize} {
		b.Run(fmt.Sprintf("kept=%d", size), func(b *testing.B) {
			base, err := sqlite.NewConnector("file:" + filepath.Join(b.TempDir(), "b.db") + "?_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)")
			if err != nil {
				b.Fatal(err)
			}
			db := sql.OpenDB(cachingConnector{Connector: base, size: size})
			db.SetMaxOpenConns(1)
			defer db.Close()
			ctx := context.Background()
			if _, err := db.Exec(`CREATE TABLE kv (k TEXT PRIMARY KEY, v INTEGER)`); err != nil {
				b.Fatal(err)
			}
			// Inside one transaction, as learning's statements run: the
			// figure is the statements', not the commits'.
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer tx.Rollback()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				k := fmt.Sprint("k", i%64)
				if _, err := tx.ExecContext(ctx, `INSERT INTO kv (k, v) VALUES (?, ?) ON CONFLICT(k) DO UPDATE SET v = MAX(v, excluded.v)`, k, i); err != nil {
					b.Fatal(err)
				}
				var v int
				if err := tx.QueryRowContext(ctx, `SELECT v FROM kv WHERE k = ?`, k).Scan(&v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
