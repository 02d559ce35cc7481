package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/host/transcript"
	"github.com/metaclaw-go/metaclaw/internal/jsonscan"
	"github.com/metaclaw-go/metaclaw/internal/sqlconn"
	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// Job kinds.
const (
	// JobIngest ingests a session's pending turns (payload IngestJob).
	JobIngest = "memory_ingest"
	// JobFlush runs at session end (core.OnSessionEnd): the rest of the
	// session's turns and its working summary.
	JobFlush = "memory_flush"
)

// IngestJob is the payload of JobIngest.
type IngestJob struct {
	SessionID string `json:"session_id"`
	Final     bool   `json:"final,omitempty"`
}

// Sink is where batches go: the local Store, or a Remote memory.
type Sink interface {
	Ingest(ctx context.Context, b Batch) (IngestResult, error)
}

// Ingester feeds recorded turns to a Sink. The turns waiting for ingestion
// are the recorded turns themselves; a per-session cursor (the last ingested
// turn id, in memory_cursors) says where each session stands, so a crash or
// restart loses nothing and, with the sources table, repeats nothing.
type Ingester struct {
	st    Storage
	mem   *Store
	sink  Sink
	every int
	side  bool
	log   zerolog.Logger
	// Enqueue schedules a JobIngest (core.EnqueueTransient).
	enqueue func(ctx context.Context, job IngestJob) error

	mu     sync.Mutex
	counts map[string]int // learnable turns per session since its last enqueue
	// queued are the sessions with an ingest job enqueued by this process
	// and not started yet: that job reads all of the session's turns when
	// it starts, so another one would find nothing (under a backlog, one
	// job takes what would have been several).
	queued map[string]bool

	// flush waits for observed turns to be persisted (core.Flush).
	flush func(ctx context.Context) error
	// startWait bounds how long a new session's first turn waits for the
	// catch-up (memory.session_start_wait_ms).
	startWait time.Duration
	catchups  chan struct{} // running catch-ups
	checks    chan struct{} // running durable-statement checks
	locks     lockStripes   // one ingestion of a session at a time
	provLocks lockStripes   // one provisional pass of a session at a time

	// catchingUp counts the running catch-ups, background parts included.
	catchingUp sync.WaitGroup

	// yield waits for a gap between answers (core.WaitForGap), before
	// each batch's extraction and its transaction.
	yield func(ctx context.Context)

	// testHookInTx, when set, runs inside each batch's write transaction.
	testHookInTx func()
}

// IngesterOptions configure an Ingester.
type IngesterOptions struct {
	// Sink receives batches; default the local store.
	Sink Sink
	// Every enqueues an ingest job every N learnable main turns of a session
	// (memory.ingest_every_turns, default 5).
	Every int
	// SideTurns learns from side turns too (memory.ignore_turn_type).
	SideTurns bool
	// Enqueue schedules a job; nil ingests inline (tests, CLI).
	Enqueue func(ctx context.Context, job IngestJob) error
	// StartWait is how long a new session's first retrieval waits for the
	// agent's earlier pending turns to be ingested (memory.session_start_wait_ms);
	// 0 does it all in the background.
	StartWait time.Duration
	Log       zerolog.Logger
}

// NewIngester returns an ingester reading turns from st.
func NewIngester(st Storage, mem *Store, o IngesterOptions) *Ingester {
	if o.Sink == nil {
		o.Sink = mem
	}
	if o.Every <= 0 {
		o.Every = 5
	}
	return &Ingester{st: st, mem: mem, sink: o.Sink, every: o.Every, side: o.SideTurns, log: o.Log, enqueue: o.Enqueue, counts: map[string]int{}, queued: map[string]bool{},
		startWait: max(o.StartWait, 0), catchups: make(chan struct{}, 4), checks: make(chan struct{}, 2)}
}

// Register connects the ingester to the core: the turn listener, the ingest
// job, the session-end flush and the session-start catch-up. auto false
// registers the jobs only (memory.manual_trigger, memory.auto_extract false).
func (in *Ingester) Register(c *core.Core, auto bool) {
	// Queued in memory: the turns are the durable part (a session's end, or
	// the agent's next session's catch-up, ingests what a job lost at a
	// crash would have), and the recorder calling OnTurn does not wait for
	// a commit behind learning's transaction.
	in.enqueue = func(_ context.Context, job IngestJob) error {
		return c.EnqueueTransient(JobIngest, job)
	}
	in.flush = c.Flush
	in.yield = func(ctx context.Context) { c.WaitForGap(ctx, maxYield) }
	c.HandleJobs(JobIngest, in.HandleIngest)
	if auto {
		c.OnTurn(in.OnTurn)
		c.OnSessionEnd(JobFlush, in.HandleFlush)
		c.OnSessionStart(in.OnSessionStart)
	}
}

func (in *Ingester) learnable(t store.Turn) bool {
	if in.side {
		return t.Status >= 200 && t.Status < 300
	}
	return transcript.Learnable(t)
}

// OnTurn is the core's turn listener. It runs on the recorder goroutine, so
// it only counts; every N learnable turns of a session it enqueues a job,
// and a turn whose user marks something as lasting is ingested at once.
func (in *Ingester) OnTurn(ctx context.Context, t *store.Turn) {
	if !in.learnable(*t) {
		return
	}
	in.mu.Lock()
	n := in.counts[t.SessionID] + 1
	due := n >= in.every
	if due {
		delete(in.counts, t.SessionID)
	} else {
		if len(in.counts) >= 100000 {
			clear(in.counts) // bounded: a lost count only delays ingestion to the session's end
		}
		in.counts[t.SessionID] = n
	}
	in.mu.Unlock()
	if !due && in.enqueue != nil {
		in.checkDurable(t.SessionID, t.RequestJSON)
	}
	if due && in.enqueue != nil {
		if err := in.enqueueOnce(ctx, t.SessionID); err != nil {
			in.log.Error().Err(err).Str("session", t.SessionID).Msg("memory: could not enqueue ingestion; the session's end will ingest its turns")
		}
	}
}

// enqueueOnce enqueues the session's ingestion unless a job of this
// process for it is waiting to start (it will read this turn too: turns
// are persisted before listeners hear of them).
func (in *Ingester) enqueueOnce(ctx context.Context, session string) error {
	in.mu.Lock()
	if in.queued[session] {
		in.mu.Unlock()
		return nil
	}
	if len(in.queued) >= 100000 {
		clear(in.queued) // bounded: a forgotten entry only costs a job that finds nothing
	}
	in.queued[session] = true
	in.mu.Unlock()
	err := in.enqueue(ctx, IngestJob{SessionID: session})
	if err != nil {
		in.started(session)
	}
	return err
}

// started notes that a session's job began (before it reads the cursor),
// so turns from now on enqueue a new one.
func (in *Ingester) started(session string) {
	in.mu.Lock()
	delete(in.queued, session)
	in.mu.Unlock()
}

// HandleIngest runs a JobIngest.
func (in *Ingester) HandleIngest(ctx context.Context, payload json.RawMessage) error {
	var job IngestJob
	if err := json.Unmarshal(payload, &job); err != nil {
		return fmt.Errorf("memory ingest job: %w", err)
	}
	if job.SessionID == "" {
		_, _, err := in.IngestAll(ctx, job.Final)
		return err
	}
	in.started(job.SessionID)
	_, err := in.IngestSession(background(ctx), job.SessionID, job.Final)
	return err
}

// HandleFlush runs at session end.
func (in *Ingester) HandleFlush(ctx context.Context, payload json.RawMessage) error {
	var se core.SessionEnd
	if err := json.Unmarshal(payload, &se); err != nil {
		return fmt.Errorf("memory flush job: %w", err)
	}
	in.mu.Lock()
	delete(in.counts, se.SessionID)
	in.mu.Unlock()
	_, err := in.IngestSession(background(ctx), se.SessionID, true)
	return err
}

// A job's ingestion yields to requests; one a caller waits for (the
// catch-up a session's first turn waits for, the HTTP API) does not: it
// would wait for the very request that waits for it.
type yieldKey struct{}

func background(ctx context.Context) context.Context { return context.WithValue(ctx, yieldKey{}, true) }

func yielding(ctx context.Context) bool { return ctx.Value(yieldKey{}) != nil }

// maxYield bounds each wait for a gap between answers: under load that
// never pauses, learning still moves on.
const maxYield = 5 * time.Millisecond

// batchTurns bounds one batch (one transaction).
const batchTurns = 64

// maxBatches bounds one IngestSession call.
const maxBatches = 1000

type cursor struct {
	last, summarized int64
}

func readCursor(ctx context.Context, q queryer, session string) (cursor, error) {
	var c cursor
	err := q.QueryRowContext(ctx, `SELECT last_turn_id, summarized_turn_id FROM memory_cursors WHERE session_id = ?`, session).Scan(&c.last, &c.summarized)
	if errors.Is(err, sql.ErrNoRows) {
		err = nil
	}
	if err != nil {
		return c, fmt.Errorf("memory: cursor %s: %w", session, err)
	}
	baseline, err := metaInt(ctx, q, "baseline_turn_id")
	if err != nil {
		return c, fmt.Errorf("memory: cursor: %w", err)
	}
	c.last = max(c.last, baseline)
	return c, nil
}

// advance moves a session's cursor (never backwards) and the floor below
// which no turn is pending.
func advance(ctx context.Context, tx *sqlconn.Tx, turns store.TurnLog, session string, last, summarized int64, side bool) error {
	if _, err := tx.ExecContext(ctx, `INSERT INTO memory_cursors (session_id, last_turn_id, summarized_turn_id, updated_at) VALUES (?, ?, ?, ?)
ON CONFLICT(session_id) DO UPDATE SET last_turn_id = MAX(last_turn_id, excluded.last_turn_id),
    summarized_turn_id = MAX(summarized_turn_id, excluded.summarized_turn_id), updated_at = excluded.updated_at`,
		session, last, summarized, ms(time.Now())); err != nil {
		return fmt.Errorf("memory: cursor: %w", err)
	}
	floor, err := pendingFloor(ctx, tx)
	if err != nil {
		return err
	}
	first, ok, err := firstPending(ctx, tx, turns, floor, side)
	if err != nil {
		return fmt.Errorf("memory: floor: %w", err)
	}
	next := first - 1
	if !ok {
		// On the read pool, without ctx's cancellation (a watcher goroutine
		// otherwise): no commit can come between, the transaction holds the
		// write lock.
		if next, err = turns.LastTurnID(context.WithoutCancel(ctx)); err != nil {
			return fmt.Errorf("memory: floor: %w", err)
		}
	}
	if next > floor {
		return setMeta(ctx, tx, "floor_turn_id", strconv.FormatInt(next, 10))
	}
	return nil
}

// pendingFloor is the turn id below which nothing is pending: the larger
// of the baseline and the floor, read in one statement (advance runs it in
// every ingest transaction).
func pendingFloor(ctx context.Context, q queryer) (int64, error) {
	var floor int64
	err := q.QueryRowContext(ctx, `SELECT IFNULL(MAX(CAST(value AS INTEGER)), 0) FROM memory_meta WHERE key IN ('baseline_turn_id', 'floor_turn_id')`).Scan(&floor)
	if err != nil {
		return 0, fmt.Errorf("memory: floor: %w", err)
	}
	return floor, nil
}

// Pending counts this ingester's pending turns.
func (in *Ingester) Pending(ctx context.Context) (int, error) {
	return pendingTurns(ctx, in.mem.r, in.st, in.side)
}

// turnBatch is what learning reads of a session's turns after a point:
// the learnable ones as toTurn makes them, the last id read and how many
// turns were read.
type turnBatch struct {
	turns []Turn
	last  int64
	read  int
}

// readTurns reads up to n of a session's turns after id, keeping (as
// toTurn makes them) the learnable turns keep accepts (nil: all). The
// turns are streamed (store.SessionTurnsEach): a request body is scanned
// for the user's text where SQLite holds it, never copied.
func (in *Ingester) readTurns(ctx context.Context, host, session string, after int64, n int, keep func(t *store.Turn) bool) (turnBatch, error) {
	var b turnBatch
	err := in.st.SessionTurnsEach(ctx, session, after, n, func(t *store.Turn) error {
		b.last, b.read = t.ID, b.read+1
		if in.learnable(*t) && (keep == nil || keep(t)) {
			b.turns = append(b.turns, toTurn(host, *t))
		}
		return nil
	})
	if err != nil {
		return b, fmt.Errorf("memory: read turns: %w", err)
	}
	return b, nil
}

// toTurn is what learning may read of a recorded turn: transcript.FromTurn's
// user and assistant text (injected blocks stripped; system prompts and tool
// output never included), redacted. t.RequestJSON may be a view that ends
// with the read (store.SessionTurnsEach): nothing taken from it is kept
// without a copy.
func toTurn(host string, t store.Turn) Turn {
	ex := transcript.FromTurn(t)
	// Capped first: a huge pasted message costs no more redaction than a long one.
	user, _ := Redact(textclip.Prefix(ex.User, maxTurnText))
	asst, _ := Redact(textclip.Prefix(ex.Assistant, maxTurnText))
	return Turn{
		Source: host + "/" + strconv.FormatInt(t.ID, 10), SessionID: t.SessionID, Scope: t.MemoryScope, Agent: t.Agent,
		User: detach(user, t.RequestJSON), Assistant: asst, TurnID: t.ID, At: t.CreatedAt, Injected: injectedIDs(t.InjectedJSON),
	}
}

// detach copies s when it lies inside body (a substring of it), so that
// keeping s does not keep body; other strings are returned as they are.
func detach(s, body string) string {
	if len(s) == 0 || len(body) == 0 {
		return s
	}
	p, b := uintptr(unsafe.Pointer(unsafe.StringData(s))), uintptr(unsafe.Pointer(unsafe.StringData(body)))
	if p >= b && p < b+uintptr(len(body)) {
		return strings.Clone(s)
	}
	return s
}

// injectedIDs decodes a recorded turn's injected ids (a JSON array of
// strings, ignoring errors) as json.Unmarshal into a []string does. The
// proxy writes them as a plain array of ASCII ids without escapes, read
// here without a decoder: the ids are substrings of s. Anything else is
// decoded.
func injectedIDs(s string) []string {
	b := unsafe.Slice(unsafe.StringData(s), len(s)) // read only
	i := jsonscan.SkipWS(b, 0)
	if !jsonscan.FastValid(b) || b[i] != '[' {
		return injectedDecoded(s)
	}
	ids := make([]string, 0, 1+strings.Count(s, ","))
	for i = jsonscan.SkipWS(b, i+1); b[i] != ']'; {
		if b[i] != '"' {
			return injectedDecoded(s)
		}
		end := jsonscan.SkipString(b, i)
		id := s[i+1 : end-1]
		for k := 0; k < len(id); k++ {
			if id[k] == '\\' || id[k] >= utf8.RuneSelf {
				return injectedDecoded(s) // escapes or non-ASCII bytes: the decoder's
			}
		}
		ids = append(ids, id)
		if i = jsonscan.SkipWS(b, end); b[i] == ',' {
			i = jsonscan.SkipWS(b, i+1)
		}
	}
	return ids
}

func injectedDecoded(s string) []string {
	var ids []string
	_ = json.Unmarshal([]byte(s), &ids)
	return ids
}

// IngestSession ingests a session's pending turns, batch by batch; final
// also writes its working summary.
func (in *Ingester) IngestSession(ctx context.Context, session string, final bool) (IngestResult, error) {
	var total IngestResult
	mu := in.lockFor(&in.locks, session)
	mu.Lock()
	defer mu.Unlock()
	host, err := in.mem.HostID(ctx)
	if err != nil {
		return total, err
	}
	_, local := in.sink.(*Store)
	// Reads without ctx's cancellation, checked before each batch instead
	// (see countInjected).
	qctx := context.WithoutCancel(ctx)
	for range maxBatches {
		if err := ctx.Err(); err != nil {
			return total, err
		}
		cur, err := readCursor(qctx, in.mem.r, session)
		if err != nil {
			return total, err
		}
		read, err := in.readTurns(qctx, host, session, cur.last, batchTurns, nil)
		if err != nil {
			return total, err
		}
		if read.read == 0 {
			break
		}
		res, err := in.send(ctx, Batch{SessionID: session, Turns: read.turns}, local, session, read.last, 0)
		if err != nil {
			return total, err
		}
		total.add(res)
		if read.read < batchTurns {
			break
		}
	}
	if final {
		res, err := in.summarize(ctx, session, host, local)
		if err != nil {
			return total, err
		}
		total.add(res)
	}
	return total, nil
}

// send delivers a batch and advances the cursor: in the batch's own
// transaction for the local store; after the remote accepted it otherwise
// (a crash in between resends it, and the remote skips what it has seen).
func (in *Ingester) send(ctx context.Context, b Batch, local bool, session string, last, summarized int64) (IngestResult, error) {
	if yielding(ctx) {
		b.yield = in.yield
	}
	if local {
		b.before = func(ctx context.Context, tx *sqlconn.Tx) error {
			return withdraw(ctx, tx, session, last, in.mem.o.Extractor.Name(), in.mem.now())
		}
		b.after = func(ctx context.Context, tx *sqlconn.Tx) error {
			if in.testHookInTx != nil {
				in.testHookInTx()
			}
			return advance(ctx, tx, in.st, session, last, summarized, in.side)
		}
		return in.sink.Ingest(ctx, b)
	}
	var res IngestResult
	if len(b.Turns) > 0 || b.Final {
		var err error
		if res, err = in.sink.Ingest(ctx, b); err != nil {
			return res, err
		}
	}
	return res, in.mem.writeTx(ctx, func(tx *sqlconn.Tx) error {
		return advance(ctx, tx, in.st, session, last, summarized, in.side)
	})
}

// summarize writes the working summary of a session when it has turns that
// no summary covers yet.
func (in *Ingester) summarize(ctx context.Context, session, host string, local bool) (IngestResult, error) {
	cur, err := readCursor(ctx, in.mem.r, session)
	if err != nil {
		return IngestResult{}, err
	}
	if cur.summarized >= cur.last {
		return IngestResult{}, nil
	}
	// The summary reads the session's last 30 turns up to the cursor.
	first, ok, err := in.st.SessionTurnBack(ctx, session, cur.last, 29)
	if err != nil {
		return IngestResult{}, fmt.Errorf("memory: summary turns: %w", err)
	}
	var from int64
	if ok {
		from = first - 1
	}
	read, err := in.readTurns(ctx, host, session, from, 30, func(t *store.Turn) bool { return t.ID <= cur.last })
	if err != nil {
		return IngestResult{}, err
	}
	b := Batch{SessionID: session, Final: true, SummaryTurns: read.turns}
	for i := range b.SummaryTurns {
		b.SummaryTurns[i].Source = "" // context only, not mined again
	}
	if len(b.SummaryTurns) == 0 {
		return in.send(ctx, Batch{SessionID: session}, local, session, cur.last, cur.last)
	}
	return in.send(ctx, b, local, session, cur.last, cur.last)
}

// IngestAll ingests every session with pending turns (final: also write
// summaries of ended sessions). It returns the sessions it touched.
func (in *Ingester) IngestAll(ctx context.Context, final bool) (IngestResult, []string, error) {
	var total IngestResult
	pending, err := pendingRefs(ctx, in.mem.r, in.st, store.TurnFilter{SideToo: in.side})
	if err != nil {
		return total, nil, fmt.Errorf("memory: pending sessions: %w", err)
	}
	sessions := sessionsOf(pending, 10000)
	if final {
		ended, err := in.endedUnsummarized(ctx, 10000)
		if err != nil {
			return total, nil, err
		}
		for _, s := range ended {
			if !contains(sessions, s) {
				sessions = append(sessions, s)
			}
		}
	}
	for _, s := range sessions {
		if err := ctx.Err(); err != nil {
			return total, sessions, err
		}
		ended := false
		if final {
			if sess, err := in.st.Session(ctx, s); err == nil && sess.EndedAt != nil {
				ended = true
			}
		}
		res, err := in.IngestSession(ctx, s, ended)
		if err != nil {
			return total, sessions, err
		}
		total.add(res)
	}
	return total, sessions, nil
}
