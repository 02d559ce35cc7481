package core

import (
	"context"
	"sync"
	"time"
)

// Learning yields to requests: background work that can wait (memory
// ingestion) asks WaitForGap before each of its steps, which returns at
// once when no request is being answered and otherwise at the end of the
// answers in flight, or after max (learning must still progress under
// load that never pauses). On two cores an ingestion step that starts
// beside an answer takes CPU, and the garbage it makes, from that answer.

type inflight struct {
	mu    sync.Mutex
	n     int
	quiet chan struct{} // closed while n == 0
}

func newInflight() *inflight {
	q := make(chan struct{})
	close(q)
	return &inflight{quiet: q}
}

// Answering marks a request being answered until the returned func is
// called (the proxy calls it for every request it relays).
func (c *Core) Answering() (done func()) {
	f := c.inflight
	f.mu.Lock()
	if f.n == 0 {
		f.quiet = make(chan struct{})
	}
	f.n++
	f.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			if f.n--; f.n == 0 {
				close(f.quiet)
			}
			f.mu.Unlock()
		})
	}
}

// WaitForGap returns once no request is being answered, after max, or
// when ctx ends, whichever comes first; it reports whether it found a gap.
func (c *Core) WaitForGap(ctx context.Context, max time.Duration) bool {
	f := c.inflight
	f.mu.Lock()
	q := f.quiet
	f.mu.Unlock()
	select {
	case <-q:
		return true
	default:
	}
	t := time.NewTimer(max)
	defer t.Stop()
	select {
	case <-q:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}
