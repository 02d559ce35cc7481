package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSlowReport traces sequential requests to a server whose every fifth
// answer waits for a mutex another goroutine holds while it sleeps: the slow
// requests' critical path must lead to that holder's sleep (it wakes first,
// then the handler), most of their time.
func TestSlowReport(t *testing.T) {
	path := tracedSlowRun(t, 40, 5*time.Millisecond, false)
	var out bytes.Buffer
	if err := slowReport(&out, path, "", 80); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	slow, rest, ok := strings.Cut(got, "median (p45–p55)")
	if !ok || !strings.Contains(got, "slow report: 40 requests; p80") {
		t.Fatalf("report:\n%s", got)
	}
	median, _, _ := strings.Cut(rest, "every request")
	// The slow requests' critical path leads to the holder's sleep; the
	// median ones' never does. (Which state is largest depends on the
	// machine's load: a thread without a core is "running" here.)
	const sleep = "| blocked: sleep in tools/proxybench.tracedSlowRun"
	if !strings.Contains(slow, sleep) {
		t.Errorf("the slow requests never wait for the lock holder's sleep:\n%s", got)
	}
	if strings.Contains(median, sleep) {
		t.Errorf("the median requests wait for the lock holder's sleep:\n%s", got)
	}
}

// TestReadSched parses `perf script --ns` lines of sched_switch events
// into each thread's spans on a core.
func TestReadSched(t *testing.T) {
	lines := `            perf 29071 [000] 40488.972890432: sched:sched_stat_runtime: comm=perf pid=29071 runtime=33944 [ns]
            perf 29071 [000] 40488.972902846:       sched:sched_switch: prev_comm=perf prev_pid=29071 prev_prio=120 prev_state=D ==> next_comm=ltnew next_pid=42 next_prio=130
           ltnew    42 [000] 40488.973002846:       sched:sched_switch: prev_comm=ltnew prev_pid=42 prev_prio=130 prev_state=R ==> next_comm=swapper/0 next_pid=0 next_prio=120
         swapper     0 [001] 40488.973000000:       sched:sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=ltnew next_pid=43 next_prio=120
           ltnew    43 [001] 40488.973500000:       sched:sched_switch: prev_comm=ltnew prev_pid=43 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
`
	path := filepath.Join(t.TempDir(), "sched.txt")
	os.WriteFile(path, []byte(lines), 0o600)
	st, err := readSched(path)
	if err != nil {
		t.Fatal(err)
	}
	s42, s43 := st.byTid[42], st.byTid[43]
	if len(s42) != 1 || s42[0].b-s42[0].a != 100000 || !s42[0].preempted || s42[0].prio != 130 {
		t.Errorf("thread 42: %+v", s42)
	}
	if len(s43) != 1 || s43[0].b-s43[0].a != 500000 || s43[0].preempted {
		t.Errorf("thread 43: %+v", s43)
	}
	if _, err := readSched(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("no error for a missing file")
	}
}
