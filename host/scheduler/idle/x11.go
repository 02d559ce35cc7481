package idle

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sync"
	"time"

	"github.com/jezek/xgb"
	"github.com/jezek/xgb/screensaver"
	"github.com/jezek/xgb/xproto"
)

func init() {
	// xgb prints connection trouble to stderr; errors reach us as values.
	xgb.Logger = log.New(io.Discard, "", 0)
}

// X11 reads the time since the last keyboard or mouse input from the X
// server's MIT-SCREEN-SAVER extension (XScreenSaverQueryInfo), the fallback
// where logind gives no session (X11 desktops without systemd). The X
// server announces no input, so it is polled on its own goroutine; a drop
// in the idle time (the user is back) wakes the scheduler.
type X11 struct {
	conn    *xgb.Conn
	root    xproto.Drawable
	display string
	poll    time.Duration

	mu   sync.Mutex
	idle time.Duration // at the last poll
	at   time.Time     // when it was read
	err  error

	wake      chan struct{}
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// DialX11 connects to display ("" = $DISPLAY) and polls it every poll
// (default 2 s).
func DialX11(display string, poll time.Duration) (*X11, error) {
	if poll <= 0 {
		poll = 2 * time.Second
	}
	if display == "" {
		display = os.Getenv("DISPLAY")
	}
	conn, err := xgb.NewConnDisplay(display)
	if err != nil {
		return nil, fmt.Errorf("x11: connect to the display: %w", err)
	}
	if err := screensaver.Init(conn); err != nil {
		conn.Close()
		return nil, fmt.Errorf("x11: the X server has no MIT-SCREEN-SAVER extension: %w", err)
	}
	setup := xproto.Setup(conn)
	if setup == nil || len(setup.Roots) == 0 {
		conn.Close()
		return nil, errors.New("x11: the X server has no screen")
	}
	x := &X11{conn: conn, root: xproto.Drawable(setup.DefaultScreen(conn).Root), display: display, poll: poll,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	if err := x.refresh(); err != nil {
		conn.Close()
		return nil, err
	}
	go x.loop()
	return x, nil
}

func (x *X11) refresh() error {
	info, err := screensaver.QueryInfo(x.conn, x.root).Reply()
	now := time.Now()
	x.mu.Lock()
	defer x.mu.Unlock()
	if err != nil {
		x.err = fmt.Errorf("x11: query the idle time: %w", err)
		return x.err
	}
	idle := time.Duration(info.MsSinceUserInput) * time.Millisecond
	expected := x.idle + now.Sub(x.at)
	back := !x.at.IsZero() && idle < expected-x.poll/2
	x.idle, x.at, x.err = idle, now, nil
	if back {
		select {
		case x.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

func (x *X11) loop() {
	defer close(x.done)
	t := time.NewTicker(x.poll)
	defer t.Stop()
	for {
		select {
		case <-x.stop:
			return
		case <-t.C:
			_ = x.refresh() // the error is kept for Idle and status
		}
	}
}

// Name implements Detector.
func (x *X11) Name() string { return "X11 screensaver (" + x.display + ")" }

// Idle implements Detector: the last reading plus the time since; no
// answer while the X server does not answer.
func (x *X11) Idle(now time.Time) (time.Duration, bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.err != nil || x.at.IsZero() {
		return 0, false
	}
	d := x.idle + now.Sub(x.at)
	if d < 0 {
		d = 0
	}
	return d, true
}

// Err is the last polling error (nil when the X server answers).
func (x *X11) Err() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.err
}

// Wake implements Detector.
func (x *X11) Wake() <-chan struct{} { return x.wake }

// Close implements Detector.
func (x *X11) Close() error {
	x.closeOnce.Do(func() {
		close(x.stop)
		<-x.done
		x.conn.Close()
	})
	return nil
}

var _ Detector = (*X11)(nil)
