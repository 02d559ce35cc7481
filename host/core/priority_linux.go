//go:build linux

package core

import (
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// lockNicedThread locks the calling goroutine to its thread for good and
// raises the thread's niceness by n (capped at 19). On the process's main
// thread it only locks and reports onMain.
func lockNicedThread(n int) (onMain bool, err error) {
	runtime.LockOSThread()
	tid := unix.Gettid()
	if tid == unix.Getpid() {
		return true, nil
	}
	// The raw getpriority system call returns 20 - nice.
	prio, err := unix.Getpriority(unix.PRIO_PROCESS, tid)
	if err != nil {
		return false, fmt.Errorf("read thread %d niceness: %w", tid, err)
	}
	cur := 20 - prio
	target := min(cur+n, MaxBackgroundNice)
	if target <= cur {
		return false, nil
	}
	if err := unix.Setpriority(unix.PRIO_PROCESS, tid, target); err != nil {
		return false, fmt.Errorf("set thread %d niceness to %d: %w", tid, target, err)
	}
	return false, nil
}
