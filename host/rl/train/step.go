package train

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/batch"
	"github.com/metaclaw-go/metaclaw/host/rl/samples"
	"github.com/metaclaw-go/metaclaw/host/scheduler"
)

// ErrNothingToTrain: no scored sample of the current skill generation waits.
var ErrNothingToTrain = errors.New("no scored samples of the current skill generation to train on")

// errBatchClosed: the batch ended without a step (nothing to learn, or
// every sample malformed or stale); its samples are dropped with why.
var errBatchClosed = errors.New("the batch had nothing to train on; its samples were dropped with the reason")

// errPaused: the window closed before the step began; its batch stays open.
var errPaused = errors.New("training paused before the step began")

func (l *Loop) stepJob(ctx context.Context) { _, _ = l.trainOnce(ctx, false) }

// trainOnce runs one step on the open batch or on a newly claimed one;
// partial lets a step asked for by the user train on fewer samples than
// rl.batch_size.
func (l *Loop) trainOnce(ctx context.Context, partial bool) (*StepRecord, error) {
	l.work.Lock()
	defer l.work.Unlock()
	for range 3 { // a stale or empty batch is closed and the next one claimed
		ob, err := l.claim(ctx, partial)
		if err != nil {
			return nil, err
		}
		if ob == nil {
			return nil, ErrNothingToTrain
		}
		prep, err := l.prepare(ctx, ob)
		if errors.Is(err, errBatchClosed) {
			if !partial {
				return nil, err
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		return l.runStep(ctx, ob, prep, !partial)
	}
	return nil, errBatchClosed
}

// claim returns the open batch, or claims a new one of the current skill
// generation (nil when none is ready). An open batch from an older
// generation whose gradients were not computed yet is dropped as stale.
func (l *Loop) claim(ctx context.Context, partial bool) (*openBatch, error) {
	gen, err := l.o.Generation(ctx)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	ob := l.open
	l.mu.Unlock()
	if ob != nil {
		if ob.batch.Generation >= gen || ob.from > backend.StageForwardBackward {
			return ob, nil
		}
		why := fmt.Sprintf("stale: collected under skill generation %d; the skills changed (generation %d) before it was trained", ob.batch.Generation, gen)
		if err := l.closeBatch(ctx, ob, claimedIDs(ob.batch.Samples), why); err != nil {
			return nil, err
		}
	}
	if n, err := l.o.Samples.DropStale(ctx, gen); err != nil {
		return nil, err
	} else if n > 0 {
		l.o.Log.Info().Int("samples", n).Int64("generation", gen).Msg("dropped samples collected before the skills changed")
	}
	if !partial {
		n, err := l.o.Samples.ScoredCount(ctx, gen)
		if err != nil || n < l.p.batchSize {
			return nil, err
		}
	}
	b, err := l.o.Samples.ClaimBatch(ctx, gen, l.p.batchSize)
	if errors.Is(err, samples.ErrNoSamples) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	ob = &openBatch{batch: b}
	l.mu.Lock()
	l.open = ob
	l.mu.Unlock()
	return ob, nil
}

func claimedIDs(ss []samples.Sample) []int64 {
	var ids []int64
	for _, s := range ss {
		if s.State == samples.Claimed {
			ids = append(ids, s.ID)
		}
	}
	return ids
}

// closeBatch drops ids with why and closes the batch without a step.
func (l *Loop) closeBatch(ctx context.Context, ob *openBatch, ids []int64, why string) error {
	if _, err := l.o.Samples.Drop(ctx, ids, why); err != nil {
		return err
	}
	if err := l.o.Samples.ReleaseBatch(ctx, ob.batch.ID, why); err != nil && !errors.Is(err, samples.ErrBatchClosed) {
		return err
	}
	l.mu.Lock()
	if l.open == ob {
		l.open = nil
	}
	l.mu.Unlock()
	l.o.Log.Warn().Int64("batch", ob.batch.ID).Int("samples", len(ids)).Str("why", why).Msg("batch closed without a step")
	return nil
}

// prepared is a batch ready for its step.
type prepared struct {
	used       []samples.Sample // the samples the step trains on (advantages over all of them)
	built      *batch.Built
	meanReward *float64
}

// malformed says why a sample cannot be trained on ("" = it can): the
// checks batch.BuildDatum makes, done first so that a replay of the step
// sees exactly the samples the step saw.
func malformed(s samples.Sample) string {
	switch {
	case len(s.Prompt) == 0:
		return "malformed: empty prompt"
	case len(s.Completion) == 0:
		return "malformed: empty completion"
	case len(s.Logprobs) != len(s.Completion):
		return fmt.Sprintf("malformed: %d logprobs for %d completion tokens", len(s.Logprobs), len(s.Completion))
	case s.TeacherLogprobs != nil && len(s.TeacherLogprobs) != len(s.Completion):
		return fmt.Sprintf("malformed: %d teacher logprobs for %d completion tokens", len(s.TeacherLogprobs), len(s.Completion))
	case s.Reward != nil && (math.IsNaN(*s.Reward) || math.IsInf(*s.Reward, 0)):
		return "malformed: non-finite reward"
	}
	for _, lp := range s.Logprobs {
		if math.IsNaN(float64(lp)) || math.IsInf(float64(lp), 0) {
			return "malformed: a non-finite logprob"
		}
	}
	return ""
}

// BuildBatch turns a step's samples into its datums with the step's
// advantage mode and OPD coefficient, and gives their mean reward: what a
// step trains on, and what its replay (or a reference run) trains on again.
func BuildBatch(ss []samples.Sample, mode batch.Mode, kl float64) (*batch.Built, *float64, error) {
	in := make([]batch.Sample, len(ss))
	sum := 0.0
	for i, s := range ss {
		in[i] = s.ForTraining()
		sum += in[i].Reward
	}
	built, err := batch.Build(in, batch.Options{Advantage: mode, KLPenaltyCoef: kl})
	if err != nil {
		return nil, nil, err
	}
	var mean *float64
	if len(ss) > 0 {
		m := sum / float64(len(ss))
		mean = &m
	}
	return built, mean, nil
}

// prepare drops malformed samples and builds the datums; a batch with
// nothing to learn is closed (errBatchClosed).
func (l *Loop) prepare(ctx context.Context, ob *openBatch) (*prepared, error) {
	var used []samples.Sample
	bad := map[string][]int64{}
	for _, s := range ob.batch.Samples {
		if s.State != samples.Claimed {
			continue
		}
		if why := malformed(s); why != "" {
			bad[why] = append(bad[why], s.ID)
			continue
		}
		used = append(used, s)
	}
	for why, ids := range bad {
		if _, err := l.o.Samples.Drop(ctx, ids, why); err != nil {
			return nil, err
		}
	}
	if len(used) == 0 {
		if err := l.closeBatch(ctx, ob, nil, "no sample of the batch could be trained on"); err != nil {
			return nil, err
		}
		return nil, errBatchClosed
	}
	built, mean, err := BuildBatch(used, l.p.adv, l.p.kl)
	if err != nil {
		return nil, err
	}
	if len(built.Datums) == 0 {
		why := fmt.Sprintf("nothing to learn: every advantage is zero (rewards all equal under rl.advantage %s)", l.p.adv)
		if err := l.closeBatch(ctx, ob, claimedIDs(used), why); err != nil {
			return nil, err
		}
		return nil, errBatchClosed
	}
	return &prepared{used: used, built: built, meanReward: mean}, nil
}

// checkpointNameLocked names the checkpoint step saves ("" = none).
func (l *Loop) checkpointNameLocked(step int) string {
	if l.o.CheckpointEveryStep || (l.p.every > 0 && (step%l.p.every == 0 || l.ckptDue)) {
		return CheckpointName(step)
	}
	return ""
}

// runStep trains ob as the next step and, when it worked, records it,
// finishes the batch and swaps the new sampler in.
func (l *Loop) runStep(ctx context.Context, ob *openBatch, prep *prepared, auto bool) (*StepRecord, error) {
	l.mu.Lock()
	step, from, tr := l.step+1, ob.from, l.tr
	ckpt := l.checkpointNameLocked(step)
	var rep scheduler.Reporter
	if l.window != nil {
		rep = l.window.Report
	}
	l.mu.Unlock()
	end, ok := l.begin(StateTraining, fmt.Sprintf("step %d: batch %d, %d samples (%d with something to learn), from %s", step, ob.batch.ID, len(prep.used), len(prep.built.Datums), from),
		fmt.Sprintf("step %d", step), auto)
	if !ok {
		return nil, errPaused // the batch stays open for the next window
	}
	defer end()
	started := l.o.Now()
	sctx, cancel := context.WithTimeout(ctx, l.p.timeout) // past it the outcome is unknown: resume from the checkpoint
	res, err := backend.RunStep(sctx, tr, backend.StepRequest{
		Data: prep.built.Datums, Loss: l.p.loss, Adam: backend.DefaultAdam(l.p.lr), CheckpointName: ckpt, From: from,
	})
	cancel()
	note, ckptFailed := "", false
	if err != nil {
		var se *backend.StepError
		if !errors.As(err, &se) || se.Stage != backend.StageCheckpoint || se.Partial == nil || se.Partial.Sampler == nil {
			l.failed(ctx, ob, err)
			return nil, err
		}
		// The step is applied and its sampler saved; only the checkpoint
		// failed: the step counts, and the next one saves a checkpoint.
		res, note, ckptFailed = se.Partial, "checkpoint failed: "+se.Err.Error(), true
	}
	finished := l.o.Now()
	fwd, optim := res.ForwardBackward, res.Optim
	if fwd == nil {
		fwd = ob.fwd
	}
	if optim == nil {
		optim = ob.optim
	}
	rec := &StepRecord{Step: step, BatchID: ob.batch.ID, ModelID: tr.ModelID(), StartedAt: started, FinishedAt: finished,
		DurationMS: finished.Sub(started).Milliseconds(), Samples: len(prep.used), Datums: len(prep.built.Datums),
		Metrics: metricsOf(fwd, optim), MeanReward: prep.meanReward, LossFn: string(l.p.loss), LearningRate: l.p.lr,
		Advantage: string(l.p.adv), KLCoef: l.p.kl, Sampler: res.Sampler.ID(), SamplerPath: res.Sampler.Path(), Note: note}
	if loss := fwd.Loss(); !math.IsNaN(loss) {
		rec.Loss = &loss
	}
	if res.Checkpoint != nil {
		rec.CheckpointPath = res.Checkpoint.Path
	}
	if err := l.record(ctx, ob, rec); err != nil {
		// Applied on the service but not recorded: go back to the last
		// checkpoint, so the weights and the table agree, and retry.
		l.mu.Lock()
		l.reinit = "the step could not be recorded: " + err.Error()
		ob.from, ob.fwd, ob.optim = backend.StageForwardBackward, nil, nil
		l.mu.Unlock()
		return nil, err
	}
	l.mu.Lock()
	l.step, l.lastErr = step, ""
	if l.open == ob {
		l.open = nil
	}
	if ckptFailed {
		l.ckptDue = true
	} else if rec.CheckpointPath != "" {
		l.ckptDue = false
	}
	l.swap(res.Sampler, step, false)
	l.mu.Unlock()
	if rep != nil {
		report := scheduler.StepReport{Step: int64(step), Samples: rec.Samples, Duration: finished.Sub(started), At: finished, Note: note}
		if rec.Loss != nil {
			report.Loss = *rec.Loss
		}
		rep.StepDone(report)
	}
	ev := l.o.Log.Info().Int("step", step).Int64("batch", ob.batch.ID).Int("samples", rec.Samples).Int("datums", rec.Datums).
		Dur("took", finished.Sub(started)).Str("sampler", rec.Sampler)
	if rec.Loss != nil {
		ev = ev.Float64("loss", *rec.Loss)
	}
	if rec.MeanReward != nil {
		ev = ev.Float64("mean_reward", *rec.MeanReward)
	}
	if rec.CheckpointPath != "" {
		ev = ev.Str("checkpoint", rec.CheckpointPath)
	}
	ev.Msg("training step done; new sampler serving")
	return rec, nil
}

// record finishes the batch and inserts the step in one transaction,
// retried briefly (a busy database), never cut short by shutdown.
func (l *Loop) record(ctx context.Context, ob *openBatch, rec *StepRecord) error {
	ctx = context.WithoutCancel(ctx)
	var err error
	for attempt := range 5 {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 200 * time.Millisecond)
		}
		err = l.o.Samples.FinishBatchWith(ctx, ob.batch.ID, rec.Step, func(tx *sql.Tx) error { return l.o.Steps.insert(ctx, tx, rec) })
		if err == nil || errors.Is(err, samples.ErrBatchClosed) || errors.Is(err, samples.ErrNotFound) {
			return err
		}
	}
	return err
}

func metricsOf(fwd *backend.ForwardBackwardResult, optim *backend.OptimResult) map[string]float64 {
	m := map[string]float64{}
	if fwd != nil {
		for k, v := range fwd.Metrics {
			m[k] = v
		}
	}
	if optim != nil {
		for k, v := range optim.Metrics {
			m["optim/"+k] = v
		}
	}
	return m
}

// failed keeps ob for a retry after a failed step: from the stage that
// failed when the failure was definite (the earlier stages took effect and
// are not repeated), or on a new model restored from the last checkpoint
// when the failure leaves the model's state unknown.
func (l *Loop) failed(ctx context.Context, ob *openBatch, err error) {
	stage := backend.StageForwardBackward
	var se *backend.StepError
	if errors.As(err, &se) {
		stage = se.Stage
	}
	l.mu.Lock()
	ob.failures++
	ob.lastErr = err.Error()
	ob.retryAt = l.o.Now().Add(l.o.Backoff(ob.failures))
	l.lastErr = err.Error()
	if se != nil && se.Partial != nil {
		if se.Partial.ForwardBackward != nil {
			ob.fwd = se.Partial.ForwardBackward
		}
		if se.Partial.Optim != nil {
			ob.optim = se.Partial.Optim
		}
	}
	why := reinitReason(err)
	if why != "" {
		l.reinit = why
		ob.from, ob.fwd, ob.optim = backend.StageForwardBackward, nil, nil
	} else {
		ob.from = stage
	}
	refused := stage == backend.StageForwardBackward && why == "" && errors.Is(err, backend.ErrInvalid) && ob.failures >= maxInvalid
	l.state, l.reason = StateRetrying, fmt.Sprintf("step failed at %s (%d time(s)): %v", stage, ob.failures, err)
	l.mu.Unlock()
	l.o.Log.Warn().Err(err).Int64("batch", ob.batch.ID).Str("stage", stage.String()).Int("failures", ob.failures).Str("resume", why).
		Msg("training step failed; the old sampler keeps serving and the batch waits for a retry")
	if refused {
		why := fmt.Sprintf("refused by the training service %d times: %v", ob.failures, err)
		if cerr := l.closeBatch(ctx, ob, claimedIDs(ob.batch.Samples), why); cerr != nil {
			l.o.Log.Error().Err(cerr).Msg("drop a refused batch")
		}
	}
}

// reinitReason says why err leaves the model unusable, so training must
// resume from the last checkpoint on a new model ("" = retry on this one).
func reinitReason(err error) string {
	switch {
	case errors.Is(err, backend.ErrUnusable):
		return "the model is unusable (a request's fate is unknown)"
	case errors.Is(err, backend.ErrClosed):
		return "the model or its session was closed"
	case errors.Is(err, backend.ErrNotFound):
		return "the service no longer knows the model"
	case !definite(err):
		return "a request's outcome is unknown: " + err.Error()
	}
	return ""
}

// definite reports whether err says for sure that the failed request did
// not take effect: a refusal (4xx other than 408/429), a failed operation,
// or a check made before sending.
func definite(err error) bool {
	var ae *backend.APIError
	if errors.As(err, &ae) {
		if ae.Status == 0 {
			return ae.Category != ""
		}
		return ae.Status >= 400 && ae.Status < 500 && ae.Status != http.StatusRequestTimeout && ae.Status != http.StatusTooManyRequests
	}
	return errors.Is(err, backend.ErrInvalid) || errors.Is(err, backend.ErrUnauthorized) || errors.Is(err, backend.ErrConflict)
}
