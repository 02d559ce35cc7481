// Package core is the one learning core every path feeds (the proxy,
// plugin relays, MCP tools, the CLI) through three calls:
//
//   - Context(query) → the block to inject before an LLM call;
//   - Observe(turn)  → persist a completed turn and feed learning;
//   - EndSession(id, reason) → close a session and schedule its follow-up work.
//
// Skills and memory plug in as Providers (context) and job handlers
// (learning); no path has private learning logic.
package core

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/block"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/host/tokens"
	"github.com/metaclaw-go/metaclaw/internal/jsonstr"
)

// Turn types: side turns (heartbeat, cron, maintenance) are served and
// recorded but never learned from or injected into.
const (
	TurnMain = "main"
	TurnSide = "side"
)

// Scope names whose memory a turn may see.
type Scope struct {
	UserID      string `json:"user_id,omitempty"`
	WorkspaceID string `json:"workspace_id,omitempty"`
	Explicit    string `json:"memory_scope,omitempty"`
}

// Key is the canonical scope string (MetaClaw's format: an explicit scope
// wins, else user:U|workspace:W, else "default").
func (s Scope) Key() string {
	switch {
	case s.Explicit != "":
		return s.Explicit
	case s.UserID != "" && s.WorkspaceID != "":
		return "user:" + s.UserID + "|workspace:" + s.WorkspaceID
	case s.WorkspaceID != "":
		return "workspace:" + s.WorkspaceID
	case s.UserID != "":
		return "user:" + s.UserID
	}
	return "default"
}

// Query is what a provider needs to pick context for one turn.
type Query struct {
	Agent     string
	SessionID string
	Scope     Scope
	// UserTexts are the most recent user messages, oldest first, with any
	// injected block already stripped.
	UserTexts []string
}

// Section is one provider's contribution to the injected block.
type Section struct {
	Title  string   // e.g. "Skills", "Memories"
	Body   string   // rendered Markdown
	IDs    []string // what was used, for attribution
	Tokens int      // measured size of Body
}

// Provider supplies context for turns. Implementations must be safe for
// concurrent use, must not write on the request path, and must return
// soon after ctx ends (the window): the last provider registered runs on
// the caller's goroutine, the others on their own.
type Provider interface {
	Name() string
	Context(ctx context.Context, q Query) (Section, error)
}

// Injection is the rendered block for one turn.
type Injection struct {
	Block  string   // including markers; empty when there is nothing to inject
	IDs    []string // ids of everything injected
	Tokens int
}

// Options configure a Core.
type Options struct {
	Store  store.Store
	Log    zerolog.Logger
	Window time.Duration // how long Context may take before it is abandoned (fail open)
	// SessionIdle ends sessions that have been silent this long (0 disables).
	SessionIdle time.Duration
	// QueueSize bounds turns waiting to be persisted; Observe blocks when it is full.
	QueueSize int
	// MaxBodyBytes bounds each stored body of a turn (store.max_body_kb);
	// longer ones are stored shortened with a marker. Default 1 MiB.
	MaxBodyBytes int
	// SpoolDir receives turns the store refused even one by one (disk full,
	// database locked); they are written to the store from there later.
	// Empty: such turns are retried in memory until the store takes them.
	SpoolDir string
	// JobGrace bounds how long Close waits for running jobs after
	// cancelling them (default 10 s); one still running is requeued at the
	// next start.
	JobGrace time.Duration
	// BackgroundNice is the niceness job workers' threads get above the
	// process's (RunAsBackground); 0 runs them at the process's priority.
	BackgroundNice int
}

// Core implements the three calls.
type Core struct {
	st      store.Store
	log     zerolog.Logger
	window  time.Duration
	idle    time.Duration
	maxBody int

	mu        sync.RWMutex
	providers []Provider
	listeners []TurnListener
	// sessionEndKinds are the job kinds enqueued for every ended session.
	sessionEndKinds []string
	tools           map[string]Tool
	sessions        sessionTracker

	rec *recorder
	job *jobs

	inflight *inflight // requests being answered (gap.go)

	bgNice     int
	bgNiceWarn sync.Once // every background thread would fail alike

	closing chan struct{}
	bgWG    sync.WaitGroup // recorder and reaper
	closed  atomic.Bool
	closeMu sync.RWMutex // Observe holds it shared so Close never strands a queued turn
}

// TurnListener is told about every persisted turn (memory ingestion, RL
// sample collection). It runs on the recorder goroutine: keep it quick and
// push slow work into a job.
type TurnListener func(ctx context.Context, t *store.Turn)

// JobHandler runs one durable background job. Returning an error retries it
// with backoff, up to MaxJobAttempts. ctx is cancelled when the host stops:
// a handler that returns then has its job requeued, not failed.
type JobHandler func(ctx context.Context, payload json.RawMessage) error

// MaxJobAttempts bounds retries of a failing job.
const MaxJobAttempts = 5

// New starts a core: its recorder, its job workers and the idle-session reaper.
func New(o Options) *Core {
	if o.Window <= 0 {
		o.Window = 500 * time.Millisecond
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 1024
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = store.DefaultMaxBodyBytes
	}
	if o.JobGrace <= 0 {
		o.JobGrace = 10 * time.Second
	}
	c := &Core{
		st:      o.Store,
		log:     o.Log,
		window:  o.Window,
		idle:    o.SessionIdle,
		maxBody: o.MaxBodyBytes,
		bgNice:  min(max(o.BackgroundNice, 0), MaxBackgroundNice),
		closing: make(chan struct{}),
	}
	c.inflight = newInflight()
	c.rec = newRecorder(c, o.QueueSize, o.SpoolDir)
	c.job = newJobs(c, o.JobGrace)
	if n, err := c.st.RequeueRunning(context.Background()); err != nil {
		c.log.Error().Err(err).Msg("requeue interrupted jobs")
	} else if n > 0 {
		c.log.Info().Int("jobs", n).Msg("resumed jobs interrupted by the last shutdown")
	}
	c.bgWG.Add(1)
	go c.rec.loop()
	if c.idle > 0 {
		c.bgWG.Add(1)
		go c.reapLoop()
	}
	return c
}

// AddProvider registers a context provider. Providers render in the order added.
func (c *Core) AddProvider(p Provider) {
	c.mu.Lock()
	c.providers = append(c.providers, p)
	c.mu.Unlock()
}

// OnTurn registers a listener for persisted turns.
func (c *Core) OnTurn(l TurnListener) {
	c.mu.Lock()
	c.listeners = append(c.listeners, l)
	c.mu.Unlock()
}

// OnSessionEnd registers a durable job of the given kind, run once for every
// ended session with a SessionEnd payload (memory flush, skill evolution, RL
// episode close: each its own kind, so one failing does not repeat the others).
func (c *Core) OnSessionEnd(kind string, h JobHandler) {
	c.mu.Lock()
	c.sessionEndKinds = append(c.sessionEndKinds, kind)
	c.mu.Unlock()
	c.HandleJobs(kind, h)
}

// Context asks every provider for its section and renders the block. A
// provider that fails or overruns the window is skipped: the turn proceeds
// with whatever the others returned. The first Context of a session runs
// the session-start listeners first (OnSessionStart).
func (c *Core) Context(ctx context.Context, q Query) Injection {
	return c.ContextLazy(ctx, q).Injection()
}

// ContextLazy is Context with the block not yet written out: the proxy
// writes it where it goes, JSON-escaped into the forwarded body, without
// first building the block's string (several KB per turn).
func (c *Core) ContextLazy(ctx context.Context, q Query) Lazy {
	c.noteSession(ctx, SessionStart{SessionID: q.SessionID, Agent: q.Agent, Scope: q.Scope, Reason: StartFirstTurn})
	c.mu.RLock()
	providers := c.providers
	c.mu.RUnlock()
	if len(providers) == 0 {
		return Lazy{}
	}
	ctx, cancel := context.WithTimeout(ctx, c.window)
	defer cancel()
	// Every provider but the last starts at once on its own goroutine, the
	// last runs on the caller's, and then the caller waits for each of the
	// others in turn: no goroutine in between, whose scheduling would be
	// one more wait for a P on the request path (a trace of the loaded
	// proxybench showed such hops runnable for milliseconds behind
	// learning's goroutines), and one goroutine fewer per turn.
	last := len(providers) - 1
	answers := make([]chan providerAnswer, last)
	for i, p := range providers[:last] {
		answers[i] = c.start(ctx, p, q)
	}
	sections := make([]Section, len(providers))
	sections[last] = c.answer(providers[last], c.askInline(ctx, providers[last], q))
	for i, p := range providers[:last] {
		sections[i] = c.await(ctx, p, answers[i])
	}
	return renderOwned(sections)
}

type providerAnswer struct {
	s   Section
	err error
}

// start asks p for its section on a goroutine of its own; the answer
// channel is buffered, so a provider that overruns the window finishes
// and exits without anyone waiting for it.
func (c *Core) start(ctx context.Context, p Provider, q Query) chan providerAnswer {
	done := make(chan providerAnswer, 1)
	go func() { done <- c.ask(ctx, p, q) }()
	return done
}

// ask is p's answer; a panic is an error.
func (c *Core) ask(ctx context.Context, p Provider, q Query) (a providerAnswer) {
	defer func() {
		if r := recover(); r != nil {
			a = providerAnswer{err: fmt.Errorf("provider panicked: %v", r)}
		}
	}()
	s, err := p.Context(ctx, q)
	return providerAnswer{s, err}
}

// await is p's section, or none if it failed or the window ended first.
// An answer already given wins over the window's end (awaited after a
// slower provider, it is ready by then).
func (c *Core) await(ctx context.Context, p Provider, done chan providerAnswer) Section {
	var r providerAnswer
	select {
	case r = <-done:
	default:
		select {
		case r = <-done:
		case <-ctx.Done():
			c.log.Warn().Str("provider", p.Name()).Msg("context provider timed out; turn proceeds without it")
			return Section{}
		}
	}
	return c.answer(p, r)
}

// askInline is ask on the caller's goroutine: an answer given after the
// window ended is late, as it is from a provider on its own goroutine.
func (c *Core) askInline(ctx context.Context, p Provider, q Query) providerAnswer {
	a := c.ask(ctx, p, q)
	if a.err == nil && ctx.Err() != nil {
		a.err = fmt.Errorf("answered after the window (%w)", ctx.Err())
	}
	return a
}

// answer is the section of p's answer, or none if it failed.
func (c *Core) answer(p Provider, r providerAnswer) Section {
	if r.err != nil {
		c.log.Warn().Err(r.err).Str("provider", p.Name()).Msg("context provider failed; turn proceeds without it")
		return Section{}
	}
	return r.s
}

// blockHeader follows the opening marker.
const blockHeader = "\nContext from MetaClaw, the user's learning layer. Use it when it helps; the user's instructions take precedence.\n"

// Render joins sections into one block between the markers.
func Render(sections []Section) Injection { return RenderLazy(sections).Injection() }

// Lazy is a rendered block not yet written out, with what it holds.
type Lazy struct {
	IDs    []string // ids of everything injected
	Tokens int
	// parts are the sections with a body, bodies trimmed; size is the
	// block's length in bytes (0: nothing to inject).
	parts []Section
	size  int
}

// RenderLazy is Render without building the block's string.
func RenderLazy(sections []Section) Lazy {
	return renderOwned(append([]Section(nil), sections...))
}

// renderOwned is RenderLazy on sections the caller gives up: the
// sections with a body are kept in place, trimmed.
func renderOwned(sections []Section) Lazy {
	l := Lazy{parts: sections[:0]}
	for _, s := range sections {
		body := strings.TrimSpace(s.Body)
		if body == "" {
			continue
		}
		s.Body = body
		l.parts = append(l.parts, s)
		l.size += len("\n## ") + len(s.Title) + len("\n\n") + len(body) + len("\n")
		l.IDs = append(l.IDs, s.IDs...)
	}
	if len(l.parts) == 0 {
		return l
	}
	l.size += len(block.Begin) + len(blockHeader) + len(block.End)
	l.Tokens = countBlock(l.parts, l.size, l.String)
	return l
}

// Len is the block's length in bytes.
func (l Lazy) Len() int { return l.size }

// Injection is the block written out.
func (l Lazy) Injection() Injection {
	return Injection{Block: l.String(), IDs: l.IDs, Tokens: l.Tokens}
}

// String is the block, markers included ("" when there is nothing to inject).
func (l Lazy) String() string {
	if l.size == 0 {
		return ""
	}
	var b strings.Builder
	b.Grow(l.size)
	l.write(func(s string) { b.WriteString(s) })
	return b.String()
}

// AppendJSON appends the block as the inside of a JSON string literal
// (escaped byte for byte as jsonstr.AppendBody escapes String(): every
// piece ends before an ASCII byte, so no UTF-8 sequence spans two).
func (l Lazy) AppendJSON(dst []byte) []byte {
	l.write(func(s string) { dst = jsonstr.AppendBody(dst, s) })
	return dst
}

// write passes the block's pieces in order.
func (l Lazy) write(w func(string)) {
	if l.size == 0 {
		return
	}
	w(block.Begin)
	w(blockHeader)
	for _, s := range l.parts {
		w("\n## ")
		w(s.Title)
		w("\n\n")
		w(s.Body)
		w("\n")
	}
	w(block.End)
}

// frames remembers the frame's count by the titles of the sections present
// (the frame depends on nothing else, and tokenizing it costs ~50 µs), so a
// hit builds no frame. Titles are the providers' own constants: a handful of
// combinations in practice, far below the bound.
var frames = tokens.NewCache(64)

// countBlock measures the block of parts (the sections with a body,
// trimmed), size bytes long. When every section measured its own body
// (providers do, to fit their budgets), only the small frame around them
// is counted: re-tokenizing a 1,500-token block costs ~0.5 ms per turn.
func countBlock(parts []Section, size int, rendered func() string) int {
	sum, frame := 0, size
	var key [256]byte
	k := key[:0]
	for _, s := range parts {
		if s.Tokens <= 0 {
			return tokens.Count(rendered())
		}
		sum += s.Tokens
		frame -= len(s.Body)
		k = append(append(k, s.Title...), 0)
	}
	if frame < 0 {
		return tokens.Count(rendered())
	}
	return sum + frames.CountKeyed(k, func() string { return frameOf(parts) })
}

// frameOf is the block's text without the sections' bodies.
func frameOf(sections []Section) string {
	var b strings.Builder
	b.WriteString(block.Begin)
	b.WriteString(blockHeader)
	for _, s := range sections {
		if strings.TrimSpace(s.Body) != "" {
			b.WriteString("\n## " + s.Title + "\n\n\n")
		}
	}
	b.WriteString(block.End)
	return b.String()
}

// BlockKey identifies an injected block (32 hex digits, the shape of a W3C
// trace id). A hook that injected a block registers its identity under this
// key, so the proxy can file the request that carries the block under the
// hook's agent and session when the client sends no trace id (Claude Code).
func BlockKey(block string) string {
	sum := sha256.Sum256([]byte(block))
	return hex.EncodeToString(sum[:16])
}

// FindBlock returns the first complete injected block in text, or "".
func FindBlock(text string) string {
	i := strings.Index(text, block.Begin)
	if i < 0 {
		return ""
	}
	j := strings.Index(text[i:], block.End)
	if j < 0 {
		return ""
	}
	return text[i : i+j+len(block.End)]
}

// SessionEnd is the payload of the jobs enqueued when a session ends.
type SessionEnd struct {
	SessionID string    `json:"session_id"`
	Reason    string    `json:"reason"`
	At        time.Time `json:"at"`
}

// EndSession closes a session: it waits for the session's queued turns to be
// persisted, then marks it ended and enqueues its follow-up work in one
// transaction.
func (c *Core) EndSession(ctx context.Context, sessionID, reason string) error {
	if sessionID == "" {
		return errors.New("end session: empty session id")
	}
	if err := c.Flush(ctx); err != nil {
		return fmt.Errorf("end session %s: %w", sessionID, err)
	}
	now := time.Now()
	c.mu.RLock()
	kinds := c.sessionEndKinds
	c.mu.RUnlock()
	payload, _ := json.Marshal(SessionEnd{SessionID: sessionID, Reason: reason, At: now})
	jobs := make([]store.NewJob, len(kinds))
	for i, kind := range kinds {
		jobs[i] = store.NewJob{Kind: kind, Payload: string(payload), RunAfter: now}
	}
	if err := c.st.EndSession(ctx, sessionID, reason, now, jobs...); err != nil {
		return err
	}
	c.forgetSession(sessionID)
	for _, kind := range kinds {
		c.job.wake(kind)
	}
	c.log.Debug().Str("session", sessionID).Str("reason", reason).Msg("session ended")
	return nil
}

// Stats is the core's part of `metaclaw status`.
type Stats struct {
	store.Counts
	ObservedSinceStart int64 `json:"observed_since_start"`
	QueuedTurns        int   `json:"queued_turns"`
	UnpersistedTurns   int64 `json:"unpersisted_turns"`
	// SpooledTurns wait in the spool for the store to take them.
	SpooledTurns int64 `json:"spooled_turns,omitempty"`
	// NotStoredWhole counts turns the store refused, recorded as failed
	// stubs (status 507) instead.
	NotStoredWhole int64    `json:"turns_not_stored_whole,omitempty"`
	Providers      []string `json:"context_providers"`
	// Learned holds counts reported by providers that implement Counter
	// (e.g. "skills", "memories").
	Learned map[string]int `json:"learned"`
	// Usage is what the layer's own LLM calls cost, per purpose.
	Usage map[string]store.UsageTotal `json:"llm_usage"`
}

// Counter is implemented by providers that can say how much they hold.
type Counter interface {
	Counts(ctx context.Context) map[string]int
}

// Stats reports counts from the store and the core's queues.
func (c *Core) Stats(ctx context.Context) (Stats, error) {
	counts, err := c.st.Counts(ctx)
	c.mu.RLock()
	providers := c.providers
	c.mu.RUnlock()
	names := make([]string, 0, len(providers))
	learned := map[string]int{}
	for _, p := range providers {
		names = append(names, p.Name())
		if ct, ok := p.(Counter); ok {
			for k, v := range ct.Counts(ctx) {
				learned[k] += v
			}
		}
	}
	usage, uerr := c.st.UsageByPurpose(ctx)
	if err == nil {
		err = uerr
	}
	return Stats{
		Usage:              usage,
		Counts:             counts,
		ObservedSinceStart: c.rec.observed.Load(),
		QueuedTurns:        len(c.rec.queue),
		UnpersistedTurns:   c.rec.dropped.Load(),
		SpooledTurns:       c.rec.spooled.Load(),
		NotStoredWhole:     c.rec.stubbed.Load(),
		Providers:          names,
		Learned:            learned,
	}, err
}

// Close persists every queued turn and stops background work: running
// jobs are cancelled (and requeued); pending ones stay in the store and
// resume at the next start.
func (c *Core) Close() error {
	c.closeMu.Lock()
	already := c.closed.Swap(true)
	c.closeMu.Unlock()
	if already {
		return nil
	}
	close(c.closing)
	c.job.stop()
	c.bgWG.Wait()
	return nil
}
