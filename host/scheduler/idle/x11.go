package idle

import (
	"errors"
	"fmt"
	"io"
	"log"
	"os"
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
type X11 struct{ *poller }

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
	root := xproto.Drawable(setup.DefaultScreen(conn).Root)
	x := &X11{newPoller("X11 screensaver ("+display+")", poll, func() (time.Duration, error) {
		info, err := screensaver.QueryInfo(conn, root).Reply()
		if err != nil {
			return 0, fmt.Errorf("x11: query the idle time: %w", err)
		}
		return time.Duration(info.MsSinceUserInput) * time.Millisecond, nil
	}, conn.Close)}
	if err := x.Err(); err != nil {
		x.Close()
		return nil, err
	}
	return x, nil
}

var _ Detector = (*X11)(nil)
