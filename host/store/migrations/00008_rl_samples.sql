-- +goose Up
-- RL samples (host/rl/samples): every main turn the policy model answered, with
-- the exact token ids it was sampled with and returned (never re-tokenised),
-- and its rewards. Ids are little-endian int32 blobs, log-probs little-endian
-- float32 blobs, one per completion id. No foreign keys: retention may prune
-- turns and sessions, never samples (training data is kept until trained or
-- dropped).
CREATE TABLE rl_samples (
    id               INTEGER PRIMARY KEY,
    session_id       TEXT NOT NULL,
    agent            TEXT NOT NULL,
    seq              INTEGER NOT NULL,           -- 1-based among the session's samples
    turn_id          INTEGER,                    -- turns.id once the turn is recorded
    turn_index       INTEGER,                    -- turns.turn_index (main turns of the session)
    created_at       INTEGER NOT NULL,           -- unix milliseconds
    updated_at       INTEGER NOT NULL,
    base_model       TEXT NOT NULL,
    sampler          TEXT NOT NULL,              -- the sampling session / weights that answered
    sampler_step     INTEGER NOT NULL DEFAULT 0, -- training step of those weights (0 = initial)
    skill_generation INTEGER NOT NULL,
    prompt_ids       BLOB NOT NULL,
    completion_ids   BLOB NOT NULL,
    logprobs         BLOB NOT NULL,
    prompt_hash      TEXT NOT NULL,              -- same prompt ids, same hash (GRPO groups)
    stop_reason      TEXT NOT NULL,
    instruction      TEXT NOT NULL DEFAULT '',   -- the user's last message
    response         TEXT NOT NULL DEFAULT '',   -- the answer as the client got it
    last_message     TEXT NOT NULL DEFAULT '',   -- the request's newest message (the previous sample's next state)
    next_state       TEXT,                       -- the next main turn's newest message; NULL = none yet
    judge_state      TEXT NOT NULL,              -- waiting (next turn or session end) | due | done | none
    judge_after      INTEGER NOT NULL DEFAULT 0, -- due samples are judged from then (retry back-off)
    judge_attempts   INTEGER NOT NULL DEFAULT 0,
    judge_error      TEXT NOT NULL DEFAULT '',
    judge            TEXT NOT NULL DEFAULT '',   -- who judged
    reward           REAL,                       -- -1, 0, +1; NULL until judged
    judge_votes      TEXT NOT NULL DEFAULT '[]',
    judge_text       TEXT NOT NULL DEFAULT '',
    judged_at        INTEGER,
    teacher_state    TEXT NOT NULL,              -- due | done | none
    teacher_after    INTEGER NOT NULL DEFAULT 0,
    teacher_attempts INTEGER NOT NULL DEFAULT 0,
    teacher_error    TEXT NOT NULL DEFAULT '',
    teacher_logprobs BLOB,                       -- float32 per completion id (OPD)
    state            TEXT NOT NULL DEFAULT 'pending', -- pending | scored | claimed | trained | dropped
    state_reason     TEXT NOT NULL DEFAULT '',
    batch_id         INTEGER,                    -- rl_batches.id of the batch that claimed it
    step             INTEGER                     -- training step that used it
);
CREATE INDEX rl_samples_state ON rl_samples(state, skill_generation, id);
CREATE INDEX rl_samples_session ON rl_samples(session_id, seq);
CREATE INDEX rl_samples_judge_due ON rl_samples(judge_after) WHERE judge_state = 'due' AND state = 'pending';
CREATE INDEX rl_samples_teacher_due ON rl_samples(teacher_after) WHERE teacher_state = 'due' AND state = 'pending';
CREATE INDEX rl_samples_batch ON rl_samples(batch_id) WHERE batch_id IS NOT NULL;

-- A batch of samples claimed by the training loop: claimed samples belong to
-- exactly one open batch, which ends trained (with its step) or released
-- (its samples back to scored), so nothing is trained twice.
CREATE TABLE rl_batches (
    id          INTEGER PRIMARY KEY,
    state       TEXT NOT NULL DEFAULT 'open',    -- open | trained | released
    generation  INTEGER NOT NULL,
    samples     INTEGER NOT NULL,
    step        INTEGER,
    note        TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    finished_at INTEGER
);
CREATE INDEX rl_batches_open ON rl_batches(state);

-- +goose Down
DROP TABLE rl_batches;
DROP TABLE rl_samples;
