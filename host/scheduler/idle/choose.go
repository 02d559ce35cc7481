package idle

import (
	"context"
	"fmt"
	"runtime"
	"time"
)

// Choose opens the input idle detector for scheduler.idle_source: "auto"
// (logind on Linux, HIDIdleTime on macOS), "logind", "macos", or "traffic"
// (none). With no detector it returns nil and a note saying why, for status.
func Choose(ctx context.Context, kind string) (Detector, string) {
	if kind == "" {
		kind = "auto"
	}
	if kind == "auto" {
		switch runtime.GOOS {
		case "darwin":
			kind = "macos"
		case "linux", "freebsd", "openbsd", "netbsd":
			kind = "logind"
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
		if err != nil {
			return nil, err.Error()
		}
		return l, ""
	}
	return nil, fmt.Sprintf("unknown scheduler.idle_source %q", kind)
}
