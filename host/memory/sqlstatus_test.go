package memory

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"sync"
	"testing"

	"modernc.org/sqlite"

	"github.com/metaclaw-go/metaclaw/host/store"
)

// Every SQLite connection this test binary opens, by DSN, so a benchmark
// can count the pages its operation looked up (in the page cache or read
// from the file) on all of a store's connections: the writer's and the
// read pool's alike.
var (
	sqlConnsMu sync.Mutex
	sqlConns   = map[string][]sqlite.DBStatus{}
)

func init() {
	sqlite.RegisterConnectionHook(func(c sqlite.ExecQuerierContext, dsn string) error {
		if st, ok := c.(sqlite.DBStatus); ok {
			sqlConnsMu.Lock()
			sqlConns[dsn] = append(sqlConns[dsn], st)
			sqlConnsMu.Unlock()
		}
		return nil
	})
}

// pagesLookedUp is the pages st's connections have asked their page caches
// for (hits and misses): SQLite's work, whatever the statements were. It
// holds every connection of both of st's pools while it reads them: a
// connection's counters are not safe to read while a statement runs on it,
// and the index poller and the WAL checkpointer run statements of their own.
func pagesLookedUp(tb testing.TB, st *store.SQLite) int64 {
	tb.Helper()
	ctx := context.Background()
	var held []*sql.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for _, db := range []*sql.DB{st.Writer(), st.Reader()} {
		for range db.Stats().MaxOpenConnections {
			c, err := db.Conn(ctx)
			if err != nil {
				tb.Fatal(err)
			}
			held = append(held, c)
		}
	}
	var path string
	if err := held[0].QueryRowContext(ctx, `SELECT file FROM pragma_database_list WHERE name = 'main'`).Scan(&path); err != nil {
		tb.Fatal(err)
	}
	prefix := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" // as store.OpenSQLite writes it
	sqlConnsMu.Lock()
	defer sqlConnsMu.Unlock()
	var n int64
	for dsn, conns := range sqlConns {
		if !strings.HasPrefix(dsn, prefix) {
			continue
		}
		for _, c := range conns {
			for _, op := range []sqlite.DBStatusOp{sqlite.DBStatusCacheHit, sqlite.DBStatusCacheMiss} {
				if cur, _, err := c.Status(op, false); err == nil {
					n += int64(cur)
				}
			}
		}
	}
	return n
}
