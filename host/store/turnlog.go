package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// TurnFilter selects the learnable turns a consumer (memory ingestion) may
// still have to read: answered (2xx) turns after an id, main turns only
// unless SideToo.
type TurnFilter struct {
	After   int64 // only turns with a larger id
	SideToo bool  // side turns too (memory.ignore_turn_type)
	// OfAgent keeps only Agent's turns in memory scope Scope (either may be "").
	OfAgent      bool
	Agent, Scope string
	// ExceptSession leaves one session out (the one asking).
	ExceptSession string
	// Limit bounds the answer to the oldest Limit turns (0: all).
	Limit int
	// On, when set, runs LearnableTurns' read there (a write transaction
	// memory holds) rather than on the read pool.
	On Queryer
}

// Queryer is what LearnableTurns reads through: a connection, a pool or a
// transaction.
type Queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// conditions is f's WHERE clause over turns (columns prefixed with
// prefix, "" or an alias and a dot) for turns after id, and its arguments.
func (f TurnFilter) conditions(prefix string, after int64) (string, []any) {
	q := prefix + `id > ? AND ` + prefix + `status BETWEEN 200 AND 299`
	args := []any{after}
	if !f.SideToo {
		q += ` AND ` + prefix + `turn_type = 'main'`
	}
	if f.OfAgent {
		q += ` AND ` + prefix + `agent = ? AND ` + prefix + `memory_scope = ?`
		args = append(args, f.Agent, f.Scope)
	}
	if f.ExceptSession != "" {
		q += ` AND ` + prefix + `session_id != ?`
		args = append(args, f.ExceptSession)
	}
	return q, args
}

// TurnRef locates a recorded turn without its text.
type TurnRef struct {
	ID        int64
	SessionID string
	CreatedAt time.Time
}

// LearnableTurns implements TurnLog: the turns matching f, oldest first.
func (s *SQLite) LearnableTurns(ctx context.Context, f TurnFilter) ([]TurnRef, error) {
	cond, args := f.conditions("", f.After)
	q := `SELECT id, session_id, created_at FROM turns WHERE ` + cond + ` ORDER BY id`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	var on Queryer = s.r
	if f.On != nil {
		on = f.On
	}
	rows, err := on.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("learnable turns: %w", err)
	}
	defer rows.Close()
	var out []TurnRef
	for rows.Next() {
		var r TurnRef
		var created int64
		if err := rows.Scan(&r.ID, &r.SessionID, &created); err != nil {
			return nil, fmt.Errorf("learnable turns: %w", err)
		}
		r.CreatedAt = time.UnixMilli(created)
		out = append(out, r)
	}
	return out, rows.Err()
}

// SessionTurnsAfter implements TurnLog: up to n of a session's turns after
// id, oldest first, with the fields learning reads.
func (s *SQLite) SessionTurnsAfter(ctx context.Context, session string, after int64, n int) ([]Turn, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, session_id, agent, turn_index, turn_type, status, request_json, response_text,
    tool_calls, injected, memory_scope, created_at FROM turns WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?`, session, after, n)
	if err != nil {
		return nil, fmt.Errorf("session turns %s: %w", session, err)
	}
	defer rows.Close()
	var out []Turn
	for rows.Next() {
		var t Turn
		var created int64
		if err := rows.Scan(&t.ID, &t.SessionID, &t.Agent, &t.TurnIndex, &t.TurnType, &t.Status, &t.RequestJSON, &t.ResponseText,
			&t.ToolCallsJSON, &t.InjectedJSON, &t.MemoryScope, &created); err != nil {
			return nil, fmt.Errorf("session turns %s: %w", session, err)
		}
		t.CreatedAt = time.UnixMilli(created)
		out = append(out, t)
	}
	return out, rows.Err()
}

// SessionTurnBack implements TurnLog: the id of a session's turn that is
// back turns before the last one at or before upTo (0: that last one);
// ok false when the session has fewer turns.
func (s *SQLite) SessionTurnBack(ctx context.Context, session string, upTo int64, back int) (id int64, ok bool, err error) {
	err = s.r.QueryRowContext(ctx, `SELECT id FROM turns WHERE session_id = ? AND id <= ? ORDER BY id DESC LIMIT 1 OFFSET ?`, session, upTo, back).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("session turns %s: %w", session, err)
	}
	return id, true, nil
}

// LastTurnID implements TurnLog: the largest turn id (0 with none).
func (s *SQLite) LastTurnID(ctx context.Context) (int64, error) {
	var id int64
	if err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM turns`).Scan(&id); err != nil {
		return 0, fmt.Errorf("last turn: %w", err)
	}
	return id, nil
}

// Job implements JobReader.
func (s *SQLite) Job(ctx context.Context, id int64) (Job, error) {
	j := Job{ID: id}
	var runAfter int64
	var lastErr sql.NullString
	err := s.r.QueryRowContext(ctx, `SELECT kind, payload, state, attempts, run_after, last_error FROM jobs WHERE id = ?`, id).
		Scan(&j.Kind, &j.Payload, &j.State, &j.Attempts, &runAfter, &lastErr)
	if errors.Is(err, sql.ErrNoRows) {
		return j, fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return j, fmt.Errorf("job %d: %w", id, err)
	}
	j.RunAfter, j.LastError = time.UnixMilli(runAfter), lastErr.String
	return j, nil
}
