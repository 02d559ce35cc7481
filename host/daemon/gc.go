package daemon

import (
	"os"
	"runtime/debug"
	"runtime/metrics"

	"github.com/rs/zerolog"
)

// gcPercentFor is the GC percent (GOGC) the host sets, or 0 to leave Go's:
// a GOGC or GOMEMLIMIT in the environment means whoever started the host
// tunes the collector themselves, and gets exactly what Go makes of it
// (with GOMEMLIMIT alone, GOGC stays Go's 100). configured is
// runtime.gc_percent, which config validation holds above 0.
func gcPercentFor(gogcEnv, memLimitEnv string, configured int) int {
	if gogcEnv != "" || memLimitEnv != "" || configured <= 0 {
		return 0
	}
	return configured
}

// SetGC applies gcPercentFor to this process: the daemon calls it at
// start, and tools that run the host in process (proxybench) call it so
// they measure what users run. The log line carries the percent the
// runtime then runs with, read back from runtime/metrics, and where it
// came from.
func SetGC(percent int, log zerolog.Logger) {
	gogc, limit := os.Getenv("GOGC"), os.Getenv("GOMEMLIMIT")
	source := "environment"
	if p := gcPercentFor(gogc, limit, percent); p > 0 {
		debug.SetGCPercent(p)
		source = "config"
	} else if gogc == "" && limit == "" {
		source = "go default" // a percent validation refuses, from a caller that skipped it
	}
	pct, lim := GCSettings()
	log.Debug().Int64("gogc", pct).Int64("memory_limit", lim).Str("from", source).Int("gc_percent", percent).Msg("GC pacing")
}

// GCSettings reads the percent and the soft memory limit this process's
// GC runs with (-1: off; the limit is math.MaxInt64 when none is set).
// Read, not set: runtime/debug can only report them by replacing them.
func GCSettings() (percent, memoryLimit int64) {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}, {Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(s)
	// The runtime stores both as int64 and reports them as uint64: off
	// (-1) comes back as 1<<64-1.
	if s[0].Value.Kind() == metrics.KindUint64 {
		percent = int64(s[0].Value.Uint64())
	}
	if s[1].Value.Kind() == metrics.KindUint64 {
		memoryLimit = int64(s[1].Value.Uint64())
	}
	return percent, memoryLimit
}
