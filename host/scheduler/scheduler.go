// Package scheduler decides when the user's model may train in auto mode:
// only inside windows when the user is away (sleep hours, idle, calendar
// events), and it steps aside the moment they return.
//
// Sources (sleep, idle, calendar, ICS) answer "is the user away, and until
// when?" from memory; the scheduler combines them, checks that a window is
// long enough for a training step, and drives a Trainer through the states
// idle_wait → window_open → updating → pausing → idle_wait. Every transition
// is logged with its reason and persisted, so a restart resumes correctly
// and `metaclaw status` shows why. Requests of the user reach the scheduler
// through Touch, which never blocks; the trainer is paused on its own
// goroutine, so serving never waits for training.
package scheduler

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// State is where the scheduler is.
type State string

const (
	StateIdleWait   State = "idle_wait"   // no window: waiting for one
	StateWindowOpen State = "window_open" // the trainer may train; it is not working yet
	StateUpdating   State = "updating"    // the trainer collects or steps
	StatePausing    State = "pausing"     // the window closed; the trainer is stopping
)

// DefaultTick bounds how long a change that no event announces (a sleep
// boundary, an idle threshold crossed) takes to be seen.
const DefaultTick = 5 * time.Second

// Options configure a Scheduler.
type Options struct {
	Clock   Clock // default SystemClock
	Sources []Source
	Trainer Trainer // default NoTrainer
	// TrainerNote is shown in status next to the trainer's name.
	TrainerNote string
	Store       StateStore // nil: state lives in memory only
	Log         zerolog.Logger
	// MinWindow is scheduler.min_window_minutes: a window known to end
	// sooner is not started. A window must also outlast one step (the
	// moving average reported by the trainer).
	MinWindow time.Duration
	// ReturnGrace: after a request of the user, no window opens until the
	// proxy has been quiet this long (the user is back).
	ReturnGrace time.Duration
	// IdleSource names the idle detector in use, for status.
	IdleSource string
	Tick       time.Duration // default DefaultTick
	// ReadOnly builds a scheduler that only evaluates (the CLI without a
	// running host): it writes nothing and never drives the trainer.
	ReadOnly bool
	// OnTransition, if set, is called on the scheduler goroutine after each
	// transition (tests, live views). It must not block.
	OnTransition func(Transition)
}

// Transition is one logged state change.
type Transition struct {
	At     time.Time `json:"at"`
	From   State     `json:"from"`
	To     State     `json:"to"`
	Reason string    `json:"reason"`
}

// Scheduler runs the state machine.
type Scheduler struct {
	o       Options
	avg     ewma
	lastAct atomic.Int64 // unix nanoseconds of the last request of the user
	wake    chan struct{}

	mu       sync.Mutex
	p        Persisted
	events   []event
	window   *Window
	closeWin chan struct{}
	phase    string
	pauseRun bool // a Trainer.Pause call is running
	stopping bool
	savedAct time.Time // LastActivity as last persisted
}

type evKind int

const (
	evBusy evKind = iota
	evIdle
	evPaused
)

type event struct {
	kind   evKind
	window int64
	text   string
	err    error
}

// New loads the persisted state (if any) and returns a scheduler that does
// nothing until Run.
func New(ctx context.Context, o Options) (*Scheduler, error) {
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	if o.Trainer == nil {
		o.Trainer = NoTrainer{}
		if o.TrainerNote == "" {
			o.TrainerNote = NoTrainerNote
		}
	}
	if o.Tick <= 0 {
		o.Tick = DefaultTick
	}
	s := &Scheduler{o: o, wake: make(chan struct{}, 1)}
	now := o.Clock.Now()
	s.p = Persisted{State: StateIdleWait, Reason: "first start", Since: now}
	if o.Store != nil {
		p, ok, err := o.Store.Load(ctx)
		if err != nil {
			return nil, fmt.Errorf("scheduler: load state: %w", err)
		}
		if ok {
			s.p = p
		}
	}
	s.avg.set(s.p.StepAvg, s.p.Steps)
	s.savedAct = s.p.LastActivity
	if !s.p.LastActivity.IsZero() {
		s.lastAct.Store(s.p.LastActivity.UnixNano())
		for _, src := range o.Sources {
			if a, ok := src.(Activity); ok {
				a.Touch(s.p.LastActivity)
			}
		}
	}
	// Nothing is in flight in a new process: a window that was open is
	// re-entered by the first evaluation if it is still open.
	if s.p.State != StateIdleWait && !o.ReadOnly {
		s.transition(ctx, StateIdleWait, fmt.Sprintf("host restarted while %s: re-evaluating the window", s.p.State))
	}
	return s, nil
}

// Touch records a request of the user (a proxy turn or a hook call). It
// never blocks: the scheduler closes an open window on its own goroutine.
func (s *Scheduler) Touch() {
	now := s.o.Clock.Now()
	s.lastAct.Store(now.UnixNano())
	for _, src := range s.o.Sources {
		if a, ok := src.(Activity); ok {
			a.Touch(now)
		}
	}
	s.poke()
}

func (s *Scheduler) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Scheduler) post(e event) {
	s.mu.Lock()
	s.events = append(s.events, e)
	s.mu.Unlock()
	s.poke()
}

func (s *Scheduler) stepDone(r StepReport) {
	s.avg.add(r.Duration)
	avg, n := s.avg.get()
	s.mu.Lock()
	s.p.StepAvg, s.p.Steps = avg, n
	rr := r
	s.p.LastStep = &rr
	p := s.p
	s.mu.Unlock()
	if s.o.Store != nil {
		if err := s.o.Store.Save(context.Background(), p); err != nil {
			s.o.Log.Warn().Err(err).Msg("scheduler: save step")
		}
	}
	s.o.Log.Info().Int64("step", r.Step).Int("samples", r.Samples).Dur("took", r.Duration).Dur("avg", avg).Msg("scheduler: training step finished")
	s.poke()
}

// StepDuration is the moving average of the trainer's steps; 0 = unknown.
func (s *Scheduler) StepDuration() time.Duration {
	d, _ := s.avg.get()
	return d
}

// Pause holds training until Resume (or until `until`, when not zero): an
// open window closes and no new one opens. It survives restarts.
func (s *Scheduler) Pause(ctx context.Context, until time.Time) error {
	s.mu.Lock()
	s.p.UserPaused, s.p.PausedUntil = true, until
	p := s.p
	s.mu.Unlock()
	s.o.Log.Info().Time("until", until).Msg("scheduler: paused by the user")
	if s.o.Store != nil {
		if err := s.o.Store.Save(ctx, p); err != nil {
			return fmt.Errorf("scheduler: save pause: %w", err)
		}
	}
	s.poke()
	return nil
}

// Resume lifts a Pause.
func (s *Scheduler) Resume(ctx context.Context) error {
	s.mu.Lock()
	s.p.UserPaused, s.p.PausedUntil = false, time.Time{}
	p := s.p
	s.mu.Unlock()
	s.o.Log.Info().Msg("scheduler: resumed by the user")
	if s.o.Store != nil {
		if err := s.o.Store.Save(ctx, p); err != nil {
			return fmt.Errorf("scheduler: save resume: %w", err)
		}
	}
	s.poke()
	return nil
}

// Run drives the state machine until ctx ends, then closes an open window
// and gives the trainer until stopGrace to reach a safe point.
func (s *Scheduler) Run(ctx context.Context, stopGrace time.Duration) {
	var wakers []<-chan struct{}
	for _, src := range s.o.Sources {
		if w, ok := src.(Waker); ok {
			wakers = append(wakers, w.Wake())
		}
		if r, ok := src.(Runner); ok {
			go r.Run(ctx)
		}
	}
	for _, ch := range wakers {
		go func(ch <-chan struct{}) {
			for {
				select {
				case <-ctx.Done():
					return
				case _, ok := <-ch:
					if !ok {
						return
					}
					s.poke()
				}
			}
		}(ch)
	}
	t := time.NewTicker(s.o.Tick)
	defer t.Stop()
	for {
		s.Step(ctx)
		select {
		case <-ctx.Done():
			s.shutdown(stopGrace)
			return
		case <-t.C:
		case <-s.wake:
		}
	}
}

func (s *Scheduler) shutdown(grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	s.mu.Lock()
	s.stopping = true
	st := s.p.State
	s.mu.Unlock()
	if st == StateIdleWait {
		return
	}
	s.closeWindow(ctx, StatePausing, "host stopping")
	err := s.o.Trainer.Pause(ctx)
	reason := "host stopping: trainer stopped"
	if err != nil {
		reason = "host stopping: trainer did not reach a safe point in time: " + err.Error()
	}
	s.transition(ctx, StateIdleWait, reason)
}

// Step processes pending trainer reports and re-evaluates the window once.
// Run calls it on every event and tick; tests call it directly.
func (s *Scheduler) Step(ctx context.Context) {
	now := s.o.Clock.Now()
	s.mu.Lock()
	evs := s.events
	s.events = nil
	s.mu.Unlock()
	for _, e := range evs {
		s.handle(ctx, e)
	}
	ev := s.evaluate(now)
	s.mu.Lock()
	state, pauseRun, stopping := s.p.State, s.pauseRun, s.stopping
	saveAct := false
	if ev.lastAct.After(s.p.LastActivity) {
		// Persisted (at most once a minute) so that the return grace and
		// the traffic idle time survive a restart.
		s.p.LastActivity = ev.lastAct
		saveAct = ev.lastAct.Sub(s.savedAct) >= time.Minute
	}
	if saveAct {
		s.savedAct = ev.lastAct
	}
	p := s.p
	s.mu.Unlock()
	if saveAct && s.o.Store != nil {
		if err := s.o.Store.Save(ctx, p); err != nil {
			s.o.Log.Warn().Err(err).Msg("scheduler: save state")
		}
	}
	if stopping {
		return
	}
	switch state {
	case StateIdleWait:
		if ev.open && !pauseRun {
			if short := s.tooShort(now, ev); short != "" {
				return
			}
			s.openWindow(ctx, now, ev)
		}
	case StateWindowOpen:
		if !ev.open {
			// The trainer reported nothing yet; pause it anyway in case its
			// first report is on the way, and open no window until it answered.
			s.closeWindow(ctx, StateIdleWait, ev.why)
			s.startPause(ctx)
		}
	case StateUpdating:
		if !ev.open {
			s.closeWindow(ctx, StatePausing, ev.why)
			s.startPause(ctx)
		}
	}
}

func (s *Scheduler) handle(ctx context.Context, e event) {
	s.mu.Lock()
	st, win := s.p.State, s.p.WindowID
	s.mu.Unlock()
	switch e.kind {
	case evBusy:
		if e.window != win {
			return
		}
		s.mu.Lock()
		s.phase = e.text
		s.mu.Unlock()
		if st == StateWindowOpen {
			s.transition(ctx, StateUpdating, "trainer working: "+e.text)
		}
	case evIdle:
		if e.window != win {
			return
		}
		s.mu.Lock()
		s.phase = ""
		s.mu.Unlock()
		if st == StateUpdating {
			s.transition(ctx, StateWindowOpen, "trainer idle: "+e.text)
		}
	case evPaused:
		s.mu.Lock()
		s.pauseRun = false
		s.phase = ""
		s.mu.Unlock()
		if e.err != nil {
			s.o.Log.Warn().Err(e.err).Msg("scheduler: trainer pause did not finish; asking again")
			s.startPause(ctx)
			return
		}
		if st == StatePausing {
			s.transition(ctx, StateIdleWait, "trainer stopped at a safe point")
		}
	}
}

// tooShort says why an open window is not started, or "".
func (s *Scheduler) tooShort(now time.Time, ev evaluation) string {
	if ev.until.IsZero() {
		return ""
	}
	left := ev.until.Sub(now)
	need, what := s.o.MinWindow, "scheduler.min_window_minutes"
	if step := s.StepDuration(); step > need {
		need, what = step, "one training step (moving average)"
	}
	if left >= need {
		return ""
	}
	return fmt.Sprintf("%s, but it ends at %s, in %s: shorter than %s (%s); not started", ev.why, clockText(ev.until), roundDur(left), what, roundDur(need))
}

func (s *Scheduler) openWindow(ctx context.Context, now time.Time, ev evaluation) {
	s.mu.Lock()
	s.p.WindowID++
	ch := make(chan struct{})
	w := Window{ID: s.p.WindowID, Reason: ev.why, OpenedAt: now, Until: ev.until, closing: ch}
	w.Report = reporter{s: s, id: w.ID}
	s.window, s.closeWin = &w, ch
	s.phase = ""
	s.mu.Unlock()
	s.transition(ctx, StateWindowOpen, ev.why)
	s.o.Trainer.Resume(w)
}

// closeWindow signals Closing to the trainer and moves to `to`.
func (s *Scheduler) closeWindow(ctx context.Context, to State, why string) {
	s.mu.Lock()
	if s.closeWin != nil {
		close(s.closeWin)
		s.closeWin = nil
	}
	s.window = nil
	s.mu.Unlock()
	s.transition(ctx, to, why)
}

func (s *Scheduler) startPause(ctx context.Context) {
	s.mu.Lock()
	if s.pauseRun {
		s.mu.Unlock()
		return
	}
	s.pauseRun = true
	s.mu.Unlock()
	go func() {
		err := s.o.Trainer.Pause(context.WithoutCancel(ctx))
		s.post(event{kind: evPaused, err: err})
	}()
}

func (s *Scheduler) transition(ctx context.Context, to State, reason string) {
	now := s.o.Clock.Now()
	s.mu.Lock()
	from := s.p.State
	s.p.State, s.p.Reason, s.p.Since = to, reason, now
	p := s.p
	s.mu.Unlock()
	t := Transition{At: now, From: from, To: to, Reason: reason}
	s.o.Log.Info().Str("from", string(from)).Str("to", string(to)).Str("reason", reason).Msg("scheduler: transition")
	if s.o.Store != nil {
		if err := s.o.Store.Save(ctx, p); err != nil {
			s.o.Log.Warn().Err(err).Msg("scheduler: save state")
		}
		if err := s.o.Store.LogTransition(ctx, t); err != nil {
			s.o.Log.Warn().Err(err).Msg("scheduler: log transition")
		}
	}
	if s.o.OnTransition != nil {
		s.o.OnTransition(t)
	}
}

// evaluation is the combined answer of the sources at one instant.
type evaluation struct {
	at       time.Time
	open     bool
	why      string
	until    time.Time
	verdicts []SourceStatus
	lastAct  time.Time
}

func (s *Scheduler) evaluate(now time.Time) evaluation {
	ev := evaluation{at: now}
	if n := s.lastAct.Load(); n != 0 {
		ev.lastAct = time.Unix(0, n)
	}
	var open []string
	var closed []string
	unbounded := false
	for _, src := range s.o.Sources {
		v := src.Check(now)
		ev.verdicts = append(ev.verdicts, SourceStatus{Name: src.Name(), Verdict: v})
		if v.Open {
			open = append(open, v.Reason)
			if v.Until.IsZero() {
				unbounded = true
			} else if v.Until.After(ev.until) {
				ev.until = v.Until
			}
		} else if v.Reason != "" {
			closed = append(closed, v.Reason)
		}
	}
	if unbounded {
		ev.until = time.Time{}
	}
	s.mu.Lock()
	paused, pausedUntil := s.p.UserPaused, s.p.PausedUntil
	s.mu.Unlock()
	if paused && !pausedUntil.IsZero() && !now.Before(pausedUntil) {
		s.mu.Lock()
		s.p.UserPaused, s.p.PausedUntil = false, time.Time{}
		s.mu.Unlock()
		s.o.Log.Info().Msg("scheduler: user pause expired")
		paused = false
	}
	switch {
	case paused && pausedUntil.IsZero():
		ev.why = "paused by the user (metaclaw scheduler resume)"
	case paused:
		ev.why = "paused by the user until " + clockText(pausedUntil)
	case !ev.lastAct.IsZero() && now.Sub(ev.lastAct) < s.o.ReturnGrace:
		ev.why = fmt.Sprintf("the user is active (last request %s ago)", roundDur(now.Sub(ev.lastAct)))
	case len(open) == 0:
		if len(closed) == 0 {
			ev.why = "no window source configured"
		} else {
			ev.why = "no window: " + strings.Join(closed, "; ")
		}
	default:
		ev.open = true
		ev.why = strings.Join(open, "; ")
	}
	if !ev.open {
		ev.until = time.Time{}
	}
	return ev
}

func clockText(t time.Time) string {
	return t.Format("2006-01-02 15:04 MST")
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Hour:
		return d.Round(time.Minute)
	case d >= time.Minute:
		return d.Round(time.Second)
	}
	return d.Round(100 * time.Millisecond)
}
