package samples

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// Counts summarise the samples for `metaclaw status`.
type Counts struct {
	Pending int `json:"pending"`
	Scored  int `json:"scored"`
	Claimed int `json:"claimed"`
	Trained int `json:"trained"`
	Dropped int `json:"dropped"`
	// AwaitingNextTurn are pending samples whose judge waits for the
	// session's next main turn or its end.
	AwaitingNextTurn int `json:"awaiting_next_turn"`
	// Retrying are pending samples whose judge or teacher call failed and is
	// tried again later (a judge that is down); LastError is the newest error.
	Retrying  int    `json:"retrying"`
	LastError string `json:"last_error,omitempty"`
	// Judged counts samples with a verdict; MeanReward is their mean,
	// MeanRewardRecent that of the newest 50 (nil without verdicts).
	Judged           int      `json:"judged"`
	MeanReward       *float64 `json:"mean_reward"`
	MeanRewardRecent *float64 `json:"mean_reward_recent"`
}

// Counts reads the summary.
func (s *Store) Counts(ctx context.Context) (Counts, error) {
	var c Counts
	rows, err := s.r.QueryContext(ctx, `SELECT state, COUNT(*) FROM rl_samples GROUP BY state`)
	if err != nil {
		return c, fmt.Errorf("sample counts: %w", err)
	}
	for rows.Next() {
		var state string
		var n int
		if err := rows.Scan(&state, &n); err != nil {
			rows.Close()
			return c, fmt.Errorf("sample counts: %w", err)
		}
		switch state {
		case Pending:
			c.Pending = n
		case Scored:
			c.Scored = n
		case Claimed:
			c.Claimed = n
		case Trained:
			c.Trained = n
		case Dropped:
			c.Dropped = n
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return c, fmt.Errorf("sample counts: %w", err)
	}
	var mean, recent sql.NullFloat64
	err = s.r.QueryRowContext(ctx, `SELECT
    (SELECT COUNT(*) FROM rl_samples WHERE state = 'pending' AND judge_state = 'waiting'),
    (SELECT COUNT(*) FROM rl_samples WHERE state = 'pending' AND ((judge_state = 'due' AND judge_attempts > 0) OR (teacher_state = 'due' AND teacher_attempts > 0))),
    (SELECT COUNT(*) FROM rl_samples WHERE reward IS NOT NULL),
    (SELECT AVG(reward) FROM rl_samples WHERE reward IS NOT NULL),
    (SELECT AVG(reward) FROM (SELECT reward FROM rl_samples WHERE reward IS NOT NULL ORDER BY judged_at DESC, id DESC LIMIT 50))`).
		Scan(&c.AwaitingNextTurn, &c.Retrying, &c.Judged, &mean, &recent)
	if err != nil {
		return c, fmt.Errorf("sample counts: %w", err)
	}
	if mean.Valid {
		c.MeanReward = &mean.Float64
	}
	if recent.Valid {
		c.MeanRewardRecent = &recent.Float64
	}
	if c.Retrying > 0 {
		_ = s.r.QueryRowContext(ctx, `SELECT CASE WHEN judge_error != '' THEN judge_error ELSE teacher_error END FROM rl_samples
WHERE state = 'pending' AND (judge_error != '' OR teacher_error != '') ORDER BY updated_at DESC LIMIT 1`).Scan(&c.LastError)
	}
	return c, nil
}

// Filter selects samples for List.
type Filter struct {
	State     string // "" = any
	SessionID string
	Limit     int // default 50, at most 1000
}

// List returns samples newest first.
func (s *Store) List(ctx context.Context, f Filter) ([]Sample, error) {
	var where []string
	var args []any
	if f.State != "" {
		where, args = append(where, "state = ?"), append(args, f.State)
	}
	if f.SessionID != "" {
		where, args = append(where, "session_id = ?"), append(args, f.SessionID)
	}
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 50
	}
	q := `SELECT ` + sampleColumns + ` FROM rl_samples`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id DESC LIMIT ?"
	return s.query(ctx, q, append(args, f.Limit)...)
}
