package scheduler

import (
	"context"
	"sync"
	"time"
)

// Trainer is the training loop as the scheduler drives it. The scheduler
// calls Resume when a window opens and Pause when it closes; it never waits
// on the trainer anywhere a chat request could be waiting (Pause runs on its
// own goroutine while the scheduler sits in StatePausing).
type Trainer interface {
	// Name labels the trainer in status ("none", "tinker", …).
	Name() string
	// Resume lets the trainer collect and train inside w until the next
	// Pause. It must return at once: the work runs on the trainer's own
	// goroutines, which report progress through w.Report and watch
	// w.Closing() to stop.
	Resume(w Window)
	// Pause asks the trainer to stop and returns once nothing is in flight:
	//   - collecting: stop at once and keep the partial batch for the next window;
	//   - a step in flight: finish it or cancel it at the backend's next safe
	//     point, so that its batch is either trained exactly once or returned
	//     to the pending samples, never lost and never trained twice;
	//   - serving continues on the current sampler throughout (the trainer
	//     must not block requests while it stops).
	// Pause is idempotent and returns at once when the trainer is idle. When
	// ctx ends first it returns ctx.Err(); the scheduler stays in
	// StatePausing and calls it again.
	Pause(ctx context.Context) error
}

// Window is one open training window, as handed to Trainer.Resume.
type Window struct {
	ID       int64     // increases with every window, persisted
	Reason   string    // why it opened: "sleep hours 23:00–07:00", "idle 42m (logind)", …
	OpenedAt time.Time // scheduler clock
	// Until is when the window is expected to close; zero when unknown (an
	// idle window lasts until the user returns). A trainer should not start a
	// step it does not expect to finish by Until (see Report.StepDuration).
	Until time.Time
	// Report is how the trainer tells the scheduler what it does.
	Report Reporter

	closing <-chan struct{}
}

// Closing is closed when the window closes (the user returned, the window
// ended, or the user paused the scheduler). The trainer then stops
// collecting at once; Pause follows.
func (w Window) Closing() <-chan struct{} { return w.closing }

// Reporter receives the trainer's progress. Every call is cheap and never
// blocks; reports about a window that has since closed are ignored, except
// StepDone, which always counts (a step that finished at its safe point after
// the window closed was still trained).
type Reporter interface {
	// Busy says the trainer started working in the window (phase such as
	// "collecting 3/16", "step", "swap"): window_open → updating.
	Busy(phase string)
	// Idle says the trainer has nothing to do in the window for now (no
	// batch ready): updating → window_open.
	Idle(why string)
	// StepDone records a finished step; its duration feeds the moving
	// average that decides whether a window is long enough to start.
	StepDone(s StepReport)
	// StepDuration is the moving average of the last steps; 0 = unknown.
	StepDuration() time.Duration
}

// StepReport describes one finished training step.
type StepReport struct {
	Step     int64         `json:"step"`
	Samples  int           `json:"samples"`
	Duration time.Duration `json:"-"`
	Loss     float64       `json:"loss"`
	At       time.Time     `json:"at"`
	Note     string        `json:"note,omitempty"`
}

// NoTrainer is the trainer of a host that does not train (mode skills_only,
// or no training backend): windows are computed, logged and shown, and
// nothing trains.
type NoTrainer struct{}

// NoTrainerNote is what status says about NoTrainer.
const NoTrainerNote = "no trainer: windows are computed and logged, and nothing trains in them (training runs in mode rl or auto with a training backend: rl.api_key, TINKER_API_KEY, MINT_API_KEY, WEAVER_API_KEY or plugins.trainer)"

func (NoTrainer) Name() string                    { return "none" }
func (NoTrainer) Resume(Window)                   {}
func (NoTrainer) Pause(ctx context.Context) error { return nil }

// reporter binds a Reporter to one window so that late reports about a
// closed window cannot move the state of a newer one.
type reporter struct {
	s  *Scheduler
	id int64
}

func (r reporter) Busy(phase string)           { r.s.post(event{kind: evBusy, window: r.id, text: phase}) }
func (r reporter) Idle(why string)             { r.s.post(event{kind: evIdle, window: r.id, text: why}) }
func (r reporter) StepDone(s StepReport)       { r.s.stepDone(s) }
func (r reporter) StepDuration() time.Duration { return r.s.StepDuration() }

// ewma is the moving average of step durations (alpha 0.3: the last few
// steps dominate, one outlier does not).
type ewma struct {
	mu  sync.Mutex
	avg time.Duration
	n   int64
}

func (e *ewma) add(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if d <= 0 {
		return
	}
	if e.n == 0 {
		e.avg = d
	} else {
		e.avg = time.Duration(0.3*float64(d) + 0.7*float64(e.avg))
	}
	e.n++
}

func (e *ewma) get() (time.Duration, int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.avg, e.n
}

func (e *ewma) set(avg time.Duration, n int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.avg, e.n = avg, n
}
