-- +goose Up
-- Which memory units were injected into the turns memory mined, appended in
-- the ingest transaction (one narrow row per unit and batch) instead of an
-- update of each unit's row, and folded into memory_units.injected_count /
-- last_injected_at in the transaction that deletes the folded rows. Reads of
-- the counts add the rows not folded yet. Owned by host/memory
-- (injectlog.go); see docs/performance.md.
CREATE TABLE memory_injections (
    id   INTEGER PRIMARY KEY,  -- append order
    unit INTEGER NOT NULL,     -- memory_units.id
    n    INTEGER NOT NULL,     -- turns of the batch it was injected into
    at   INTEGER NOT NULL      -- unix ms: the last of them
);
-- A deleted unit takes its unfolded rows with it (its row id may be reused).
-- +goose StatementBegin
CREATE TRIGGER memory_units_ad_injections AFTER DELETE ON memory_units BEGIN
    DELETE FROM memory_injections WHERE unit = old.id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER memory_units_ad_injections;
DROP TABLE memory_injections;
