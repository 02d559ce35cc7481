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
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/host/tokens"
)

// Markers delimit the injected block. They are stable so that a request that
// already carries the block (hook path and proxy path on one client) is not
// injected twice, and so extraction can strip it before learning.
const (
	BeginMarker = "<metaclaw_context>"
	EndMarker   = "</metaclaw_context>"
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
// concurrent use and must not write on the request path.
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
}

// Core implements the three calls.
type Core struct {
	st     store.Store
	log    zerolog.Logger
	window time.Duration
	idle   time.Duration

	mu        sync.RWMutex
	providers []Provider
	listeners []TurnListener
	handlers  map[string]JobHandler
	// sessionEndKinds are the job kinds enqueued for every ended session.
	sessionEndKinds []string
	tools           map[string]Tool
	sessions        sessionTracker

	queue    chan *store.Turn
	observed atomic.Int64 // turns persisted since start
	dropped  atomic.Int64 // turns that could not be persisted (logged)
	closing  chan struct{}
	wg       sync.WaitGroup
	jobWake  chan struct{}
	flushReq chan chan struct{}
	closed   atomic.Bool
	closeMu  sync.RWMutex // Observe holds it shared so Close never strands a queued turn
}

// TurnListener is told about every persisted turn (memory ingestion, RL
// sample collection). It runs on the recorder goroutine: keep it quick and
// push slow work into a job.
type TurnListener func(ctx context.Context, t *store.Turn)

// JobHandler runs one durable background job. Returning an error retries it
// with backoff, up to MaxJobAttempts.
type JobHandler func(ctx context.Context, payload json.RawMessage) error

// MaxJobAttempts bounds retries of a failing job.
const MaxJobAttempts = 5

// New starts a core: its recorder and its job runner.
func New(o Options) *Core {
	if o.Window <= 0 {
		o.Window = 500 * time.Millisecond
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 1024
	}
	c := &Core{
		st:       o.Store,
		log:      o.Log,
		window:   o.Window,
		idle:     o.SessionIdle,
		handlers: map[string]JobHandler{},
		queue:    make(chan *store.Turn, o.QueueSize),
		closing:  make(chan struct{}),
		jobWake:  make(chan struct{}, 1),
		flushReq: make(chan chan struct{}),
	}
	if n, err := c.st.RequeueRunning(context.Background()); err != nil {
		c.log.Error().Err(err).Msg("requeue interrupted jobs")
	} else if n > 0 {
		c.log.Info().Int("jobs", n).Msg("resumed jobs interrupted by the last shutdown")
	}
	c.wg.Add(2)
	go c.recordLoop()
	go c.jobLoop()
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

// HandleJobs registers the handler for a job kind.
func (c *Core) HandleJobs(kind string, h JobHandler) {
	c.mu.Lock()
	c.handlers[kind] = h
	c.mu.Unlock()
	c.wakeJobs()
}

// Context asks every provider for its section and renders the block. A
// provider that fails or overruns the window is skipped: the turn proceeds
// with whatever the others returned. The first Context of a session runs
// the session-start listeners first (OnSessionStart).
func (c *Core) Context(ctx context.Context, q Query) Injection {
	c.noteSession(ctx, SessionStart{SessionID: q.SessionID, Agent: q.Agent, Scope: q.Scope, Reason: StartFirstTurn})
	c.mu.RLock()
	providers := c.providers
	c.mu.RUnlock()
	if len(providers) == 0 {
		return Injection{}
	}
	ctx, cancel := context.WithTimeout(ctx, c.window)
	defer cancel()
	sections := make([]Section, len(providers))
	if len(providers) == 1 {
		sections[0] = c.ask(ctx, providers[0], q)
	} else {
		var wg sync.WaitGroup
		for i, p := range providers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sections[i] = c.ask(ctx, p, q)
			}()
		}
		wg.Wait()
	}
	return Render(sections)
}

func (c *Core) ask(ctx context.Context, p Provider, q Query) Section {
	type result struct {
		s   Section
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{err: fmt.Errorf("provider panicked: %v", r)}
			}
		}()
		s, err := p.Context(ctx, q)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			c.log.Warn().Err(r.err).Str("provider", p.Name()).Msg("context provider failed; turn proceeds without it")
			return Section{}
		}
		return r.s
	case <-ctx.Done():
		c.log.Warn().Str("provider", p.Name()).Msg("context provider timed out; turn proceeds without it")
		return Section{}
	}
}

// Render joins sections into one block between the markers.
func Render(sections []Section) Injection {
	var b strings.Builder
	var inj Injection
	for _, s := range sections {
		body := strings.TrimSpace(s.Body)
		if body == "" {
			continue
		}
		if b.Len() == 0 {
			b.WriteString(BeginMarker)
			b.WriteString("\nContext from MetaClaw, the user's learning layer. Use it when it helps; the user's instructions take precedence.\n")
		}
		b.WriteString("\n## ")
		b.WriteString(s.Title)
		b.WriteString("\n\n")
		b.WriteString(body)
		b.WriteString("\n")
		inj.IDs = append(inj.IDs, s.IDs...)
	}
	if b.Len() == 0 {
		return inj
	}
	b.WriteString(EndMarker)
	inj.Block = b.String()
	inj.Tokens = countBlock(sections, inj.Block)
	return inj
}

// countBlock measures the block. When every section measured its own body
// (providers do, to fit their budgets), only the small frame around them is
// tokenized again: re-tokenizing a 1,500-token block costs ~0.5 ms per turn.
func countBlock(sections []Section, block string) int {
	sum, frame := 0, len(block)
	for _, s := range sections {
		body := strings.TrimSpace(s.Body)
		if body == "" {
			continue
		}
		if s.Tokens <= 0 {
			return tokens.Count(block)
		}
		sum += s.Tokens
		frame -= len(body)
	}
	if frame < 0 {
		return tokens.Count(block)
	}
	var b strings.Builder
	b.WriteString(BeginMarker)
	b.WriteString("\nContext from MetaClaw, the user's learning layer. Use it when it helps; the user's instructions take precedence.\n")
	for _, s := range sections {
		if strings.TrimSpace(s.Body) != "" {
			b.WriteString("\n## " + s.Title + "\n\n\n")
		}
	}
	b.WriteString(EndMarker)
	return sum + tokens.Count(b.String())
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
	i := strings.Index(text, BeginMarker)
	if i < 0 {
		return ""
	}
	j := strings.Index(text[i:], EndMarker)
	if j < 0 {
		return ""
	}
	return text[i : i+j+len(EndMarker)]
}

// Strip removes every injected block from text (so the layer never learns
// from its own output). Unterminated blocks are cut to the end.
func Strip(text string) string {
	for {
		i := strings.Index(text, BeginMarker)
		if i < 0 {
			return text
		}
		j := strings.Index(text[i:], EndMarker)
		if j < 0 {
			return strings.TrimRight(text[:i], " \n")
		}
		end := i + j + len(EndMarker)
		text = strings.TrimRight(text[:i], " \n") + strings.TrimLeft(text[end:], "\n")
		if strings.TrimSpace(text) == "" {
			return ""
		}
	}
}

// Observe queues a completed turn for persistence. It blocks only when the
// queue is full (backpressure rather than loss). After Close it persists
// synchronously.
func (c *Core) Observe(t *store.Turn) {
	if t.CreatedAt.IsZero() {
		t.CreatedAt = time.Now()
	}
	c.closeMu.RLock()
	defer c.closeMu.RUnlock()
	if c.closed.Load() {
		c.persist([]*store.Turn{t})
		return
	}
	c.queue <- t
}

func (c *Core) recordLoop() {
	defer c.wg.Done()
	batch := make([]*store.Turn, 0, 64)
	drain := func() {
		for len(batch) < cap(batch) {
			select {
			case t := <-c.queue:
				batch = append(batch, t)
			default:
				return
			}
		}
	}
	for {
		select {
		case t := <-c.queue:
			batch = append(batch[:0], t)
			drain()
			c.persist(batch)
		case done := <-c.flushReq:
			for len(c.queue) > 0 {
				batch = batch[:0]
				drain()
				c.persist(batch)
			}
			close(done)
		case <-c.closing:
			for len(c.queue) > 0 {
				batch = batch[:0]
				drain()
				c.persist(batch)
			}
			return
		}
	}
}

func (c *Core) persist(batch []*store.Turn) {
	if len(batch) == 0 {
		return
	}
	ctx := context.Background()
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if err = c.st.RecordTurns(ctx, batch); err == nil {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 50 * time.Millisecond)
	}
	if err != nil {
		c.dropped.Add(int64(len(batch)))
		c.log.Error().Err(err).Int("turns", len(batch)).Msg("could not persist turns")
		return
	}
	c.observed.Add(int64(len(batch)))
	c.mu.RLock()
	listeners := c.listeners
	c.mu.RUnlock()
	for _, t := range batch {
		for _, l := range listeners {
			l(ctx, t)
		}
	}
}

// Flush waits until every turn observed before the call is persisted.
func (c *Core) Flush(ctx context.Context) error {
	if c.closed.Load() {
		return nil
	}
	done := make(chan struct{})
	select {
	case c.flushReq <- done:
	case <-c.closing:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// SessionEnd is the payload of the jobs enqueued when a session ends.
type SessionEnd struct {
	SessionID string    `json:"session_id"`
	Reason    string    `json:"reason"`
	At        time.Time `json:"at"`
}

// EndSession closes a session: it waits for the session's queued turns to be
// persisted, marks it ended, and enqueues its follow-up work durably.
func (c *Core) EndSession(ctx context.Context, sessionID, reason string) error {
	if sessionID == "" {
		return errors.New("end session: empty session id")
	}
	if err := c.Flush(ctx); err != nil {
		return fmt.Errorf("end session %s: %w", sessionID, err)
	}
	now := time.Now()
	if err := c.st.EndSession(ctx, sessionID, reason, now); err != nil {
		return err
	}
	c.forgetSession(sessionID)
	c.mu.RLock()
	kinds := c.sessionEndKinds
	c.mu.RUnlock()
	payload, _ := json.Marshal(SessionEnd{SessionID: sessionID, Reason: reason, At: now})
	for _, kind := range kinds {
		if _, err := c.st.EnqueueJob(ctx, kind, string(payload), now); err != nil {
			return fmt.Errorf("end session %s: %w", sessionID, err)
		}
	}
	if len(kinds) > 0 {
		c.wakeJobs()
	}
	c.log.Debug().Str("session", sessionID).Str("reason", reason).Msg("session ended")
	return nil
}

// Enqueue adds a durable job of the given kind.
func (c *Core) Enqueue(ctx context.Context, kind string, payload any, runAfter time.Time) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("enqueue %s: %w", kind, err)
	}
	if _, err := c.st.EnqueueJob(ctx, kind, string(b), runAfter); err != nil {
		return err
	}
	c.wakeJobs()
	return nil
}

func (c *Core) wakeJobs() {
	select {
	case c.jobWake <- struct{}{}:
	default:
	}
}

// jobLoop runs ready jobs one at a time and reaps idle sessions.
func (c *Core) jobLoop() {
	defer c.wg.Done()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	lastReap := time.Now()
	for {
		for c.runOneJob() {
			select {
			case <-c.closing:
				return
			default:
			}
		}
		if c.idle > 0 && time.Since(lastReap) >= min(c.idle/4, time.Minute) {
			lastReap = time.Now()
			c.reapIdle()
		}
		select {
		case <-c.closing:
			return
		case <-c.jobWake:
		case <-tick.C:
		}
	}
}

func (c *Core) runOneJob() bool {
	c.mu.RLock()
	kinds := make([]string, 0, len(c.handlers))
	for k := range c.handlers {
		kinds = append(kinds, k)
	}
	c.mu.RUnlock()
	if len(kinds) == 0 {
		return false
	}
	sort.Strings(kinds)
	ctx := context.Background()
	job, err := c.st.ClaimJob(ctx, kinds, time.Now())
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			c.log.Error().Err(err).Msg("claim job")
		}
		return false
	}
	c.mu.RLock()
	h := c.handlers[job.Kind]
	c.mu.RUnlock()
	runErr := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("job handler panicked: %v", r)
			}
		}()
		return h(ctx, json.RawMessage(job.Payload))
	}()
	if runErr == nil {
		if err := c.st.FinishJob(ctx, job.ID); err != nil {
			c.log.Error().Err(err).Msg("finish job")
		}
		return true
	}
	var retryAt time.Time
	if job.Attempts < MaxJobAttempts {
		retryAt = time.Now().Add(time.Duration(1<<job.Attempts) * time.Second)
	}
	c.log.Warn().Err(runErr).Str("kind", job.Kind).Int64("job", job.ID).Int("attempt", job.Attempts).Bool("final", retryAt.IsZero()).Msg("background job failed")
	if err := c.st.FailJob(ctx, job.ID, runErr.Error(), retryAt); err != nil {
		c.log.Error().Err(err).Msg("record job failure")
	}
	return true
}

func (c *Core) reapIdle() {
	ctx := context.Background()
	ids, err := c.st.IdleSessions(ctx, time.Now().Add(-c.idle))
	if err != nil {
		c.log.Error().Err(err).Msg("find idle sessions")
		return
	}
	for _, id := range ids {
		if err := c.EndSession(ctx, id, "idle"); err != nil {
			c.log.Error().Err(err).Str("session", id).Msg("end idle session")
		}
	}
}

// Stats is the core's part of `metaclaw status`.
type Stats struct {
	store.Counts
	ObservedSinceStart int64    `json:"observed_since_start"`
	QueuedTurns        int      `json:"queued_turns"`
	UnpersistedTurns   int64    `json:"unpersisted_turns"`
	Providers          []string `json:"context_providers"`
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
		ObservedSinceStart: c.observed.Load(),
		QueuedTurns:        len(c.queue),
		UnpersistedTurns:   c.dropped.Load(),
		Providers:          names,
		Learned:            learned,
	}, err
}

// Close persists every queued turn and stops background work. Jobs still
// pending stay in the store and resume at the next start.
func (c *Core) Close() error {
	c.closeMu.Lock()
	already := c.closed.Swap(true)
	c.closeMu.Unlock()
	if already {
		return nil
	}
	close(c.closing)
	c.wg.Wait()
	return nil
}
