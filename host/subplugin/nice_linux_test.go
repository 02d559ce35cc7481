//go:build linux

package subplugin

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// procNice reads a task's niceness (field 19 of /proc/<id>/stat).
func procNice(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	n, err := strconv.Atoi(f[16])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRelaunchFromNicedThreadStartsUnnicedProcess: a crashed plugin is
// relaunched by the next call, on the caller's thread. When that caller is a
// background job (whose thread core.GoBackground niced), the new process must
// not inherit the niceness, or requests' calls to it would run at background
// priority from then on.
func TestRelaunchFromNicedThreadStartsUnnicedProcess(t *testing.T) {
	base := procNice(t, "/proc/self/stat")
	if base >= 19 {
		t.Skip("the test already runs at the lowest priority")
	}
	h := newTestHost(t, testOptions(t))
	e, err := h.Embedder(context.Background(), helperSpec("ok"))
	if err != nil {
		t.Fatal(err)
	}
	pid := e.Instance().PID()
	kill(t, pid, syscall.SIGKILL)
	waitGone(t, pid)
	type relaunched struct {
		pid, callerNice int
		err             error
	}
	res := make(chan relaunched, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the niced thread ends with this goroutine
		var r relaunched
		tid := unix.Gettid()
		if r.err = unix.Setpriority(unix.PRIO_PROCESS, tid, base+1); r.err == nil {
			r.callerNice = procNice(t, "/proc/self/task/"+strconv.Itoa(tid)+"/stat")
			if _, r.err = e.Embed(context.Background(), []string{"after the crash"}); r.err == nil {
				r.pid = e.Instance().PID()
			}
		}
		res <- r
	}()
	r := <-res
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.callerNice != base+1 || r.pid == pid {
		t.Fatalf("caller at niceness %d (want %d), plugin pid %d (was %d): not a relaunch from a niced thread", r.callerNice, base+1, r.pid, pid)
	}
	if n := procNice(t, "/proc/"+strconv.Itoa(r.pid)+"/stat"); n != base {
		t.Errorf("relaunched plugin process %d at niceness %d, want the host's %d", r.pid, n, base)
	}
}
