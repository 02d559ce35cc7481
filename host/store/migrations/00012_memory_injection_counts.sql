-- +goose Up
-- What the injection log (memory_injections) folds into: one narrow row per
-- unit that was injected since this table came, rather than the wide
-- memory_units row itself. A fold rewrote one memory_units page per unit
-- it folded; here a 10,000-unit library's counts fit in about 50 pages, and
-- a row is three integers to re-encode rather than every column of the
-- unit. A unit's count is memory_units.injected_count (what was folded
-- before this table, or what an import brought) plus its row here plus its
-- log rows not folded yet; its last injection is the latest of the three.
-- Owned by host/memory (injectlog.go); see docs/performance.md.
CREATE TABLE memory_injection_counts (
    unit INTEGER PRIMARY KEY, -- memory_units.id
    n    INTEGER NOT NULL,    -- injections folded here
    at   INTEGER NOT NULL     -- unix ms: the last of them
);
-- A deleted unit takes its count with it (its row id may be reused).
-- +goose StatementBegin
CREATE TRIGGER memory_units_ad_injection_counts AFTER DELETE ON memory_units BEGIN
    DELETE FROM memory_injection_counts WHERE unit = old.id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER memory_units_ad_injection_counts;
DROP TABLE memory_injection_counts;
