package idle

import (
	"sync"
	"time"
)

// poller samples an OS's input idle time on its own goroutine, for the
// sources that announce nothing (ioreg, the X server, Windows): Idle never
// waits on the OS, and a drop of the idle time between two samples (the
// user gave input) wakes the scheduler.
type poller struct {
	name     string
	interval time.Duration
	read     func() (time.Duration, error)
	release  func() // after the last sample; may be nil

	mu   sync.Mutex
	idle time.Duration // at the last sample
	at   time.Time     // when it was taken
	err  error

	wake      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// newPoller takes a first sample, then one every interval until Close.
func newPoller(name string, interval time.Duration, read func() (time.Duration, error), release func()) *poller {
	p := &poller{name: name, interval: interval, read: read, release: release,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	p.sample()
	go p.loop()
	return p
}

func (p *poller) loop() {
	defer close(p.done)
	t := time.NewTicker(p.interval)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.sample()
		}
	}
}

func (p *poller) sample() {
	d, err := p.read()
	now := time.Now()
	p.mu.Lock()
	// Without input the idle time grows with the clock; well below that,
	// the user was back in between.
	back := err == nil && p.err == nil && !p.at.IsZero() && d < p.idle+now.Sub(p.at)-p.interval/2
	p.idle, p.at, p.err = d, now, err
	p.mu.Unlock()
	if back {
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}
}

// Name implements Detector.
func (p *poller) Name() string { return p.name }

// Idle implements Detector: the last sample plus the time since it; no
// answer while the OS gives none.
func (p *poller) Idle(time.Time) (time.Duration, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil || p.at.IsZero() {
		return 0, false
	}
	return p.idle + time.Since(p.at), true
}

// Err is the last sample's error (nil when the OS answers).
func (p *poller) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Wake implements Detector.
func (p *poller) Wake() <-chan struct{} { return p.wake }

// Close implements Detector: stops polling and releases the OS handle.
func (p *poller) Close() error {
	p.closeOnce.Do(func() {
		close(p.stop)
		<-p.done
		if p.release != nil {
			p.release()
		}
	})
	return nil
}
