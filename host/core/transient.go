package core

import (
	"encoding/json"
	"fmt"
	"time"
)

// maxTransient bounds the transient jobs queued per kind; callers queue one
// per session at most, so this is reached only by a runaway caller.
const maxTransient = 100000

// EnqueueTransient queues a job in this process's memory only. It is for
// work whose input is durable and found again without the job (memory's
// ingest job: a session's recorded turns are ingested at the session's end,
// or by the agent's next session's catch-up, whatever became of the job),
// so queueing costs no commit and a turn listener does not wait for the
// store's one writer. The kind's workers run transient and durable jobs in
// turn with the same handler. A transient job that fails is enqueued
// durably and retried like any other; one queued at a crash, or stopped or
// queued at shutdown, is gone (its input is not). The kind's handler must
// be registered.
func (c *Core) EnqueueTransient(kind string, payload any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("enqueue %s: %w", kind, err)
	}
	j := c.job
	j.mu.Lock()
	k := j.kinds[kind]
	switch {
	case k == nil:
		j.mu.Unlock()
		return fmt.Errorf("enqueue %s: no handler registered for the kind", kind)
	case j.stopped:
		j.mu.Unlock()
		return nil // shutting down: gone, as documented
	case len(k.transient) >= maxTransient:
		j.mu.Unlock()
		return fmt.Errorf("enqueue %s: %d transient jobs already queued", kind, maxTransient)
	}
	k.transient = append(k.transient, b)
	j.transientInFlight.Add(1)
	j.mu.Unlock()
	k.wake()
	return nil
}

// TransientQueued is how many transient jobs of kind wait to start.
func (c *Core) TransientQueued(kind string) int {
	j := c.job
	j.mu.Lock()
	defer j.mu.Unlock()
	if k := j.kinds[kind]; k != nil {
		return len(k.transient)
	}
	return 0
}

// TransientInFlight is how many transient jobs of any kind are queued or
// running (one that failed counts until its durable retry is queued): with
// the durable jobs pending or running, what learning has still to do.
func (c *Core) TransientInFlight() int {
	return int(c.job.transientInFlight.Load())
}

// runTransient runs one of k's transient jobs; false when none is queued.
func (j *jobs) runTransient(k *kindWorkers) bool {
	j.mu.Lock()
	if len(k.transient) == 0 {
		j.mu.Unlock()
		return false
	}
	payload := k.transient[0]
	k.transient[0] = nil
	k.transient = k.transient[1:]
	if len(k.transient) == 0 {
		k.transient = nil // let the backing array go
	}
	h := k.handler
	j.mu.Unlock()
	k.wake() // a sibling worker may take the next one meanwhile
	defer j.transientInFlight.Add(-1)
	err := runHandler(j.ctx, h, payload)
	switch {
	case err == nil:
	case j.ctx.Err() != nil:
		j.c.log.Debug().Str("kind", k.kind).Msg("transient job stopped by shutdown; its input stays for the next start")
	default:
		// Retried like a durable job from here on (its first retry's backoff).
		_, serr := j.c.st.EnqueueJob(jobsBookkeeping, k.kind, string(payload), time.Now().Add(2*time.Second))
		ev := j.c.log.Warn().Err(err)
		if serr != nil {
			ev = j.c.log.Error().Err(err).AnErr("enqueue_error", serr)
		}
		ev.Str("kind", k.kind).Bool("retried", serr == nil).Msg("background job failed")
	}
	return true
}
