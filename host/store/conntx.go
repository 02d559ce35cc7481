package store

import (
	"context"
	"database/sql"

	"github.com/metaclaw-go/metaclaw/internal/sqlconn"
)

// connTx runs fn in one write transaction (BEGIN IMMEDIATE … COMMIT) on
// the writer's connection, without database/sql's Tx (sqlconn.Run: fn's
// statements start no watcher goroutine; ~1,900 of a 1,500-request
// proxybench run's 3,200 watchers were the recorder's). ctx is checked
// once, before the begin.
func (s *SQLite) connTx(ctx context.Context, fn func(ctx context.Context, c *sql.Conn) error) error {
	return sqlconn.Run(ctx, s.w, fn)
}
