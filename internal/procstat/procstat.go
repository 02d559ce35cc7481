// Package procstat reads a process's memory figures from /proc (Linux), for
// the tests and tools that report the real host's RSS.
package procstat

import (
	"os"
	"strconv"
	"strings"
)

// KB returns a field of /proc/<pid>/status in KiB ("VmRSS", "VmHWM" = peak
// RSS), or 0 when it cannot be read.
func KB(pid int, field string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
