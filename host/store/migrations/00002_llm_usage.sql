-- +goose Up
-- Tokens the layer itself spends (skill evolver, memory extractor, judge),
-- shown in `metaclaw status` and the dashboard.
CREATE TABLE llm_usage (
    id            INTEGER PRIMARY KEY,
    purpose       TEXT NOT NULL,      -- evolver | extractor | judge | embedder | …
    model         TEXT NOT NULL DEFAULT '',
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    ok            INTEGER NOT NULL DEFAULT 1,
    created_at    INTEGER NOT NULL
);
CREATE INDEX llm_usage_purpose ON llm_usage(purpose, created_at);

-- +goose Down
DROP TABLE llm_usage;
