package core

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/metaclaw-go/metaclaw/host/store"
)

// StatusNotStored marks a turn the store refused whole (a bad row): it is
// recorded without its bodies, with this status and the reason in Error.
const StatusNotStored = 507

// maxDurableWait bounds how long ObserveDurable holds an answer back when
// the store is stuck; the turn stays queued and is written later.
const maxDurableWait = 30 * time.Second

// queued is a turn waiting for the recorder; done, when set, receives the
// outcome once the turn is committed (or spooled).
type queued struct {
	t    *store.Turn
	done chan error
	seg  uint64 // the turn's journal segment (0: not journaled)
}

// recorder writes turns in batches on one goroutine: turns that arrive
// while a batch commits form the next one (group commit), so a waiting
// caller costs one commit however many wait with it.
type recorder struct {
	c     *Core
	queue chan queued
	flush chan chan struct{}
	spool *spool
	// journal holds answered turns until they are committed (with a
	// spool directory only); left are segments of an earlier process.
	journal *journal
	left    []string

	// aside, when set, commits the batches nobody waits for on a
	// background thread (persistAside).
	aside chan asideBatch

	observed atomic.Int64 // turns persisted since start
	dropped  atomic.Int64 // turns neither stored nor spooled (logged)
	stubbed  atomic.Int64 // bad rows stored as failed stubs
	spooled  atomic.Int64 // turns waiting in the spool
}

func newRecorder(c *Core, size int, spoolDir string) *recorder {
	r := &recorder{c: c, queue: make(chan queued, size), flush: make(chan chan struct{})}
	if spoolDir != "" {
		r.spool = &spool{dir: spoolDir}
		r.spooled.Store(int64(r.spool.count()))
		j, left, err := openJournal(spoolDir)
		if err != nil {
			c.log.Error().Err(err).Msg("no turn journal: answers wait for their turn's commit")
		}
		r.journal, r.left = j, left
	}
	return r
}

// Observe queues a completed turn for persistence. It blocks only when the
// queue is full (backpressure rather than loss). After Close it persists
// synchronously.
func (c *Core) Observe(t *store.Turn) {
	c.enqueueTurn(t, nil)
}

// ObserveDurable queues a turn and returns once it is durable, so that an
// answer released after it can never belong to a lost turn: appended to the
// turn journal when there is one (journal.go; the commit follows in the
// background), else committed to the write-ahead log (or spooled to disk
// when the store refuses it), concurrent callers sharing commits. It gives
// up waiting (the turn stays queued) when ctx ends or after 30 s.
func (c *Core) ObserveDurable(ctx context.Context, t *store.Turn) error {
	if c.journalTurn(t) {
		return nil
	}
	done := make(chan error, 1)
	c.enqueueTurn(t, done)
	timer := time.NewTimer(maxDurableWait)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return errors.New("turn not yet persisted after 30 s; it stays queued")
	}
}

func (c *Core) enqueueTurn(t *store.Turn, done chan error) {
	c.prepareTurn(t)
	c.closeMu.RLock()
	defer c.closeMu.RUnlock()
	if c.closed.Load() {
		c.rec.persist([]queued{{t: t, done: done}})
		return
	}
	c.rec.queue <- queued{t: t, done: done}
}

func (c *Core) prepareTurn(t *store.Turn) {
	if t.CreatedAt.IsZero() {
		t.CreatedAt = time.Now()
	}
	store.BoundTurn(t, c.maxBody)
}

// journalTurn appends the turn to the journal and queues it; false when
// there is no journal or it refused the turn (then the caller waits for
// the commit instead).
func (c *Core) journalTurn(t *store.Turn) bool {
	j := c.rec.journal
	if j == nil {
		return false
	}
	c.prepareTurn(t)
	c.closeMu.RLock()
	defer c.closeMu.RUnlock()
	if c.closed.Load() {
		return false
	}
	seg, err := j.append(t)
	if err != nil {
		c.log.Warn().Err(err).Msg("turn journal refused a turn; its answer waits for the commit")
		return false
	}
	c.rec.queue <- queued{t: t, seg: seg}
	return true
}

// Flush waits until every turn observed before the call is persisted.
func (c *Core) Flush(ctx context.Context) error {
	if c.closed.Load() {
		return nil
	}
	done := make(chan struct{})
	select {
	case c.rec.flush <- done:
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

const batchSize = 64

func (r *recorder) loop() {
	defer r.c.bgWG.Done()
	batch := make([]queued, 0, batchSize)
	drain := func() {
		for len(batch) < cap(batch) {
			select {
			case q := <-r.queue:
				batch = append(batch, q)
			default:
				return
			}
		}
	}
	drainAll := func() {
		for len(r.queue) > 0 {
			batch = batch[:0]
			drain()
			r.persist(batch)
		}
	}
	if r.journal != nil && r.c.bgNice > 0 {
		r.aside = make(chan asideBatch)
		defer close(r.aside)
		r.c.GoBackground(func() {
			for b := range r.aside {
				r.persist(b.batch)
				close(b.done)
			}
		})
	}
	r.recoverJournal(r.left)
	r.left = nil
	r.replaySpool()
	retry := time.NewTicker(30 * time.Second)
	defer retry.Stop()
	for {
		select {
		case q := <-r.queue:
			batch = append(batch[:0], q)
			drain()
			var flushed chan struct{}
			if journaledOnly(batch) {
				batch, flushed = r.gather(batch)
			}
			if journaledOnly(batch) && flushed == nil {
				r.persistAside(batch)
			} else {
				r.persist(batch)
			}
			if flushed != nil {
				drainAll()
				close(flushed)
			}
		case done := <-r.flush:
			drainAll()
			close(done)
		case <-retry.C:
			r.replaySpool()
		case <-r.c.closing:
			drainAll()
			if r.journal != nil {
				r.journal.close()
			}
			return
		}
	}
}

// gatherWait is how long the recorder waits for the next turn when nobody
// waits for the ones it has (journaled answers, plain Observe); it keeps
// gathering while turns keep coming, for up to gatherMax since the first.
// One commit for several turns costs SQLite's one writer, and the CPU the
// requests share with it, much less than one commit each: the commit's
// write-ahead-log frames (a pwrite each for header and page) and the
// turns' index and session pages are shared by the batch
// (BenchmarkRecordTurns: a turn in a batch of 16 costs about a third of
// one committed alone). Nothing waits for these commits: the answers were
// released on the journal, which keeps the turns until they commit.
const (
	gatherWait = 10 * time.Millisecond
	gatherMax  = 100 * time.Millisecond
)

func journaledOnly(batch []queued) bool {
	for _, q := range batch {
		if q.done != nil {
			return false
		}
	}
	return true
}

// gather adds turns to the batch until none has come for gatherWait,
// gatherMax has passed, the batch is full, or a turn with a waiter
// arrives; a Flush or Close meanwhile ends the wait (a flush is returned
// for the caller to complete after the batch).
func (r *recorder) gather(batch []queued) ([]queued, chan struct{}) {
	idle := time.NewTimer(gatherWait)
	defer idle.Stop()
	deadline := time.NewTimer(gatherMax)
	defer deadline.Stop()
	for len(batch) < cap(batch) {
		select {
		case q := <-r.queue:
			batch = append(batch, q)
			if q.done != nil {
				return batch, nil
			}
			idle.Reset(gatherWait)
		case done := <-r.flush:
			return batch, done
		case <-r.c.closing:
			return batch, nil // the loop sees closing next and drains the rest
		case <-idle.C:
			return batch, nil
		case <-deadline.C:
			return batch, nil
		}
	}
	return batch, nil
}

type asideBatch struct {
	batch []queued
	done  chan struct{}
}

// persistAside persists a batch nobody waits for (its answers were released
// on the turn journal) on a background thread, niced like learning's
// (runtime.background_nice), and waits for it. The commit's CPU and writes
// (a batch is up to 64 turns with their bodies) ran at the requests'
// priority before, and traces of the loaded proxy showed the recorder on a
// core while a slow request's thread waited for one (docs/performance.md).
// Batches someone waits for (no journal, a flush's remainder) stay on the
// recorder's own goroutine.
func (r *recorder) persistAside(batch []queued) {
	if r.aside == nil {
		r.persist(batch)
		return
	}
	done := make(chan struct{})
	r.aside <- asideBatch{batch, done}
	<-done
}

// persist writes a batch in one transaction. One bad row must not cost the
// others: when the batch fails, each turn is written on its own; a turn the
// store still refuses is recorded as a failed stub without its bodies, and
// when even that fails (the store itself is unwritable) the turn goes to the
// spool. Waiters are told once their turn is durable, before listeners run.
func (r *recorder) persist(batch []queued) {
	if len(batch) == 0 {
		return
	}
	ctx := context.Background()
	turns := make([]*store.Turn, len(batch))
	for i, q := range batch {
		turns[i] = q.t
	}
	errs := make([]error, len(batch))
	stored := make([]bool, len(batch))
	if err := r.c.st.RecordTurns(ctx, turns); err == nil {
		for i := range stored {
			stored[i] = true
		}
	} else {
		r.c.log.Warn().Err(err).Int("turns", len(turns)).Msg("batch write failed; writing its turns one by one")
		storeDown := false
		for i, t := range turns {
			if !storeDown {
				stored[i], storeDown = r.storeOne(ctx, t)
			}
			if !stored[i] {
				errs[i] = r.toSpool(t)
			}
		}
	}
	var ok []*store.Turn
	for i, q := range batch {
		if stored[i] {
			ok = append(ok, q.t)
		}
		if errs[i] == nil && r.journal != nil {
			r.journal.done(q.seg) // committed or spooled: the journal may forget it
		}
		if q.done != nil {
			q.done <- errs[i]
		}
	}
	r.notify(ctx, ok)
}

// storeOne writes one turn, retrying briefly, then as a failed stub. It
// reports whether the turn (or its stub) is stored, and whether the store
// refused even the stub.
func (r *recorder) storeOne(ctx context.Context, t *store.Turn) (stored, storeDown bool) {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 50 * time.Millisecond)
		}
		if err = r.c.st.RecordTurns(ctx, []*store.Turn{t}); err == nil {
			return true, false
		}
	}
	stub := *t
	stub.RequestJSON, stub.ResponseText, stub.Reasoning, stub.ToolCallsJSON = "{}", "", "", ""
	stub.Status = StatusNotStored
	stub.Error = store.CutText(fmt.Sprintf("turn could not be stored (the client was answered with status %d): %v", t.Status, err), 2000)
	if serr := r.c.st.RecordTurns(ctx, []*store.Turn{&stub}); serr != nil {
		r.c.log.Error().Err(serr).Str("session", t.SessionID).Msg("store refuses turns")
		return false, true
	}
	r.stubbed.Add(1)
	r.c.log.Error().Err(err).Str("session", t.SessionID).Int64("turn", stub.ID).Msg("turn recorded as failed: the store refused it")
	*t = stub
	return true, false
}

// toSpool keeps a turn the store refused on disk for a later retry.
func (r *recorder) toSpool(t *store.Turn) error {
	if r.spool == nil {
		// Nowhere to keep it: hold the recorder (and, through the full
		// queue, new turns) until the store takes it.
		for delay := 100 * time.Millisecond; ; delay = min(delay*2, 10*time.Second) {
			if err := r.c.st.RecordTurns(context.Background(), []*store.Turn{t}); err == nil {
				r.notify(context.Background(), []*store.Turn{t})
				return nil
			} else if r.c.closed.Load() && delay >= 10*time.Second {
				r.dropped.Add(1)
				r.c.log.Error().Err(err).Str("session", t.SessionID).Msg("turn lost: the store refuses it and no spool is configured")
				return err
			}
			time.Sleep(delay)
		}
	}
	if err := r.spool.write(t); err != nil {
		r.dropped.Add(1)
		r.c.log.Error().Err(err).Str("session", t.SessionID).Msg("turn lost: neither the store nor the spool took it")
		return err
	}
	r.spooled.Add(1)
	r.c.log.Warn().Str("session", t.SessionID).Msg("turn spooled; it is written to the store once the store accepts writes")
	return nil
}

// replaySpool moves spooled turns into the store, a file per transaction.
func (r *recorder) replaySpool() {
	if r.spool == nil || r.spooled.Load() == 0 {
		return
	}
	n, err := r.spool.replay(func(turns []*store.Turn) error {
		if err := r.c.st.RecordTurns(context.Background(), turns); err != nil {
			return err
		}
		r.spooled.Add(-int64(len(turns)))
		r.notify(context.Background(), turns)
		return nil
	})
	if err != nil {
		r.c.log.Warn().Err(err).Msg("spooled turns not written yet; retrying later")
	}
	if n > 0 {
		r.c.log.Info().Int("turns", n).Msg("spooled turns written to the store")
	}
}

// notify counts stored turns and tells the listeners.
func (r *recorder) notify(ctx context.Context, turns []*store.Turn) {
	if len(turns) == 0 {
		return
	}
	r.observed.Add(int64(len(turns)))
	r.c.mu.RLock()
	listeners := r.c.listeners
	r.c.mu.RUnlock()
	for _, t := range turns {
		for _, l := range listeners {
			l(ctx, t)
		}
	}
}
