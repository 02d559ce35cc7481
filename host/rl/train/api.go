package train

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/samples"
	"github.com/metaclaw-go/metaclaw/host/scheduler/assemble"
)

// Errors of the API.
var (
	// ErrNotReady: the trainer has not started (the backend is not connected).
	ErrNotReady = errors.New("the trainer is not ready")
	// ErrMaxSteps: rl.max_steps steps were trained.
	ErrMaxSteps = errors.New("rl.max_steps reached")
	// ErrBadCheckpoint: what the user named is not a known checkpoint.
	ErrBadCheckpoint = errors.New("no such checkpoint")
)

// StepNow runs one step as soon as the loop is free, outside windows and
// rl.manual_train_trigger, on up to rl.batch_size scored samples (fewer are
// fine), after any replay the trainer owes. It waits for the step.
func (l *Loop) StepNow(ctx context.Context) (*StepRecord, error) {
	l.mu.Lock()
	if l.tr == nil {
		why := l.reason
		l.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrNotReady, why)
	}
	if l.p.maxSteps > 0 && l.step+len(l.lost) >= l.p.maxSteps {
		l.mu.Unlock()
		return nil, fmt.Errorf("%w (%d); raise it with `metaclaw config set rl.max_steps <n>` (0 = no limit)", ErrMaxSteps, l.p.maxSteps)
	}
	r := &request{partial: true, done: make(chan stepOutcome, 1)}
	l.requests = append(l.requests, r)
	l.mu.Unlock()
	l.poke()
	select {
	case out := <-r.done:
		return out.rec, out.err
	case <-ctx.Done():
		return nil, fmt.Errorf("gave up waiting (the step still runs in the host): %w", ctx.Err())
	}
}

// ResolveCheckpoint turns what the user typed (a step number, a checkpoint
// path, or "" for the last checkpoint) into a resume point.
func ResolveCheckpoint(ctx context.Context, st *Store, target string) (ResumeRequest, error) {
	target = strings.TrimSpace(target)
	if target == "" {
		last, err := st.LastCheckpoint(ctx)
		if err != nil {
			return ResumeRequest{}, err
		}
		if last == nil {
			return ResumeRequest{}, nil
		}
		return ResumeRequest{Path: last.CheckpointPath, Step: last.Step}, nil
	}
	if n, err := strconv.Atoi(target); err == nil {
		cps, err := st.Checkpoints(ctx, false)
		if err != nil {
			return ResumeRequest{}, err
		}
		var have []string
		for _, c := range cps {
			if c.Step == n {
				return ResumeRequest{Path: c.CheckpointPath, Step: c.Step}, nil
			}
			have = append(have, strconv.Itoa(c.Step))
		}
		if len(have) == 0 {
			return ResumeRequest{}, fmt.Errorf("%w of step %d: none was saved yet (rl.checkpoint_every)", ErrBadCheckpoint, n)
		}
		return ResumeRequest{}, fmt.Errorf("%w of step %d; steps with one: %s (metaclaw rl checkpoints)", ErrBadCheckpoint, n, strings.Join(have, ", "))
	}
	if !strings.Contains(target, "://") {
		return ResumeRequest{}, fmt.Errorf("%w: %q is neither a step number nor a checkpoint path such as tinker://<model>/weights/step_000005 (metaclaw rl checkpoints lists them)", ErrBadCheckpoint, target)
	}
	r, err := st.ByCheckpoint(ctx, target)
	if err != nil {
		return ResumeRequest{}, err
	}
	if r != nil {
		return ResumeRequest{Path: target, Step: r.Step}, nil
	}
	return ResumeRequest{Path: target, Step: StepFromName(target)}, nil
}

// RestartFrom restarts the trainer: from the last checkpoint, replaying the
// steps since (target ""), or from an earlier checkpoint, discarding the
// steps after it (a step number or a path). It waits until the trainer is
// restarted (the replay continues in the background; Status shows it). With
// no trainer yet, the resume point is recorded and used when the backend
// connects.
func (l *Loop) RestartFrom(ctx context.Context, target string) (ResumeRequest, error) {
	req, err := ResolveCheckpoint(ctx, l.o.Steps, target)
	if err != nil {
		return req, err
	}
	if target != "" {
		if err := l.o.Steps.RequestResume(ctx, req); err != nil {
			return req, err
		}
	}
	ch := make(chan error, 1)
	l.mu.Lock()
	if l.tr == nil {
		l.mu.Unlock()
		return req, nil
	}
	l.reinit, l.reinitAt, l.forceSwap = "asked with metaclaw rl resume", time.Time{}, target != ""
	l.waiters = append(l.waiters, ch)
	l.mu.Unlock()
	l.poke()
	select {
	case err := <-ch:
		return req, err
	case <-ctx.Done():
		return req, fmt.Errorf("gave up waiting (the restart still runs in the host): %w", ctx.Err())
	}
}

// Checkpoints lists the service's checkpoints of the current model (nil
// without a trainer).
func (l *Loop) Checkpoints(ctx context.Context) ([]backend.Checkpoint, error) {
	l.mu.Lock()
	tr := l.tr
	l.mu.Unlock()
	if tr == nil {
		return nil, nil
	}
	return tr.Checkpoints(ctx)
}

// Progress counts a long operation's parts.
type Progress struct {
	Done  int `json:"done"`
	Total int `json:"total"`
}

// CheckpointRef names a training checkpoint.
type CheckpointRef struct {
	Step int       `json:"step"`
	Path string    `json:"path"`
	At   time.Time `json:"at"`
}

// BatchStatus describes the open batch.
type BatchStatus struct {
	ID       int64     `json:"id"`
	Samples  int       `json:"samples"`
	From     string    `json:"from_stage"`
	Failures int       `json:"failures"`
	LastErr  string    `json:"last_error,omitempty"`
	RetryAt  time.Time `json:"retry_at,omitzero"`
}

// WindowRef is the scheduler window the loop trains in.
type WindowRef struct {
	ID     int64     `json:"id"`
	Reason string    `json:"reason"`
	Until  time.Time `json:"until,omitzero"`
}

// Status is the "training" object of `metaclaw status --json` and of
// GET /v1/rl/training.
type Status struct {
	// State is one of the State* constants ("off" when the host has no
	// training loop, "stopped" when read from the store); Reason says why.
	State  string `json:"state"`
	Reason string `json:"reason"`
	// Trains says when: "when a batch is ready", "in scheduler windows",
	// "when asked".
	Trains string `json:"trains"`
	// Model is the service's id of the LoRA being trained.
	Model string `json:"model_id,omitempty"`
	// Step is the step the trainer's weights are at.
	Step           int            `json:"step"`
	LastStep       *StepRecord    `json:"last_step,omitempty"`
	LastCheckpoint *CheckpointRef `json:"last_checkpoint,omitempty"`
	// Replay counts steps being re-applied after a restart.
	Replay    *Progress    `json:"replay,omitempty"`
	OpenBatch *BatchStatus `json:"open_batch,omitempty"`
	// Ready scored samples of the current skill generation, of BatchSize.
	Ready      int        `json:"ready"`
	BatchSize  int        `json:"batch_size"`
	Generation int64      `json:"skill_generation"`
	LossFn     string     `json:"loss_fn"`
	Advantage  string     `json:"advantage"`
	Every      int        `json:"checkpoint_every"`
	MaxSteps   int        `json:"max_steps"`
	Window     *WindowRef `json:"window,omitempty"`
	LastError  string     `json:"last_error,omitempty"`
}

// Status reports the loop.
func (l *Loop) Status(ctx context.Context) Status {
	l.mu.Lock()
	st := Status{State: l.state, Reason: l.reason, Step: l.step, LastError: l.lastErr}
	if l.tr != nil {
		st.Model = l.tr.ModelID()
	}
	if n := len(l.lost); n > 0 || l.replayed > 0 && l.state == StateReplaying {
		st.Replay = &Progress{Done: l.replayed, Total: l.replayed + n}
	}
	if ob := l.open; ob != nil {
		st.OpenBatch = &BatchStatus{ID: ob.batch.ID, Samples: len(claimedIDs(ob.batch.Samples)), From: ob.from.String(), Failures: ob.failures, LastErr: ob.lastErr}
		if ob.failures > 0 {
			st.OpenBatch.RetryAt = ob.retryAt
		}
	}
	if w := l.window; w != nil {
		st.Window = &WindowRef{ID: w.ID, Reason: w.Reason, Until: w.Until}
	}
	l.mu.Unlock()
	fillStatus(ctx, &st, l.o.Config, l.o.Samples, l.o.Steps, l.o.Generation, l.o.Windows)
	return st
}

// fillStatus adds what the tables and the configuration say.
func fillStatus(ctx context.Context, st *Status, cfg *config.Config, ss *samples.Store, steps *Store, gen func(context.Context) (int64, error), windows bool) {
	p := paramsOf(cfg)
	st.BatchSize, st.LossFn, st.Advantage, st.Every, st.MaxSteps = p.batchSize, string(p.loss), string(p.adv), p.every, p.maxSteps
	switch {
	case p.manual:
		st.Trains = "when asked (rl.manual_train_trigger)"
	case windows:
		st.Trains = "in scheduler windows"
	default:
		st.Trains = "when a batch is ready"
	}
	if last, err := steps.Last(ctx); err == nil && last != nil {
		st.LastStep = last
	}
	if c, err := steps.LastCheckpoint(ctx); err == nil && c != nil {
		st.LastCheckpoint = &CheckpointRef{Step: c.Step, Path: c.CheckpointPath, At: c.FinishedAt}
	}
	if gen != nil {
		if g, err := gen(ctx); err == nil {
			st.Generation = g
			st.Ready, _ = ss.ScoredCount(ctx, g)
		}
	}
}

// StoredStatus is the training status from the tables alone, for the CLI
// when no host runs.
func StoredStatus(ctx context.Context, cfg *config.Config, ss *samples.Store, steps *Store, gen func(context.Context) (int64, error)) Status {
	on, _ := assemble.Active(cfg)
	st := Status{State: "stopped", Reason: "the host is not running"}
	fillStatus(ctx, &st, cfg, ss, steps, gen, on)
	if st.LastStep != nil {
		st.Step = st.LastStep.Step
	}
	return st
}
