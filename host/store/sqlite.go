package store

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pressly/goose/v3"
	"modernc.org/sqlite" // pure Go, no cgo
)

//go:embed migrations/*.sql
var migrations embed.FS

// DBFile is the store's file name inside $METACLAW_HOME.
const DBFile = "metaclaw.db"

// SQLite is the Store on one SQLite file in WAL mode. Writes go through a
// single connection (SQLite allows one writer; queuing in Go avoids
// SQLITE_BUSY), reads through a small pool.
type SQLite struct {
	w *sql.DB
	r *sql.DB

	path     string
	stopCkpt func()
}

var _ Store = (*SQLite)(nil)

// readers is the size of the read pool.
const readers = 4

// OpenSQLite opens (creating if needed) the database at path and migrates it.
func OpenSQLite(ctx context.Context, path string) (*SQLite, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create store dir: %w", err)
	}
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() +
		"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_pragma=foreign_keys(ON)&_txlock=immediate"
	// Commits do not checkpoint (an answer waiting for its turn's commit
	// would pay for copying the whole log): a background checkpointer does.
	// Only the writer sets auto_vacuum (before migrate creates the tables):
	// setting it is a write transaction, so a reader connection opened
	// while a write transaction is open would wait for it up to
	// busy_timeout — forever, to 10 s, when that transaction is the one
	// waiting for the read.
	w, err := openPool(dsn + "&_pragma=auto_vacuum(INCREMENTAL)&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	r, err := openPool(dsn)
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	r.SetMaxOpenConns(readers)
	r.SetMaxIdleConns(readers) // kept open: a new one costs its pragmas and its prepared statements
	s := &SQLite{w: w, r: r, path: path}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, err
	}
	s.stopCkpt = s.checkpointer()
	// The database holds conversations: keep it private.
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		if _, err := os.Stat(p); err == nil {
			_ = os.Chmod(p, 0o600)
		}
	}
	return s, nil
}

// openPool opens a pool on dsn whose connections keep their prepared
// statements (stmtcache.go).
func openPool(dsn string) (*sql.DB, error) {
	c, err := sqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(cachingConnector{Connector: c, size: stmtCacheSize}), nil
}

func (s *SQLite) migrate(ctx context.Context) error {
	sub, err := fs.Sub(migrations, "migrations")
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectSQLite3, s.w, sub)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate store: %w", err)
	}
	return nil
}

// Close stops the checkpointer and closes both pools.
func (s *SQLite) Close() error {
	if s.stopCkpt != nil {
		s.stopCkpt()
	}
	return errors.Join(s.w.Close(), s.r.Close())
}

func ms(t time.Time) int64 { return t.UnixMilli() }

// RecordTurns implements Store.
func (s *SQLite) RecordTurns(ctx context.Context, turns []*Turn) error {
	if len(turns) == 0 {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("record turns: %w", err)
	}
	// Once begun, the batch runs to its commit: the turns are journaled
	// already, so finishing is never wrong, and no goroutine watches for a
	// cancellation (connTx).
	err := s.connTx(ctx, func(ctx context.Context, tx *sql.Conn) error {
		return recordTurns(ctx, tx, turns)
	})
	if err != nil {
		return fmt.Errorf("record turns: %w", err)
	}
	return nil
}

// recordTurns is RecordTurns' transaction: one upsert per session of the
// batch (its counters advance by the batch's turns at once, and the turns'
// indices are counted back from the new totals), then one insert per turn.
func recordTurns(ctx context.Context, tx *sql.Conn, turns []*Turn) error {
	upsert, err := tx.PrepareContext(ctx, `
INSERT INTO sessions (id, agent, scope, started_at, last_at, main_turns, side_turns)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(id) DO UPDATE SET
    last_at = MAX(last_at, excluded.last_at),
    ended_at = NULL, end_reason = NULL,
    main_turns = main_turns + excluded.main_turns,
    side_turns = side_turns + excluded.side_turns
RETURNING main_turns, side_turns`)
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	defer upsert.Close()
	ins, err := tx.PrepareContext(ctx, `
INSERT INTO turns (session_id, agent, turn_index, turn_type, client_api, upstream_api, model, stream,
    request_json, response_text, reasoning, tool_calls, stop_reason, input_tokens, output_tokens,
    latency_ms, ttfb_ms, status, error, injected, injected_tokens, user_id, workspace_id, memory_scope, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	defer ins.Close()
	for _, g := range groupBySession(turns) {
		var mainN, sideN int
		if err := upsert.QueryRowContext(ctx, g.first.SessionID, g.first.Agent, g.first.MemoryScope, ms(g.first.CreatedAt), ms(g.last),
			g.main, g.side).Scan(&mainN, &sideN); err != nil {
			return fmt.Errorf("session %s: %w", g.first.SessionID, err)
		}
		mainN, sideN = mainN-g.main, sideN-g.side // the counts before the batch
		for _, t := range turns[g.from:] {
			if t.SessionID != g.first.SessionID {
				continue
			}
			if t.TurnType == "side" {
				sideN++
				t.TurnIndex = sideN
			} else {
				mainN++
				t.TurnIndex = mainN
			}
		}
	}
	for _, t := range turns {
		res, err := ins.ExecContext(ctx, t.SessionID, t.Agent, t.TurnIndex, t.TurnType, t.ClientAPI, t.UpstreamAPI, t.Model, t.Stream,
			t.RequestJSON, t.ResponseText, t.Reasoning, nonEmpty(t.ToolCallsJSON, "[]"), t.StopReason, t.InputTokens, t.OutputTokens,
			t.LatencyMS, t.TTFBMS, t.Status, t.Error, nonEmpty(t.InjectedJSON, "[]"), t.InjectedTokens, t.UserID, t.WorkspaceID, t.MemoryScope, ms(t.CreatedAt))
		if err != nil {
			return fmt.Errorf("insert: %w", err)
		}
		t.ID, _ = res.LastInsertId()
	}
	return nil
}

// sessionBatch is one session's share of a batch of turns.
type sessionBatch struct {
	first      *Turn     // its first turn: the session's agent, scope and start when new
	from       int       // the first turn's position in the batch
	last       time.Time // its latest turn
	main, side int       // its turns by type
}

// groupBySession sets missing creation times and sums the batch by
// session, in order of first appearance.
func groupBySession(turns []*Turn) []sessionBatch {
	var out []sessionBatch
	for i, t := range turns {
		if t.CreatedAt.IsZero() {
			t.CreatedAt = time.Now()
		}
		k := slices.IndexFunc(out, func(g sessionBatch) bool { return g.first.SessionID == t.SessionID })
		if k < 0 {
			out = append(out, sessionBatch{first: t, from: i, last: t.CreatedAt})
			k = len(out) - 1
		}
		g := &out[k]
		if t.CreatedAt.After(g.last) {
			g.last = t.CreatedAt
		}
		if t.TurnType == "side" {
			g.side++
		} else {
			g.main++
		}
	}
	return out
}

func nonEmpty(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// EndSession implements Store.
func (s *SQLite) EndSession(ctx context.Context, id, reason string, at time.Time, jobs ...NewJob) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("end session %s: %w", id, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL`, ms(at), reason, id); err != nil {
		return fmt.Errorf("end session %s: %w", id, err)
	}
	for _, j := range jobs {
		if _, err := enqueueJob(ctx, tx, j.Kind, j.Payload, j.RunAfter); err != nil {
			return fmt.Errorf("end session %s: %w", id, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("end session %s: commit: %w", id, err)
	}
	return nil
}

// Session implements Store.
func (s *SQLite) Session(ctx context.Context, id string) (Session, error) {
	var out Session
	var started, last int64
	var ended sql.NullInt64
	var reason sql.NullString
	err := s.r.QueryRowContext(ctx, `SELECT id, agent, scope, started_at, last_at, ended_at, end_reason, main_turns, side_turns FROM sessions WHERE id = ?`, id).
		Scan(&out.ID, &out.Agent, &out.Scope, &started, &last, &ended, &reason, &out.MainTurns, &out.SideTurns)
	if errors.Is(err, sql.ErrNoRows) {
		return out, fmt.Errorf("session %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return out, fmt.Errorf("session %s: %w", id, err)
	}
	out.StartedAt, out.LastAt = time.UnixMilli(started), time.UnixMilli(last)
	if ended.Valid {
		t := time.UnixMilli(ended.Int64)
		out.EndedAt = &t
	}
	out.EndReason = reason.String
	return out, nil
}

// SessionTurns implements Store.
func (s *SQLite) SessionTurns(ctx context.Context, sessionID string) ([]Turn, error) {
	rows, err := s.r.QueryContext(ctx, `
SELECT id, session_id, agent, turn_index, turn_type, client_api, upstream_api, model, stream, request_json, response_text,
       reasoning, tool_calls, stop_reason, input_tokens, output_tokens, latency_ms, ttfb_ms, status, error, injected,
       injected_tokens, user_id, workspace_id, memory_scope, created_at
FROM turns WHERE session_id = ? ORDER BY id`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("session turns %s: %w", sessionID, err)
	}
	defer rows.Close()
	var out []Turn
	for rows.Next() {
		var t Turn
		var created int64
		if err := rows.Scan(&t.ID, &t.SessionID, &t.Agent, &t.TurnIndex, &t.TurnType, &t.ClientAPI, &t.UpstreamAPI, &t.Model, &t.Stream,
			&t.RequestJSON, &t.ResponseText, &t.Reasoning, &t.ToolCallsJSON, &t.StopReason, &t.InputTokens, &t.OutputTokens,
			&t.LatencyMS, &t.TTFBMS, &t.Status, &t.Error, &t.InjectedJSON, &t.InjectedTokens, &t.UserID, &t.WorkspaceID,
			&t.MemoryScope, &created); err != nil {
			return nil, fmt.Errorf("session turns %s: %w", sessionID, err)
		}
		t.CreatedAt = time.UnixMilli(created)
		out = append(out, t)
	}
	return out, rows.Err()
}

// IdleSessions implements Store.
func (s *SQLite) IdleSessions(ctx context.Context, before time.Time) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id FROM sessions WHERE ended_at IS NULL AND last_at < ? ORDER BY last_at LIMIT 1000`, ms(before))
	if err != nil {
		return nil, fmt.Errorf("idle sessions: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("idle sessions: %w", err)
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// Counts implements Store.
func (s *SQLite) Counts(ctx context.Context) (Counts, error) {
	var c Counts
	err := s.r.QueryRowContext(ctx, `SELECT
    (SELECT COUNT(*) FROM turns),
    (SELECT COALESCE(SUM(injected_tokens), 0) FROM turns),
    (SELECT COUNT(*) FROM sessions),
    (SELECT COUNT(*) FROM sessions WHERE ended_at IS NULL),
    (SELECT COUNT(*) FROM jobs WHERE state IN ('pending', 'running')),
    (SELECT COUNT(*) FROM jobs WHERE state = 'failed')`).
		Scan(&c.Turns, &c.InjectedTokens, &c.Sessions, &c.OpenSessions, &c.PendingJobs, &c.FailedJobs)
	if err != nil {
		return c, fmt.Errorf("counts: %w", err)
	}
	return c, nil
}

// ActiveJobs counts the durable jobs pending or running: with the core's
// transient ones, the work a learner has still to do.
func (s *SQLite) ActiveJobs(ctx context.Context) (int, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM jobs WHERE state IN ('pending', 'running')`).Scan(&n); err != nil {
		return 0, fmt.Errorf("active jobs: %w", err)
	}
	return n, nil
}

// EnqueueJob implements Store.
func (s *SQLite) EnqueueJob(ctx context.Context, kind, payload string, runAfter time.Time) (int64, error) {
	return enqueueJob(ctx, s.w, kind, payload, runAfter)
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

func enqueueJob(ctx context.Context, x execer, kind, payload string, runAfter time.Time) (int64, error) {
	now := time.Now()
	if runAfter.IsZero() {
		runAfter = now
	}
	res, err := x.ExecContext(ctx, `INSERT INTO jobs (kind, payload, run_after, created_at, updated_at) VALUES (?, ?, ?, ?, ?)`,
		kind, nonEmpty(payload, "{}"), ms(runAfter), ms(now), ms(now))
	if err != nil {
		return 0, fmt.Errorf("enqueue %s job: %w", kind, err)
	}
	return res.LastInsertId()
}

// ClaimJob implements Store.
func (s *SQLite) ClaimJob(ctx context.Context, kinds []string, now time.Time) (Job, error) {
	var j Job
	if len(kinds) == 0 {
		return j, ErrNotFound
	}
	args := make([]any, 0, len(kinds)+2)
	args = append(args, ms(now))
	for _, k := range kinds {
		args = append(args, k)
	}
	args = append(args, ms(now))
	ready := `SELECT id FROM jobs WHERE state = 'pending' AND kind IN (?` + strings.Repeat(",?", len(kinds)-1) + `) AND run_after <= ? ORDER BY run_after, id LIMIT 1`
	// A worker claims again after every job, and nothing is ready most
	// times: the reader answers that without taking the single writer (an
	// enqueue after this look wakes the worker, which looks again).
	var id int64
	if err := s.r.QueryRowContext(ctx, ready, args[1:]...).Scan(&id); errors.Is(err, sql.ErrNoRows) {
		return j, ErrNotFound
	} else if err != nil {
		return j, fmt.Errorf("claim job: %w", err)
	}
	var runAfter int64
	err := s.w.QueryRowContext(ctx, `
UPDATE jobs SET state = 'running', attempts = attempts + 1, updated_at = ?
WHERE id = (`+ready+`)
RETURNING id, kind, payload, state, attempts, run_after, last_error`, args...).
		Scan(&j.ID, &j.Kind, &j.Payload, &j.State, &j.Attempts, &runAfter, &j.LastError)
	if errors.Is(err, sql.ErrNoRows) {
		return j, ErrNotFound
	}
	if err != nil {
		return j, fmt.Errorf("claim job: %w", err)
	}
	j.RunAfter = time.UnixMilli(runAfter)
	return j, nil
}

// FinishJob implements Store.
func (s *SQLite) FinishJob(ctx context.Context, id int64) error {
	if _, err := s.w.ExecContext(ctx, `UPDATE jobs SET state = 'done', updated_at = ? WHERE id = ?`, ms(time.Now()), id); err != nil {
		return fmt.Errorf("finish job %d: %w", id, err)
	}
	return nil
}

// FailJob implements Store.
func (s *SQLite) FailJob(ctx context.Context, id int64, errText string, retryAt time.Time) error {
	state, after := "failed", int64(0)
	if !retryAt.IsZero() {
		state, after = "pending", ms(retryAt)
	}
	_, err := s.w.ExecContext(ctx, `UPDATE jobs SET state = ?, last_error = ?, run_after = CASE WHEN ? > 0 THEN ? ELSE run_after END, updated_at = ? WHERE id = ?`,
		state, errText, after, after, ms(time.Now()), id)
	if err != nil {
		return fmt.Errorf("fail job %d: %w", id, err)
	}
	return nil
}

// RequeueRunning implements Store.
func (s *SQLite) RequeueRunning(ctx context.Context) (int, error) {
	res, err := s.w.ExecContext(ctx, `UPDATE jobs SET state = 'pending', updated_at = ? WHERE state = 'running'`, ms(time.Now()))
	if err != nil {
		return 0, fmt.Errorf("requeue jobs: %w", err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// RequeueJob implements Store.
func (s *SQLite) RequeueJob(ctx context.Context, id int64) error {
	if _, err := s.w.ExecContext(ctx, `UPDATE jobs SET state = 'pending', attempts = MAX(attempts - 1, 0), updated_at = ? WHERE id = ? AND state = 'running'`, ms(time.Now()), id); err != nil {
		return fmt.Errorf("requeue job %d: %w", id, err)
	}
	return nil
}

// RecordUsage implements Store.
func (s *SQLite) RecordUsage(ctx context.Context, u Usage) error {
	if u.At.IsZero() {
		u.At = time.Now()
	}
	_, err := s.w.ExecContext(ctx, `INSERT INTO llm_usage (purpose, model, input_tokens, output_tokens, ok, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
		u.Purpose, u.Model, u.InputTokens, u.OutputTokens, u.OK, ms(u.At))
	if err != nil {
		return fmt.Errorf("record %s usage: %w", u.Purpose, err)
	}
	return nil
}

// UsageByPurpose implements Store.
func (s *SQLite) UsageByPurpose(ctx context.Context) (map[string]UsageTotal, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT purpose, SUM(calls), SUM(CASE WHEN ok THEN 0 ELSE calls END), SUM(input_tokens), SUM(output_tokens) FROM llm_usage GROUP BY purpose`)
	if err != nil {
		return nil, fmt.Errorf("usage: %w", err)
	}
	defer rows.Close()
	out := map[string]UsageTotal{}
	for rows.Next() {
		var p string
		var u UsageTotal
		if err := rows.Scan(&p, &u.Calls, &u.Failed, &u.InputTokens, &u.OutputTokens); err != nil {
			return nil, fmt.Errorf("usage: %w", err)
		}
		out[p] = u
	}
	return out, rows.Err()
}

// Writer is the single-connection pool for writes. Packages that own tables
// (skills, memory) use it with their own migrations in this package's
// migrations folder, so one file holds the whole schema.
func (s *SQLite) Writer() *sql.DB { return s.w }

// Reader is the read pool.
func (s *SQLite) Reader() *sql.DB { return s.r }

// RecentTurns implements Store.
func (s *SQLite) RecentTurns(ctx context.Context, limit int) ([]TurnSummary, error) {
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	rows, err := s.r.QueryContext(ctx, `SELECT id, created_at, agent, session_id, turn_index, turn_type, model, status, latency_ms,
       input_tokens, output_tokens, injected, injected_tokens FROM turns ORDER BY id DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("recent turns: %w", err)
	}
	defer rows.Close()
	var out []TurnSummary
	for rows.Next() {
		var t TurnSummary
		var at int64
		var injected string
		if err := rows.Scan(&t.ID, &at, &t.Agent, &t.SessionID, &t.TurnIndex, &t.TurnType, &t.Model, &t.Status, &t.LatencyMS,
			&t.InputTokens, &t.OutputTokens, &injected, &t.InjectedTokens); err != nil {
			return nil, fmt.Errorf("recent turns: %w", err)
		}
		t.At = time.UnixMilli(at)
		_ = json.Unmarshal([]byte(injected), &t.Injected)
		if t.Injected == nil {
			t.Injected = []string{}
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// Activity implements Store.
func (s *SQLite) Activity(ctx context.Context, since time.Time) ([]ActivityBucket, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT strftime('%Y-%m-%d', created_at / 1000, 'unixepoch') AS day, agent,
       COUNT(*), COUNT(DISTINCT session_id), COALESCE(SUM(injected_tokens), 0)
FROM turns WHERE created_at >= ? GROUP BY day, agent ORDER BY day, agent`, ms(since))
	if err != nil {
		return nil, fmt.Errorf("activity: %w", err)
	}
	defer rows.Close()
	var out []ActivityBucket
	for rows.Next() {
		var b ActivityBucket
		if err := rows.Scan(&b.Day, &b.Agent, &b.Turns, &b.Sessions, &b.InjectedTokens); err != nil {
			return nil, fmt.Errorf("activity: %w", err)
		}
		out = append(out, b)
	}
	return out, rows.Err()
}
