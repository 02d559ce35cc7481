package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// ReadPosition is how far a learner that mines recorded turns (memory) has
// read: every learnable turn with an id at or below Floor, and in a session
// every one at or below that session's cursor. The learner keeps it in its
// own tables and hands it to the store; the store never reads them. Cursors
// at or below Floor add nothing and may be left out.
type ReadPosition struct {
	Floor   int64
	Cursors map[string]int64 // session id → the last turn id read
}

// PositionFunc reads a learner's current position (the composition root
// passes memory's to retention).
type PositionFunc func(ctx context.Context) (ReadPosition, error)

// Backlog is what a learner has still to read.
type Backlog struct {
	Turns  int
	Oldest time.Time // when the oldest of them was recorded; zero when Turns is 0
}

// cursorsCTE makes a position's cursors a table, read_cursors(session_id,
// last), for one statement: its one parameter is cursorsJSON. Materialized,
// so SQLite indexes it once rather than parsing the JSON per turn.
const cursorsCTE = `WITH read_cursors(session_id, last) AS MATERIALIZED (SELECT key, value FROM json_each(?)) `

// cursorsJSON encodes a position's cursors as one JSON object (a single
// parameter however many sessions there are).
func cursorsJSON(p ReadPosition) (string, error) {
	cur := make(map[string]int64, len(p.Cursors))
	for s, id := range p.Cursors {
		if id > p.Floor {
			cur[s] = id
		}
	}
	b, err := json.Marshal(cur)
	if err != nil {
		return "", fmt.Errorf("read position: %w", err)
	}
	return string(b), nil
}

// CountUnread implements TurnLog: how many turns of f lie past pos (after
// its floor, or f.After if larger, and after their session's cursor), and
// when the oldest was recorded. One query; f.Limit is ignored.
func (s *SQLite) CountUnread(ctx context.Context, f TurnFilter, pos ReadPosition) (Backlog, error) {
	cur, err := cursorsJSON(pos)
	if err != nil {
		return Backlog{}, err
	}
	cond, condArgs := f.conditions("t.", max(f.After, pos.Floor))
	q := cursorsCTE + `SELECT COUNT(*), MIN(t.created_at) FROM turns t LEFT JOIN read_cursors c ON c.session_id = t.session_id
WHERE ` + cond + ` AND (c.last IS NULL OR t.id > c.last)`
	args := append([]any{cur}, condArgs...)
	var b Backlog
	var oldest sql.NullInt64
	if err := s.r.QueryRowContext(ctx, q, args...).Scan(&b.Turns, &oldest); err != nil {
		return Backlog{}, fmt.Errorf("count unread turns: %w", err)
	}
	if oldest.Valid {
		b.Oldest = time.UnixMilli(oldest.Int64)
	}
	return b, nil
}
