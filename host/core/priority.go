package core

import "runtime"

// DefaultBackgroundNice is the niceness background work's threads get above
// the process's own (config runtime.background_nice): on Linux the kernel
// then gives a request's threads the cores first whenever both want one.
const DefaultBackgroundNice = 10

// MaxBackgroundNice is the largest niceness: Linux caps it at 19.
const MaxBackgroundNice = 19

// GoBackground runs f on a goroutine of its own as background work (durable
// job workers, learning's catch-up). On Linux, with BackgroundNice set, the
// goroutine is locked to its OS thread for the rest of its life and that
// thread's niceness is raised by BackgroundNice: never unlocked, the thread
// exits with the goroutine, so its niceness never reaches other goroutines
// (the runtime starts new threads from an unlocked template thread, not
// from a locked one, and goroutines f starts run on unniced threads).
// Elsewhere, or with BackgroundNice 0, it is a plain go statement.
func (c *Core) GoBackground(f func()) {
	if c.bgNice <= 0 {
		go f()
		return
	}
	go func() {
		onMain, err := lockNicedThread(c.bgNice)
		if onMain {
			// The process's first thread is never ended (a locked
			// goroutine exiting on it parks it for good, niced), so hold
			// it, unniced, while f runs on a goroutine that therefore
			// cannot be scheduled here.
			done := make(chan struct{})
			c.GoBackground(func() { defer close(done); f() })
			<-done
			runtime.UnlockOSThread()
			return
		}
		if err != nil {
			c.bgNiceWarn.Do(func() {
				c.log.Warn().Err(err).Int("nice", c.bgNice).Msg("background work runs at the process's priority")
			})
		}
		f()
	}()
}

// Foreground runs f on a fresh goroutine, at the process's priority, and
// waits for it. Background work calls it around a critical section that the
// request path also waits for (a lock retrieval takes): a niced thread
// holding such a lock while the kernel runs others first would stall the
// requests that wait for it.
func Foreground(f func()) {
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		f()
	}()
	if p := <-done; p != nil {
		panic(p) // where the caller's recover sees it, as if f ran there
	}
}
