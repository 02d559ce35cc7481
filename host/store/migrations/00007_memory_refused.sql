-- +goose Up
-- Memory candidates refused by the injection guard (host/safety.CheckMemory):
-- kept for review, never injected. One row per (scope, content); a repeat
-- bumps count and last_at.
CREATE TABLE memory_refused (
    id             INTEGER PRIMARY KEY,
    hash           TEXT NOT NULL UNIQUE,        -- sha256 of scope and content
    scope          TEXT NOT NULL,
    agent          TEXT NOT NULL DEFAULT '',
    type           TEXT NOT NULL DEFAULT '',
    content        TEXT NOT NULL,               -- redacted, at most 1000 bytes
    findings       TEXT NOT NULL DEFAULT '[]',  -- [{rule, detail}]
    origin         TEXT NOT NULL DEFAULT '',    -- heuristic | llm | summary | manual | tool | import | edit
    source_session TEXT NOT NULL DEFAULT '',
    source_turns   TEXT NOT NULL DEFAULT '[]',
    count          INTEGER NOT NULL DEFAULT 1,
    first_at       INTEGER NOT NULL,
    last_at        INTEGER NOT NULL
);
CREATE INDEX memory_refused_last ON memory_refused(last_at);

-- +goose Down
DROP TABLE memory_refused;
