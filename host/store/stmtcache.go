package store

import (
	"container/list"
	"context"
	"database/sql/driver"
	"reflect"
)

// Connections that keep their prepared statements. database/sql prepares
// a statement afresh for every db.ExecContext / QueryContext (and for every
// tx.PrepareContext), and SQLite's parser and planner then cost more than
// running a small statement: learning runs ~25 small statements per batch,
// the recorder two per turn. Each connection of the store keeps its most
// recently used statements prepared, keyed by their SQL text, and reuses one
// when it is idle (modernc's statements reset after each run: a kept
// statement holds no lock and no read snapshot). A statement still in use
// (its rows open, or handed out by PrepareContext) is not shared: a second
// use of the same SQL meanwhile prepares its own, as without the cache.
// database/sql uses a connection from one goroutine at a time, so the cache
// needs no lock of its own.

// stmtCacheSize bounds the statements each connection keeps (the hot ones
// are a few dozen; SQL built with variable IN lists makes more, evicted
// least recently used first).
const stmtCacheSize = 128

// cachingConnector wraps a driver.Connector so that its connections keep
// their prepared statements.
type cachingConnector struct {
	driver.Connector
	size int
}

func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return newCachedConn(conn, c.size), nil
}

// innerConn is what every connection modernc.org/sqlite opens implements
// (its documentation asks a wrapper to forward all of it).
type innerConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

type cachedConn struct {
	innerConn
	size  int
	stmts map[string]*list.Element // of *cachedStmt; front = most recently used
	lru   list.List
}

func newCachedConn(c driver.Conn, size int) driver.Conn {
	ic, ok := c.(innerConn)
	if !ok || size <= 0 {
		return c
	}
	return &cachedConn{innerConn: ic, size: size, stmts: map[string]*list.Element{}}
}

// Unwrap returns the driver's own connection (modernc's Limit looks
// through wrappers this way).
func (c *cachedConn) Unwrap() driver.Conn { return c.innerConn }

type cachedStmt struct {
	stmt    driver.Stmt
	query   string
	users   int  // runs, open rows and PrepareContext handles using it
	evicted bool // out of the cache: closed when its last user is done
}

// acquire returns the idle kept statement for query, preparing and keeping
// it when there is none; nil when the kept one is in use.
func (c *cachedConn) acquire(ctx context.Context, query string) (*cachedStmt, error) {
	if e, ok := c.stmts[query]; ok {
		s := e.Value.(*cachedStmt)
		if s.users > 0 {
			return nil, nil
		}
		c.lru.MoveToFront(e)
		s.users++
		return s, nil
	}
	st, err := c.innerConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	if !stmtExecQuery(st) {
		st.Close()
		return nil, nil
	}
	s := &cachedStmt{stmt: st, query: query, users: 1}
	c.stmts[query] = c.lru.PushFront(s)
	for c.lru.Len() > c.size {
		old := c.lru.Remove(c.lru.Back()).(*cachedStmt)
		delete(c.stmts, old.query)
		old.evicted = true
		if old.users == 0 {
			old.stmt.Close()
		}
	}
	return s, nil
}

func stmtExecQuery(st driver.Stmt) bool {
	_, e := st.(driver.StmtExecContext)
	_, q := st.(driver.StmtQueryContext)
	return e && q
}

func (c *cachedConn) release(s *cachedStmt) {
	s.users--
	if s.users == 0 && s.evicted {
		s.stmt.Close()
	}
}

// ExecContext runs query on its kept statement.
func (c *cachedConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	s, err := c.acquire(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.innerConn.ExecContext(ctx, query, args)
	}
	defer c.release(s)
	return s.stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

// QueryContext runs query on its kept statement, which stays in use until
// the rows are closed.
func (c *cachedConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	s, err := c.acquire(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.innerConn.QueryContext(ctx, query, args)
	}
	rows, err := s.stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		c.release(s)
		return nil, err
	}
	return &cachedRows{Rows: rows, c: c, s: s}, nil
}

// PrepareContext hands out the kept statement for query until its Close.
func (c *cachedConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	s, err := c.acquire(ctx, query)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return c.innerConn.PrepareContext(ctx, query)
	}
	return &handedStmt{s: s, c: c}, nil
}

func (c *cachedConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// Close finalizes the kept statements, then closes the connection.
func (c *cachedConn) Close() error {
	for e := c.lru.Front(); e != nil; e = e.Next() {
		e.Value.(*cachedStmt).stmt.Close()
	}
	c.lru.Init()
	clear(c.stmts)
	return c.innerConn.Close()
}

// handedStmt is a kept statement lent to database/sql by PrepareContext.
type handedStmt struct {
	s      *cachedStmt
	c      *cachedConn
	closed bool
}

func (h *handedStmt) Close() error {
	if !h.closed {
		h.closed = true
		h.c.release(h.s)
	}
	return nil
}

func (h *handedStmt) NumInput() int { return h.s.stmt.NumInput() }

//nolint:staticcheck // driver.Stmt requires the context-free methods
func (h *handedStmt) Exec(args []driver.Value) (driver.Result, error) { return h.s.stmt.Exec(args) }

//nolint:staticcheck // driver.Stmt requires the context-free methods
func (h *handedStmt) Query(args []driver.Value) (driver.Rows, error) { return h.s.stmt.Query(args) }

func (h *handedStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	return h.s.stmt.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (h *handedStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	return h.s.stmt.(driver.StmtQueryContext).QueryContext(ctx, args)
}

// cachedRows gives its statement back when closed. It forwards the
// column-type interfaces of the driver's rows.
type cachedRows struct {
	driver.Rows
	c      *cachedConn
	s      *cachedStmt
	closed bool
}

func (r *cachedRows) Close() error {
	err := r.Rows.Close()
	if !r.closed {
		r.closed = true
		r.c.release(r.s)
	}
	return err
}

func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *cachedRows) ColumnTypeLength(i int) (int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeLength); ok {
		return t.ColumnTypeLength(i)
	}
	return 0, false
}

func (r *cachedRows) ColumnTypeNullable(i int) (bool, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}

func (r *cachedRows) ColumnTypePrecisionScale(i int) (int64, int64, bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypePrecisionScale); ok {
		return t.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}

func (r *cachedRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}
