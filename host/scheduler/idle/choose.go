package idle

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"
)

// Choose opens the input idle detector for scheduler.idle_source: "auto"
// (logind on Linux, else the X11 screensaver extension when DISPLAY is
// set; HIDIdleTime on macOS; GetLastInputInfo on Windows), "logind",
// "x11", "macos", "windows", or "traffic" (none). With no detector it
// returns nil and a note saying why, for status.
func Choose(ctx context.Context, kind string) (Detector, string) {
	if kind == "" {
		kind = "auto"
	}
	auto := kind == "auto"
	if auto {
		switch runtime.GOOS {
		case "darwin":
			kind = "macos"
		case "linux", "freebsd", "openbsd", "netbsd":
			kind = "logind"
		case "windows":
			kind = "windows"
		default:
			return nil, "no input idle detector on " + runtime.GOOS
		}
	}
	switch kind {
	case "traffic":
		return nil, "scheduler.idle_source is traffic"
	case "macos":
		r := NewIOReg("ioreg", 5*time.Second)
		if err := r.Err(); err != nil {
			r.Close()
			return nil, err.Error()
		}
		return r, ""
	case "logind":
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		l, err := DialLogind(cctx, "")
		if err == nil {
			return l, ""
		}
		if !auto {
			return nil, err.Error()
		}
		// No logind session (no systemd, a container, a remote X): an X
		// display still knows when the user last typed.
		if os.Getenv("DISPLAY") == "" {
			return nil, err.Error() + "; x11: DISPLAY is not set"
		}
		x, xerr := dialX11Bounded(ctx)
		if xerr != nil {
			return nil, err.Error() + "; " + xerr.Error()
		}
		return x, ""
	case "windows":
		d, err := newLastInput(5 * time.Second)
		if err != nil {
			return nil, err.Error()
		}
		return d, ""
	case "x11":
		x, err := dialX11Bounded(ctx)
		if err != nil {
			return nil, err.Error()
		}
		return x, ""
	}
	return nil, fmt.Sprintf("unknown scheduler.idle_source %q", kind)
}

// dialX11Bounded dials $DISPLAY for at most 5 s: an X server that accepts
// the connection and never answers must not hold up the host's start.
func dialX11Bounded(ctx context.Context) (*X11, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	type result struct {
		x   *X11
		err error
	}
	got := make(chan result, 1)
	go func() {
		x, err := DialX11("", 0)
		got <- result{x, err}
	}()
	select {
	case r := <-got:
		return r.x, r.err
	case <-ctx.Done():
		go func() { // close it if it connects after all
			if r := <-got; r.x != nil {
				r.x.Close()
			}
		}()
		return nil, fmt.Errorf("x11: the display did not answer within 5s: %w", ctx.Err())
	}
}
