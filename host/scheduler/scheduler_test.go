package scheduler_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
	_ "time/tzdata"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/scheduler"
	"github.com/metaclaw-go/metaclaw/host/scheduler/sleep"
	"github.com/metaclaw-go/metaclaw/internal/testwait"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// memStore is a StateStore in memory (the SQL one is tested on a real store).
type memStore struct {
	mu    sync.Mutex
	p     *scheduler.Persisted
	trans []scheduler.Transition
}

func (m *memStore) Load(context.Context) (scheduler.Persisted, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.p == nil {
		return scheduler.Persisted{}, false, nil
	}
	return *m.p, true, nil
}
func (m *memStore) Save(_ context.Context, p scheduler.Persisted) error {
	m.mu.Lock()
	m.p = &p
	m.mu.Unlock()
	return nil
}
func (m *memStore) LogTransition(_ context.Context, t scheduler.Transition) error {
	m.mu.Lock()
	m.trans = append(m.trans, t)
	m.mu.Unlock()
	return nil
}
func (m *memStore) Transitions(_ context.Context, limit int) ([]scheduler.Transition, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []scheduler.Transition
	for i := len(m.trans) - 1; i >= 0 && len(out) < limit; i-- {
		out = append(out, m.trans[i])
	}
	return out, nil
}

// recorder collects transitions as the scheduler reports them.
type recorder struct {
	mu  sync.Mutex
	all []scheduler.Transition
	ch  chan scheduler.Transition
}

func newRecorder() *recorder { return &recorder{ch: make(chan scheduler.Transition, 256)} }

func (r *recorder) on(t scheduler.Transition) {
	r.mu.Lock()
	r.all = append(r.all, t)
	r.mu.Unlock()
	r.ch <- t
}

// waitFor returns the next transition into state `to`, failing after 10 s.
func (r *recorder) waitFor(t *testing.T, to scheduler.State) scheduler.Transition {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case tr := <-r.ch:
			if tr.To == to {
				return tr
			}
		case <-deadline:
			t.Fatalf("no transition to %s; seen %v", to, r.states())
		}
	}
}

func (r *recorder) states() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s []string
	for _, t := range r.all {
		s = append(s, string(t.From)+"→"+string(t.To)+" ("+t.Reason+")")
	}
	return s
}

// stepUntil steps a scheduler that is not running its loop until it is in
// state want (trainer reports arrive on other goroutines).
func stepUntil(t *testing.T, s *scheduler.Scheduler, rec *recorder, want scheduler.State) {
	t.Helper()
	reached := testwait.Until(testwait.Deadline, func() bool {
		s.Step(context.Background())
		return s.Snapshot(context.Background(), 1).State == want
	})
	if !reached {
		t.Fatalf("never reached %s; seen %v", want, rec.states())
	}
}

// A fake clock walks minute by minute through the night of the spring DST
// change in Berlin: the window opens at 23:00 CET, stays open across
// midnight and closes at 07:00 CEST, seven hours later.
func TestNightAcrossMidnightAndDST(t *testing.T) {
	loc, _ := time.LoadLocation("Europe/Berlin")
	for _, tc := range []struct {
		name       string
		start      time.Time
		wantOpen   time.Time
		wantClose  time.Time
		wantLength time.Duration
	}{
		{"spring forward", time.Date(2026, 3, 28, 21, 0, 0, 0, loc), time.Date(2026, 3, 28, 22, 0, 0, 0, time.UTC), time.Date(2026, 3, 29, 5, 0, 0, 0, time.UTC), 7 * time.Hour},
		{"fall back", time.Date(2026, 10, 24, 21, 0, 0, 0, loc), time.Date(2026, 10, 24, 21, 0, 0, 0, time.UTC), time.Date(2026, 10, 25, 6, 0, 0, 0, time.UTC), 9 * time.Hour},
		{"ordinary night", time.Date(2026, 6, 10, 21, 0, 0, 0, loc), time.Date(2026, 6, 10, 21, 0, 0, 0, time.UTC), time.Date(2026, 6, 11, 5, 0, 0, 0, time.UTC), 8 * time.Hour},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: tc.start}
			src, err := sleep.New("23:00", "07:00", loc)
			if err != nil {
				t.Fatal(err)
			}
			tr := newFakeTrainer(4)
			rec := newRecorder()
			s, err := scheduler.New(context.Background(), scheduler.Options{
				Clock: clock, Sources: []scheduler.Source{src}, Trainer: tr, Log: zerolog.Nop(),
				MinWindow: 15 * time.Minute, OnTransition: rec.on, Store: &memStore{},
			})
			if err != nil {
				t.Fatal(err)
			}
			var opened, closed time.Time
			for i := 0; i < 12*60 && closed.IsZero(); i++ {
				s.Step(context.Background())
				st := s.Snapshot(context.Background(), 1)
				switch {
				case opened.IsZero() && st.State != scheduler.StateIdleWait:
					opened = clock.Now()
					if st.Window == nil || !st.Window.Until.Equal(tc.wantClose) {
						t.Fatalf("window %+v, want until %s", st.Window, tc.wantClose)
					}
					// The trainer's report moves it to updating.
					stepUntil(t, s, rec, scheduler.StateUpdating)
				case !opened.IsZero() && st.State == scheduler.StatePausing:
					closed = clock.Now()
				}
				clock.Add(time.Minute)
			}
			if !opened.Equal(tc.wantOpen) || !closed.Equal(tc.wantClose) || closed.Sub(opened) != tc.wantLength {
				t.Fatalf("window %s → %s (%s), want %s → %s (%s)", opened.UTC(), closed.UTC(), closed.Sub(opened), tc.wantOpen, tc.wantClose, tc.wantLength)
			}
			stepUntil(t, s, rec, scheduler.StateIdleWait)
			want := []scheduler.State{scheduler.StateWindowOpen, scheduler.StateUpdating, scheduler.StatePausing, scheduler.StateIdleWait}
			rec.mu.Lock()
			defer rec.mu.Unlock()
			if len(rec.all) != len(want) {
				t.Fatalf("transitions %v", rec.all)
			}
			for i, w := range want {
				if rec.all[i].To != w || rec.all[i].Reason == "" {
					t.Fatalf("transition %d = %+v, want to %s with a reason", i, rec.all[i], w)
				}
			}
			if !strings.Contains(rec.all[0].Reason, "sleep hours 23:00–07:00") || !strings.Contains(rec.all[2].Reason, "sleep hours start") {
				t.Fatalf("reasons: %v", rec.states())
			}
		})
	}
}

// switchSource is a source the test opens and closes.
type switchSource struct {
	mu    sync.Mutex
	open  bool
	until time.Time
}

func (s *switchSource) Name() string { return "switch" }
func (s *switchSource) set(open bool, until time.Time) {
	s.mu.Lock()
	s.open, s.until = open, until
	s.mu.Unlock()
}
func (s *switchSource) Check(time.Time) scheduler.Verdict {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.open {
		return scheduler.Verdict{Open: true, Reason: "switch on", Until: s.until}
	}
	return scheduler.Verdict{Reason: "switch off"}
}

// A window known to end too soon is not started: it must last
// min_window_minutes and one training step (the moving average).
func TestMinimumWindow(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		left    time.Duration // 0 = open-ended (idle)
		stepAvg time.Duration
		opens   bool
		why     string
	}{
		{"long enough", time.Hour, 0, true, ""},
		{"shorter than min_window", 10 * time.Minute, 0, false, "scheduler.min_window_minutes"},
		{"exactly min_window", 15 * time.Minute, 0, true, ""},
		{"longer than min_window, shorter than a step", 30 * time.Minute, 40 * time.Minute, false, "one training step"},
		{"open-ended idle window", 0, 40 * time.Minute, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: now}
			src := &switchSource{}
			until := time.Time{}
			if tc.left > 0 {
				until = now.Add(tc.left)
			}
			src.set(true, until)
			store := &memStore{p: &scheduler.Persisted{State: scheduler.StateIdleWait, StepAvg: tc.stepAvg, Steps: 3}}
			s, err := scheduler.New(context.Background(), scheduler.Options{Clock: clock, Sources: []scheduler.Source{src}, MinWindow: 15 * time.Minute, Store: store, Log: zerolog.Nop()})
			if err != nil {
				t.Fatal(err)
			}
			s.Step(context.Background())
			st := s.Snapshot(context.Background(), 5)
			if opened := st.State == scheduler.StateWindowOpen; opened != tc.opens {
				t.Fatalf("state %s (%s)", st.State, st.Now)
			}
			if !tc.opens && !strings.Contains(st.Now, tc.why) {
				t.Fatalf("why %q does not name %q", st.Now, tc.why)
			}
		})
	}
}

func TestUserPauseAndExpiry(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	src := &switchSource{}
	src.set(true, time.Time{})
	store := &memStore{}
	rec := newRecorder()
	s, _ := scheduler.New(context.Background(), scheduler.Options{Clock: clock, Sources: []scheduler.Source{src}, Store: store, OnTransition: rec.on, Log: zerolog.Nop()})
	s.Step(context.Background())
	if st := s.Snapshot(context.Background(), 1); st.State != scheduler.StateWindowOpen {
		t.Fatalf("state %s", st.State)
	}
	if err := s.Pause(context.Background(), clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	s.Step(context.Background())
	st := s.Snapshot(context.Background(), 1)
	if st.State != scheduler.StateIdleWait || !st.Paused || !strings.Contains(st.Now, "paused by the user until") {
		t.Fatalf("after pause: %+v", st)
	}
	// A restart keeps the pause.
	s2, _ := scheduler.New(context.Background(), scheduler.Options{Clock: clock, Sources: []scheduler.Source{src}, Store: store, Log: zerolog.Nop()})
	s2.Step(context.Background())
	if st := s2.Snapshot(context.Background(), 1); st.State != scheduler.StateIdleWait || !st.Paused {
		t.Fatalf("pause lost on restart: %+v", st)
	}
	clock.Add(time.Hour)
	stepUntil(t, s2, rec, scheduler.StateWindowOpen)
	if st := s2.Snapshot(context.Background(), 1); st.Paused {
		t.Fatalf("pause did not expire: %+v", st)
	}
	if err := s2.Pause(context.Background(), time.Time{}); err != nil {
		t.Fatal(err)
	}
	clock.Add(100 * time.Hour)
	s2.Step(context.Background())
	if st := s2.Snapshot(context.Background(), 1); st.State != scheduler.StateIdleWait || !strings.Contains(st.Now, "metaclaw scheduler resume") {
		t.Fatalf("open-ended pause: %+v", st)
	}
	s2.Resume(context.Background())
	stepUntil(t, s2, rec, scheduler.StateWindowOpen)
}

// fixedSource answers one verdict.
type fixedSource struct{ v scheduler.Verdict }

func (f fixedSource) Name() string                      { return "fixed" }
func (f fixedSource) Check(time.Time) scheduler.Verdict { return f.v }

// While the user's pause holds, the next window is counted from its end:
// a window open now that outlasts the pause opens then, upcoming ones over
// before it are dropped, and an open-ended pause has none.
func TestNextWindowWhilePaused(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	at := func(h float64) time.Time { return now.Add(time.Duration(h * float64(time.Hour))) }
	span := func(from, to float64, why string) scheduler.Span {
		sp := scheduler.Span{Start: at(from), Reason: why}
		if to > 0 {
			sp.End = at(to)
		}
		return sp
	}
	cases := []struct {
		name      string
		v         scheduler.Verdict
		pause     time.Duration // 0 = not paused; -1 = until resumed
		wantStart float64       // hours from now; -1 = no next window
		wantWhy   string
	}{
		{"not paused", scheduler.Verdict{Upcoming: []scheduler.Span{span(0.5, 1, "meeting")}}, 0, 0.5, "meeting"},
		{"upcoming over before the pause ends", scheduler.Verdict{Upcoming: []scheduler.Span{span(0.5, 1, "meeting"), span(3, 4, "review")}}, 2 * time.Hour, 3, "review"},
		{"upcoming straddles the pause end", scheduler.Verdict{Upcoming: []scheduler.Span{span(1, 4, "offsite")}}, 2 * time.Hour, 2, "offsite (when the pause ends)"},
		{"open now, outlasts the pause", scheduler.Verdict{Open: true, Reason: "asleep", Until: at(5)}, 2 * time.Hour, 2, "fixed: asleep (when the pause ends)"},
		{"open now, ends before the pause", scheduler.Verdict{Open: true, Reason: "asleep", Until: at(1)}, 2 * time.Hour, -1, ""},
		{"idle now, no known end", scheduler.Verdict{Open: true, Reason: "idle"}, 2 * time.Hour, 2, "fixed: idle (when the pause ends)"},
		{"paused until resumed", scheduler.Verdict{Upcoming: []scheduler.Span{span(3, 4, "review")}}, -1, -1, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := &fakeClock{t: now}
			s, err := scheduler.New(context.Background(), scheduler.Options{Clock: clock, Sources: []scheduler.Source{fixedSource{c.v}}, Store: &memStore{}, Log: zerolog.Nop()})
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case c.pause > 0:
				s.Pause(context.Background(), now.Add(c.pause))
			case c.pause < 0:
				s.Pause(context.Background(), time.Time{})
			}
			next := s.NextWindow()
			if c.wantStart < 0 {
				if next != nil {
					t.Fatalf("next window %+v, want none", *next)
				}
				return
			}
			if next == nil || !next.Start.Equal(at(c.wantStart)) || next.Reason != c.wantWhy {
				t.Fatalf("next window %+v, want %v %q", next, at(c.wantStart), c.wantWhy)
			}
			if st := s.Snapshot(context.Background(), 1); st.NextWindow == nil || !st.NextWindow.Start.Equal(next.Start) {
				t.Fatalf("status disagrees: %+v", st.NextWindow)
			}
		})
	}
}

// During the return grace after a request, a window open now is expected to
// resume when the grace ends (not at the source's next span, e.g. tomorrow
// night's sleep), unless it closes before then.
func TestNextWindowDuringReturnGrace(t *testing.T) {
	now := time.Date(2026, 5, 1, 2, 0, 0, 0, time.UTC)
	at := func(h float64) time.Time { return now.Add(time.Duration(h * float64(time.Hour))) }
	tomorrow := scheduler.Span{Start: at(22), End: at(29), Reason: "asleep"}
	cases := []struct {
		name      string
		v         scheduler.Verdict
		wantStart float64
		wantWhy   string
	}{
		{"asleep until 07:00", scheduler.Verdict{Open: true, Reason: "asleep", Until: at(5), Upcoming: []scheduler.Span{tomorrow}}, 0.5, "fixed: asleep (if the user stays away until 02:30)"},
		{"sleep ends inside the grace", scheduler.Verdict{Open: true, Reason: "asleep", Until: at(0.25), Upcoming: []scheduler.Span{tomorrow}}, 22, "asleep"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clock := &fakeClock{t: now}
			s, err := scheduler.New(context.Background(), scheduler.Options{Clock: clock, Sources: []scheduler.Source{fixedSource{c.v}}, Store: &memStore{}, Log: zerolog.Nop(), ReturnGrace: 30 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			s.Touch()
			next := s.NextWindow()
			if next == nil || !next.Start.Equal(at(c.wantStart)) || next.Reason != c.wantWhy {
				t.Fatalf("next window %+v, want %v %q", next, at(c.wantStart), c.wantWhy)
			}
			if st := s.Snapshot(context.Background(), 1); !strings.Contains(st.Now, "the user is active") {
				t.Fatalf("status now %q, want the user active", st.Now)
			}
		})
	}
}
