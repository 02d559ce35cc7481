package idle

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// IOReg reads HIDIdleTime (nanoseconds since the last keyboard, mouse or
// trackpad input) from macOS's IOKit registry through `ioreg`, polled on a
// goroutine so Idle never waits on the subprocess.
type IOReg struct {
	cmd      string
	interval time.Duration

	mu   sync.Mutex
	idle time.Duration
	at   time.Time
	err  error

	wake chan struct{}
	stop chan struct{}
	done chan struct{}
}

// NewIOReg starts polling cmd (normally "ioreg") every interval.
func NewIOReg(cmd string, interval time.Duration) *IOReg {
	r := &IOReg{cmd: cmd, interval: interval, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	r.poll()
	go func() {
		defer close(r.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				r.poll()
			}
		}
	}()
	return r
}

var hidIdle = regexp.MustCompile(`"HIDIdleTime"\s*=\s*(\d+)`)

// ParseHIDIdleTime reads the first HIDIdleTime of `ioreg -c IOHIDSystem` output.
func ParseHIDIdleTime(out []byte) (time.Duration, error) {
	m := hidIdle.FindSubmatch(out)
	if m == nil {
		return 0, errors.New("ioreg: no HIDIdleTime in the output")
	}
	ns, err := strconv.ParseUint(string(m[1]), 10, 63)
	if err != nil {
		return 0, fmt.Errorf("ioreg: HIDIdleTime %q: %w", m[1], err)
	}
	return time.Duration(ns), nil
}

func (r *IOReg) poll() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, r.cmd, "-c", "IOHIDSystem", "-d", "4").Output()
	var d time.Duration
	if err == nil {
		d, err = ParseHIDIdleTime(out)
	} else {
		err = fmt.Errorf("ioreg: %w", err)
	}
	r.mu.Lock()
	returned := err == nil && r.err == nil && d < r.idle // input since the last poll
	r.idle, r.at, r.err = d, time.Now(), err
	r.mu.Unlock()
	if returned {
		select {
		case r.wake <- struct{}{}:
		default:
		}
	}
}

// Name implements Detector.
func (r *IOReg) Name() string { return "macos HIDIdleTime" }

// Idle implements Detector: the last sample plus the time since it.
func (r *IOReg) Idle(time.Time) (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil || r.at.IsZero() {
		return 0, false
	}
	return r.idle + time.Since(r.at), true
}

// Err is the last poll's error.
func (r *IOReg) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// Wake implements Detector.
func (r *IOReg) Wake() <-chan struct{} { return r.wake }

// Close implements Detector.
func (r *IOReg) Close() error {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
	return nil
}
