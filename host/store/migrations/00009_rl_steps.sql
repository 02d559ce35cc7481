-- +goose Up
-- RL training steps (host/rl/train): one row per optimizer step applied to
-- the user's LoRA, with what it trained on (rl_batches.id), what it reported
-- and the weights it produced. A step after the last checkpoint whose
-- weights were lost (a crash, a model the service no longer has) is replayed
-- on the restored checkpoint from the same batch and parameters, so its
-- samples count once and the weights equal an uninterrupted run's. Not
-- pruned by retention: this is the model's history.
CREATE TABLE rl_steps (
    id              INTEGER PRIMARY KEY,
    step            INTEGER NOT NULL,           -- 1-based step number of the LoRA
    batch_id        INTEGER NOT NULL,           -- rl_batches.id
    state           TEXT NOT NULL DEFAULT 'applied', -- applied | rolled_back (metaclaw rl resume went back before it)
    model_id        TEXT NOT NULL,              -- the service's model that holds its weights now
    started_at      INTEGER NOT NULL,           -- unix milliseconds
    finished_at     INTEGER NOT NULL,
    duration_ms     INTEGER NOT NULL,           -- wall time of the step (forward_backward to swap)
    samples         INTEGER NOT NULL,           -- samples of the batch
    datums          INTEGER NOT NULL,           -- samples with something to learn (non-zero advantage)
    loss            REAL,                       -- loss:sum as the service reported it; NULL if it did not
    metrics         TEXT NOT NULL DEFAULT '{}', -- every forward_backward and optim_step metric
    mean_reward     REAL,
    loss_fn         TEXT NOT NULL,              -- the parameters, so a replay is the same step
    learning_rate   REAL NOT NULL,
    advantage       TEXT NOT NULL,
    kl_coef         REAL NOT NULL DEFAULT 0,
    sampler         TEXT NOT NULL DEFAULT '',   -- the sampler swapped in after it
    sampler_path    TEXT NOT NULL DEFAULT '',
    checkpoint_path TEXT NOT NULL DEFAULT '',   -- the training checkpoint saved after it ('' = none)
    replays         INTEGER NOT NULL DEFAULT 0, -- times re-applied after its weights were lost
    note            TEXT NOT NULL DEFAULT ''
);
CREATE UNIQUE INDEX rl_steps_applied ON rl_steps(step) WHERE state = 'applied';
CREATE INDEX rl_steps_checkpoint ON rl_steps(step) WHERE checkpoint_path != '';

-- The trainer's own state: a resume point asked for by `metaclaw rl resume`
-- while the host was not running, applied at the next start.
CREATE TABLE rl_trainer (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    resume_path TEXT NOT NULL DEFAULT '',
    resume_step INTEGER NOT NULL DEFAULT 0,
    updated_at  INTEGER NOT NULL
);

-- +goose Down
DROP TABLE rl_trainer;
DROP TABLE rl_steps;
