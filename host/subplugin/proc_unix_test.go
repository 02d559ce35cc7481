//go:build unix

package subplugin

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/internal/testwait"
)

// waitGone waits (bounded) until pid no longer exists.
func waitGone(t testing.TB, pid int) {
	t.Helper()
	testwait.For(t, "process "+strconv.Itoa(pid)+" to exit", func() bool {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	})
}

// waitState waits (bounded) until /proc/<pid>/stat shows the given state
// letter (e.g. "T" for stopped).
func waitState(t testing.TB, pid int, state string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			t.Skipf("no /proc: %v", err)
		}
		s := string(b)
		if i := strings.LastIndexByte(s, ')'); i > 0 {
			if f := strings.Fields(s[i+1:]); len(f) > 0 && f[0] == state {
				return
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("process %d never reached state %s", pid, state)
}
