package train

import (
	"context"
	"errors"
	"fmt"

	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/batch"
)

// reinitJob restarts the trainer from the last checkpoint (or the one asked
// for) on a new model; the steps applied since are then replayed.
func (l *Loop) reinitJob(ctx context.Context) {
	l.work.Lock()
	defer l.work.Unlock()
	l.mu.Lock()
	why, b, force, fails := l.reinit, l.b, l.forceSwap, l.reinitFail
	l.mu.Unlock()
	if fails >= 2 && l.o.Connect != nil {
		// Restarting on this session keeps failing: open a new one.
		if nb, err := l.o.Connect(ctx); err == nil {
			l.mu.Lock()
			l.b, l.owned = nb, append(l.owned, nb)
			l.mu.Unlock()
			b = nb
		} else {
			l.o.Log.Warn().Err(err).Msg("reconnect to the training backend")
		}
	}
	end, _ := l.begin(StateReplaying, "restarting the trainer from the last checkpoint: "+why, "resume", false)
	s, step, old, err := l.start(ctx, b)
	end()
	if err != nil {
		l.mu.Lock()
		l.reinitFail++
		l.reinitAt = l.o.Now().Add(l.o.Backoff(l.reinitFail))
		l.state, l.reason, l.lastErr = StateError, fmt.Sprintf("cannot restart the trainer (%d attempt(s); %s): %v", l.reinitFail, why, err), err.Error()
		l.mu.Unlock()
		l.o.Log.Error().Err(err).Str("why", why).Msg("restart the trainer from its checkpoint")
		if ctx.Err() == nil {
			l.notifyWaiters(err)
		}
		return
	}
	l.mu.Lock()
	l.swap(s, step, force || l.point.Rollback)
	l.forceSwap = false
	l.mu.Unlock()
	closeTrainer(old)
	l.notifyWaiters(nil)
}

func (l *Loop) notifyWaiters(err error) {
	l.mu.Lock()
	ws := l.waiters
	l.waiters = nil
	l.mu.Unlock()
	for _, w := range ws {
		w <- err
	}
}

// replayJob re-applies the oldest step whose weights were lost, from the
// samples it trained on and the parameters it used, so the restored model
// ends where the lost one was. The last replay saves a checkpoint, so a
// second crash does not replay them again.
func (l *Loop) replayJob(ctx context.Context) {
	l.work.Lock()
	defer l.work.Unlock()
	l.mu.Lock()
	if len(l.lost) == 0 {
		l.mu.Unlock()
		return
	}
	rec, from, tr, left := l.lost[0], l.replayFrom, l.tr, len(l.lost)
	ckpt := ""
	if left == 1 && (l.p.every > 0 || l.o.CheckpointEveryStep) {
		ckpt = CheckpointName(rec.Step)
	}
	l.mu.Unlock()
	ss, err := l.o.Samples.TrainedBy(ctx, rec.BatchID, rec.Step)
	if err != nil {
		l.replayFailed(err, from)
		return
	}
	built, _, err := BuildBatch(ss, batch.Mode(rec.Advantage), rec.KLCoef)
	if err == nil && len(built.Datums) == 0 {
		err = fmt.Errorf("step %d: its %d samples give no datum", rec.Step, len(ss))
	}
	if err != nil {
		// Cannot happen unless the table was edited: skip the step rather
		// than stall training forever.
		l.o.Log.Error().Err(err).Int("step", rec.Step).Msg("step cannot be replayed; skipped")
		l.mu.Lock()
		l.lost, l.step = l.lost[1:], rec.Step
		l.mu.Unlock()
		return
	}
	if len(built.Datums) != rec.Datums {
		l.o.Log.Warn().Int("step", rec.Step).Int("datums", len(built.Datums)).Int("recorded", rec.Datums).Msg("replayed step differs from the recorded one")
	}
	end, ok := l.begin(StateReplaying, fmt.Sprintf("replaying step %d (%d left) on the restored checkpoint", rec.Step, left), fmt.Sprintf("replay step %d", rec.Step), true)
	if !ok {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, l.p.timeout)
	res, err := backend.RunStep(sctx, tr, backend.StepRequest{
		Data: built.Datums, Loss: backend.LossFn(rec.LossFn), Adam: backend.DefaultAdam(rec.LearningRate), CheckpointName: ckpt, From: from,
	})
	cancel()
	end()
	ckptFailed := false
	if err != nil {
		var se *backend.StepError
		if !errors.As(err, &se) || se.Stage != backend.StageCheckpoint || se.Partial == nil || se.Partial.Sampler == nil {
			l.replayFailed(err, from)
			return
		}
		res, ckptFailed = se.Partial, true
	}
	path := ""
	if res.Checkpoint != nil {
		path = res.Checkpoint.Path
	}
	if err := l.o.Steps.Replayed(context.WithoutCancel(ctx), rec.ID, tr.ModelID(), res.Sampler.ID(), res.Sampler.Path(), path); err != nil {
		l.o.Log.Warn().Err(err).Int("step", rec.Step).Msg("record a replayed step")
	}
	l.mu.Lock()
	l.lost, l.step, l.replayFrom, l.replayed = l.lost[1:], rec.Step, backend.StageForwardBackward, l.replayed+1
	if ckptFailed {
		l.ckptDue = true
	}
	l.swap(res.Sampler, rec.Step, false)
	l.mu.Unlock()
	l.o.Log.Info().Int("step", rec.Step).Int("left", left-1).Str("checkpoint", path).Msg("replayed a step lost with the weights")
}

// replayFailed retries a replay from the stage that failed, or restarts the
// trainer when the model's state is unknown.
func (l *Loop) replayFailed(err error, from backend.Stage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	stage := from
	var se *backend.StepError
	if errors.As(err, &se) {
		stage = se.Stage
	}
	l.lastErr = err.Error()
	l.reinitFail++
	if why := reinitReason(err); why != "" {
		l.reinit = why
		l.replayFrom = backend.StageForwardBackward
	} else {
		l.replayFrom = stage
		l.replayAt = l.o.Now().Add(l.o.Backoff(l.reinitFail))
	}
	l.state, l.reason = StateRetrying, fmt.Sprintf("replay failed at %s: %v", stage, err)
	l.o.Log.Warn().Err(err).Str("stage", stage.String()).Msg("replaying a lost step failed")
}

// request is a step asked for through the API.
type request struct {
	partial bool
	done    chan stepOutcome
}

type stepOutcome struct {
	rec *StepRecord
	err error
}

// requestJob runs the oldest asked-for step (replays and restarts come
// first; next() orders them).
func (l *Loop) requestJob(ctx context.Context) {
	l.mu.Lock()
	if len(l.requests) == 0 {
		l.mu.Unlock()
		return
	}
	r := l.requests[0]
	l.requests = l.requests[1:]
	l.mu.Unlock()
	rec, err := l.trainOnce(ctx, r.partial)
	r.done <- stepOutcome{rec, err}
}

func (l *Loop) failRequests(err error) {
	l.mu.Lock()
	rs := l.requests
	l.requests = nil
	l.mu.Unlock()
	for _, r := range rs {
		r.done <- stepOutcome{err: err}
	}
	l.notifyWaiters(err)
}
