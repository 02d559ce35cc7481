package memory

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/metaclaw-go/metaclaw/host/store"
)

// Storage is what memory needs of the host's store: the pools for its own
// tables (memory_*), the recorded turns and sessions it learns from, the
// jobs a client polls, and usage records for the LLM calls it makes.
// The SQLite store implements it; memory runs no SQL on the store's tables.
type Storage interface {
	store.Tables
	store.TurnLog
	store.JobReader
	store.UsageRecorder
}

// pendingRefs lists the turns of f that wait for ingestion: learnable,
// after the floor and after their session's cursor, oldest first. q reads
// the cursors (a transaction sees its own).
func pendingRefs(ctx context.Context, q queryer, turns store.TurnLog, f store.TurnFilter) ([]store.TurnRef, error) {
	floor, err := pendingFloor(ctx, q)
	if err != nil {
		return nil, err
	}
	f.After = floor
	refs, err := turns.LearnableTurns(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("memory: pending turns: %w", err)
	}
	cursors, err := lastTurnIDs(ctx, q, sessionsOf(refs, len(refs)))
	if err != nil {
		return nil, err
	}
	out := refs[:0]
	for _, r := range refs {
		if r.ID > cursors[r.SessionID] {
			out = append(out, r)
		}
	}
	return out, nil
}

// firstPending is the oldest turn after floor waiting for ingestion (ok
// false: none), read through q (advance's transaction: its connection, not
// the read pool's). The floor sits just below the oldest pending turn, so
// the first turn after it is almost always pending still: it reads a few
// turns and their sessions' cursors first, and pages of more only when
// those were all ingested already (each page 8 times the last, up to 512).
func firstPending(ctx context.Context, q queryer, turns store.TurnLog, floor int64, side bool) (id int64, ok bool, err error) {
	page := 8
	for after := floor; ; page = min(page*8, 512) {
		refs, err := turns.LearnableTurns(ctx, store.TurnFilter{After: after, SideToo: side, Limit: page, On: q})
		if err != nil {
			return 0, false, fmt.Errorf("memory: pending turns: %w", err)
		}
		if len(refs) == 0 {
			return 0, false, nil
		}
		cursors, err := lastTurnIDs(ctx, q, sessionsOf(refs, len(refs)))
		if err != nil {
			return 0, false, err
		}
		for _, r := range refs {
			if r.ID > cursors[r.SessionID] {
				return r.ID, true, nil
			}
		}
		if len(refs) < page {
			return 0, false, nil
		}
		after = refs[len(refs)-1].ID
	}
}

// lastTurnIDs reads the cursors of sessions (absent: 0).
func lastTurnIDs(ctx context.Context, q queryer, sessions []string) (map[string]int64, error) {
	out := make(map[string]int64, len(sessions))
	const chunk = 500 // under SQLite's bound-parameter limit
	for start := 0; start < len(sessions); start += chunk {
		part := sessions[start:min(start+chunk, len(sessions))]
		args := make([]any, len(part))
		for i, s := range part {
			args[i] = s
		}
		rows, err := q.QueryContext(ctx, `SELECT session_id, last_turn_id FROM memory_cursors WHERE session_id IN (?`+strings.Repeat(",?", len(part)-1)+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("memory: cursors: %w", err)
		}
		if err := scanCursors(rows, out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// scanCursors reads rows of (session_id, last_turn_id) into out and
// closes them.
func scanCursors(rows *sql.Rows, out map[string]int64) error {
	defer rows.Close()
	for rows.Next() {
		var s string
		var id int64
		if err := rows.Scan(&s, &id); err != nil {
			return fmt.Errorf("memory: cursors: %w", err)
		}
		out[s] = id
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("memory: cursors: %w", err)
	}
	return nil
}

// sessionsOf lists the distinct sessions of refs in order, at most limit.
func sessionsOf(refs []store.TurnRef, limit int) []string {
	var out []string
	seen := map[string]bool{}
	for _, r := range refs {
		if len(out) >= limit {
			break
		}
		if !seen[r.SessionID] {
			seen[r.SessionID] = true
			out = append(out, r.SessionID)
		}
	}
	return out
}

// readPosition is how far ingestion has read: the floor, and the cursors
// above it (those at or below it add nothing).
func readPosition(ctx context.Context, q queryer) (store.ReadPosition, error) {
	floor, err := pendingFloor(ctx, q)
	if err != nil {
		return store.ReadPosition{}, err
	}
	pos := store.ReadPosition{Floor: floor, Cursors: map[string]int64{}}
	rows, err := q.QueryContext(ctx, `SELECT session_id, last_turn_id FROM memory_cursors WHERE last_turn_id > ?`, floor)
	if err != nil {
		return pos, fmt.Errorf("memory: cursors: %w", err)
	}
	return pos, scanCursors(rows, pos.Cursors)
}

// ReadPosition gives retention memory's read position in the store t
// (the composition root passes it as store.PruneOptions.KeepUnmined), so the
// store keeps the turns memory has still to mine without reading memory's
// tables itself.
func ReadPosition(t store.Tables) store.PositionFunc {
	return func(ctx context.Context) (store.ReadPosition, error) { return readPosition(ctx, t.Reader()) }
}

// backlog counts the turns of f waiting for ingestion in one query of the
// store, handing it the cursors.
func backlog(ctx context.Context, q queryer, turns store.TurnLog, f store.TurnFilter) (store.Backlog, error) {
	pos, err := readPosition(ctx, q)
	if err != nil {
		return store.Backlog{}, err
	}
	b, err := turns.CountUnread(ctx, f, pos)
	if err != nil {
		return b, fmt.Errorf("memory: pending turns: %w", err)
	}
	return b, nil
}

// pendingTurns counts the learnable turns not yet ingested (all sessions).
func pendingTurns(ctx context.Context, q queryer, turns store.TurnLog, side bool) (int, error) {
	b, err := backlog(ctx, q, turns, store.TurnFilter{SideToo: side})
	return b.Turns, err
}

// pendingTurns counts the learnable main turns not yet ingested.
func (s *Store) pendingTurns(ctx context.Context) (int, error) {
	if s.turns == nil {
		return 0, nil
	}
	return pendingTurns(ctx, s.r, s.turns, false)
}

// pendingCounts adds memory_pending_turns and memory_oldest_pending_seconds
// (how long the oldest of them has waited) to a provider's counts.
func (s *Store) pendingCounts(ctx context.Context, out map[string]int) {
	if s.turns == nil {
		return
	}
	b, err := backlog(ctx, s.r, s.turns, store.TurnFilter{})
	if err != nil {
		return
	}
	out["memory_pending_turns"] = b.Turns
	out["memory_oldest_pending_seconds"] = 0
	if b.Turns > 0 {
		out["memory_oldest_pending_seconds"] = int(max(0, time.Since(b.Oldest).Seconds()))
	}
}

// endedUnsummarized lists ended sessions whose working summary is
// outstanding (their cursor's summary lags its last turn), at most limit.
func (in *Ingester) endedUnsummarized(ctx context.Context, limit int) ([]string, error) {
	rows, err := in.mem.r.QueryContext(ctx, `SELECT session_id FROM memory_cursors
WHERE summarized_turn_id < last_turn_id AND session_id NOT LIKE 'buf:%'`)
	if err != nil {
		return nil, fmt.Errorf("memory: sessions to summarise: %w", err)
	}
	candidates, err := scanStrings(rows)
	if err != nil {
		return nil, fmt.Errorf("memory: sessions to summarise: %w", err)
	}
	var out []string
	for _, s := range candidates {
		if len(out) >= limit {
			break
		}
		if sess, err := in.st.Session(ctx, s); err == nil && sess.EndedAt != nil {
			out = append(out, s)
		}
	}
	return out, nil
}
