package daemon

import (
	"os"
	"runtime"

	"github.com/rs/zerolog"
)

// extraProcs is how many Ps the host runs above Go's default when
// background jobs are niced (runtime.background_nice): a job's goroutine
// holding a P no longer takes it from requests, and the kernel, which
// knows the job's thread is niced, decides who gets the core. Two, not a
// multiple of the CPUs: they stand for the niced job threads that may run
// at once (ingestion and skill evolution), whatever the machine's size;
// on 2 cores +2 gave the lowest p99, +1 about twice its p99, and with the
// host in its own process (proxybench -processes) Go's default alone raised
// p99 by ~0.3 ms (docs/performance.md).
const extraProcs = 2

// procsFor is the GOMAXPROCS the host sets, or 0 to leave Go's: an explicit
// GOMAXPROCS in the environment wins, and without niced background work
// an extra P only adds contention.
func procsFor(env string, backgroundNice, current int) int {
	if env != "" || backgroundNice <= 0 {
		return 0
	}
	return current + extraProcs
}

// SetProcs applies procsFor to this process: the daemon calls it at start,
// and tools that run the host in process (proxybench) call it so they
// measure what users run.
func SetProcs(backgroundNice int, log zerolog.Logger) {
	n := procsFor(os.Getenv("GOMAXPROCS"), backgroundNice, runtime.GOMAXPROCS(0))
	if n == 0 {
		return
	}
	prev := runtime.GOMAXPROCS(n)
	log.Debug().Int("gomaxprocs", n).Int("was", prev).Int("background_nice", backgroundNice).Msg("Ps above the CPUs for niced background work")
}
