package scheduler

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Persisted is the scheduler state kept across restarts.
type Persisted struct {
	State        State
	Reason       string
	Since        time.Time
	WindowID     int64
	UserPaused   bool
	PausedUntil  time.Time // zero: until resumed
	StepAvg      time.Duration
	Steps        int64
	LastStep     *StepReport
	LastActivity time.Time
}

// StateStore persists the scheduler.
type StateStore interface {
	Load(ctx context.Context) (Persisted, bool, error)
	Save(ctx context.Context, p Persisted) error
	LogTransition(ctx context.Context, t Transition) error
	// Transitions lists the newest transitions, newest first.
	Transitions(ctx context.Context, limit int) ([]Transition, error)
}

// keptTransitions bounds the transition log.
const keptTransitions = 500

// SQLStore keeps the state in the host's SQLite store (tables of migration
// 00005_scheduler.sql).
type SQLStore struct {
	W, R *sql.DB // writer and reader pools (store.Tables)
}

func msOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func timeOf(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// Load implements StateStore.
func (s SQLStore) Load(ctx context.Context) (Persisted, bool, error) {
	var p Persisted
	var since, until, avg, act int64
	var paused int
	var last string
	err := s.R.QueryRowContext(ctx, `SELECT state, reason, since, window_id, user_paused, paused_until, step_avg_us, steps, last_step, last_activity
FROM scheduler_state WHERE id = 1`).Scan(&p.State, &p.Reason, &since, &p.WindowID, &paused, &until, &avg, &p.Steps, &last, &act)
	if errors.Is(err, sql.ErrNoRows) {
		return p, false, nil
	}
	if err != nil {
		return p, false, fmt.Errorf("read scheduler state: %w", err)
	}
	p.Since, p.PausedUntil, p.LastActivity = timeOf(since), timeOf(until), timeOf(act)
	p.UserPaused = paused != 0
	p.StepAvg = time.Duration(avg) * time.Microsecond
	if last != "" {
		var r stepJSON
		if json.Unmarshal([]byte(last), &r) == nil {
			sr := r.report()
			p.LastStep = &sr
		}
	}
	return p, true, nil
}

// Save implements StateStore.
func (s SQLStore) Save(ctx context.Context, p Persisted) error {
	last := ""
	if p.LastStep != nil {
		b, _ := json.Marshal(toStepJSON(*p.LastStep))
		last = string(b)
	}
	paused := 0
	if p.UserPaused {
		paused = 1
	}
	_, err := s.W.ExecContext(ctx, `INSERT INTO scheduler_state (id, state, reason, since, window_id, user_paused, paused_until, step_avg_us, steps, last_step, last_activity)
VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(id) DO UPDATE SET state = excluded.state, reason = excluded.reason, since = excluded.since,
    window_id = excluded.window_id, user_paused = excluded.user_paused, paused_until = excluded.paused_until,
    step_avg_us = excluded.step_avg_us, steps = excluded.steps, last_step = excluded.last_step,
    last_activity = excluded.last_activity`,
		string(p.State), p.Reason, msOf(p.Since), p.WindowID, paused, msOf(p.PausedUntil), p.StepAvg.Microseconds(), p.Steps, last, msOf(p.LastActivity))
	if err != nil {
		return fmt.Errorf("save scheduler state: %w", err)
	}
	return nil
}

// LogTransition implements StateStore; the log keeps the newest 500.
func (s SQLStore) LogTransition(ctx context.Context, t Transition) error {
	_, err := s.W.ExecContext(ctx, `INSERT INTO scheduler_transitions (at, from_state, to_state, reason) VALUES (?, ?, ?, ?)`,
		msOf(t.At), string(t.From), string(t.To), t.Reason)
	if err != nil {
		return fmt.Errorf("log scheduler transition: %w", err)
	}
	_, err = s.W.ExecContext(ctx, `DELETE FROM scheduler_transitions WHERE id <= (SELECT MAX(id) FROM scheduler_transitions) - ?`, keptTransitions)
	return err
}

// Transitions implements StateStore.
func (s SQLStore) Transitions(ctx context.Context, limit int) ([]Transition, error) {
	if limit <= 0 {
		limit = 20
	}
	rows, err := s.R.QueryContext(ctx, `SELECT at, from_state, to_state, reason FROM scheduler_transitions ORDER BY id DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("read scheduler transitions: %w", err)
	}
	defer rows.Close()
	var out []Transition
	for rows.Next() {
		var t Transition
		var at int64
		if err := rows.Scan(&at, &t.From, &t.To, &t.Reason); err != nil {
			return nil, err
		}
		t.At = timeOf(at)
		out = append(out, t)
	}
	return out, rows.Err()
}

// stepJSON is StepReport as stored and shown (duration in seconds).
type stepJSON struct {
	Step            int64     `json:"step"`
	Samples         int       `json:"samples"`
	DurationSeconds float64   `json:"duration_seconds"`
	Loss            float64   `json:"loss"`
	At              time.Time `json:"at"`
	Note            string    `json:"note,omitempty"`
}

func toStepJSON(r StepReport) stepJSON {
	return stepJSON{Step: r.Step, Samples: r.Samples, DurationSeconds: r.Duration.Seconds(), Loss: r.Loss, At: r.At, Note: r.Note}
}

func (j stepJSON) report() StepReport {
	return StepReport{Step: j.Step, Samples: j.Samples, Duration: time.Duration(j.DurationSeconds * float64(time.Second)), Loss: j.Loss, At: j.At, Note: j.Note}
}
