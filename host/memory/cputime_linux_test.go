package memory

import "golang.org/x/sys/unix"

// threadCPU is the CPU time of the calling OS thread (the benchmark locks
// its goroutine to one): what an operation costs whatever else the machine
// runs.
func threadCPU() (int64, bool) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, false
	}
	return ru.Utime.Nano() + ru.Stime.Nano(), true
}
