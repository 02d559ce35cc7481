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

// CPUSeconds returns the user plus system CPU time a process has used, or
// 0 when it cannot be read (fields 14 and 15 of /proc/<pid>/stat, in clock
// ticks of 1/100 s, the value on every Linux this runs on).
func CPUSeconds(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: count from after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100
}
