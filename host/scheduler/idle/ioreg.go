package idle

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strconv"
	"time"
)

// IOReg reads HIDIdleTime (nanoseconds since the last keyboard, mouse or
// trackpad input) from macOS's IOKit registry through `ioreg`, polled on a
// goroutine so Idle never waits on the subprocess.
type IOReg struct{ *poller }

// NewIOReg starts polling cmd (normally "ioreg") every interval.
func NewIOReg(cmd string, interval time.Duration) *IOReg {
	return &IOReg{newPoller("macos HIDIdleTime", interval, func() (time.Duration, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, cmd, "-c", "IOHIDSystem", "-d", "4").Output()
		if err != nil {
			return 0, fmt.Errorf("ioreg: %w", err)
		}
		return ParseHIDIdleTime(out)
	}, nil)}
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
