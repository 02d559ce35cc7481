package scheduler_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/scheduler"
	"github.com/metaclaw-go/metaclaw/host/store"
)

// A host killed while the trainer worked restarts in the right state: the
// window, if still open, is re-entered and the new trainer resumed; the step
// average, the last step and a user pause survive; every transition is in
// the store's log with its reason.
func TestRestartResumesFromTheStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func() (*store.SQLite, scheduler.SQLStore) {
		st, err := store.OpenSQLite(ctx, filepath.Join(dir, store.DBFile))
		if err != nil {
			t.Fatal(err)
		}
		return st, scheduler.SQLStore{W: st.Writer(), R: st.Reader()}
	}
	clock := &fakeClock{t: time.Date(2026, 5, 1, 2, 0, 0, 0, time.UTC)}
	src := &switchSource{}
	src.set(true, clock.Now().Add(4*time.Hour))

	db1, ss1 := open()
	tr1 := newFakeTrainer(2)
	rec := newRecorder()
	s1, err := scheduler.New(ctx, scheduler.Options{Clock: clock, Sources: []scheduler.Source{src}, Trainer: tr1, Store: ss1, OnTransition: rec.on, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	stop := pump(s1)
	rec.waitFor(t, scheduler.StateWindowOpen)
	rec.waitFor(t, scheduler.StateUpdating)
	tr1.feed <- 1
	tr1.feed <- 2
	// One step finishes (no gate), then the trainer waits for samples.
	waitStage(t, tr1, "step 1 done")
	rec.waitFor(t, scheduler.StateWindowOpen)
	tr1.feed <- 3
	rec.waitFor(t, scheduler.StateUpdating)
	stop()
	db1.Close() // killed: nothing is closed or paused

	db2, ss2 := open()
	defer db2.Close()
	tr2 := newFakeTrainer(2)
	rec2 := newRecorder()
	s2, err := scheduler.New(ctx, scheduler.Options{Clock: clock, Sources: []scheduler.Source{src}, Trainer: tr2, Store: ss2, OnTransition: rec2.on, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	st := s2.Snapshot(ctx, 50)
	if st.State != scheduler.StateIdleWait || !strings.Contains(st.Reason, "host restarted while updating") {
		t.Fatalf("after restart: %s (%s)", st.State, st.Reason)
	}
	if st.Steps != 1 || st.LastStep == nil || st.LastStep.Samples != 2 || st.StepAvgSeconds <= 0 {
		t.Fatalf("step history lost: %+v", st)
	}
	stepUntil(t, s2, rec2, scheduler.StateWindowOpen)
	tr2.mu.Lock()
	resumed := tr2.resumes
	tr2.mu.Unlock()
	if resumed != 1 {
		t.Fatalf("new trainer resumed %d times", resumed)
	}
	st = s2.Snapshot(ctx, 50)
	if st.Window == nil || st.Window.ID != 2 {
		t.Fatalf("window numbering not continued: %+v", st.Window)
	}
	var seq []string
	for i := len(st.Transitions) - 1; i >= 0; i-- {
		seq = append(seq, string(st.Transitions[i].To))
		if st.Transitions[i].Reason == "" {
			t.Fatalf("transition without a reason: %+v", st.Transitions[i])
		}
	}
	want := "window_open updating window_open updating idle_wait window_open"
	if strings.Join(seq, " ") != want {
		t.Fatalf("logged transitions %v, want %s", seq, want)
	}

	// A pause survives a restart too.
	if err := s2.Pause(ctx, time.Time{}); err != nil {
		t.Fatal(err)
	}
	s3, _ := scheduler.New(ctx, scheduler.Options{Clock: clock, Sources: []scheduler.Source{src}, Store: ss2, Log: zerolog.Nop()})
	s3.Step(ctx)
	if st := s3.Snapshot(ctx, 1); !st.Paused || st.State != scheduler.StateIdleWait {
		t.Fatalf("pause lost: %+v", st)
	}
}

// pump steps s until stopped, like Run but without its shutdown (a kill).
func pump(s *scheduler.Scheduler) func() {
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
				s.Step(context.Background())
			}
		}
	}()
	return func() { close(done); <-stopped }
}

func waitStage(t *testing.T, f *fakeTrainer, s string) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-f.stageCh:
			if got == s {
				return
			}
		case <-deadline:
			t.Fatalf("trainer never reached %q", s)
		}
	}
}
