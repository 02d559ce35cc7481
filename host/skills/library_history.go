package skills

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// The history of every skill version and change, in the store.

// Record adds an event to the history (e.g. a rejected proposal).
func (l *Library) Record(ctx context.Context, name string, generation int, ev Event, content string) error {
	return l.recordLocked(ctx, name, generation, ev, content, "")
}

func (l *Library) recordLocked(ctx context.Context, name string, generation int, ev Event, content, hash string) error {
	_, err := l.w.ExecContext(ctx, `INSERT INTO skill_history (name, generation, action, source, session_id, reason, content, hash, created_at) VALUES (?,?,?,?,?,?,?,?,?)`,
		name, generation, ev.Action, ev.Source, ev.SessionID, textclip.Ellipsis(ev.Reason, 2000), content, hash, l.now().UnixMilli())
	if err != nil {
		return fmt.Errorf("skills history: %w", err)
	}
	return nil
}

// HistoryEntry is one row of a skill's history.
type HistoryEntry struct {
	ID         int64     `json:"id"`
	Name       string    `json:"name"`
	Generation int       `json:"generation"`
	Action     string    `json:"action"`
	Source     string    `json:"source,omitempty"`
	SessionID  string    `json:"session_id,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Content    string    `json:"content,omitempty"`
	Hash       string    `json:"hash,omitempty"`
	At         time.Time `json:"at"`
}

// History lists history rows, newest first: one skill's, or every skill's
// when name is empty. Content is included when withContent is set.
func (l *Library) History(ctx context.Context, name string, limit int, withContent bool) ([]HistoryEntry, error) {
	if limit <= 0 {
		limit = 100
	}
	q := `SELECT id, name, generation, action, source, session_id, reason, CASE WHEN ? THEN content ELSE '' END, hash, created_at FROM skill_history`
	args := []any{withContent}
	if name != "" {
		q += ` WHERE name = ?`
		args = append(args, name)
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := l.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("skills history: %w", err)
	}
	defer rows.Close()
	var out []HistoryEntry
	for rows.Next() {
		var h HistoryEntry
		var at int64
		if err := rows.Scan(&h.ID, &h.Name, &h.Generation, &h.Action, &h.Source, &h.SessionID, &h.Reason, &h.Content, &h.Hash, &at); err != nil {
			return nil, fmt.Errorf("skills history: %w", err)
		}
		h.At = time.UnixMilli(at)
		out = append(out, h)
	}
	return out, rows.Err()
}

// HistoryVersion returns one history row with its content.
func (l *Library) HistoryVersion(ctx context.Context, id int64) (HistoryEntry, error) {
	var h HistoryEntry
	var at int64
	err := l.r.QueryRowContext(ctx, `SELECT id, name, generation, action, source, session_id, reason, content, hash, created_at FROM skill_history WHERE id = ?`, id).
		Scan(&h.ID, &h.Name, &h.Generation, &h.Action, &h.Source, &h.SessionID, &h.Reason, &h.Content, &h.Hash, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return h, fmt.Errorf("history version %d: %w", id, ErrNotFound)
	}
	h.At = time.UnixMilli(at)
	return h, err
}
