package scheduler

import (
	"context"
	"sort"
	"time"
)

// SourceStatus is one source's verdict, for status.
type SourceStatus struct {
	Name string `json:"name"`
	Verdict
}

// WindowStatus is the open window.
type WindowStatus struct {
	ID       int64     `json:"id"`
	Reason   string    `json:"reason"`
	OpenedAt time.Time `json:"opened_at"`
	Until    time.Time `json:"until,omitzero"` // zero: until the user returns
}

// Status is the scheduler part of `metaclaw status --json` and the answer of
// GET /v1/scheduler (docs/status.md).
type Status struct {
	Enabled bool  `json:"enabled"`
	State   State `json:"state"`
	// Reason is why the last transition happened; Since is when.
	Reason string    `json:"reason"`
	Since  time.Time `json:"since,omitzero"`
	// Now says why a window is open or closed at this moment.
	Now              string         `json:"now"`
	Window           *WindowStatus  `json:"window,omitempty"`
	NextWindow       *Span          `json:"next_window,omitempty"`
	Paused           bool           `json:"paused"`
	PausedUntil      *time.Time     `json:"paused_until,omitempty"`
	IdleSource       string         `json:"idle_source"`
	Sources          []SourceStatus `json:"sources"`
	Trainer          string         `json:"trainer"`
	TrainerNote      string         `json:"trainer_note,omitempty"`
	Phase            string         `json:"phase,omitempty"`
	MinWindowSeconds float64        `json:"min_window_seconds"`
	StepAvgSeconds   float64        `json:"step_avg_seconds"`
	Steps            int64          `json:"steps"`
	LastStep         *stepJSON      `json:"last_step,omitempty"`
	LastActivity     *time.Time     `json:"last_activity,omitempty"`
	Transitions      []Transition   `json:"transitions"`
}

// Off is the status of a host whose scheduler does not run.
func Off(why string) Status {
	return Status{State: "off", Reason: why, Now: why, Sources: []SourceStatus{}, Transitions: []Transition{}}
}

// Snapshot evaluates the sources now and returns the full status with the
// newest transitions (at most limit).
func (s *Scheduler) Snapshot(ctx context.Context, limit int) Status {
	now := s.o.Clock.Now()
	ev := s.evaluate(now)
	s.mu.Lock()
	p := s.p
	phase := s.phase
	win := s.window
	pauseRun := s.pauseRun
	s.mu.Unlock()
	why := ev.why
	if p.State == StateIdleWait && ev.open {
		if short := s.tooShort(now, ev); short != "" {
			why = short
		} else if pauseRun {
			why += " (waiting for the trainer to stop before opening)"
		}
	}
	st := Status{
		Enabled: true, State: p.State, Reason: p.Reason, Since: p.Since, Now: why,
		Paused: p.UserPaused, IdleSource: s.o.IdleSource, Sources: ev.verdicts,
		Trainer: s.o.Trainer.Name(), TrainerNote: s.o.TrainerNote, Phase: phase,
		MinWindowSeconds: s.o.MinWindow.Seconds(), Steps: p.Steps,
	}
	if st.Sources == nil {
		st.Sources = []SourceStatus{}
	}
	if avg := s.StepDuration(); avg > 0 {
		st.StepAvgSeconds = avg.Seconds()
	}
	if p.UserPaused && !p.PausedUntil.IsZero() {
		t := p.PausedUntil
		st.PausedUntil = &t
	}
	if p.LastStep != nil {
		j := toStepJSON(*p.LastStep)
		st.LastStep = &j
	}
	if !ev.lastAct.IsZero() {
		t := ev.lastAct
		st.LastActivity = &t
	}
	if win != nil {
		st.Window = &WindowStatus{ID: win.ID, Reason: win.Reason, OpenedAt: win.OpenedAt, Until: win.Until}
	}
	st.NextWindow = s.next(now, ev)
	st.Transitions = []Transition{}
	if s.o.Store != nil {
		if ts, err := s.o.Store.Transitions(ctx, limit); err == nil && ts != nil {
			st.Transitions = ts
		}
	}
	return st
}

// NextWindow is the next window expected to open (nil when none is known):
// the earliest upcoming span of any source that is long enough to start.
// While a window is open it is the one after it.
func (s *Scheduler) NextWindow() *Span {
	now := s.o.Clock.Now()
	return s.next(now, s.evaluate(now))
}

// next computes NextWindow. While the user's pause holds, nothing opens
// before it ends: with no end there is no next window, else windows are
// counted from the pause's end (one open now that outlasts it opens then).
// The return grace after the user's last request is counted the same way.
func (s *Scheduler) next(now time.Time, ev evaluation) *Span {
	need := s.o.MinWindow
	if step := s.StepDuration(); step > need {
		need = step
	}
	s.mu.Lock()
	paused, pausedUntil := s.p.UserPaused, s.p.PausedUntil
	s.mu.Unlock()
	if paused && pausedUntil.IsZero() {
		return nil
	}
	notBefore, after := now, ""
	if paused && pausedUntil.After(now) {
		notBefore, after = pausedUntil, " (when the pause ends)"
	}
	// A user who just made a request holds windows shut for the return
	// grace; a window open now resumes when it ends if they stay away.
	if !ev.lastAct.IsZero() && s.o.ReturnGrace > 0 {
		if graceEnd := ev.lastAct.Add(s.o.ReturnGrace); graceEnd.After(notBefore) {
			notBefore, after = graceEnd, " (if the user stays away until "+graceEnd.Format("15:04")+")"
		}
	}
	var spans []Span
	add := func(sp Span) {
		if sp.Start.Before(notBefore) {
			if !sp.End.IsZero() && !sp.End.After(notBefore) {
				return // over before the pause or the grace ends
			}
			sp.Start = notBefore
			sp.Reason += after
		}
		if !sp.Start.After(now) || (!sp.End.IsZero() && sp.Len() < need) {
			return
		}
		spans = append(spans, sp)
	}
	for _, v := range ev.verdicts {
		if v.Open && notBefore.After(now) {
			add(Span{Start: now, End: v.Until, Reason: v.Name + ": " + v.Reason})
		}
		for _, sp := range v.Upcoming {
			if sp.Start.After(now) {
				add(sp)
			}
		}
	}
	if len(spans) == 0 {
		return nil
	}
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].Start.Before(spans[j].Start) })
	n := spans[0]
	return &n
}
