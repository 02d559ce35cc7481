package skills

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/metaclaw-go/metaclaw/host/store"
)

// asyncUsage records LLM/embedding usage from a background goroutine, so
// that embedding a query on the request path never writes to the store
// there. When its queue is full, records are dropped and counted.
type asyncUsage struct {
	st interface {
		RecordUsage(context.Context, store.Usage) error
	}
	ch      chan store.Usage
	dropped atomic.Int64
	done    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

func newAsyncUsage(st interface {
	RecordUsage(context.Context, store.Usage) error
}) *asyncUsage {
	a := &asyncUsage{st: st, ch: make(chan store.Usage, 1024), done: make(chan struct{})}
	a.wg.Add(1)
	go a.loop()
	return a
}

// RecordUsage implements the embedder's usage recorder.
func (a *asyncUsage) RecordUsage(_ context.Context, u store.Usage) error {
	if u.At.IsZero() {
		u.At = time.Now()
	}
	select {
	case <-a.done:
		a.dropped.Add(1)
	case a.ch <- u:
	default:
		a.dropped.Add(1)
	}
	return nil
}

func (a *asyncUsage) loop() {
	defer a.wg.Done()
	write := func(u store.Usage) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = a.st.RecordUsage(ctx, u)
		cancel()
	}
	for {
		select {
		case u := <-a.ch:
			write(u)
		case <-a.done:
			for {
				select {
				case u := <-a.ch:
					write(u)
				default:
					return
				}
			}
		}
	}
}

// Close writes what is queued and stops.
func (a *asyncUsage) Close() error {
	a.once.Do(func() { close(a.done) })
	a.wg.Wait()
	return nil
}
