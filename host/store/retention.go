package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"time"
)

// PruneOptions say what retention may delete.
type PruneOptions struct {
	// Before: turns, finished jobs and usage rows older than this may go.
	Before time.Time
	// KeepUnmined, when set, gives memory's read position: successful main
	// turns past it (not yet mined) are kept, however old. The composition
	// root sets it whenever memory learns from turns; nil: every turn
	// counts as mined.
	KeepUnmined PositionFunc
	// SideTurnsMined: memory also learns from side turns
	// (memory.ignore_turn_type), so KeepUnmined keeps those too.
	SideTurnsMined bool
	// DryRun counts what would be deleted and deletes nothing.
	DryRun bool
	// Batch bounds the rows deleted per statement, so the host's own writes
	// never wait long behind a prune (default 500).
	Batch int
}

// PruneReport says what a prune deleted (or would delete, on a dry run) and
// what it kept although it was old enough.
type PruneReport struct {
	Before    time.Time `json:"before"`
	DryRun    bool      `json:"dry_run"`
	Turns     int64     `json:"turns"`
	TurnBytes int64     `json:"turn_body_bytes"`
	Sessions  int64     `json:"sessions"`
	Jobs      int64     `json:"jobs"`
	// UsageRows is how many llm_usage rows were folded into daily rows.
	UsageRows int64 `json:"usage_rows_folded"`
	// Kept counts old turns kept because learning still needs them.
	KeptOpenSession int64 `json:"kept_open_session_turns"`
	KeptPendingJob  int64 `json:"kept_pending_job_turns"`
	KeptUnmined     int64 `json:"kept_unmined_turns"`
}

// Old turns stay while learning still needs them: their session is open (a
// session-end flush will read it), a pending or running job names their
// session (evolution, memory flush), or memory has not mined them yet.
const (
	sessionEnded    = `t.session_id IN (SELECT id FROM sessions WHERE ended_at IS NOT NULL)`
	noPendingJob    = `t.session_id NOT IN (SELECT json_extract(payload, '$.session_id') FROM jobs WHERE state IN ('pending', 'running') AND json_valid(payload) AND json_extract(payload, '$.session_id') IS NOT NULL)`
	minedByMemory   = `(t.status NOT BETWEEN 200 AND 299 OR t.id <= ? OR t.id <= COALESCE((SELECT c.last FROM read_cursors c WHERE c.session_id = t.session_id), 0))`
	prunableTurnSQL = `t.created_at < ? AND ` + sessionEnded + ` AND ` + noPendingJob
)

// Prune applies retention. Sample tables of RL training and everything
// memory and skills learned are never touched: only raw turns, sessions
// left without turns, finished jobs and per-call usage rows.
func (s *SQLite) Prune(ctx context.Context, o PruneOptions) (PruneReport, error) {
	rep := PruneReport{Before: o.Before, DryRun: o.DryRun}
	if o.Before.IsZero() {
		return rep, errors.New("prune: no cut-off time")
	}
	if o.Batch <= 0 {
		o.Batch = 500
	}
	before := ms(o.Before)
	pos := ReadPosition{Floor: math.MaxInt64} // without KeepUnmined every turn counts as mined
	if o.KeepUnmined != nil {
		var err error
		if pos, err = o.KeepUnmined(ctx); err != nil {
			return rep, fmt.Errorf("prune: memory's read position: %w", err)
		}
	}
	floor := pos.Floor
	cur, err := cursorsJSON(pos)
	if err != nil {
		return rep, err
	}
	mined := minedByMemory
	if !o.SideTurnsMined {
		mined = `(t.turn_type != 'main' OR ` + minedByMemory + `)`
	}
	cond := prunableTurnSQL + ` AND ` + mined
	if err := s.r.QueryRowContext(ctx, cursorsCTE+`SELECT COUNT(*), COALESCE(SUM(LENGTH(CAST(request_json AS BLOB)) + LENGTH(CAST(response_text AS BLOB)) + LENGTH(CAST(reasoning AS BLOB)) + LENGTH(CAST(tool_calls AS BLOB))), 0) FROM turns t WHERE `+cond, cur, before, floor).
		Scan(&rep.Turns, &rep.TurnBytes); err != nil {
		return rep, fmt.Errorf("prune: count turns: %w", err)
	}
	if err := s.countKept(ctx, &rep, mined, cur, before, floor); err != nil {
		return rep, err
	}
	if o.DryRun {
		err := s.r.QueryRowContext(ctx, `SELECT
    (SELECT COUNT(*) FROM jobs WHERE state IN ('done', 'failed') AND updated_at < ?),
    (SELECT COALESCE(SUM(n), 0) FROM (SELECT COUNT(*) AS n FROM llm_usage WHERE created_at < ? GROUP BY purpose, model, ok, created_at / 86400000 HAVING COUNT(*) > 1))`,
			before, before).Scan(&rep.Jobs, &rep.UsageRows)
		if err != nil {
			return rep, fmt.Errorf("prune: count jobs: %w", err)
		}
		return rep, nil
	}
	rep.Turns = 0
	for {
		res, err := s.w.ExecContext(ctx, cursorsCTE+`DELETE FROM turns WHERE id IN (SELECT t.id FROM turns t WHERE `+cond+` ORDER BY t.id LIMIT ?)`, cur, before, floor, o.Batch)
		if err != nil {
			return rep, fmt.Errorf("prune turns: %w", err)
		}
		n, _ := res.RowsAffected()
		rep.Turns += n
		if n < int64(o.Batch) {
			break
		}
		if err := ctx.Err(); err != nil {
			return rep, err
		}
	}
	res, err := s.w.ExecContext(ctx, `DELETE FROM sessions WHERE ended_at IS NOT NULL AND last_at < ?
AND NOT EXISTS (SELECT 1 FROM turns WHERE turns.session_id = sessions.id)
AND id NOT IN (SELECT json_extract(payload, '$.session_id') FROM jobs WHERE state IN ('pending', 'running') AND json_valid(payload) AND json_extract(payload, '$.session_id') IS NOT NULL)`, before)
	if err != nil {
		return rep, fmt.Errorf("prune sessions: %w", err)
	}
	rep.Sessions, _ = res.RowsAffected()
	for {
		res, err := s.w.ExecContext(ctx, `DELETE FROM jobs WHERE id IN (SELECT id FROM jobs WHERE state IN ('done', 'failed') AND updated_at < ? LIMIT ?)`, before, o.Batch)
		if err != nil {
			return rep, fmt.Errorf("prune jobs: %w", err)
		}
		n, _ := res.RowsAffected()
		rep.Jobs += n
		if n < int64(o.Batch) {
			break
		}
	}
	if rep.UsageRows, err = s.foldUsage(ctx, before); err != nil {
		return rep, err
	}
	return rep, nil
}

func (s *SQLite) countKept(ctx context.Context, rep *PruneReport, mined, cur string, before, floor int64) error {
	err := s.r.QueryRowContext(ctx, `SELECT
    (SELECT COUNT(*) FROM turns t WHERE t.created_at < ? AND NOT `+sessionEnded+`),
    (SELECT COUNT(*) FROM turns t WHERE t.created_at < ? AND `+sessionEnded+` AND NOT `+noPendingJob+`)`, before, before).
		Scan(&rep.KeptOpenSession, &rep.KeptPendingJob)
	if err != nil {
		return fmt.Errorf("prune: count kept turns: %w", err)
	}
	if err := s.r.QueryRowContext(ctx, cursorsCTE+`SELECT COUNT(*) FROM turns t WHERE `+prunableTurnSQL+` AND NOT `+mined, cur, before, floor).
		Scan(&rep.KeptUnmined); err != nil {
		return fmt.Errorf("prune: count unmined turns: %w", err)
	}
	return nil
}

// foldUsage replaces the llm_usage rows of each old day (per purpose, model
// and outcome) by one row that carries their sums, in one transaction.
func (s *SQLite) foldUsage(ctx context.Context, before int64) (int64, error) {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("fold usage: %w", err)
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT purpose, model, ok, created_at / 86400000, COUNT(*), SUM(calls), SUM(input_tokens), SUM(output_tokens)
FROM llm_usage WHERE created_at < ? GROUP BY purpose, model, ok, created_at / 86400000 HAVING COUNT(*) > 1`, before)
	if err != nil {
		return 0, fmt.Errorf("fold usage: %w", err)
	}
	type group struct {
		purpose, model          string
		ok                      bool
		day, n, calls, in, outp int64
	}
	var groups []group
	for rows.Next() {
		var g group
		if err := rows.Scan(&g.purpose, &g.model, &g.ok, &g.day, &g.n, &g.calls, &g.in, &g.outp); err != nil {
			rows.Close()
			return 0, fmt.Errorf("fold usage: %w", err)
		}
		groups = append(groups, g)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("fold usage: %w", err)
	}
	var folded int64
	for _, g := range groups {
		start, end := g.day*86400000, min((g.day+1)*86400000, before)
		res, err := tx.ExecContext(ctx, `DELETE FROM llm_usage WHERE purpose = ? AND model = ? AND ok = ? AND created_at >= ? AND created_at < ?`, g.purpose, g.model, g.ok, start, end)
		if err != nil {
			return 0, fmt.Errorf("fold usage: %w", err)
		}
		n, _ := res.RowsAffected()
		folded += n
		if _, err := tx.ExecContext(ctx, `INSERT INTO llm_usage (purpose, model, input_tokens, output_tokens, ok, created_at, calls) VALUES (?, ?, ?, ?, ?, ?, ?)`,
			g.purpose, g.model, g.in, g.outp, g.ok, start, g.calls); err != nil {
			return 0, fmt.Errorf("fold usage: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("fold usage: commit: %w", err)
	}
	return folded, nil
}

// IncrementalVacuum returns up to maxPages free pages to the file system, a
// step at a time so the host's writes interleave, and truncates the WAL. It
// does nothing on a database created before incremental auto-vacuum (see
// Vacuum). It returns the pages freed.
func (s *SQLite) IncrementalVacuum(ctx context.Context, maxPages int64) (int64, error) {
	mode, err := s.pragmaInt(ctx, "auto_vacuum")
	if err != nil || mode != 2 {
		return 0, err
	}
	const step = 1024
	var freed int64
	for freed < maxPages {
		freeBefore, err := s.pragmaInt(ctx, "freelist_count")
		if err != nil {
			return freed, err
		}
		if freeBefore == 0 {
			break
		}
		n := min(step, maxPages-freed)
		if _, err := s.w.ExecContext(ctx, "PRAGMA incremental_vacuum("+strconv.FormatInt(n, 10)+")"); err != nil {
			return freed, fmt.Errorf("incremental vacuum: %w", err)
		}
		freeAfter, err := s.pragmaInt(ctx, "freelist_count")
		if err != nil {
			return freed, err
		}
		if freeAfter >= freeBefore {
			break
		}
		freed += freeBefore - freeAfter
	}
	return freed, s.checkpoint(ctx)
}

// Vacuum rebuilds the whole file. It also switches a database created
// before incremental auto-vacuum to it. It needs free disk space about the
// size of the database and holds the write lock while it runs.
func (s *SQLite) Vacuum(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, "PRAGMA auto_vacuum = INCREMENTAL"); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	if _, err := s.w.ExecContext(ctx, "VACUUM"); err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	return s.checkpoint(ctx)
}

// checkpointPatience bounds how long checkpoint retries a busy TRUNCATE;
// the waits between tries double from 10 ms up to 500 ms.
const checkpointPatience = 30 * time.Second

// checkpointBusy is called after each busy try (tests use it to release the
// reader that holds the log).
var checkpointBusy = func(try int) {}

// checkpoint copies the WAL into the database file and truncates it; the
// file only shrinks after a vacuum once its pages are checkpointed. A reader
// or the background checkpointer can keep it from finishing: SQLite then
// answers busy rather than an error, so it is retried, backing off, and
// reported as an error if it never completes.
func (s *SQLite) checkpoint(ctx context.Context) error {
	start := time.Now()
	wait := 10 * time.Millisecond
	for try := 1; ; try++ {
		var busy, logPages, copied int64
		if err := s.w.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logPages, &copied); err != nil {
			return fmt.Errorf("checkpoint: %w", err)
		}
		if busy == 0 {
			return nil
		}
		checkpointBusy(try)
		if time.Since(start) > checkpointPatience {
			return fmt.Errorf("checkpoint: the log stayed busy for %d tries (a reader held it); the file shrinks at the next checkpoint", try)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("checkpoint: %w", ctx.Err())
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// FreePages reports the database's free pages and whether it is in
// incremental auto-vacuum mode (else only Vacuum returns them).
func (s *SQLite) FreePages(ctx context.Context) (free int64, incremental bool, err error) {
	mode, err := s.pragmaInt(ctx, "auto_vacuum")
	if err != nil {
		return 0, false, err
	}
	free, err = s.pragmaInt(ctx, "freelist_count")
	return free, mode == 2, err
}

func (s *SQLite) pragmaInt(ctx context.Context, name string) (int64, error) {
	var v int64
	if err := s.w.QueryRowContext(ctx, "PRAGMA "+name).Scan(&v); err != nil {
		return 0, fmt.Errorf("pragma %s: %w", name, err)
	}
	return v, nil
}

// Stats describes the database file and its tables (`metaclaw store stats`).
type Stats struct {
	Path       string           `json:"path"`
	FileBytes  int64            `json:"file_bytes"`
	WALBytes   int64            `json:"wal_bytes"`
	PageSize   int64            `json:"page_size"`
	Pages      int64            `json:"pages"`
	FreePages  int64            `json:"free_pages"`
	AutoVacuum string           `json:"auto_vacuum"` // none | full | incremental
	Rows       map[string]int64 `json:"rows"`
	// TurnBodyBytes sums the stored request and answer bodies.
	TurnBodyBytes int64            `json:"turn_body_bytes"`
	OldestTurn    *time.Time       `json:"oldest_turn,omitempty"`
	NewestTurn    *time.Time       `json:"newest_turn,omitempty"`
	JobStates     map[string]int64 `json:"jobs_by_state"`
}

// Stats implements `metaclaw store stats`. path is the database file.
func (s *SQLite) Stats(ctx context.Context, path string) (Stats, error) {
	st := Stats{Path: path, Rows: map[string]int64{}, JobStates: map[string]int64{}}
	if fi, err := os.Stat(path); err == nil {
		st.FileBytes = fi.Size()
	}
	if fi, err := os.Stat(path + "-wal"); err == nil {
		st.WALBytes = fi.Size()
	}
	var err error
	var mode int64
	for _, p := range []struct {
		name string
		v    *int64
	}{{"page_size", &st.PageSize}, {"page_count", &st.Pages}, {"freelist_count", &st.FreePages}, {"auto_vacuum", &mode}} {
		if *p.v, err = s.pragmaInt(ctx, p.name); err != nil {
			return st, err
		}
	}
	st.AutoVacuum = [...]string{"none", "full", "incremental"}[min(max(mode, 0), 2)]
	names, err := s.tableNames(ctx)
	if err != nil {
		return st, err
	}
	for _, name := range names {
		var n int64
		if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM "`+name+`"`).Scan(&n); err != nil {
			return st, fmt.Errorf("store stats: %s: %w", name, err)
		}
		st.Rows[name] = n
	}
	var oldest, newest sql.NullInt64
	if err := s.r.QueryRowContext(ctx, `SELECT COALESCE(SUM(LENGTH(CAST(request_json AS BLOB)) + LENGTH(CAST(response_text AS BLOB)) + LENGTH(CAST(reasoning AS BLOB)) + LENGTH(CAST(tool_calls AS BLOB))), 0),
    MIN(created_at), MAX(created_at) FROM turns`).Scan(&st.TurnBodyBytes, &oldest, &newest); err != nil {
		return st, fmt.Errorf("store stats: turns: %w", err)
	}
	if oldest.Valid {
		o, n := time.UnixMilli(oldest.Int64), time.UnixMilli(newest.Int64)
		st.OldestTurn, st.NewestTurn = &o, &n
	}
	rows, err := s.r.QueryContext(ctx, `SELECT state, COUNT(*) FROM jobs GROUP BY state`)
	if err != nil {
		return st, fmt.Errorf("store stats: jobs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var state string
		var n int64
		if err := rows.Scan(&state, &n); err != nil {
			return st, fmt.Errorf("store stats: jobs: %w", err)
		}
		st.JobStates[state] = n
	}
	return st, rows.Err()
}

// tableNames lists the ordinary tables (not FTS shadow tables or SQLite's own).
func (s *SQLite) tableNames(ctx context.Context) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE 'goose_%'
AND name NOT LIKE '%_fts_%' AND sql NOT LIKE 'CREATE VIRTUAL%' ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("store stats: tables: %w", err)
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, fmt.Errorf("store stats: tables: %w", err)
		}
		names = append(names, n)
	}
	return names, rows.Err()
}
