-- +goose Up
-- Retention (store.retain_days) folds old llm_usage rows into one row per
-- day, purpose, model and outcome; calls says how many calls a row stands for,
-- so the totals in `metaclaw status` survive pruning.
ALTER TABLE llm_usage ADD COLUMN calls INTEGER NOT NULL DEFAULT 1;
-- Finished jobs are pruned by age.
CREATE INDEX jobs_finished ON jobs(state, updated_at);

-- +goose Down
DROP INDEX jobs_finished;
ALTER TABLE llm_usage DROP COLUMN calls;
