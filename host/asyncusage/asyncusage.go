// Package asyncusage records the usage of LLM and embedding calls from a
// background goroutine, so that a call made on the request path (embedding
// a query for skills or memory retrieval) never writes to the store there.
package asyncusage

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/metaclaw-go/metaclaw/host/store"
)

// queueLen bounds the records waiting for the writer; past it they are
// dropped and counted (usage is bookkeeping, not worth holding an answer).
const queueLen = 1024

// Recorder queues usage records and writes them to a store in order.
type Recorder struct {
	st      store.UsageRecorder
	ch      chan store.Usage
	dropped atomic.Int64
	done    chan struct{}
	once    sync.Once
	wg      sync.WaitGroup
}

// New starts a Recorder writing to st; Close stops it.
func New(st store.UsageRecorder) *Recorder {
	a := &Recorder{st: st, ch: make(chan store.Usage, queueLen), done: make(chan struct{})}
	a.wg.Add(1)
	go a.loop()
	return a
}

// RecordUsage queues u (stamped now when it has no time) and returns at
// once; after Close, or with the queue full, u is dropped and counted.
func (a *Recorder) RecordUsage(_ context.Context, u store.Usage) error {
	if u.At.IsZero() {
		u.At = time.Now()
	}
	select {
	case <-a.done: // checked first: a select would pick the free queue half the time
		a.dropped.Add(1)
		return nil
	default:
	}
	select {
	case a.ch <- u:
	default:
		a.dropped.Add(1)
	}
	return nil
}

// Dropped is how many records were not written (queue full, or after
// Close).
func (a *Recorder) Dropped() int64 { return a.dropped.Load() }

func (a *Recorder) loop() {
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
func (a *Recorder) Close() error {
	a.once.Do(func() { close(a.done) })
	a.wg.Wait()
	return nil
}
