package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
)

// connTx runs fn in one write transaction (BEGIN IMMEDIATE … COMMIT) on
// the writer's connection, without database/sql's Tx. A Tx watches its
// context on a goroutine whatever the context, and gives every query run
// in it a cancellable context, so each query starts another watcher too;
// on two cores those goroutines wait in the run queue beside the answers
// (proxybench -tracereport: ~1,900 of a 1,500-request run's 3,200 watchers
// were the recorder's). Here fn's statements run on a context that cannot
// be cancelled, and start none. ctx is checked once, before the begin.
func (s *SQLite) connTx(ctx context.Context, fn func(ctx context.Context, c *sql.Conn) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ctx = context.WithoutCancel(ctx)
	c, err := s.w.Conn(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer c.Close()
	if _, err := c.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	done := false
	defer func() {
		if done {
			return
		}
		// Failed or panicked: roll back, and should even that fail, drop
		// the connection rather than pool it inside a transaction.
		if _, err := c.ExecContext(ctx, `ROLLBACK`); err != nil {
			_ = c.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	if err := fn(ctx, c); err != nil {
		return err
	}
	if _, err := c.ExecContext(ctx, `COMMIT`); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	done = true
	return nil
}
