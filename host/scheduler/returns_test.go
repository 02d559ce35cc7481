package scheduler_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/scheduler"
	"github.com/metaclaw-go/metaclaw/internal/testhost"
)

// returnRig is a real proxy (with the scheduler's activity hook, as the
// daemon assembles it) in front of a fake upstream, a scheduler running its
// loop, and the fake trainer with every stage held by the test.
type returnRig struct {
	t     *testing.T
	host  *testhost.Host
	clock *fakeClock
	src   *switchSource
	tr    *fakeTrainer
	rec   *recorder
	s     *scheduler.Scheduler
}

func newReturnRig(t *testing.T) *returnRig {
	r := &returnRig{t: t, clock: &fakeClock{t: time.Date(2026, 5, 1, 3, 0, 0, 0, time.UTC)}, src: &switchSource{}, tr: newFakeTrainer(4), rec: newRecorder()}
	r.tr.gate = make(chan string)
	s, err := scheduler.New(context.Background(), scheduler.Options{
		Clock: r.clock, Sources: []scheduler.Source{r.src}, Trainer: r.tr, Store: &memStore{}, Log: zerolog.Nop(),
		ReturnGrace: time.Hour, Tick: 20 * time.Millisecond, OnTransition: r.rec.on,
	})
	if err != nil {
		t.Fatal(err)
	}
	r.s = s
	r.host = testhost.Start(t, testhost.Options{Wrap: func(h http.Handler) http.Handler { return scheduler.TouchOnRequests(s, h) }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx, 5*time.Second); close(done) }()
	t.Cleanup(func() {
		// Let a held stage go so the loop can stop.
		go func() {
			for {
				select {
				case r.tr.gate <- "cleanup":
				case <-done:
					return
				}
			}
		}()
		cancel()
		<-done
	})
	return r
}

// chat sends one request of the user through the proxy and returns how long
// it took.
func (r *returnRig) chat(side bool) time.Duration {
	r.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.host.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"are you there?"}]}`))
	req.Header.Set("Content-Type", "application/json")
	if side {
		req.Header.Set("X-Turn-Type", "side")
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		r.t.Fatalf("chat: %d %s", resp.StatusCode, body)
	}
	return time.Since(start)
}

// stage waits until the trainer enters stage s.
func (r *returnRig) stage(s string) {
	r.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case got := <-r.tr.stageCh:
			if got == s {
				return
			}
		case <-deadline:
			r.tr.mu.Lock()
			defer r.tr.mu.Unlock()
			r.t.Fatalf("trainer never reached %q; log %v", s, r.tr.log)
		}
	}
}

// release lets the held stage s proceed.
func (r *returnRig) release(s string) {
	r.t.Helper()
	select {
	case r.tr.gate <- s:
	case <-time.After(10 * time.Second):
		r.t.Fatalf("stage %s is not waiting", s)
	}
}

// openWindow lets the user leave: the grace after their last request has
// passed and the window source is open.
func (r *returnRig) openWindow() {
	r.clock.Add(2 * time.Hour)
	r.src.set(true, time.Time{})
	r.rec.waitFor(r.t, scheduler.StateWindowOpen)
}

func (r *returnRig) feed(ids ...int) {
	for _, id := range ids {
		r.tr.feed <- id
	}
}

// step runs one full step: forward_backward, optim_step, swap.
func (r *returnRig) step() {
	for _, s := range []string{"forward_backward", "optim_step", "swap"} {
		r.stage(s)
		r.release(s)
	}
}

// checkBooks asserts that samples 1..n are each trained exactly once.
func (r *returnRig) checkBooks(n int) {
	r.t.Helper()
	pending, partial, inFlight, trained := r.tr.books()
	if len(pending)+len(partial)+len(inFlight) != 0 {
		r.t.Fatalf("untrained samples left: pending %v partial %v in flight %v", pending, partial, inFlight)
	}
	for id := 1; id <= n; id++ {
		if trained[id] != 1 {
			r.t.Fatalf("sample %d trained %d times; books %v", id, trained[id], trained)
		}
	}
	if len(trained) != n {
		r.t.Fatalf("trained %v, want samples 1..%d", trained, n)
	}
}

func TestUserReturnsDuringCollection(t *testing.T) {
	r := newReturnRig(t)
	r.openWindow()
	r.feed(1, 2)
	r.stage("collecting 2/4")
	r.rec.waitFor(t, scheduler.StateUpdating)

	r.chat(false) // the user is back
	tr := r.rec.waitFor(t, scheduler.StatePausing)
	if !strings.Contains(tr.Reason, "the user is active") {
		t.Fatalf("pausing because %q", tr.Reason)
	}
	r.rec.waitFor(t, scheduler.StateIdleWait)
	pending, partial, _, trained := r.tr.books()
	if !slices.Equal(partial, []int{1, 2}) || len(pending) != 0 || len(trained) != 0 {
		t.Fatalf("partial batch not kept: partial %v pending %v trained %v", partial, pending, trained)
	}

	// The next window completes the kept batch with two new samples.
	r.openWindow()
	r.feed(3, 4)
	r.step()
	r.stage("step 1 done")
	r.checkBooks(4)
}

func TestUserReturnsDuringStep(t *testing.T) {
	r := newReturnRig(t)
	baseline := r.chat(false)
	r.openWindow()
	r.feed(1, 2, 3, 4)
	r.stage("forward_backward") // held: the backend call is in flight

	// The user's request is served while the step is still in flight: it
	// completes before the test lets the step go on.
	during := r.chat(false)
	r.rec.waitFor(t, scheduler.StatePausing)
	r.tr.mu.Lock()
	logged := slices.Clone(r.tr.log)
	r.tr.mu.Unlock()
	if slices.Contains(logged, "step cancelled at the safe point") || slices.Contains(logged, "paused") {
		t.Fatalf("the trainer stopped before its call returned: %v", logged)
	}
	if st := r.s.Snapshot(context.Background(), 1); st.State != scheduler.StatePausing {
		t.Fatalf("state %s while the step is in flight", st.State)
	}
	t.Logf("chat latency: %s with no training, %s with a step in flight (measured, not asserted)", baseline, during)

	// The call returns; at the safe point the step is cancelled and its batch
	// goes back to the pending samples, untrained.
	r.release("forward_backward")
	r.stage("step cancelled at the safe point")
	r.rec.waitFor(t, scheduler.StateIdleWait)
	pending, _, inFlight, trained := r.tr.books()
	if !slices.Equal(pending, []int{1, 2, 3, 4}) || len(inFlight) != 0 || len(trained) != 0 {
		t.Fatalf("after cancel: pending %v in flight %v trained %v", pending, inFlight, trained)
	}

	// The next window trains the batch once.
	r.openWindow()
	r.step()
	r.stage("step 1 done")
	r.checkBooks(4)
}

func TestUserReturnsAfterOptimStep(t *testing.T) {
	r := newReturnRig(t)
	r.openWindow()
	r.feed(1, 2, 3, 4)
	r.stage("forward_backward")
	r.release("forward_backward")
	r.stage("optim_step") // held: the update is being applied
	r.chat(false)
	r.rec.waitFor(t, scheduler.StatePausing)
	// Past optim_step the step is finished, not cancelled: the weights
	// changed, so the batch is trained and the new sampler is swapped in.
	r.release("optim_step")
	r.stage("swap")
	r.release("swap")
	r.stage("step 1 done")
	r.rec.waitFor(t, scheduler.StateIdleWait)
	r.checkBooks(4)
	if st := r.s.Snapshot(context.Background(), 1); st.Steps != 1 || st.LastStep == nil || st.LastStep.Samples != 4 {
		t.Fatalf("last step not recorded: %+v", st)
	}
}

func TestUserReturnsRightAfterSwap(t *testing.T) {
	r := newReturnRig(t)
	r.openWindow()
	r.feed(1, 2, 3, 4)
	r.step()
	r.stage("step 1 done")
	// No batch ready: the trainer waits in the open window.
	r.rec.waitFor(t, scheduler.StateWindowOpen)

	r.chat(false)
	r.rec.waitFor(t, scheduler.StateIdleWait)
	r.checkBooks(4)

	// The next window trains only new samples.
	r.openWindow()
	r.feed(5, 6, 7, 8)
	r.step()
	r.stage("step 2 done")
	r.checkBooks(8)
	r.tr.mu.Lock()
	defer r.tr.mu.Unlock()
	if r.tr.sampler != 2 {
		t.Fatalf("sampler version %d, want 2 swaps", r.tr.sampler)
	}
}

// Side turns (heartbeats, cron) are the agent's, not the user's: they do
// not close a window.
func TestSideTurnsDoNotCloseTheWindow(t *testing.T) {
	r := newReturnRig(t)
	r.openWindow()
	r.chat(true)
	// The scheduler's loop runs on every request; give it a tick.
	for i := 0; i < 5; i++ {
		r.s.Step(context.Background())
	}
	if st := r.s.Snapshot(context.Background(), 1); st.State == scheduler.StatePausing || st.State == scheduler.StateIdleWait {
		t.Fatalf("a side turn closed the window: %s (%s)", st.State, st.Reason)
	}
	r.chat(false)
	r.rec.waitFor(t, scheduler.StateIdleWait)
}
