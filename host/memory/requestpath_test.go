package memory

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"modernc.org/sqlite"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/store"
)

// countingConnector opens SQLite connections whose statements are counted:
// every query database/sql runs on them is prepared through Prepare.
type countingConnector struct {
	dsn string
	n   *atomic.Int64
}

func (c countingConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := (&sqlite.Driver{}).Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return countingConn{conn, c.n}, nil
}

func (c countingConnector) Driver() driver.Driver { return &sqlite.Driver{} }

// countingConn hides the driver's fast paths (QueryerContext, ExecerContext,
// ConnPrepareContext), so each statement goes through Prepare.
type countingConn struct {
	c driver.Conn
	n *atomic.Int64
}

func (c countingConn) Prepare(query string) (driver.Stmt, error) {
	c.n.Add(1)
	return c.c.Prepare(query)
}
func (c countingConn) Close() error { return c.c.Close() }

func (c countingConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c countingConn) BeginTx(ctx context.Context, o driver.TxOptions) (driver.Tx, error) {
	c.n.Add(1)
	return c.c.(driver.ConnBeginTx).BeginTx(ctx, o)
}

// TestRequestPathReadsNoSQLite: with the index running, the memory section
// of a turn (core.Provider.Context, what the proxy calls per request) is
// computed without a single statement on the store's reader — also right
// after learning wrote new units — while searches, which read SQLite, are
// counted (so the counter is known to work).
func TestRequestPathReadsNoSQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), store.DBFile)
	st, err := store.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var reads atomic.Int64
	reader := sql.OpenDB(countingConnector{dsn: "file:" + path + "?_pragma=busy_timeout(10000)", n: &reads})
	defer reader.Close()
	s := open(st.Writer(), reader, Options{})

	c := newCorpus(11)
	now := time.Now()
	var units []Unit
	for i := 0; i < 2000; i++ {
		units = append(units, c.unit("user:u", now))
	}
	if err := s.BulkInsert(ctx, units); err != nil {
		t.Fatal(err)
	}
	if err := s.StartIndex(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.StopIndex()
	// The poller that notices other processes' writes reads the store on
	// its own clock (every 500 ms), not per request: stopped here so that
	// the count is the request path's alone.
	s.idx.stop <- struct{}{}
	q := func(int) core.Query {
		return core.Query{Agent: "default", SessionID: "s", Scope: core.Scope{UserID: "u"}, UserTexts: c.query()}
	}
	if q(0).Scope.Key() != "user:u" {
		t.Fatalf("scope key %q", q(0).Scope.Key())
	}
	turnsServed := func(stage string) {
		t.Helper()
		before := reads.Load()
		empty := 0
		for i := 0; i < 200; i++ {
			sec, err := s.Context(ctx, q(i))
			if err != nil {
				t.Fatal(err)
			}
			if sec.Body == "" {
				empty++
			}
		}
		if n := reads.Load() - before; n != 0 {
			t.Fatalf("%s: 200 turns ran %d statements on SQLite, want 0", stage, n)
		}
		if empty == 200 {
			t.Fatalf("%s: every memory section was empty", stage)
		}
	}
	turnsServed("seeded")

	// Learning writes (and the index takes the new rows in place).
	res, err := s.Ingest(ctx, Batch{SessionID: "learn", Scope: "user:u", Agent: "default", Turns: []Turn{
		{User: "Always use tabs for indentation in Go files."}, {User: "We switched the main database to MySQL."},
	}})
	if err != nil || res.Added == 0 {
		t.Fatalf("ingest: %+v %v", res, err)
	}
	turnsServed("after learning")
	sec, err := s.Context(ctx, core.Query{Agent: "default", SessionID: "s", Scope: core.Scope{UserID: "u"}, UserTexts: []string{"Which database should the migration target?"}})
	if err != nil || !strings.Contains(sec.Body, "MySQL") {
		t.Fatalf("the learned fact is not served from the index: %q %v", sec.Body, err)
	}

	before := reads.Load()
	if _, err := s.Search(ctx, SearchQuery{Scope: "user:u", Text: "database"}); err != nil {
		t.Fatal(err)
	}
	if reads.Load() == before {
		t.Fatal("a search ran no statement: the counter does not count")
	}
}
