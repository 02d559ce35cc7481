// Package train is the RL training loop: it claims batches of scored
// samples, turns them into datums (host/rl/batch), runs one step on the
// user's LoRA (forward_backward → optim_step → sampler weights, and a
// training checkpoint every rl.checkpoint_every steps) and hot-swaps the new
// sampler into serving (backend.Current). Every step is recorded in the
// steps table in the same transaction that marks its samples trained.
//
// Nothing is trained twice and no sample is lost: a failed step leaves the
// old sampler serving and its batch open, and is retried from the stage
// that failed when the failure was definite; when a request's fate is
// unknown (or the process dies), the loop resumes from the last checkpoint
// on a new model and replays the steps applied since, from their recorded
// batches and parameters, so the weights equal an uninterrupted run's.
//
// In mode rl it trains whenever a batch is ready; in auto mode (or with
// scheduler.enabled) only inside the scheduler's windows, as a
// scheduler.Trainer.
package train

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/batch"
	"github.com/metaclaw-go/metaclaw/host/rl/samples"
	"github.com/metaclaw-go/metaclaw/host/scheduler"
)

// Options configure a Loop.
type Options struct {
	Config *config.Config
	// Backend names the backend kind in the scheduler's status ("tinker",
	// …); default rl.backend.
	Backend string
	Samples *samples.Store
	Steps   *Store
	// Generation is the skill library's current generation (support/query
	// separation: older samples are not trained on).
	Generation func(ctx context.Context) (int64, error)
	// Windows makes the loop train only inside scheduler windows
	// (Resume/Pause); otherwise it trains whenever a batch is ready.
	Windows bool
	// CheckpointEveryStep saves a training checkpoint after every step (a
	// one-off step outside the host: nothing else would outlive it).
	CheckpointEveryStep bool
	// Poll is how often the loop looks for a ready batch (default 2 s).
	Poll time.Duration
	// Backoff is the wait before retrying a failed step after n failures
	// (default 5 s·2^(n-1), at most 5 min).
	Backoff func(failures int) time.Duration
	// Connect opens a new session with the backend, used when restarting
	// the trainer on the current one keeps failing (the session may be
	// gone); nil: keep trying the current one.
	Connect func(ctx context.Context) (backend.Backend, error)
	Log     zerolog.Logger
	Now     func() time.Time
}

// maxInvalid is how often the service may refuse a batch's datums
// (ErrInvalid at forward_backward) before its samples are dropped.
const maxInvalid = 3

// params are the training settings of new steps.
type params struct {
	batchSize int
	loss      backend.LossFn
	lr        float64
	adv       batch.Mode
	kl        float64
	every     int
	maxSteps  int
	manual    bool
	timeout   time.Duration // of one step
}

func paramsOf(cfg *config.Config) params {
	p := params{batchSize: cfg.RL.BatchSize, loss: backend.LossFn(cfg.RL.LossFn), lr: cfg.RL.LearningRate,
		adv: batch.Mode(cfg.RL.Advantage), every: cfg.RL.CheckpointEvery, maxSteps: cfg.RL.MaxSteps, manual: cfg.RL.ManualTrainTrigger,
		timeout: time.Duration(cfg.RL.StepTimeoutMinutes) * time.Minute}
	if p.timeout <= 0 {
		p.timeout = 30 * time.Minute
	}
	if p.batchSize <= 0 {
		p.batchSize = 4
	}
	if p.adv == "" {
		p.adv = batch.GRPO
	}
	if p.loss == "" {
		p.loss = backend.ImportanceSampling
	}
	if cfg.OPD.Enabled {
		p.kl = cfg.OPD.KLPenaltyCoef
	}
	return p
}

// openBatch is a claimed batch not yet trained: a step in progress or
// waiting to be retried.
type openBatch struct {
	batch    *samples.Batch
	from     backend.Stage                  // the stage to (re)start from on the current model
	fwd      *backend.ForwardBackwardResult // from an earlier attempt that got past forward_backward
	optim    *backend.OptimResult
	failures int
	lastErr  string
	retryAt  time.Time
}

// Loop is the training loop. Its backend work runs on one goroutine (Run);
// the scheduler, the HTTP API and status talk to it under mu.
type Loop struct {
	o Options
	p params

	work sync.Mutex // held during backend work (Init, a step, a replay)

	mu         sync.Mutex
	b          backend.Backend
	tr         backend.Trainer
	cur        *backend.Current
	step       int          // the step the trainer's weights are at
	lost       []StepRecord // applied steps whose weights must be replayed
	replayFrom backend.Stage
	replayAt   time.Time // a failed replay is retried then
	replayed   int       // steps replayed since the trainer (re)started
	reinitAt   time.Time // a failed restart is retried then
	reinitFail int
	waiters    []chan error // resume requests waiting for the restart
	owned      []backend.Backend
	open       *openBatch
	ckptDue    bool   // a checkpoint failed: save one at the next step
	reinit     string // why the trainer must be restarted from a checkpoint ("" = no need)
	forceSwap  bool
	point      resumePoint
	state      string
	reason     string
	lastErr    string
	window     *scheduler.Window
	reported   string
	busy       bool
	idle       chan struct{} // closed when the loop is not busy
	requests   []*request
	wake       chan struct{}
	stop       context.CancelFunc
	done       chan struct{}
}

// Loop states.
const (
	StateWaitingBackend = "waiting_backend" // the backend is not connected yet
	StateWaitingBatch   = "waiting_batch"   // fewer scored samples than rl.batch_size
	StateWaitingWindow  = "waiting_window"  // auto: outside the scheduler's windows
	StateManual         = "manual"          // rl.manual_train_trigger: steps only when asked
	StateTraining       = "training"        // a step is in flight
	StateReplaying      = "replaying"       // re-applying steps lost with the weights
	StateRetrying       = "retrying"        // a step failed; its batch waits for a retry
	StateDone           = "done"            // rl.max_steps reached
	StateError          = "error"           // the trainer cannot start; Reason says why
)

// New returns a loop; Init gives it a trainer, Start runs it.
func New(o Options) *Loop {
	if o.Poll <= 0 {
		o.Poll = 2 * time.Second
	}
	if o.Backoff == nil {
		o.Backoff = DefaultBackoff
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	idle := make(chan struct{})
	close(idle)
	return &Loop{o: o, p: paramsOf(o.Config), idle: idle, wake: make(chan struct{}, 1),
		state: StateWaitingBackend, reason: "waiting for the training backend to connect"}
}

// DefaultBackoff is 5 s, 10 s, 20 s, … up to 5 min.
func DefaultBackoff(failures int) time.Duration {
	d := 5 * time.Second
	for i := 1; i < failures && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// poke wakes the loop to look at its state again.
func (l *Loop) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// Wake tells the loop that samples may be ready.
func (l *Loop) Wake() { l.poke() }

// Init starts the trainer on b: resumes from the last checkpoint (or a
// requested one, or rl.resume_from_ckpt, or a fresh LoRA), queues the
// steps applied since for replay, and returns the sampler of the restored
// weights with their step. It is the runtime's InitialSampler.
func (l *Loop) Init(ctx context.Context, b backend.Backend, _ *config.Config) (backend.Sampler, int, error) {
	l.work.Lock()
	defer l.work.Unlock()
	s, step, old, err := l.start(ctx, b)
	if err != nil {
		l.setState(StateError, err.Error())
		return nil, 0, err
	}
	closeTrainer(old)
	l.setState(StateWaitingBatch, "trainer ready")
	l.poke()
	return s, step, nil
}

// start creates or resumes the trainer and installs it; the previous
// trainer (if any) is returned for the caller to close after the swap.
func (l *Loop) start(ctx context.Context, b backend.Backend) (backend.Sampler, int, backend.Trainer, error) {
	pt, err := l.resumePoint(ctx)
	if err != nil {
		return nil, 0, nil, err
	}
	mc := modelConfig(l.o.Config)
	var tr backend.Trainer
	if pt.Path == "" {
		tr, err = b.CreateModel(ctx, mc)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("create the LoRA on %s: %w", mc.BaseModel, err)
		}
	} else {
		tr, err = b.Resume(ctx, mc, pt.Path)
		if err != nil {
			return nil, 0, nil, fmt.Errorf("resume from %s (%s): %w", pt.Path, pt.Source, err)
		}
	}
	s, err := tr.SaveForSampler(ctx, "")
	if err != nil {
		closeTrainer(tr)
		return nil, 0, nil, fmt.Errorf("sampler weights of %s: %w", pointName(pt), err)
	}
	if pt.Rollback {
		n, err := l.o.Steps.RollBack(ctx, pt.Step, fmt.Sprintf("rolled back: resumed from %s", pt.Path))
		if err != nil {
			closeTrainer(tr)
			return nil, 0, nil, err
		}
		if err := l.o.Steps.ClearResume(ctx); err != nil {
			closeTrainer(tr)
			return nil, 0, nil, err
		}
		l.o.Log.Warn().Str("checkpoint", pt.Path).Int("step", pt.Step).Int("rolled_back", n).Msg("training rolled back to a checkpoint")
	}
	lost, err := l.o.Steps.AppliedAfter(ctx, pt.Step)
	if err != nil {
		closeTrainer(tr)
		return nil, 0, nil, err
	}
	reopen, err := l.openBatchFromStore(ctx)
	if err != nil {
		closeTrainer(tr)
		return nil, 0, nil, err
	}
	l.mu.Lock()
	if l.open == nil {
		l.open = reopen
	}
	old := l.tr
	l.b, l.tr, l.step, l.lost, l.replayFrom, l.point = b, tr, pt.Step, lost, backend.StageForwardBackward, pt
	l.reinit, l.lastErr, l.replayed, l.reinitFail = "", "", 0, 0
	if l.open != nil {
		l.open.from, l.open.fwd, l.open.optim = backend.StageForwardBackward, nil, nil
	}
	l.mu.Unlock()
	l.o.Log.Info().Str("model", tr.ModelID()).Str("from", pointName(pt)).Int("step", pt.Step).Int("replay", len(lost)).Msg("trainer ready")
	return s, pt.Step, old, nil
}

// openBatchFromStore finds a batch claimed by an earlier run and not
// finished (the process died during its step): it is trained next, from
// the start, on the restored weights. There is at most one; any other is
// released (its samples go back to scored).
func (l *Loop) openBatchFromStore(ctx context.Context) (*openBatch, error) {
	l.mu.Lock()
	known := l.open != nil
	l.mu.Unlock()
	if known {
		return nil, nil
	}
	obs, err := l.o.Samples.OpenBatches(ctx)
	if err != nil || len(obs) == 0 {
		return nil, err
	}
	for _, extra := range obs[1:] {
		if err := l.o.Samples.ReleaseBatch(ctx, extra.ID, "released: another batch was open"); err != nil && !errors.Is(err, samples.ErrBatchClosed) {
			return nil, err
		}
	}
	l.o.Log.Info().Int64("batch", obs[0].ID).Int("samples", len(obs[0].Samples)).Msg("a batch claimed before the restart is trained next")
	return &openBatch{batch: obs[0]}, nil
}

func pointName(pt resumePoint) string {
	if pt.Path == "" {
		return "a fresh LoRA"
	}
	return fmt.Sprintf("%s (step %d, %s)", pt.Path, pt.Step, pt.Source)
}

// closeTrainer releases a trainer the loop no longer uses (best effort:
// a broken model may refuse; its samplers stay usable until swapped out).
func closeTrainer(tr backend.Trainer) {
	if tr == nil {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = tr.Close(ctx)
	}()
}

// Start runs the loop on its own goroutine; cur is the sampler serving
// uses, which each step swaps.
func (l *Loop) Start(ctx context.Context, cur *backend.Current) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	l.mu.Lock()
	l.cur, l.stop, l.done = cur, cancel, make(chan struct{})
	l.mu.Unlock()
	go func() {
		defer close(l.done)
		l.run(ctx)
	}()
}

// Stop ends the loop, giving a step in flight up to grace to finish (a step
// cut short is not lost: its batch stays open and the next start resumes
// from the last checkpoint).
func (l *Loop) Stop(grace time.Duration) {
	l.mu.Lock()
	stop, done, idle := l.stop, l.done, l.idle
	l.mu.Unlock()
	if stop == nil {
		return
	}
	select {
	case <-idle:
	case <-time.After(grace):
	}
	stop()
	<-done
	l.failRequests(errors.New("the training loop stopped"))
	l.mu.Lock()
	owned := l.owned
	l.owned = nil
	l.mu.Unlock()
	for _, b := range owned {
		_ = b.Close()
	}
}

func (l *Loop) run(ctx context.Context) {
	for ctx.Err() == nil {
		job, wait := l.next(ctx)
		if job != nil {
			job(ctx)
			continue
		}
		timer := time.NewTimer(wait)
		var closing <-chan struct{}
		l.mu.Lock()
		if l.window != nil {
			closing = l.window.Closing()
		}
		l.mu.Unlock()
		select {
		case <-ctx.Done():
		case <-l.wake:
		case <-timer.C:
		case <-closing:
		}
		timer.Stop()
	}
}

// next picks the loop's next job, or how long to wait for one.
func (l *Loop) next(ctx context.Context) (func(context.Context), time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tr == nil {
		if l.state != StateError {
			l.state, l.reason = StateWaitingBackend, "waiting for the training backend to connect"
		}
		return nil, l.o.Poll
	}
	asked := len(l.requests) > 0
	if l.reinit != "" {
		if wait := l.reinitAt.Sub(l.o.Now()); wait > 0 {
			return nil, min(wait, l.o.Poll)
		}
		return l.reinitJob, 0
	}
	if !asked {
		if why, state := l.blockedLocked(); why != "" {
			l.state, l.reason = state, why
			l.reportLocked("")
			return nil, l.o.Poll
		}
	}
	if len(l.lost) > 0 {
		if wait := l.replayAt.Sub(l.o.Now()); wait > 0 {
			return nil, min(wait, l.o.Poll)
		}
		return l.replayJob, 0
	}
	if asked {
		return l.requestJob, 0
	}
	if ob := l.open; ob != nil {
		if wait := ob.retryAt.Sub(l.o.Now()); wait > 0 {
			l.state, l.reason = StateRetrying, fmt.Sprintf("batch %d failed %d time(s) (%s); retrying at %s", ob.batch.ID, ob.failures, ob.lastErr, ob.retryAt.Format(time.TimeOnly))
			l.reportLocked("")
			return nil, min(wait, l.o.Poll)
		}
		return l.stepJob, 0
	}
	gen, err := l.o.Generation(ctx)
	if err != nil {
		l.state, l.reason = StateWaitingBatch, err.Error()
		return nil, l.o.Poll
	}
	n, err := l.o.Samples.ScoredCount(ctx, gen)
	if err != nil {
		l.state, l.reason = StateWaitingBatch, err.Error()
		return nil, l.o.Poll
	}
	if n < l.p.batchSize {
		l.state, l.reason = StateWaitingBatch, fmt.Sprintf("%d of %d scored samples for the next batch", n, l.p.batchSize)
		l.reportLocked("")
		return nil, l.o.Poll
	}
	return l.stepJob, 0
}

// blockedLocked says why the loop may not train on its own now ("" = it
// may), with the state to show.
func (l *Loop) blockedLocked() (string, string) {
	switch {
	case l.p.maxSteps > 0 && l.step >= l.p.maxSteps && len(l.lost) == 0:
		return fmt.Sprintf("rl.max_steps (%d) reached", l.p.maxSteps), StateDone
	case l.p.manual:
		return "rl.manual_train_trigger is set: a step runs only when asked (metaclaw rl step)", StateManual
	case !l.o.Windows:
		return "", ""
	case l.window == nil:
		return "outside the scheduler's training windows", StateWaitingWindow
	}
	select {
	case <-l.window.Closing():
		return "the training window is closing", StateWaitingWindow
	default:
	}
	if u := l.window.Until; !u.IsZero() {
		if avg := l.window.Report.StepDuration(); avg > 0 && l.o.Now().Add(avg).After(u) {
			return fmt.Sprintf("the window ends at %s, sooner than a step takes (%s)", u.Format(time.TimeOnly), avg.Round(time.Second)), StateWaitingWindow
		}
	}
	return "", ""
}

// setState records the loop's state for status.
func (l *Loop) setState(state, reason string) {
	l.mu.Lock()
	l.state, l.reason = state, reason
	l.mu.Unlock()
}

// begin marks the loop busy (Pause waits for it) and returns end. Work the
// loop does on its own (auto) does not begin when training is not allowed
// now — a window closed since the job was picked — and ok is false then:
// checked under the same lock as Pause, so no step starts after Pause
// returned.
func (l *Loop) begin(state, reason string, busy string, auto bool) (end func(), ok bool) {
	l.mu.Lock()
	if auto && len(l.requests) == 0 {
		if why, st := l.blockedLocked(); why != "" {
			l.state, l.reason = st, why
			l.mu.Unlock()
			return nil, false
		}
	}
	l.busy = true
	l.idle = make(chan struct{})
	l.state, l.reason = state, reason
	l.reportLocked(busy)
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		l.busy = false
		close(l.idle)
		l.mu.Unlock()
	}, true
}

// reportLocked tells the scheduler what the loop does in its window: busy
// phases as Busy, anything else as Idle (with the reason); repeats are not
// sent again.
func (l *Loop) reportLocked(busy string) {
	if l.window == nil || l.window.Report == nil {
		return
	}
	key := "busy:" + busy
	if busy == "" {
		key = "idle:" + l.reason
	}
	if key == l.reported {
		return
	}
	l.reported = key
	if busy != "" {
		l.window.Report.Busy(busy)
	} else {
		l.window.Report.Idle(l.reason)
	}
}

// swap installs s as the serving sampler of step: always when forced (a
// rollback), otherwise only if it is not older than what serves now (a
// replay catching up keeps the newer sampler in place).
func (l *Loop) swap(s backend.Sampler, step int, force bool) {
	if l.cur == nil || s == nil {
		return
	}
	if v := l.cur.Load(); !force && v != nil && v.Step > step {
		return
	}
	l.cur.Swap(s, step)
}
