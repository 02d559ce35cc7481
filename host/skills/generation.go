package skills

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// LibraryGeneration is the skill library's generation as RL sees it: the
// id of the newest history entry that changed what may be injected (every
// action except proposals and rejections). It only grows, survives restarts,
// and changes whenever the injectable skills do, so an RL sample tagged with
// it can tell whether it was collected under the current skills (support /
// query separation: samples from before a change are not trained on). 0
// before any skill was ever seen.
func LibraryGeneration(ctx context.Context, db *sql.DB) (int64, error) {
	var id int64
	err := db.QueryRowContext(ctx, `SELECT id FROM skill_history WHERE action NOT IN ('proposed', 'rejected') ORDER BY id DESC LIMIT 1`).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("skill library generation: %w", err)
	}
	return id, nil
}
