-- +goose Up
-- The training scheduler (host/scheduler): its current state, so a restart
-- resumes it (a user pause survives, the step-time average is kept), the log
-- of its transitions with their reasons, and the busy intervals fetched from
-- calendars, so window checks and `metaclaw scheduler next-window` never wait
-- on the network.
CREATE TABLE scheduler_state (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    state         TEXT NOT NULL,
    reason        TEXT NOT NULL DEFAULT '',
    since         INTEGER NOT NULL,            -- unix milliseconds
    window_id     INTEGER NOT NULL DEFAULT 0,
    user_paused   INTEGER NOT NULL DEFAULT 0,
    paused_until  INTEGER NOT NULL DEFAULT 0,  -- 0 = until resumed
    step_avg_us   INTEGER NOT NULL DEFAULT 0,  -- microseconds
    steps         INTEGER NOT NULL DEFAULT 0,
    last_step     TEXT NOT NULL DEFAULT '',    -- JSON of the last step report
    last_activity INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE scheduler_transitions (
    id         INTEGER PRIMARY KEY,
    at         INTEGER NOT NULL,
    from_state TEXT NOT NULL,
    to_state   TEXT NOT NULL,
    reason     TEXT NOT NULL
);

CREATE TABLE calendar_busy (
    source  TEXT NOT NULL,     -- google | ics
    start   INTEGER NOT NULL,  -- unix milliseconds
    end     INTEGER NOT NULL,
    summary TEXT NOT NULL DEFAULT ''
);
CREATE INDEX calendar_busy_source ON calendar_busy(source, start);

CREATE TABLE calendar_fetch (
    source     TEXT PRIMARY KEY,
    fetched_at INTEGER NOT NULL DEFAULT 0,  -- last success
    tried_at   INTEGER NOT NULL DEFAULT 0,
    error      TEXT NOT NULL DEFAULT ''
);

-- +goose Down
DROP TABLE calendar_fetch;
DROP TABLE calendar_busy;
DROP TABLE scheduler_transitions;
DROP TABLE scheduler_state;
