package core

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/metaclaw-go/metaclaw/host/store"
)

// JobOptions tune the workers of one job kind.
type JobOptions struct {
	// Concurrency is how many jobs of the kind run at once (default 1).
	Concurrency int
}

// jobs runs durable jobs: every kind has its own workers, so a long queue of
// one kind (skill evolution, ~30 s an LLM call) never delays another
// (memory ingestion). Running handlers share a context that Close cancels.
type jobs struct {
	c     *Core
	grace time.Duration

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	kinds   map[string]*kindWorkers
	stopped bool

	transientInFlight atomic.Int64 // transient jobs queued or running
}

type kindWorkers struct {
	kind    string
	handler JobHandler
	wakeup  chan struct{}
	// transient are jobs queued in memory (transient.go); durableNext
	// says which queue runOne tries first, so that neither starves the
	// other. Both under jobs.mu.
	transient   []json.RawMessage
	durableNext bool
}

func newJobs(c *Core, grace time.Duration) *jobs {
	ctx, cancel := context.WithCancel(context.Background())
	return &jobs{c: c, grace: grace, ctx: ctx, cancel: cancel, kinds: map[string]*kindWorkers{}}
}

// HandleJobs registers the handler for a job kind, run by one worker.
func (c *Core) HandleJobs(kind string, h JobHandler) {
	c.HandleJobsWith(kind, JobOptions{}, h)
}

// HandleJobsWith registers the handler for a job kind with its own worker
// limits. Registering a kind again replaces its handler.
func (c *Core) HandleJobsWith(kind string, o JobOptions, h JobHandler) {
	j := c.job
	j.mu.Lock()
	defer j.mu.Unlock()
	if k, ok := j.kinds[kind]; ok {
		k.handler = h
		return
	}
	k := &kindWorkers{kind: kind, handler: h, wakeup: make(chan struct{}, 1)}
	j.kinds[kind] = k
	if j.stopped {
		return
	}
	for i := 0; i < max(o.Concurrency, 1); i++ {
		j.wg.Add(1)
		j.c.GoBackground(func() { j.work(k) })
	}
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
	c.job.wake(kind)
	return nil
}

func (j *jobs) wake(kind string) {
	j.mu.Lock()
	k := j.kinds[kind]
	j.mu.Unlock()
	if k != nil {
		k.wake()
	}
}

func (k *kindWorkers) wake() {
	select {
	case k.wakeup <- struct{}{}:
	default:
	}
}

func (j *jobs) work(k *kindWorkers) {
	defer j.wg.Done()
	tick := time.NewTicker(time.Second) // retries whose backoff ran out, jobs enqueued by other processes
	defer tick.Stop()
	for {
		for j.runOne(k) {
			if j.ctx.Err() != nil {
				return
			}
		}
		select {
		case <-j.ctx.Done():
			return
		case <-k.wakeup:
		case <-tick.C:
		}
	}
}

// jobsBookkeeping is the context of the queue's own writes: they must land
// even while stopping.
var jobsBookkeeping = context.Background()

// runOne runs one ready job of k's kind, transient or durable (taking turns
// when both wait); false when none was ready.
func (j *jobs) runOne(k *kindWorkers) bool {
	if j.ctx.Err() != nil {
		return false
	}
	j.mu.Lock()
	durableFirst := k.durableNext
	k.durableNext = !durableFirst
	j.mu.Unlock()
	if durableFirst {
		return j.runDurable(k) || j.runTransient(k)
	}
	return j.runTransient(k) || j.runDurable(k)
}

// runHandler calls h, a panic being its error.
func runHandler(ctx context.Context, h JobHandler, payload json.RawMessage) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("job handler panicked: %v", r)
		}
	}()
	return h(ctx, payload)
}

// runDurable claims and runs one ready durable job of k's kind; false when
// none was ready.
func (j *jobs) runDurable(k *kindWorkers) bool {
	bg := jobsBookkeeping
	job, err := j.c.st.ClaimJob(bg, []string{k.kind}, time.Now())
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			j.c.log.Error().Err(err).Str("kind", k.kind).Msg("claim job")
		}
		return false
	}
	k.wake() // a sibling worker may take the next one meanwhile
	j.mu.Lock()
	h := k.handler
	j.mu.Unlock()
	runErr := runHandler(j.ctx, h, json.RawMessage(job.Payload))
	switch {
	case runErr == nil:
		if err := j.c.st.FinishJob(bg, job.ID); err != nil {
			j.c.log.Error().Err(err).Msg("finish job")
		}
	case j.ctx.Err() != nil:
		// Stopped mid-run: not the job's fault.
		if err := j.c.st.RequeueJob(bg, job.ID); err != nil {
			j.c.log.Error().Err(err).Msg("requeue cancelled job")
		}
		j.c.log.Info().Str("kind", job.Kind).Int64("job", job.ID).Msg("job cancelled by shutdown; it runs again at the next start")
	default:
		var retryAt time.Time
		if job.Attempts < MaxJobAttempts {
			retryAt = time.Now().Add(time.Duration(1<<job.Attempts) * time.Second)
		}
		j.c.log.Warn().Err(runErr).Str("kind", job.Kind).Int64("job", job.ID).Int("attempt", job.Attempts).Bool("final", retryAt.IsZero()).Msg("background job failed")
		if err := j.c.st.FailJob(bg, job.ID, runErr.Error(), retryAt); err != nil {
			j.c.log.Error().Err(err).Msg("record job failure")
		}
	}
	return true
}

// stop cancels running jobs and waits for their handlers, at most the grace
// period; a handler that ignores its context leaves its job running in the
// store, which the next start requeues.
func (j *jobs) stop() {
	j.mu.Lock()
	j.stopped = true
	j.mu.Unlock()
	j.cancel()
	done := make(chan struct{})
	go func() {
		j.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(j.grace):
		j.c.log.Warn().Dur("grace", j.grace).Msg("background jobs did not stop in time; they are requeued at the next start")
	}
}

// reapLoop ends sessions silent for SessionIdle, on its own goroutine so
// that no job queue delays it.
func (c *Core) reapLoop() {
	defer c.bgWG.Done()
	every := min(max(c.idle/4, 10*time.Millisecond), time.Minute)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-c.closing:
			return
		case <-tick.C:
			c.reapIdle()
		}
	}
}

func (c *Core) reapIdle() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-c.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	ids, err := c.st.IdleSessions(ctx, time.Now().Add(-c.idle))
	if err != nil {
		if ctx.Err() == nil {
			c.log.Error().Err(err).Msg("find idle sessions")
		}
		return
	}
	for _, id := range ids {
		if err := c.EndSession(ctx, id, "idle"); err != nil {
			if ctx.Err() != nil {
				return
			}
			c.log.Error().Err(err).Str("session", id).Msg("end idle session")
		}
	}
}
