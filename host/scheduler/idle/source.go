// Package idle is the scheduler's idle window: the user has given no
// keyboard or mouse input (logind on Linux, HIDIdleTime on macOS) and no
// client has sent a request through the proxy for
// scheduler.idle_threshold_minutes. Where the OS cannot tell, proxy traffic
// alone decides, and status says so.
package idle

import (
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/metaclaw-go/metaclaw/host/scheduler"
)

// Detector reports how long the user has given no input, from a cache it
// refreshes on its own (signals or polling): Idle never blocks.
type Detector interface {
	// Name is the OS source: "logind", "macos HIDIdleTime".
	Name() string
	// Idle returns the input idle time at now; ok is false when the
	// detector has no current answer (then traffic alone decides).
	Idle(now time.Time) (d time.Duration, ok bool)
	// Wake fires when the input state changes (may never fire).
	Wake() <-chan struct{}
	Close() error
}

// Source is the idle window source; it implements scheduler.Source,
// scheduler.Activity and scheduler.Waker.
type Source struct {
	threshold time.Duration
	det       Detector // nil: proxy traffic only
	note      string   // why there is no detector, for status
	lastTouch atomic.Int64
	wake      chan struct{}
	closeOnce sync.Once
	stop      chan struct{}
}

// NewSource builds the idle source. det may be nil (traffic only; note says
// why). The traffic clock starts at start: a fresh host counts as active.
// threshold 0 disables idle windows.
func NewSource(threshold time.Duration, det Detector, note string, start time.Time) *Source {
	s := &Source{threshold: threshold, det: det, note: note, wake: make(chan struct{}, 1), stop: make(chan struct{})}
	s.lastTouch.Store(start.UnixNano())
	if det != nil {
		go func() {
			for {
				select {
				case <-s.stop:
					return
				case _, ok := <-det.Wake():
					if !ok {
						return
					}
					select {
					case s.wake <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	return s
}

// Label names the idle source in use, for `metaclaw status`.
func (s *Source) Label() string {
	if s.det == nil {
		if s.note != "" {
			return "proxy traffic only (" + s.note + ")"
		}
		return "proxy traffic only"
	}
	return s.det.Name() + " + proxy traffic"
}

// Name implements scheduler.Source.
func (s *Source) Name() string { return "idle" }

// Touch implements scheduler.Activity.
func (s *Source) Touch(at time.Time) {
	for {
		old := s.lastTouch.Load()
		if at.UnixNano() <= old || s.lastTouch.CompareAndSwap(old, at.UnixNano()) {
			return
		}
	}
}

// Wake implements scheduler.Waker.
func (s *Source) Wake() <-chan struct{} { return s.wake }

// Close stops the detector.
func (s *Source) Close() error {
	s.closeOnce.Do(func() { close(s.stop) })
	if s.det != nil {
		return s.det.Close()
	}
	return nil
}

// Check implements scheduler.Source.
func (s *Source) Check(now time.Time) scheduler.Verdict {
	if s.threshold <= 0 {
		return scheduler.Verdict{Reason: "idle windows disabled (scheduler.idle_threshold_minutes is 0)"}
	}
	traffic := now.Sub(time.Unix(0, s.lastTouch.Load()))
	if traffic < 0 {
		traffic = 0
	}
	idle, what := traffic, "no proxy traffic"
	if s.det != nil {
		if d, ok := s.det.Idle(now); ok && d < idle {
			idle, what = d, "no input ("+s.det.Name()+")"
		}
	}
	if idle >= s.threshold {
		return scheduler.Verdict{Open: true, Reason: fmt.Sprintf("idle for %s (%s; threshold %s)", round(idle), s.Label(), round(s.threshold))}
	}
	left := s.threshold - idle
	return scheduler.Verdict{
		Reason:   fmt.Sprintf("idle %s of %s (%s)", round(idle), round(s.threshold), what),
		Upcoming: []scheduler.Span{{Start: now.Add(left), Reason: "idle threshold, if the user stays away"}},
	}
}

func round(d time.Duration) time.Duration {
	if d >= time.Minute {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}

var (
	_ scheduler.Source   = (*Source)(nil)
	_ scheduler.Activity = (*Source)(nil)
	_ scheduler.Waker    = (*Source)(nil)
)
