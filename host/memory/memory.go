// Package memory is MetaClaw's memory layer: what happened and what the user
// prefers. It learns from recorded turns (only the user's new text and the
// assistant's final text, secrets redacted), keeps typed units in the host's
// SQLite store (FTS5 index, merge and supersede instead of delete), and
// injects the most relevant ones into every main turn as the "Memories"
// section of the core's block.
//
// The pieces:
//
//   - Store: the units (ingest, retrieve, search, add, edit, forget, export,
//     import, stats) on the host's database; a core.Provider and core.Counter.
//   - Ingester: turns → batches, driven by the core (every N learnable main
//     turns and at session end), with a durable per-session cursor.
//   - Remote: the same Provider and ingestion sink over HTTP, for
//     memory.sidecar_url (one memory shared by several hosts).
//   - Routes: the /v1/memory/… HTTP API.
//
// docs/memory.md describes behaviour and formats.
package memory

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/embed"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/sqlconn"
)

// Type is a memory unit's kind.
type Type string

// The unit types.
const (
	Preference     Type = "preference"      // likes, dislikes, rules for the agent ("always…", "never…", "call me…")
	Semantic       Type = "semantic"        // durable facts ("my timezone is…", corrections)
	ProjectState   Type = "project_state"   // the project's stack and state ("we use Postgres")
	Episodic       Type = "episodic"        // things that happened ("we shipped v2 today")
	WorkingSummary Type = "working_summary" // what a session was about
)

// Types lists every type in rendering order.
var Types = []Type{Preference, Semantic, ProjectState, Episodic, WorkingSummary}

// ParseType accepts a type name (also MetaClaw's procedural_observation,
// read as a preference: it held workflow rules).
func ParseType(s string) (Type, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.ReplaceAll(strings.ReplaceAll(s, "-", "_"), " ", "_")
	switch s {
	case "procedural_observation", "procedural", "rule":
		return Preference, nil
	case "fact":
		return Semantic, nil
	case "summary":
		return WorkingSummary, nil
	}
	for _, t := range Types {
		if string(t) == s {
			return t, nil
		}
	}
	return "", fmt.Errorf("unknown memory type %q: use one of preference, semantic, project_state, episodic, working_summary", s)
}

// Unit statuses.
const (
	StatusActive     = "active"
	StatusSuperseded = "superseded"
)

// Unit is one memory.
type Unit struct {
	ID             string     `json:"id"`
	Scope          string     `json:"scope"`
	Agent          string     `json:"agent,omitempty"` // empty: shared by every agent of the scope
	Type           Type       `json:"type"`
	Content        string     `json:"content"`
	Subject        string     `json:"subject,omitempty"`
	Value          string     `json:"value,omitempty"`
	Entities       []string   `json:"entities,omitempty"`
	Tags           []string   `json:"tags,omitempty"`
	Importance     float64    `json:"importance"`
	Confidence     float64    `json:"confidence"`
	Mentions       int        `json:"mentions"`
	Status         string     `json:"status"`
	SupersededBy   string     `json:"superseded_by,omitempty"`
	Origin         string     `json:"origin,omitempty"`
	SourceSession  string     `json:"source_session,omitempty"`
	SourceTurns    []int64    `json:"source_turns,omitempty"`
	SaidAt         time.Time  `json:"said_at"`
	LastSeenAt     time.Time  `json:"last_seen_at"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
	ExpiresAt      *time.Time `json:"expires_at,omitempty"`
	InjectedCount  int        `json:"injected_count,omitempty"`
	LastInjectedAt *time.Time `json:"last_injected_at,omitempty"`

	rowid  int64
	vis    string
	tokens int
	msg    string // while ingesting: the message it came from
}

// ErrNotFound is returned for an unknown memory id.
var ErrNotFound = errors.New("memory not found")

// Options configure a Store.
type Options struct {
	// DefaultScope replaces the scope "default" (memory.scope).
	DefaultScope string
	// TopK bounds the relevant facts, StandingK the standing rules and
	// preferences (negative: none), MaxTokens the whole injected section
	// (memory.top_k, memory.standing_top_k, memory.max_tokens).
	TopK      int
	StandingK int
	MaxTokens int
	// Extractor mines turns; default the heuristic one.
	Extractor Extractor
	// Embedder, when set, embeds units at write time and queries at read
	// time (memory.use_embeddings); Mode picks how it is used.
	Embedder embed.Embedder
	// Mode is memory.retrieval_mode: keyword, embedding, hybrid or auto.
	Mode string
	// NoConsolidate turns off near-duplicate merging and contradiction
	// handling (memory.auto_consolidate: false); exact repeats still merge.
	NoConsolidate bool
	// Now is the clock (tests move it forward to simulate days).
	Now func() time.Time
	Log zerolog.Logger
}

// Store is the memory layer on the host's SQLite database.
type Store struct {
	w, r *sql.DB
	o    Options

	hostOnce sync.Once
	hostID   string
	turns    store.TurnLog   // the recorded turns (nil: none, tests)
	jobs     store.JobReader // the jobs a client polls

	phrases phraseRing // recent sentences per scope and agent (boilerplate)
	idx     indexState // the in-memory index (StartIndex)

	// injectFoldAt is the injection log's rows that make an ingest fold it
	// (injectlog.go).
	injectFoldAt int
	// onWriter, set by benchmarks, is called with true once a batch's
	// write transaction has begun and with false once it has ended: how
	// long ingestion holds the store's one writer. Atomic: a benchmark's
	// store outlives its runs, whose ingesters may still be writing.
	onWriter atomic.Pointer[func(begun bool)]

	cacheMu sync.Mutex
	cache   map[string]*visCache // per visibility token, valid for one generation

	genMu    sync.Mutex
	genVal   int64     // last generation read
	genAt    time.Time // when
	genLocal int64     // localGen then
	localGen atomic.Int64
}

// Open returns the memory store on st (its migrations create the tables).
func Open(st Storage, o Options) *Store {
	s := open(st.Writer(), st.Reader(), o)
	s.turns, s.jobs = st, st
	return s
}

func open(w, r *sql.DB, o Options) *Store {
	if o.DefaultScope == "" {
		o.DefaultScope = "default"
	}
	if o.TopK <= 0 {
		o.TopK = 6
	}
	if o.StandingK == 0 {
		o.StandingK = 16
	}
	if o.MaxTokens <= 0 {
		o.MaxTokens = 800
	}
	if o.Extractor == nil {
		o.Extractor = Heuristic{}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Mode == "" {
		o.Mode = "keyword"
	}
	return &Store{w: w, r: r, o: o, cache: map[string]*visCache{}, injectFoldAt: injectFoldAt}
}

// Options returns the store's effective options.
func (s *Store) Options() Options { return s.o }

func (s *Store) now() time.Time { return s.o.Now() }

// ScopeKey maps a request's scope key onto the store's: "default" (no scope
// named) becomes memory.scope.
func (s *Store) ScopeKey(key string) string {
	key = strings.TrimSpace(strings.ReplaceAll(key, "\n", " "))
	if key == "" || key == "default" {
		return s.o.DefaultScope
	}
	return key
}

// visToken names the units of one (scope, agent): an FTS5 token made of
// letters and digits only.
func visToken(scope, agent string) string {
	h := sha256.Sum256([]byte(scope + "\x00" + agent))
	return "v" + hex.EncodeToString(h[:10])
}

// visible are the tokens a query by agent in scope may read: the scope's
// shared units and the agent's own.
func visible(scope, agent string) []string {
	k := [2]string{scope, agent}
	visMu.Lock()
	v, ok := visMemo[k]
	visMu.Unlock()
	if ok {
		return v
	}
	if agent == "" {
		v = []string{visToken(scope, "")}
	} else {
		v = []string{visToken(scope, ""), visToken(scope, agent)}
	}
	visMu.Lock()
	if len(visMemo) >= 1024 {
		clear(visMemo)
	}
	visMemo[k] = v
	visMu.Unlock()
	return v
}

// visMemo remembers visible's answers (two hashes per query otherwise);
// callers must not change them.
var (
	visMu   sync.Mutex
	visMemo = map[[2]string][]string{}
)

func newUID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "mem_" + hex.EncodeToString(b[:])
}

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMS(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMilli(v)
}

func optTime(v int64) *time.Time {
	if v == 0 {
		return nil
	}
	t := time.UnixMilli(v)
	return &t
}

// meta reads a memory_meta value.
func meta(ctx context.Context, q queryer, key string) (string, error) {
	var v string
	err := q.QueryRowContext(ctx, `SELECT value FROM memory_meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v, err
}

func metaInt(ctx context.Context, q queryer, key string) (int64, error) {
	v, err := meta(ctx, q, key)
	if err != nil || v == "" {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

func setMeta(ctx context.Context, x execer, key, value string) error {
	_, err := x.ExecContext(ctx, `INSERT INTO memory_meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value)
	return err
}

// HostID is this database's stable random id, used in ingestion source keys
// so a shared (remote) memory can tell hosts apart.
func (s *Store) HostID(ctx context.Context) (string, error) {
	var err error
	s.hostOnce.Do(func() {
		var id string
		id, err = meta(ctx, s.r, "host_id")
		if err != nil {
			return
		}
		if id == "" {
			var b [8]byte
			_, _ = rand.Read(b[:])
			id = "h" + hex.EncodeToString(b[:])
			if _, err = s.w.ExecContext(ctx, `INSERT OR IGNORE INTO memory_meta (key, value) VALUES ('host_id', ?)`, id); err != nil {
				return
			}
			id, err = meta(ctx, s.w, "host_id")
		}
		s.hostID = id
	})
	if err != nil {
		s.hostOnce = sync.Once{}
		return "", fmt.Errorf("memory host id: %w", err)
	}
	return s.hostID, nil
}

type queryer interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// generation is bumped by every write transaction, so caches (standing
// units, embeddings) know when to reload — also after the CLI, a separate
// process, changed something.
func generation(ctx context.Context, q queryer) (int64, error) {
	return metaInt(ctx, q, "generation")
}

// bumpGeneration adds one to the generation and returns it (one
// statement: every write transaction runs it).
func bumpGeneration(ctx context.Context, q queryer) (int64, error) {
	var gen int64
	err := q.QueryRowContext(ctx, `UPDATE memory_meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'generation'
RETURNING CAST(value AS INTEGER)`).Scan(&gen)
	return gen, err
}

// writeTx runs fn in one write transaction and bumps the generation; the
// in-memory index (when it runs) is updated with the rows fn touched.
//
// It runs on the writer's connection (sqlconn.Tx, not database/sql's Tx),
// and no statement in it keeps ctx's cancellation (checked before the
// commit instead): a Tx and each cancellable statement would cost a
// watcher goroutine, woken beside the proxy's answers.
func (s *Store) writeTx(ctx context.Context, fn func(tx *sqlconn.Tx) error) error {
	qctx := context.WithoutCancel(ctx)
	tx, err := sqlconn.Begin(qctx, s.w)
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	touched := &touchSet{rows: map[int64]bool{}}
	txTouched.Store(tx, touched)
	defer txTouched.Delete(tx)
	defer tx.Rollback()
	if err := fn(tx); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	gen, err := bumpGeneration(qctx, tx)
	if err != nil {
		return fmt.Errorf("memory: %w", err)
	}
	// The index changes with the commit: the rows it touched are read
	// inside the transaction (which sees its writes) and applied just before
	// the commit, under applyMu — so no retrieval sees the store ahead of
	// the index, and none waits for the commit itself (a commit may
	// checkpoint the WAL). A commit that fails leaves the index ahead of the
	// store: its generation is spoiled and the poller rebuilds it.
	ix := s.idx.cur.Load()
	if ix == nil {
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("memory: %w", err)
		}
		s.localGen.Add(1)
		return nil
	}
	touched.mu.Lock()
	rows := touched.rows
	touched.mu.Unlock()
	var read *rowsRead
	if len(rows) <= maxIncremental {
		if read, err = readRows(qctx, tx, rows, ix.withV); err != nil {
			return err
		}
	}
	s.idx.applyMu.Lock()
	defer s.idx.applyMu.Unlock()
	if ix = s.idx.cur.Load(); ix != nil && read != nil { // a rebuild may have swapped it meanwhile
		// Retrieval waits for this lock: not on a job's niced thread.
		core.Foreground(func() {
			ix.mu.Lock()
			ix.apply(read)
			ix.mu.Unlock()
		})
	}
	cerr := tx.Commit()
	if cerr == nil {
		s.localGen.Add(1)
	}
	if ix != nil {
		ix.mu.Lock()
		switch {
		case cerr != nil || read == nil:
			ix.spoiled = true // rebuilt by the poller: a failed commit, or a bulk change
		case gen == ix.gen+1:
			ix.gen = gen
		case gen > ix.gen:
			// Another process committed since the index last caught up: this
			// commit is applied, theirs is not, so taking this generation
			// would hide their write from the poller for good.
			ix.spoiled = true
		}
		ix.mu.Unlock()
	}
	if cerr != nil {
		return fmt.Errorf("memory: %w", cerr)
	}
	if s.idx.building {
		for id := range rows {
			s.idx.pending[id] = true
		}
		s.idx.pendGens = append(s.idx.pendGens, gen)
	}
	return nil
}
