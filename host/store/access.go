package store

import (
	"context"
	"database/sql"
)

// Table ownership. The store owns sessions, turns, jobs and llm_usage: other
// packages reach them only through Store and the narrow interfaces here,
// never by SQL, so another store (PostgreSQL for teams) can replace SQLite
// behind them. A learning package may own tables of its own (skills_*, rl_*,
// scheduler_*, calendar_*, memory_*): their DDL is in migrations/, in a file
// named after the owner (one ordered history, one version table), and only
// the owner runs SQL on them, through the pools Tables gives it. Porting the
// store ports those packages' SQL with it.

// Tables gives a package the connection pools for the tables it owns: the
// single writer (every write goes through it, in one transaction per unit
// of work) and the pool of readers.
type Tables interface {
	Writer() *sql.DB
	Reader() *sql.DB
}

// Upkeep is the store's own maintenance: retention and reclaiming space.
type Upkeep interface {
	Prune(ctx context.Context, o PruneOptions) (PruneReport, error)
	IncrementalVacuum(ctx context.Context, maxPages int64) (int64, error)
	FreePages(ctx context.Context) (free int64, incremental bool, err error)
}

// TurnLog is what a learner that mines recorded turns reads (memory
// ingestion): which turns it may still have to read, how many lie past its
// read position, a session's turns after its cursor, and the sessions
// themselves. The cursors are the learner's own (its tables): it hands
// them in.
type TurnLog interface {
	LearnableTurns(ctx context.Context, f TurnFilter) ([]TurnRef, error)
	CountUnread(ctx context.Context, f TurnFilter, pos ReadPosition) (Backlog, error)
	// SessionTurnsEach hands up to n of a session's turns after id, oldest
	// first, to fn as they are read; t.RequestJSON is valid only until fn
	// returns.
	SessionTurnsEach(ctx context.Context, session string, after int64, n int, fn func(t *Turn) error) error
	SessionTurnBack(ctx context.Context, session string, upTo int64, back int) (id int64, ok bool, err error)
	LastTurnID(ctx context.Context) (int64, error)
	Session(ctx context.Context, id string) (Session, error)
}

// JobReader looks up one job (a client polling the job it queued).
type JobReader interface {
	Job(ctx context.Context, id int64) (Job, error)
}

// UsageRecorder records an LLM call the host made for itself.
type UsageRecorder interface {
	RecordUsage(ctx context.Context, u Usage) error
}

// SQLite implements every interface of this package.
var (
	_ Store         = (*SQLite)(nil)
	_ Tables        = (*SQLite)(nil)
	_ Upkeep        = (*SQLite)(nil)
	_ TurnLog       = (*SQLite)(nil)
	_ JobReader     = (*SQLite)(nil)
	_ UsageRecorder = (*SQLite)(nil)
)
