-- +goose Up
CREATE TABLE sessions (
    id          TEXT PRIMARY KEY,
    agent       TEXT NOT NULL,
    scope       TEXT NOT NULL DEFAULT '',
    started_at  INTEGER NOT NULL,          -- unix milliseconds
    last_at     INTEGER NOT NULL,
    ended_at    INTEGER,                   -- NULL while open; a new turn reopens
    end_reason  TEXT,
    main_turns  INTEGER NOT NULL DEFAULT 0,
    side_turns  INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sessions_open ON sessions(ended_at, last_at);

CREATE TABLE turns (
    id            INTEGER PRIMARY KEY,
    session_id    TEXT NOT NULL REFERENCES sessions(id),
    agent         TEXT NOT NULL,
    turn_index    INTEGER NOT NULL,        -- 1-based among the session's turns of the same type
    turn_type     TEXT NOT NULL,           -- main | side
    client_api    TEXT NOT NULL,           -- openai | anthropic
    upstream_api  TEXT NOT NULL,
    model         TEXT NOT NULL DEFAULT '',
    stream        INTEGER NOT NULL DEFAULT 0,
    request_json  TEXT NOT NULL,           -- the client's body as received (before injection)
    response_text TEXT NOT NULL DEFAULT '',
    reasoning     TEXT NOT NULL DEFAULT '',
    tool_calls    TEXT NOT NULL DEFAULT '[]',
    stop_reason   TEXT NOT NULL DEFAULT '',
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    latency_ms    INTEGER NOT NULL DEFAULT 0,
    ttfb_ms       INTEGER NOT NULL DEFAULT 0,
    status        INTEGER NOT NULL,
    error         TEXT NOT NULL DEFAULT '',
    injected      TEXT NOT NULL DEFAULT '[]', -- ids of skills/memories injected
    injected_tokens INTEGER NOT NULL DEFAULT 0,
    user_id       TEXT NOT NULL DEFAULT '',
    workspace_id  TEXT NOT NULL DEFAULT '',
    memory_scope  TEXT NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL
);
CREATE INDEX turns_session ON turns(session_id, id);
CREATE INDEX turns_created ON turns(created_at);

-- Durable background work (ingest, evolve, judge, train): a crash loses nothing.
CREATE TABLE jobs (
    id          INTEGER PRIMARY KEY,
    kind        TEXT NOT NULL,
    payload     TEXT NOT NULL DEFAULT '{}',
    state       TEXT NOT NULL DEFAULT 'pending', -- pending | running | done | failed
    attempts    INTEGER NOT NULL DEFAULT 0,
    run_after   INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    last_error  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX jobs_ready ON jobs(state, run_after);

-- +goose Down
DROP TABLE jobs;
DROP TABLE turns;
DROP TABLE sessions;
