package train

import (
	"context"

	"github.com/metaclaw-go/metaclaw/host/scheduler"
)

// The Loop is the scheduler's Trainer (auto mode, or rl mode with
// scheduler.enabled): it trains only between Resume and Pause.

// Name implements scheduler.Trainer.
func (l *Loop) Name() string {
	if l.o.Backend != "" {
		return "rl (" + l.o.Backend + ")"
	}
	return "rl (" + l.o.Config.RL.Backend + ")"
}

// Resume implements scheduler.Trainer: training may run inside w.
func (l *Loop) Resume(w scheduler.Window) {
	l.mu.Lock()
	l.window, l.reported = &w, ""
	l.mu.Unlock()
	l.poke()
}

// Pause implements scheduler.Trainer. The loop stops at its next safe
// point: while it waits for a batch nothing is claimed (scored samples stay
// where they are, a partial batch is simply kept for the next window); a
// step or replay in flight is finished — the backend pipelines its stages,
// so the end of the step is its next safe point — and its batch is trained
// exactly once. Serving never waits: the sampler in use keeps answering.
func (l *Loop) Pause(ctx context.Context) error {
	l.mu.Lock()
	l.window = nil
	idle := l.idle
	l.mu.Unlock()
	l.poke()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

var _ scheduler.Trainer = (*Loop)(nil)
