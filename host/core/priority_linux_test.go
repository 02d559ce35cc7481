//go:build linux

package core

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/testwait"
)

// taskNice reads a thread's niceness from /proc/self/task/<tid>/stat (field
// 19; the command name before it may hold spaces, so count after its ')').
func taskNice(tid int) (int, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/stat", tid))
	if err != nil {
		return 0, err
	}
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 17 {
		return 0, fmt.Errorf("thread %d: short stat %q", tid, s)
	}
	return strconv.Atoi(fields[16]) // fields[0] is field 3 (state)
}

// myThreadNice is the niceness of the calling goroutine's thread.
func myThreadNice(t *testing.T) (tid, nice int) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid = unix.Gettid()
	nice, err := taskNice(tid)
	if err != nil {
		t.Error(err)
	}
	return tid, nice
}

// nicedThreads lists the process's threads whose niceness is not base.
func nicedThreads(t *testing.T, base int) map[int]int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]int{}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		n, err := taskNice(tid)
		if err != nil {
			continue // exited meanwhile
		}
		if n != base {
			out[tid] = n
		}
	}
	return out
}

type threadProbe struct {
	tid, nice     int
	spawnedNice   int // a goroutine the handler starts
	spawnedThread int
}

func TestJobWorkersRunOnNicedThreadsOnly(t *testing.T) {
	_, base := myThreadNice(t)
	if base >= MaxBackgroundNice {
		t.Skipf("the test runs at niceness %d already", base)
	}
	for _, tc := range []struct {
		name       string
		configured int
		want       int
	}{
		{"off", 0, base},
		{"default", DefaultBackgroundNice, min(base+DefaultBackgroundNice, 19)},
		{"one", 1, base + 1},
		{"capped at 19", 40, 19},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := newCore(t, Options{BackgroundNice: tc.configured})
			probes := make(chan threadProbe, 4)
			release := make(chan struct{})
			c.HandleJobsWith("probe", JobOptions{Concurrency: 2}, func(context.Context, json.RawMessage) error {
				var p threadProbe
				p.tid, p.nice = myThreadNice(t)
				done := make(chan struct{})
				go func() {
					p.spawnedThread, p.spawnedNice = myThreadNice(t)
					close(done)
				}()
				<-done
				probes <- p
				<-release // hold both workers so the thread census sees them
				return nil
			})
			for i := 0; i < 2; i++ {
				if err := c.Enqueue(context.Background(), "probe", i, time.Time{}); err != nil {
					t.Fatal(err)
				}
			}
			workers := map[int]bool{}
			for i := 0; i < 2; i++ {
				select {
				case p := <-probes:
					if p.nice != tc.want {
						t.Errorf("job handler's thread %d niceness %d, want %d", p.tid, p.nice, tc.want)
					}
					if p.spawnedNice != base {
						t.Errorf("goroutine started by the handler ran on thread %d at niceness %d, want the process's %d", p.spawnedThread, p.spawnedNice, base)
					}
					workers[p.tid] = true
				case <-time.After(30 * time.Second):
					t.Fatal("job handler did not run")
				}
			}
			// Foreground goroutines, many at once, never land on a niced thread.
			var wg sync.WaitGroup
			var mu sync.Mutex
			for i := 0; i < 64; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := 0; k < 20; k++ {
						tid, n := myThreadNice(t)
						if n != base {
							mu.Lock()
							t.Errorf("foreground goroutine on thread %d at niceness %d, want %d", tid, n, base)
							mu.Unlock()
							return
						}
						runtime.Gosched()
					}
				}()
			}
			wg.Wait()
			niced := nicedThreads(t, base)
			if tc.want != base {
				for tid := range workers {
					if _, ok := niced[tid]; !ok {
						t.Errorf("worker thread %d not in the niced census %v", tid, niced)
					}
				}
				for tid, n := range niced {
					if !workers[tid] {
						t.Errorf("thread %d at niceness %d is not a job worker's", tid, n)
					}
				}
			} else if len(niced) > 0 {
				t.Errorf("niced threads %v with background_nice 0", niced)
			}
			close(release)
			c.Close()
			// The workers' goroutines ended locked: their threads exit with them.
			testwait.For(t, "niced threads to exit after Close", func() bool { return len(nicedThreads(t, base)) == 0 })
		})
	}
}

func TestForegroundLeavesTheNicedThread(t *testing.T) {
	_, base := myThreadNice(t)
	if base+DefaultBackgroundNice > MaxBackgroundNice {
		t.Skipf("the test runs at niceness %d already", base)
	}
	c, _ := newCore(t, Options{BackgroundNice: DefaultBackgroundNice})
	type seen struct{ bg, fg int }
	got := make(chan seen, 1)
	c.GoBackground(func() {
		var s seen
		_, s.bg = myThreadNice(t)
		Foreground(func() { _, s.fg = myThreadNice(t) })
		got <- s
	})
	s := <-got
	if s.bg != base+DefaultBackgroundNice || s.fg != base {
		t.Errorf("background at %d, its Foreground section at %d; want %d and %d", s.bg, s.fg, base+DefaultBackgroundNice, base)
	}
}

// TestJournaledCommitsRunNiced: with the turn journal, the recorder commits
// the turns nobody waits for on a niced background thread (its listeners
// run there too), every turn reaches the store, and the thread is gone
// after Close; without niceness they stay at the process's priority.
func TestJournaledCommitsRunNiced(t *testing.T) {
	_, base := myThreadNice(t)
	if base+DefaultBackgroundNice > MaxBackgroundNice {
		t.Skipf("the test runs at niceness %d already", base)
	}
	for _, tc := range []struct {
		name string
		nice int
		want int
	}{
		{"niced", DefaultBackgroundNice, base + DefaultBackgroundNice},
		{"off", 0, base},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, st := newCore(t, Options{BackgroundNice: tc.nice, SpoolDir: filepath.Join(t.TempDir(), "spool")})
			const n = 20
			seen := make(chan int, n)
			c.OnTurn(func(_ context.Context, tr *store.Turn) {
				_, nice := myThreadNice(t)
				seen <- nice
			})
			for i := 0; i < n; i++ {
				// Released on the journal: the commit follows, aside.
				if err := c.ObserveDurable(context.Background(), turn("aside", fmt.Sprintf(`{"messages":[{"role":"user","content":"q %d"}]}`, i))); err != nil {
					t.Fatal(err)
				}
			}
			for i := 0; i < n; i++ {
				select {
				case nice := <-seen:
					if nice != tc.want {
						t.Errorf("turn committed on a thread at niceness %d, want %d", nice, tc.want)
					}
				case <-time.After(testwait.Deadline):
					t.Fatalf("%d of %d turns committed", i, n)
				}
			}
			if got := len(sessionTurns(t, st, "aside")); got != n {
				t.Errorf("%d turns stored, want %d", got, n)
			}
			c.Close()
			testwait.For(t, "no niced thread after Close", func() bool { return len(nicedThreads(t, base)) == 0 })
		})
	}
}
