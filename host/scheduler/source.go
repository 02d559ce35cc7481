package scheduler

import (
	"time"
)

// Clock is the scheduler's time; tests drive a fake one through midnight and
// DST changes.
type Clock interface{ Now() time.Time }

// SystemClock is the real clock.
type SystemClock struct{}

// Now implements Clock.
func (SystemClock) Now() time.Time { return time.Now() }

// Source says whether the user is expected to be away. Check must not block
// on the network or a subprocess: sources that need either refresh a cache
// in the background and answer from it.
type Source interface {
	// Name is a short label: "sleep", "idle", "calendar", "ics".
	Name() string
	// Check reports the source's view at now.
	Check(now time.Time) Verdict
}

// Verdict is one source's answer.
type Verdict struct {
	Open   bool   `json:"open"`
	Reason string `json:"reason"`
	// Until is when an open window is expected to end; zero = unknown.
	Until time.Time `json:"until,omitzero"`
	// Upcoming lists the next windows this source expects after now (after
	// the current one when open), earliest first, a few at most.
	Upcoming []Span `json:"upcoming,omitempty"`
	// Error is the source's last failure (the verdict then comes from its
	// cache, or is closed).
	Error string `json:"error,omitempty"`
}

// Span is a time interval with a reason.
type Span struct {
	Start  time.Time `json:"start"`
	End    time.Time `json:"end,omitzero"` // zero = open-ended
	Reason string    `json:"reason"`
}

// Len is the span's length; 0 when open-ended.
func (s Span) Len() time.Duration {
	if s.End.IsZero() {
		return 0
	}
	return s.End.Sub(s.Start)
}

// Waker is implemented by sources that learn of changes by events (logind
// signals, a finished calendar refresh): a value on the channel makes the
// scheduler re-evaluate at once instead of at its next tick.
type Waker interface {
	Wake() <-chan struct{}
}

// Activity is told about each request of the user (proxy turns, hook
// calls). The idle source implements it.
type Activity interface {
	Touch(at time.Time)
}
