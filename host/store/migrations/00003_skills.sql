-- +goose Up
-- Skills: the SKILL.md files under skills.dir are the source of truth; these
-- tables are their index (host/skills rebuilds them from the files at any time)
-- plus what the files cannot hold: version history, embeddings and the
-- evolver's progress per session.
CREATE TABLE skills (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    path        TEXT NOT NULL,                   -- the SKILL.md file
    description TEXT NOT NULL,
    category    TEXT NOT NULL DEFAULT 'general',
    tags        TEXT NOT NULL DEFAULT '',        -- space-separated (indexed for search)
    agents      TEXT NOT NULL DEFAULT '',        -- ",a,b," when scoped to some agents; '' = every agent
    status      TEXT NOT NULL DEFAULT 'active',  -- active | pending | disabled
    generation  INTEGER NOT NULL DEFAULT 1,
    source      TEXT NOT NULL DEFAULT '',
    body        TEXT NOT NULL DEFAULT '',
    hash        TEXT NOT NULL,                   -- sha256 of the file
    created_at  INTEGER NOT NULL DEFAULT 0,      -- unix milliseconds, from the frontmatter
    updated_at  INTEGER NOT NULL DEFAULT 0,
    indexed_at  INTEGER NOT NULL
);
CREATE INDEX skills_status ON skills(status);

-- BM25 over name, description, tags and body (external content: the text lives in skills).
CREATE VIRTUAL TABLE skills_fts USING fts5(
    name, description, tags, body,
    content = 'skills', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
-- +goose StatementBegin
CREATE TRIGGER skills_fts_ai AFTER INSERT ON skills BEGIN
    INSERT INTO skills_fts(rowid, name, description, tags, body) VALUES (new.id, new.name, new.description, new.tags, new.body);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER skills_fts_ad AFTER DELETE ON skills BEGIN
    INSERT INTO skills_fts(skills_fts, rowid, name, description, tags, body) VALUES ('delete', old.id, old.name, old.description, old.tags, old.body);
END;
-- +goose StatementEnd
-- +goose StatementBegin
CREATE TRIGGER skills_fts_au AFTER UPDATE ON skills BEGIN
    INSERT INTO skills_fts(skills_fts, rowid, name, description, tags, body) VALUES ('delete', old.id, old.name, old.description, old.tags, old.body);
    INSERT INTO skills_fts(rowid, name, description, tags, body) VALUES (new.id, new.name, new.description, new.tags, new.body);
END;
-- +goose StatementEnd

-- Every version of every skill ever seen, and every evolver decision.
CREATE TABLE skill_history (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL,
    generation  INTEGER NOT NULL DEFAULT 0,
    action      TEXT NOT NULL,   -- indexed | file-edit | created | updated | merged | proposed | approved | rejected | enabled | disabled | removed | imported | installed | edited
    source      TEXT NOT NULL DEFAULT '',   -- cli | evolver | bank | file | import
    session_id  TEXT NOT NULL DEFAULT '',
    reason      TEXT NOT NULL DEFAULT '',
    content     TEXT NOT NULL DEFAULT '',   -- the full SKILL.md of this version ('' for pure events)
    hash        TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL
);
CREATE INDEX skill_history_name ON skill_history(name, id);

-- Embeddings (embedding/hybrid retrieval): little-endian float32 blobs, exact scan.
CREATE TABLE skill_vectors (
    name       TEXT PRIMARY KEY,
    model      TEXT NOT NULL,
    hash       TEXT NOT NULL,   -- hash of the text the vector was computed from
    vec        BLOB NOT NULL,
    updated_at INTEGER NOT NULL
);

-- How far the evolver has read each session (runs every N turns and at session end).
CREATE TABLE skill_evolutions (
    session_id   TEXT PRIMARY KEY,
    last_turn_id INTEGER NOT NULL DEFAULT 0,
    runs         INTEGER NOT NULL DEFAULT 0,
    updated_at   INTEGER NOT NULL
);

-- +goose Down
DROP TABLE skill_evolutions;
DROP TABLE skill_vectors;
DROP TABLE skill_history;
DROP TRIGGER skills_fts_au;
DROP TRIGGER skills_fts_ad;
DROP TRIGGER skills_fts_ai;
DROP TABLE skills_fts;
DROP TABLE skills;
