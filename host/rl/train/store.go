package train

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// Step states.
const (
	StepApplied    = "applied"     // its gradients are in the LoRA's lineage
	StepRolledBack = "rolled_back" // `metaclaw rl resume` went back to a checkpoint before it
)

// StepRecord is one row of the steps table.
type StepRecord struct {
	ID             int64              `json:"id"`
	Step           int                `json:"step"`
	BatchID        int64              `json:"batch_id"`
	State          string             `json:"state"`
	ModelID        string             `json:"model_id"`
	StartedAt      time.Time          `json:"started_at"`
	FinishedAt     time.Time          `json:"finished_at"`
	DurationMS     int64              `json:"duration_ms"`
	Samples        int                `json:"samples"`
	Datums         int                `json:"datums"`
	Loss           *float64           `json:"loss"`
	Metrics        map[string]float64 `json:"metrics"`
	MeanReward     *float64           `json:"mean_reward"`
	LossFn         string             `json:"loss_fn"`
	LearningRate   float64            `json:"learning_rate"`
	Advantage      string             `json:"advantage"`
	KLCoef         float64            `json:"kl_coef"`
	Sampler        string             `json:"sampler"`
	SamplerPath    string             `json:"sampler_path,omitempty"`
	CheckpointPath string             `json:"checkpoint_path,omitempty"`
	Replays        int                `json:"replays"`
	Note           string             `json:"note,omitempty"`
}

// Store is the steps table (rl_steps) and the trainer's state (rl_trainer).
type Store struct {
	w, r *sql.DB
	now  func() time.Time
}

// NewStore returns the steps store over the host's database (writer and
// reader pools).
func NewStore(w, r *sql.DB) *Store { return &Store{w: w, r: r, now: time.Now} }

const stepColumns = `id, step, batch_id, state, model_id, started_at, finished_at, duration_ms, samples, datums, loss, metrics,
    mean_reward, loss_fn, learning_rate, advantage, kl_coef, sampler, sampler_path, checkpoint_path, replays, note`

func scanStep(row interface{ Scan(...any) error }) (StepRecord, error) {
	var r StepRecord
	var started, finished int64
	var loss, reward sql.NullFloat64
	var metrics string
	err := row.Scan(&r.ID, &r.Step, &r.BatchID, &r.State, &r.ModelID, &started, &finished, &r.DurationMS, &r.Samples, &r.Datums,
		&loss, &metrics, &reward, &r.LossFn, &r.LearningRate, &r.Advantage, &r.KLCoef, &r.Sampler, &r.SamplerPath,
		&r.CheckpointPath, &r.Replays, &r.Note)
	if err != nil {
		return r, err
	}
	r.StartedAt, r.FinishedAt = time.UnixMilli(started), time.UnixMilli(finished)
	if loss.Valid {
		r.Loss = &loss.Float64
	}
	if reward.Valid {
		r.MeanReward = &reward.Float64
	}
	if err := json.Unmarshal([]byte(metrics), &r.Metrics); err != nil {
		return r, fmt.Errorf("step %d: metrics: %w", r.Step, err)
	}
	return r, nil
}

func (s *Store) queryRows(ctx context.Context, q string, args ...any) ([]StepRecord, error) {
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("steps: %w", err)
	}
	defer rows.Close()
	var out []StepRecord
	for rows.Next() {
		r, err := scanStep(rows)
		if err != nil {
			return nil, fmt.Errorf("steps: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *Store) queryOne(ctx context.Context, q string, args ...any) (*StepRecord, error) {
	r, err := scanStep(s.r.QueryRowContext(ctx, q, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("steps: %w", err)
	}
	return &r, nil
}

// finite turns NaN and ±Inf into NULL (SQLite has no NaN).
func finite(p *float64) any {
	if p == nil || math.IsNaN(*p) || math.IsInf(*p, 0) {
		return nil
	}
	return *p
}

// insert writes a step in tx (the transaction that finishes its batch).
func (s *Store) insert(ctx context.Context, tx *sql.Tx, r *StepRecord) error {
	metrics := map[string]float64{}
	for k, v := range r.Metrics {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			metrics[k] = v
		}
	}
	m, err := json.Marshal(metrics)
	if err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO rl_steps (step, batch_id, state, model_id, started_at, finished_at, duration_ms, samples, datums,
    loss, metrics, mean_reward, loss_fn, learning_rate, advantage, kl_coef, sampler, sampler_path, checkpoint_path, replays, note)
VALUES (?, ?, 'applied', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)`,
		r.Step, r.BatchID, r.ModelID, r.StartedAt.UnixMilli(), r.FinishedAt.UnixMilli(), r.DurationMS, r.Samples, r.Datums,
		finite(r.Loss), string(m), finite(r.MeanReward), r.LossFn, r.LearningRate, r.Advantage, r.KLCoef, r.Sampler, r.SamplerPath,
		r.CheckpointPath, r.Note)
	if err != nil {
		return fmt.Errorf("record step %d: %w", r.Step, err)
	}
	r.ID, _ = res.LastInsertId()
	r.State = StepApplied
	return nil
}

// History lists steps newest first (limit ≤ 0: 100); rolled-back steps
// only when all is set.
func (s *Store) History(ctx context.Context, limit int, all bool) ([]StepRecord, error) {
	if limit <= 0 || limit > 10000 {
		limit = 100
	}
	where := `WHERE state = 'applied'`
	if all {
		where = ``
	}
	return s.queryRows(ctx, `SELECT `+stepColumns+` FROM rl_steps `+where+` ORDER BY step DESC, id DESC LIMIT ?`, limit)
}

// Last is the newest applied step (nil before the first).
func (s *Store) Last(ctx context.Context) (*StepRecord, error) {
	return s.queryOne(ctx, `SELECT `+stepColumns+` FROM rl_steps WHERE state = 'applied' ORDER BY step DESC LIMIT 1`)
}

// LastCheckpoint is the newest applied step with a training checkpoint.
func (s *Store) LastCheckpoint(ctx context.Context) (*StepRecord, error) {
	return s.queryOne(ctx, `SELECT `+stepColumns+` FROM rl_steps WHERE state = 'applied' AND checkpoint_path != '' ORDER BY step DESC LIMIT 1`)
}

// Checkpoints lists the steps with a training checkpoint, newest first.
func (s *Store) Checkpoints(ctx context.Context, all bool) ([]StepRecord, error) {
	where := `checkpoint_path != '' AND state = 'applied'`
	if all {
		where = `checkpoint_path != ''`
	}
	return s.queryRows(ctx, `SELECT `+stepColumns+` FROM rl_steps WHERE `+where+` ORDER BY step DESC, id DESC`)
}

// ByCheckpoint finds the step whose checkpoint is path (applied ones first).
func (s *Store) ByCheckpoint(ctx context.Context, path string) (*StepRecord, error) {
	return s.queryOne(ctx, `SELECT `+stepColumns+` FROM rl_steps WHERE checkpoint_path = ? ORDER BY state = 'applied' DESC, id DESC LIMIT 1`, path)
}

// AppliedAfter lists the applied steps after step, oldest first: those a
// resume from step's checkpoint must replay.
func (s *Store) AppliedAfter(ctx context.Context, step int) ([]StepRecord, error) {
	return s.queryRows(ctx, `SELECT `+stepColumns+` FROM rl_steps WHERE state = 'applied' AND step > ? ORDER BY step`, step)
}

// Replayed records that a step was applied again on model, with the
// sampler it produced and, when one was saved, its checkpoint.
func (s *Store) Replayed(ctx context.Context, id int64, model, sampler, samplerPath, checkpoint string) error {
	_, err := s.w.ExecContext(ctx, `UPDATE rl_steps SET replays = replays + 1, model_id = ?, sampler = ?, sampler_path = ?,
    checkpoint_path = CASE WHEN ? != '' THEN ? ELSE checkpoint_path END WHERE id = ?`, model, sampler, samplerPath, checkpoint, checkpoint, id)
	if err != nil {
		return fmt.Errorf("record replayed step: %w", err)
	}
	return nil
}

// RollBack marks the applied steps after step rolled back (a resume from
// an earlier checkpoint discards them); note says why. It returns how many.
func (s *Store) RollBack(ctx context.Context, step int, note string) (int, error) {
	res, err := s.w.ExecContext(ctx, `UPDATE rl_steps SET state = 'rolled_back', note = ? WHERE state = 'applied' AND step > ?`, note, step)
	if err != nil {
		return 0, fmt.Errorf("roll back steps after %d: %w", step, err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// ResumeRequest is a resume point asked for while no host ran.
type ResumeRequest struct {
	Path string `json:"path"`
	Step int    `json:"step"`
}

// RequestResume records a resume point for the next start.
func (s *Store) RequestResume(ctx context.Context, r ResumeRequest) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO rl_trainer (id, resume_path, resume_step, updated_at) VALUES (1, ?, ?, ?)
ON CONFLICT(id) DO UPDATE SET resume_path = excluded.resume_path, resume_step = excluded.resume_step, updated_at = excluded.updated_at`,
		r.Path, r.Step, s.now().UnixMilli())
	if err != nil {
		return fmt.Errorf("record resume request: %w", err)
	}
	return nil
}

// PendingResume returns the recorded resume point (nil: none).
func (s *Store) PendingResume(ctx context.Context) (*ResumeRequest, error) {
	var r ResumeRequest
	err := s.r.QueryRowContext(ctx, `SELECT resume_path, resume_step FROM rl_trainer WHERE id = 1 AND resume_path != ''`).Scan(&r.Path, &r.Step)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("resume request: %w", err)
	}
	return &r, nil
}

// ClearResume forgets the recorded resume point once applied.
func (s *Store) ClearResume(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, `UPDATE rl_trainer SET resume_path = '', resume_step = 0, updated_at = ? WHERE id = 1`, s.now().UnixMilli()); err != nil {
		return fmt.Errorf("clear resume request: %w", err)
	}
	return nil
}
