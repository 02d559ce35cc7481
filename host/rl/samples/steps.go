package samples

// What the training loop (host/rl/train) needs beyond claiming and closing
// batches: how many samples are ready, closing a batch in the same
// transaction as the step that trained it, and the exact samples a step
// used (to replay it on restored weights).

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ScoredCount is how many scored samples of skill generation gen wait to be
// claimed.
func (s *Store) ScoredCount(ctx context.Context, gen int64) (int, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM rl_samples WHERE state = 'scored' AND skill_generation = ?`, gen).Scan(&n); err != nil {
		return 0, fmt.Errorf("count scored samples: %w", err)
	}
	return n, nil
}

// FinishBatchWith is FinishBatch with also's writes in the same
// transaction: the step that trained a batch and the batch's samples
// becoming trained are recorded together or not at all.
func (s *Store) FinishBatchWith(ctx context.Context, id int64, step int, also func(*sql.Tx) error) error {
	now := s.now().UnixMilli()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("finish batch %d: %w", id, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE rl_batches SET state = 'trained', step = ?, finished_at = ? WHERE id = ? AND state = 'open'`, step, now, id)
	if err != nil {
		return fmt.Errorf("finish batch %d: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		var cur string
		if err := tx.QueryRowContext(ctx, `SELECT state FROM rl_batches WHERE id = ?`, id).Scan(&cur); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("batch %d: %w", id, ErrNotFound)
		}
		return fmt.Errorf("batch %d is %s: %w", id, cur, ErrBatchClosed)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE rl_samples SET state = 'trained', step = ?, updated_at = ? WHERE batch_id = ? AND state = 'claimed'`, step, now, id); err != nil {
		return fmt.Errorf("finish batch %d: %w", id, err)
	}
	if also != nil {
		if err := also(tx); err != nil {
			return fmt.Errorf("finish batch %d: %w", id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("finish batch %d: commit: %w", id, err)
	}
	return nil
}

// TrainedBy returns the samples of batch id that step trained, in the order
// the step saw them (by id), for replaying the step.
func (s *Store) TrainedBy(ctx context.Context, batchID int64, step int) ([]Sample, error) {
	return s.query(ctx, `SELECT `+sampleColumns+` FROM rl_samples WHERE batch_id = ? AND state = 'trained' AND step = ? ORDER BY id`, batchID, step)
}
