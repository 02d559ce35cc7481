// Package sqlconn runs SQLite write transactions on one pooled connection
// (BEGIN IMMEDIATE … COMMIT on a *sql.Conn) instead of database/sql's Tx,
// so that a transaction starts no goroutine.
//
// A *sql.Tx watches its context on a goroutine whatever the context, and
// gives every query run in it a cancellable context, so the SQLite driver
// starts a watcher per statement too; on two cores those goroutines wait
// in the run queue beside the proxy's answers (tools/proxybench
// -tracereport). The statements of a Tx here run on contexts that cannot
// be cancelled: the caller's context is checked once, before the begin.
package sqlconn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
)

// Tx is a write transaction on one connection. Its methods are safe to
// call from one goroutine at a time (as a connection's are).
type Tx struct {
	c    *sql.Conn
	ctx  context.Context // without the caller's cancellation
	done bool            // committed or rolled back
}

// Begin checks ctx, takes a connection of db and begins an IMMEDIATE
// transaction on it (the write lock now, not at the first write: no
// deadlock between two upgrading readers). The caller must Rollback the
// Tx (a no-op after Commit), typically in a defer.
func Begin(ctx context.Context, db *sql.DB) (*Tx, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx = context.WithoutCancel(ctx)
	c, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("begin: %w", err)
	}
	if _, err := c.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		c.Close()
		return nil, fmt.Errorf("begin: %w", err)
	}
	return &Tx{c: c, ctx: ctx}, nil
}

// Run runs fn in one write transaction on a connection of db: committed
// when fn returns nil, rolled back when it fails or panics. fn's context
// cannot be cancelled.
func Run(ctx context.Context, db *sql.DB, fn func(ctx context.Context, c *sql.Conn) error) error {
	t, err := Begin(ctx, db)
	if err != nil {
		return err
	}
	defer t.Rollback()
	if err := fn(t.ctx, t.c); err != nil {
		return err
	}
	return t.Commit()
}

// Context is the transaction's context: the caller's values, without its
// cancellation.
func (t *Tx) Context() context.Context { return t.ctx }

// Conn is the transaction's connection.
func (t *Tx) Conn() *sql.Conn { return t.c }

// noCancel strips ctx's cancellation: a cancellable statement costs a
// watcher goroutine in the driver.
func noCancel(ctx context.Context) context.Context {
	if ctx.Done() == nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

// ExecContext runs a statement in the transaction (ctx's values are kept,
// its cancellation is not).
func (t *Tx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return t.c.ExecContext(noCancel(ctx), query, args...)
}

// QueryContext runs a query in the transaction (ctx's cancellation is not
// kept).
func (t *Tx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return t.c.QueryContext(noCancel(ctx), query, args...)
}

// QueryRowContext runs a one-row query in the transaction (ctx's
// cancellation is not kept).
func (t *Tx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return t.c.QueryRowContext(noCancel(ctx), query, args...)
}

// PrepareContext prepares a statement on the transaction's connection; the
// caller closes it before the transaction ends.
func (t *Tx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return t.c.PrepareContext(noCancel(ctx), query)
}

// Commit commits the transaction and returns its connection to the pool.
// When the commit fails the transaction is still open: Rollback ends it.
func (t *Tx) Commit() error {
	if t.done {
		return sql.ErrTxDone
	}
	if _, err := t.c.ExecContext(t.ctx, `COMMIT`); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	t.done = true
	return t.c.Close()
}

// Rollback rolls the transaction back unless it has ended, and returns its
// connection to the pool; should the rollback fail, the connection is
// dropped rather than pooled inside a transaction.
func (t *Tx) Rollback() {
	if t.done {
		return
	}
	t.done = true
	if _, err := t.c.ExecContext(t.ctx, `ROLLBACK`); err != nil {
		_ = t.c.Raw(func(any) error { return driver.ErrBadConn })
	}
	t.c.Close()
}
