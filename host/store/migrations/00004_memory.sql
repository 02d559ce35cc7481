-- +goose Up
-- Memory: what the user said (facts, preferences, rules, project state,
-- episodes, session summaries), learned from recorded turns. Owned by
-- host/memory; see docs/memory.md.

-- One memory unit. Superseded units are kept (status 'superseded',
-- superseded_by) and never injected; only an explicit forget deletes a row,
-- and it writes a memory_events row first.
CREATE TABLE memory_units (
    id               INTEGER PRIMARY KEY,       -- rowid, also the FTS rowid
    uid              TEXT NOT NULL UNIQUE,      -- public id, "mem_<hex>"
    scope            TEXT NOT NULL,             -- core.Scope.Key() of the source turn
    agent            TEXT NOT NULL DEFAULT '',  -- '' = shared by every agent of the scope; else private to that agent
    vis              TEXT NOT NULL,             -- token naming (scope, agent), used to filter the FTS index
    type             TEXT NOT NULL,             -- episodic | semantic | preference | project_state | working_summary
    content          TEXT NOT NULL,
    subject          TEXT NOT NULL DEFAULT '',  -- slot key ("pref:indentation"); same subject + other value = contradiction
    value            TEXT NOT NULL DEFAULT '',  -- normalised value for the slot
    entities         TEXT NOT NULL DEFAULT '[]',
    tags             TEXT NOT NULL DEFAULT '[]',
    importance       REAL NOT NULL DEFAULT 0.5,
    confidence       REAL NOT NULL DEFAULT 0.7,
    mentions         INTEGER NOT NULL DEFAULT 1, -- times stated or merged in
    status           TEXT NOT NULL DEFAULT 'active', -- active | superseded
    superseded_by    TEXT NOT NULL DEFAULT '',
    origin           TEXT NOT NULL DEFAULT '',  -- heuristic | llm | summary | manual | import | remote
    source_session   TEXT NOT NULL DEFAULT '',
    source_turns     TEXT NOT NULL DEFAULT '[]', -- turn ids (or buffer positions) it came from
    tokens           INTEGER NOT NULL DEFAULT 0, -- size of the rendered line
    said_at          INTEGER NOT NULL,          -- unix ms: first stated
    last_seen_at     INTEGER NOT NULL,          -- last stated or reinforced (decay is computed from it at read time)
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    expires_at       INTEGER NOT NULL DEFAULT 0, -- 0 = never
    injected_count   INTEGER NOT NULL DEFAULT 0, -- from the turns' injected ids, counted at ingestion
    last_injected_at INTEGER NOT NULL DEFAULT 0,
    embedding        BLOB                        -- float32 LE, unit length; NULL without memory.use_embeddings
);
CREATE INDEX memory_units_vis ON memory_units(vis, status, type, importance);
CREATE INDEX memory_units_subject ON memory_units(vis, subject) WHERE subject != '';
CREATE INDEX memory_units_scope ON memory_units(scope, status, id);

-- Lexical index of the active units (rowid = memory_units.id). terms holds
-- host/memory.Terms of the content, entities and tags, each prefixed with the
-- unit's visibility key, so bm25() statistics are per scope; vis the token.
CREATE VIRTUAL TABLE memory_fts USING fts5(terms, vis, tokenize = 'unicode61 remove_diacritics 0');

-- Document frequency of each indexed token over the active units ('#<vis key>'
-- = the units of one visibility, '#' = all), so a query can skip very common
-- terms before it reaches FTS5.
CREATE TABLE memory_terms (
    term TEXT PRIMARY KEY,
    df   INTEGER NOT NULL
) WITHOUT ROWID;

-- Audit: created, reinforced (with the merged wording), superseded, edited,
-- forgotten (no content), imported.
CREATE TABLE memory_events (
    id       INTEGER PRIMARY KEY,
    unit_uid TEXT NOT NULL,
    scope    TEXT NOT NULL DEFAULT '',
    action   TEXT NOT NULL,
    detail   TEXT NOT NULL DEFAULT '{}',
    at       INTEGER NOT NULL
);
CREATE INDEX memory_events_unit ON memory_events(unit_uid, id);

-- Per-session ingestion cursor: turns with a larger id are pending.
CREATE TABLE memory_cursors (
    session_id         TEXT PRIMARY KEY,
    last_turn_id       INTEGER NOT NULL DEFAULT 0,
    summarized_turn_id INTEGER NOT NULL DEFAULT 0,
    updated_at         INTEGER NOT NULL
);

-- Every ingested turn's source key: a turn is mined at most once, also when
-- a remote host (memory.sidecar_url) resends after a crash.
CREATE TABLE memory_sources (
    source TEXT PRIMARY KEY,
    at     INTEGER NOT NULL
) WITHOUT ROWID;

-- Turns posted to /v1/memory/buffer_turn (MetaClaw's incremental API) until flushed.
CREATE TABLE memory_buffer (
    id            INTEGER PRIMARY KEY,
    session_id    TEXT NOT NULL,
    scope         TEXT NOT NULL,
    agent         TEXT NOT NULL DEFAULT '',
    prompt_text   TEXT NOT NULL,
    response_text TEXT NOT NULL DEFAULT '',
    at            INTEGER NOT NULL
);
CREATE INDEX memory_buffer_session ON memory_buffer(session_id, id);

CREATE TABLE memory_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;
-- Turns recorded before memory existed are not mined (no surprise back-fill).
INSERT INTO memory_meta (key, value) SELECT 'baseline_turn_id', CAST(COALESCE(MAX(id), 0) AS TEXT) FROM turns;
INSERT INTO memory_meta (key, value) VALUES ('generation', '0');

-- +goose Down
DROP TABLE memory_meta;
DROP TABLE memory_buffer;
DROP TABLE memory_sources;
DROP TABLE memory_cursors;
DROP TABLE memory_events;
DROP TABLE memory_terms;
DROP TABLE memory_fts;
DROP TABLE memory_units;
