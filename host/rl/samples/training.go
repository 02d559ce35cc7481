package samples

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// ErrNoSamples is ClaimBatch's answer when no scored sample of the
// generation is waiting.
var ErrNoSamples = errors.New("no scored samples to train on")

// ErrBatchClosed is returned when a batch was already finished or released:
// its samples are never trained (or released) twice.
var ErrBatchClosed = errors.New("batch is not open")

// Batch states.
const (
	BatchOpen     = "open"
	BatchTrained  = "trained"
	BatchReleased = "released"
)

// Batch is a set of samples claimed for one training step.
type Batch struct {
	ID         int64     `json:"id"`
	State      string    `json:"state"`
	Generation int64     `json:"generation"`
	Step       int       `json:"step,omitempty"`
	Note       string    `json:"note,omitempty"`
	CreatedAt  time.Time `json:"created_at"`
	Samples    []Sample  `json:"samples,omitempty"`
}

// ClaimBatch claims up to max scored samples of skill generation gen, oldest
// first, into a new open batch, in one transaction: a sample is in at most
// one open batch, and only scored samples are claimed. ErrNoSamples when
// there are none.
func (s *Store) ClaimBatch(ctx context.Context, gen int64, max int) (*Batch, error) {
	if max <= 0 {
		return nil, fmt.Errorf("claim batch: max must be positive, got %d", max)
	}
	now := s.now()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("claim batch: %w", err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO rl_batches (state, generation, samples, created_at) VALUES ('open', ?, 0, ?)`, gen, now.UnixMilli())
	if err != nil {
		return nil, fmt.Errorf("claim batch: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return nil, fmt.Errorf("claim batch: %w", err)
	}
	res, err = tx.ExecContext(ctx, `UPDATE rl_samples SET state = 'claimed', batch_id = ?, updated_at = ?
WHERE id IN (SELECT id FROM rl_samples WHERE state = 'scored' AND skill_generation = ? ORDER BY id LIMIT ?)`, id, now.UnixMilli(), gen, max)
	if err != nil {
		return nil, fmt.Errorf("claim batch: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, fmt.Errorf("claim batch: %w", err)
	}
	if n == 0 {
		return nil, ErrNoSamples // the rollback removes the empty batch
	}
	if _, err := tx.ExecContext(ctx, `UPDATE rl_batches SET samples = ? WHERE id = ?`, n, id); err != nil {
		return nil, fmt.Errorf("claim batch: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("claim batch: commit: %w", err)
	}
	return s.Batch(ctx, id)
}

// Batch returns a batch with its samples (claimed ones while it is open;
// trained, released or dropped ones afterwards).
func (s *Store) Batch(ctx context.Context, id int64) (*Batch, error) {
	b := &Batch{ID: id}
	var created int64
	var step sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT state, generation, step, note, created_at FROM rl_batches WHERE id = ?`, id).
		Scan(&b.State, &b.Generation, &step, &b.Note, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("batch %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("batch %d: %w", id, err)
	}
	b.Step, b.CreatedAt = int(step.Int64), time.UnixMilli(created)
	if b.Samples, err = s.query(ctx, `SELECT `+sampleColumns+` FROM rl_samples WHERE batch_id = ? ORDER BY id`, id); err != nil {
		return nil, err
	}
	return b, nil
}

// OpenBatches lists batches claimed but neither finished nor released (a
// step interrupted by a crash), oldest first, with their samples.
func (s *Store) OpenBatches(ctx context.Context) ([]*Batch, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM rl_batches WHERE state = 'open' ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("open batches: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("open batches: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("open batches: %w", err)
	}
	out := make([]*Batch, 0, len(ids))
	for _, id := range ids {
		b, err := s.Batch(ctx, id)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// FinishBatch marks an open batch and its claimed samples trained by step.
// ErrBatchClosed when the batch is not open (finished or released before).
func (s *Store) FinishBatch(ctx context.Context, id int64, step int) error {
	return s.closeBatch(ctx, id, BatchTrained, step, "", `UPDATE rl_samples SET state = 'trained', step = ?, updated_at = ? WHERE batch_id = ? AND state = 'claimed'`, step)
}

// ReleaseBatch gives an open batch's claimed samples back (scored, to be
// claimed again), e.g. after a failed step; note says why.
func (s *Store) ReleaseBatch(ctx context.Context, id int64, note string) error {
	return s.closeBatch(ctx, id, BatchReleased, 0, note, `UPDATE rl_samples SET state = 'scored', batch_id = NULL, updated_at = ? WHERE batch_id = ? AND state = 'claimed'`)
}

func (s *Store) closeBatch(ctx context.Context, id int64, state string, step int, note, samplesSQL string, leading ...any) error {
	now := s.now().UnixMilli()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("%s batch %d: %w", state, id, err)
	}
	defer tx.Rollback()
	var stepArg any
	if state == BatchTrained {
		stepArg = step
	}
	res, err := tx.ExecContext(ctx, `UPDATE rl_batches SET state = ?, step = ?, note = ?, finished_at = ? WHERE id = ? AND state = 'open'`, state, stepArg, note, now, id)
	if err != nil {
		return fmt.Errorf("%s batch %d: %w", state, id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		var cur string
		if err := tx.QueryRowContext(ctx, `SELECT state FROM rl_batches WHERE id = ?`, id).Scan(&cur); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("batch %d: %w", id, ErrNotFound)
		}
		return fmt.Errorf("batch %d is %s: %w", id, cur, ErrBatchClosed)
	}
	args := append(append([]any{}, leading...), now, id)
	if _, err := tx.ExecContext(ctx, samplesSQL, args...); err != nil {
		return fmt.Errorf("%s batch %d: %w", state, id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("%s batch %d: commit: %w", state, id, err)
	}
	return nil
}

// Drop marks samples dropped with a reason (a malformed datum, a sample the
// trainer refused). Trained samples stay trained. It returns how many
// changed.
func (s *Store) Drop(ctx context.Context, ids []int64, reason string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	args := []any{reason, s.now().UnixMilli()}
	for _, id := range ids {
		args = append(args, id)
	}
	res, err := s.w.ExecContext(ctx, `UPDATE rl_samples SET state = 'dropped', state_reason = ?, updated_at = ?
WHERE state IN ('pending', 'scored', 'claimed') AND id IN (?`+strings.Repeat(",?", len(ids)-1)+`)`, args...)
	if err != nil {
		return 0, fmt.Errorf("drop samples: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// DropStale drops pending and scored samples collected under an older skill
// generation than gen (support/query separation: data gathered before the
// skills changed is not trained on). It returns how many.
func (s *Store) DropStale(ctx context.Context, gen int64) (int, error) {
	res, err := s.w.ExecContext(ctx, `UPDATE rl_samples SET state = 'dropped', state_reason = ?, updated_at = ?
WHERE state IN ('pending', 'scored') AND skill_generation < ?`,
		fmt.Sprintf("stale: collected before skill generation %d", gen), s.now().UnixMilli(), gen)
	if err != nil {
		return 0, fmt.Errorf("drop stale samples: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}
