package scheduler_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/metaclaw-go/metaclaw/host/scheduler"
)

// fakeTrainer is a training loop shaped like the real one (collect a batch
// of samples, forward_backward, optim_step, save and swap the sampler) whose
// every stage waits for the test, so the user can return at any point. It
// keeps the books the tests check: every sample is pending, in the partial
// batch, in the batch in flight, or trained, and trained at most once.
type fakeTrainer struct {
	batchSize int
	feed      chan int // samples arriving (scored turns)
	// gate, when set, holds each stage of a step ("forward_backward",
	// "optim_step", "swap") until the test sends on it.
	gate chan string

	mu       sync.Mutex
	pending  []int // scored, not yet taken into a batch
	partial  []int // the batch being collected, kept across windows
	inFlight []int
	trained  map[int]int
	sampler  int // sampler version: bumped by each swap
	steps    int64
	log      []string
	done     chan struct{} // closed when the run goroutine exits; nil when idle
	resumes  int
	pauses   int
	stageCh  chan string // every stage entered, for the test to wait on
}

func newFakeTrainer(batch int) *fakeTrainer {
	return &fakeTrainer{batchSize: batch, feed: make(chan int, 64), trained: map[int]int{}, stageCh: make(chan string, 64)}
}

func (f *fakeTrainer) Name() string { return "fake" }

func (f *fakeTrainer) note(s string) {
	f.mu.Lock()
	f.log = append(f.log, s)
	f.mu.Unlock()
	select {
	case f.stageCh <- s:
	default:
	}
}

func (f *fakeTrainer) Resume(w scheduler.Window) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resumes++
	if f.done != nil {
		return // still stopping from the last window: the scheduler never does this
	}
	done := make(chan struct{})
	f.done = done
	go func() {
		defer close(done)
		f.run(w)
	}()
}

// Pause waits for the run goroutine to reach a safe point and exit.
func (f *fakeTrainer) Pause(ctx context.Context) error {
	f.mu.Lock()
	f.pauses++
	done := f.done
	f.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		f.mu.Lock()
		if f.done == done {
			f.done = nil
		}
		f.mu.Unlock()
		f.note("paused")
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (f *fakeTrainer) wait(w scheduler.Window, stage string) bool {
	f.note(stage)
	if f.gate == nil {
		return true
	}
	select {
	case <-f.gate:
		return true
	case <-w.Closing():
		// Closing during a backend call: the call still completes (the
		// backend's next safe point is its end), then the loop stops.
		<-f.gate
		return false
	}
}

func (f *fakeTrainer) run(w scheduler.Window) {
	for {
		// Collect: stop at once when the window closes, keeping the batch.
		for {
			f.mu.Lock()
			for len(f.partial) < f.batchSize && len(f.pending) > 0 {
				f.partial = append(f.partial, f.pending[0])
				f.pending = f.pending[1:]
			}
			n := len(f.partial)
			f.mu.Unlock()
			if n >= f.batchSize {
				break
			}
			w.Report.Busy(fmt.Sprintf("collecting %d/%d", n, f.batchSize))
			f.note(fmt.Sprintf("collecting %d/%d", n, f.batchSize))
			select {
			case <-w.Closing():
				f.note(fmt.Sprintf("stopped collecting with %d kept", n))
				return
			case id := <-f.feed:
				f.mu.Lock()
				f.pending = append(f.pending, id)
				f.mu.Unlock()
			}
		}
		f.mu.Lock()
		f.inFlight, f.partial = f.partial, nil
		f.mu.Unlock()
		w.Report.Busy("step")
		start := time.Now()
		closed := !f.wait(w, "forward_backward")
		if closed {
			// Safe point before optim_step: cancel; the batch goes back
			// to the front of the pending samples, untrained.
			f.mu.Lock()
			f.pending = append(append([]int{}, f.inFlight...), f.pending...)
			f.inFlight = nil
			f.mu.Unlock()
			f.note("step cancelled at the safe point")
			return
		}
		// optim_step applies the update: from here the batch is trained,
		// the step is finished rather than cancelled.
		f.wait(w, "optim_step")
		f.mu.Lock()
		for _, id := range f.inFlight {
			f.trained[id]++
		}
		n := len(f.inFlight)
		f.inFlight = nil
		f.mu.Unlock()
		f.wait(w, "swap")
		f.mu.Lock()
		f.sampler++
		f.steps++
		step := f.steps
		f.mu.Unlock()
		w.Report.StepDone(scheduler.StepReport{Step: step, Samples: n, Duration: time.Since(start), Loss: 0.5, At: time.Now()})
		f.note(fmt.Sprintf("step %d done", step))
		select {
		case <-w.Closing():
			return
		default:
		}
		f.mu.Lock()
		empty := len(f.pending) == 0
		f.mu.Unlock()
		if empty {
			w.Report.Idle("no batch ready")
			select {
			case <-w.Closing():
				return
			case id := <-f.feed:
				f.mu.Lock()
				f.pending = append(f.pending, id)
				f.mu.Unlock()
			}
		}
	}
}

// books returns every sample the trainer knows, with how often it was trained.
func (f *fakeTrainer) books() (pending, partial, inFlight []int, trained map[int]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t := map[int]int{}
	for k, v := range f.trained {
		t[k] = v
	}
	return append([]int{}, f.pending...), append([]int{}, f.partial...), append([]int{}, f.inFlight...), t
}
