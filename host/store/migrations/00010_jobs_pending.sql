-- +goose Up
-- Every change of a job's state rewrote both jobs_ready(state, run_after)
-- and jobs_finished(state, updated_at): three pages per commit, nine per
-- job (enqueue, claim, finish). Only the claim needs an index, and only
-- over pending jobs: enqueue and claim now write the row and this index,
-- finishing writes the row alone. What read the others (status counts,
-- pruning finished jobs, requeueing at start) scans the table, which holds
-- the few durable jobs per session and is pruned by age.
DROP INDEX jobs_ready;
DROP INDEX jobs_finished;
CREATE INDEX jobs_pending ON jobs(kind, run_after) WHERE state = 'pending';

-- +goose Down
DROP INDEX jobs_pending;
CREATE INDEX jobs_ready ON jobs(state, run_after);
CREATE INDEX jobs_finished ON jobs(state, updated_at);
