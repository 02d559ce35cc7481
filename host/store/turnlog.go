package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"modernc.org/sqlite"
)

// TurnFilter selects the learnable turns a consumer (memory ingestion) may
// still have to read: answered (2xx) turns after an id, main turns only
// unless SideToo.
type TurnFilter struct {
	After   int64 // only turns with a larger id
	SideToo bool  // side turns too (memory.ignore_turn_type)
	// OfAgent keeps only Agent's turns in memory scope Scope (either may be "").
	OfAgent      bool
	Agent, Scope string
	// ExceptSession leaves one session out (the one asking).
	ExceptSession string
	// Limit bounds the answer to the oldest Limit turns (0: all).
	Limit int
	// On, when set, runs LearnableTurns' read there (a write transaction
	// memory holds) rather than on the read pool.
	On Queryer
}

// Queryer is what LearnableTurns reads through: a connection, a pool or a
// transaction.
type Queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// conditions is f's WHERE clause over turns (columns prefixed with
// prefix, "" or an alias and a dot) for turns after id, and its arguments.
func (f TurnFilter) conditions(prefix string, after int64) (string, []any) {
	q := prefix + `id > ? AND ` + prefix + `status BETWEEN 200 AND 299`
	args := []any{after}
	if !f.SideToo {
		q += ` AND ` + prefix + `turn_type = 'main'`
	}
	if f.OfAgent {
		q += ` AND ` + prefix + `agent = ? AND ` + prefix + `memory_scope = ?`
		args = append(args, f.Agent, f.Scope)
	}
	if f.ExceptSession != "" {
		q += ` AND ` + prefix + `session_id != ?`
		args = append(args, f.ExceptSession)
	}
	return q, args
}

// TurnRef locates a recorded turn without its text.
type TurnRef struct {
	ID        int64
	SessionID string
	CreatedAt time.Time
}

// LearnableTurns implements TurnLog: the turns matching f, oldest first.
func (s *SQLite) LearnableTurns(ctx context.Context, f TurnFilter) ([]TurnRef, error) {
	cond, args := f.conditions("", f.After)
	q := `SELECT id, session_id, created_at FROM turns WHERE ` + cond + ` ORDER BY id`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	var on Queryer = s.r
	if f.On != nil {
		on = f.On
	}
	rows, err := on.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("learnable turns: %w", err)
	}
	defer rows.Close()
	var out []TurnRef
	for rows.Next() {
		var r TurnRef
		var created int64
		if err := rows.Scan(&r.ID, &r.SessionID, &created); err != nil {
			return nil, fmt.Errorf("learnable turns: %w", err)
		}
		r.CreatedAt = time.UnixMilli(created)
		out = append(out, r)
	}
	return out, rows.Err()
}

// SessionTurnsAfter returns up to n of a session's turns after id, oldest
// first, with the fields learning reads, each body copied: what
// SessionTurnsEach hands over, as a slice (its tests' reference; learning
// reads through SessionTurnsEach).
func (s *SQLite) SessionTurnsAfter(ctx context.Context, session string, after int64, n int) ([]Turn, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, session_id, agent, turn_index, turn_type, status, request_json, response_text,
    tool_calls, injected, memory_scope, created_at FROM turns WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?`, session, after, n)
	if err != nil {
		return nil, fmt.Errorf("session turns %s: %w", session, err)
	}
	defer rows.Close()
	var out []Turn
	for rows.Next() {
		var t Turn
		var created int64
		if err := rows.Scan(&t.ID, &t.SessionID, &t.Agent, &t.TurnIndex, &t.TurnType, &t.Status, &t.RequestJSON, &t.ResponseText,
			&t.ToolCallsJSON, &t.InjectedJSON, &t.MemoryScope, &created); err != nil {
			return nil, fmt.Errorf("session turns %s: %w", session, err)
		}
		t.CreatedAt = time.UnixMilli(created)
		out = append(out, t)
	}
	return out, rows.Err()
}

// SessionTurnsEach implements TurnLog: SessionTurnsAfter's turns handed
// to fn one at a time, as they are read, without copying request bodies.
//
// A recorded request body (14 KB in proxybench: the system prompt and the
// injected block) was most of what ingestion allocated, only to be scanned
// for the user's text and dropped. Here each row goes through the SQL
// function turnViewFunc, whose arguments are views of SQLite's own memory
// (the driver copies every TEXT column it returns): t.RequestJSON is such a
// view, valid only until fn returns — fn must not keep it or anything
// sliced from it (strings.Clone what it keeps) and must not use the store.
// Every other field is the turn's own. An error from fn stops the read and
// is returned.
func (s *SQLite) SessionTurnsEach(ctx context.Context, session string, after int64, n int, fn func(t *Turn) error) error {
	v := &turnView{fn: fn, last: after, limit: n}
	h := turnViews.add(v)
	defer turnViews.remove(h)
	// The index turns_session(session_id, id) gives the order, so SQLite
	// runs the function on each row it returns, in order, and on no other
	// (turnViewFunc checks both).
	rows, err := s.r.QueryContext(ctx, `SELECT metaclaw_turn_view(?, id, session_id, agent, turn_index, turn_type, status, request_json,
    response_text, tool_calls, injected, memory_scope, created_at) FROM turns WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?`, h, session, after, n)
	if err == nil { // (the driver runs the first row's step in QueryContext)
		for rows.Next() {
		}
		err = rows.Err()
		rows.Close()
	}
	if v.err != nil {
		err = v.err // fn's own, or a broken contract
	}
	if err != nil {
		return fmt.Errorf("session turns %s: %w", session, err)
	}
	return nil
}

// turnView is one SessionTurnsEach call, as turnViewFunc finds it.
type turnView struct {
	fn    func(t *Turn) error
	last  int64 // the id of the last row handed over
	limit int   // rows still allowed
	t     Turn  // reused: fn may not keep it
	err   error
}

// turnViews are the SessionTurnsEach calls under way, by handle (the SQL
// function's first argument).
var turnViews = &viewRegistry{m: map[int64]*turnView{}}

type viewRegistry struct {
	mu   sync.Mutex
	next int64
	m    map[int64]*turnView
}

func (r *viewRegistry) add(v *turnView) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	r.m[r.next] = v
	return r.next
}

func (r *viewRegistry) remove(h int64) {
	r.mu.Lock()
	delete(r.m, h)
	r.mu.Unlock()
}

func (r *viewRegistry) get(h int64) *turnView {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.m[h]
}

func init() {
	// VolatileArgs: the TEXT arguments are views of SQLite's memory, not
	// copies (turnViewFunc copies all but the request body).
	sqlite.MustRegisterFunction("metaclaw_turn_view", &sqlite.FunctionImpl{NArgs: 13, Scalar: turnViewFunc, VolatileArgs: true})
}

// errTurnView is what SQLite is told when a view stops; the cause is in
// turnView.err.
var errTurnView = errors.New("turn view stopped")

// turnViewFunc is metaclaw_turn_view(handle, id, session_id, agent,
// turn_index, turn_type, status, request_json, response_text, tool_calls,
// injected, memory_scope, created_at): it hands the row to the handle's fn
// and returns NULL.
func turnViewFunc(_ *sqlite.FunctionContext, args []driver.Value) (_ driver.Value, err error) {
	h, _ := args[0].(int64)
	v := turnViews.get(h)
	if v == nil {
		return nil, fmt.Errorf("metaclaw_turn_view: no view %d", h)
	}
	if v.err != nil {
		return nil, errTurnView
	}
	id, _ := args[1].(int64)
	if id <= v.last || v.limit <= 0 {
		// Not in order, or past the limit: the query plan is not the one
		// SessionTurnsEach was written for.
		v.err = fmt.Errorf("turn view: row %d after %d with %d left", id, v.last, v.limit)
		return nil, errTurnView
	}
	v.last, v.limit = id, v.limit-1
	t := &v.t
	body := viewText(args[7])
	var poison []byte
	if poisonTurnViews.Load() {
		poison = []byte(body)
		body = unsafe.String(unsafe.SliceData(poison), len(poison))
	}
	*t = Turn{
		ID: id, SessionID: ownText(args[2]), Agent: ownText(args[3]), TurnIndex: int(argInt(args[4])), TurnType: ownText(args[5]),
		Status: int(argInt(args[6])), RequestJSON: body, ResponseText: ownText(args[8]), ToolCallsJSON: ownText(args[9]),
		InjectedJSON: ownText(args[10]), MemoryScope: ownText(args[11]), CreatedAt: time.UnixMilli(argInt(args[12])),
	}
	defer func() {
		t.RequestJSON = "" // the view ends with the call
		for i := range poison {
			poison[i] = '#'
		}
		if p := recover(); p != nil {
			v.err = fmt.Errorf("turn view: panic: %v", p)
			err = errTurnView
		}
	}()
	if ferr := v.fn(t); ferr != nil {
		v.err = ferr
		return nil, errTurnView
	}
	return nil, nil
}

// poisonTurnViews is PoisonTurnViews' switch.
var poisonTurnViews atomic.Bool

// PoisonTurnViews is for the tests of SessionTurnsEach's callers: while on,
// fn gets each request body as a copy that is overwritten with '#' once fn
// returns, so a caller that keeps the view (or a substring of it) past fn
// sees its text change, as it would when SQLite reuses the memory, only
// always. Off by default: the copy is what SessionTurnsEach avoids.
func PoisonTurnViews(on bool) { poisonTurnViews.Store(on) }

// viewText is a TEXT (or BLOB) argument as it is: a view.
func viewText(a driver.Value) string {
	switch x := a.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return ""
}

// ownText is a TEXT argument copied out of SQLite's memory.
func ownText(a driver.Value) string { return strings.Clone(viewText(a)) }

func argInt(a driver.Value) int64 {
	switch x := a.(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	}
	return 0
}

// SessionTurnBack implements TurnLog: the id of a session's turn that is
// back turns before the last one at or before upTo (0: that last one);
// ok false when the session has fewer turns.
func (s *SQLite) SessionTurnBack(ctx context.Context, session string, upTo int64, back int) (id int64, ok bool, err error) {
	err = s.r.QueryRowContext(ctx, `SELECT id FROM turns WHERE session_id = ? AND id <= ? ORDER BY id DESC LIMIT 1 OFFSET ?`, session, upTo, back).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("session turns %s: %w", session, err)
	}
	return id, true, nil
}

// LastTurnID implements TurnLog: the largest turn id (0 with none).
func (s *SQLite) LastTurnID(ctx context.Context) (int64, error) {
	var id int64
	if err := s.r.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM turns`).Scan(&id); err != nil {
		return 0, fmt.Errorf("last turn: %w", err)
	}
	return id, nil
}

// Job implements JobReader.
func (s *SQLite) Job(ctx context.Context, id int64) (Job, error) {
	j := Job{ID: id}
	var runAfter int64
	var lastErr sql.NullString
	err := s.r.QueryRowContext(ctx, `SELECT kind, payload, state, attempts, run_after, last_error FROM jobs WHERE id = ?`, id).
		Scan(&j.Kind, &j.Payload, &j.State, &j.Attempts, &runAfter, &lastErr)
	if errors.Is(err, sql.ErrNoRows) {
		return j, fmt.Errorf("job %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return j, fmt.Errorf("job %d: %w", id, err)
	}
	j.RunAfter, j.LastError = time.UnixMilli(runAfter), lastErr.String
	return j, nil
}
