//go:build unix

package subplugin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/internal/testwait"
)

func kill(t *testing.T, pid int, sig syscall.Signal) {
	t.Helper()
	if pid <= 0 {
		t.Fatalf("no pid")
	}
	if err := syscall.Kill(pid, sig); err != nil {
		t.Fatalf("kill %d: %v", pid, err)
	}
}

// TestCrashRelaunchAndLimit: SIGKILL the plugin; the next Embed relaunches
// it and succeeds, until the restart limit is reached; then Embed fails fast
// with ErrFailed and the status says why. Nothing panics, nothing is left.
func TestCrashRelaunchAndLimit(t *testing.T) {
	o := testOptions(t)
	o.MaxRestarts = 2
	o.RestartWindow = time.Minute
	e, h := openRef(t, o)
	pe := e.(*PluginEmbedder)
	ctx := context.Background()
	if _, err := e.Embed(ctx, []string{"warm up"}); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for round := 1; round <= 2; round++ {
		pid := pe.Instance().PID()
		seen[pid] = true
		kill(t, pid, syscall.SIGKILL)
		waitGone(t, pid)
		start := time.Now()
		v, err := e.Embed(ctx, []string{"after crash"})
		if err != nil {
			t.Fatalf("round %d: Embed after crash: %v", round, err)
		}
		if len(v) != 1 || len(v[0]) != 384 {
			t.Fatalf("round %d: bad answer", round)
		}
		s := pe.Instance().Status()
		if s.State != StateRunning || s.Restarts != round || seen[s.PID] || s.LastError == "" {
			t.Fatalf("round %d: status %+v", round, s)
		}
		t.Logf("round %d: relaunched as pid %d in %s; last error: %s", round, s.PID, time.Since(start).Round(time.Millisecond), s.LastError)
	}
	pid := pe.Instance().PID()
	kill(t, pid, syscall.SIGKILL)
	waitGone(t, pid)
	_, err := e.Embed(ctx, []string{"third crash"})
	if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "restart limit") {
		t.Fatalf("after the limit: err = %v", err)
	}
	// A failed plugin fails fast: no relaunch (the status below still
	// counts two restarts and no process).
	if _, err := e.Embed(ctx, []string{"again"}); !errors.Is(err, ErrFailed) {
		t.Fatalf("a failed plugin must fail fast: %v", err)
	}
	st := h.Status()
	if len(st) != 1 || st[0].State != StateFailed || st[0].PID != 0 || st[0].Restarts != 2 || !strings.Contains(st[0].LastError, "restart limit") {
		t.Fatalf("status: %+v", st)
	}
	t.Logf("final error: %v", err)
}

// TestKillMidUse: calls keep coming from several goroutines while the plugin
// is killed; every call returns within its deadline, with vectors or a clear
// error, and calls succeed again afterwards.
func TestKillMidUse(t *testing.T) {
	o := testOptions(t)
	o.CallTimeout = 3 * time.Second
	e, _ := openRef(t, o)
	pe := e.(*PluginEmbedder)
	ctx := context.Background()
	var ok, failed atomic.Int64
	var slowest atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var errs []string
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				start := time.Now()
				_, err := e.Embed(ctx, []string{"mid-use text", "another text"})
				if d := int64(time.Since(start)); d > slowest.Load() {
					slowest.Store(d)
				}
				if err != nil {
					failed.Add(1)
					errMu.Lock()
					errs = append(errs, err.Error())
					errMu.Unlock()
					if !errors.Is(err, ErrCrashed) && !strings.Contains(err.Error(), "embedder plugin") {
						t.Errorf("unclear error: %v", err)
					}
				} else {
					ok.Add(1)
				}
			}
		}()
	}
	testwait.For(t, "calls to succeed before the kill", func() bool { return ok.Load() > 0 })
	pid := pe.Instance().PID()
	kill(t, pid, syscall.SIGKILL)
	waitGone(t, pid)
	before := ok.Load()
	// Calls succeed again on the relaunched plugin (bounded wait; a plugin
	// that never comes back fails here).
	relaunched := testwait.Until(testwait.Deadline, func() bool { return ok.Load() > before })
	close(stop)
	wg.Wait()
	if !relaunched {
		t.Fatal("no call succeeded after the crash")
	}
	// Every call ended by its deadline (the margin is for a loaded machine;
	// a call that ignored its deadline would block far longer).
	if time.Duration(slowest.Load()) > o.CallTimeout+10*time.Second {
		t.Errorf("a call took %s", time.Duration(slowest.Load()))
	}
	if s := pe.Instance().Status(); s.State != StateRunning || s.Restarts != 1 {
		t.Errorf("status %+v", s)
	}
	t.Logf("calls: %d ok, %d failed, slowest %s; errors: %.300q", ok.Load(), failed.Load(), time.Duration(slowest.Load()).Round(time.Millisecond), errs)
}

// TestPoisonedPluginIsBounded: a plugin that dies on every Embed is
// relaunched a bounded number of times, then disabled.
func TestPoisonedPluginIsBounded(t *testing.T) {
	o := testOptions(t)
	o.MaxRestarts = 3
	h := newTestHost(t, o)
	e, err := h.Embedder(context.Background(), helperSpec("crash-on-embed"))
	if err != nil {
		t.Fatal(err)
	}
	var last error
	for i := 0; i < 6; i++ {
		_, last = e.Embed(context.Background(), []string{"boom"})
		if last == nil {
			t.Fatal("Embed succeeded on a crashing plugin")
		}
		if errors.Is(last, ErrFailed) {
			break
		}
		if !errors.Is(last, ErrCrashed) {
			t.Fatalf("call %d: %v", i, last)
		}
	}
	if !errors.Is(last, ErrFailed) {
		t.Fatalf("never disabled: %v", last)
	}
	if s := e.Instance().Status(); s.State != StateFailed || s.Restarts != 3 {
		t.Fatalf("status %+v", s)
	}
}

// TestHungPlugin: a plugin that never answers costs a timeout error, not a
// stuck host; it stays up (its health check passes) and Close still ends it.
func TestHungPlugin(t *testing.T) {
	o := testOptions(t)
	o.CallTimeout = 300 * time.Millisecond
	h := newTestHost(t, o)
	e, err := h.Embedder(context.Background(), helperSpec("hang-embed"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err = e.Embed(context.Background(), []string{"x"}); !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v", err)
	}
	// Caller's own shorter deadline wins.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := e.Embed(ctx, []string{"x"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
	// A late call starts a health check in the background; once it has
	// run, the hung (but healthy) plugin is still up.
	h.bg.Wait()
	pid := e.Instance().PID()
	if s := e.Instance().Status(); s.State != StateRunning {
		t.Fatalf("status %+v", s)
	}
	start := time.Now()
	_ = h.Close()
	waitGone(t, pid)
	t.Logf("closed a plugin with a hung call in %s", time.Since(start).Round(time.Millisecond))
}

// TestStoppedPlugin: a plugin frozen with SIGSTOP (alive but unresponsive)
// times out, fails its health check, is killed and relaunched.
func TestStoppedPlugin(t *testing.T) {
	o := testOptions(t)
	o.CallTimeout = 500 * time.Millisecond
	e, _ := openRef(t, o)
	pe := e.(*PluginEmbedder)
	pid := pe.Instance().PID()
	kill(t, pid, syscall.SIGSTOP)
	waitState(t, pid, "T")
	if _, err := e.Embed(context.Background(), []string{"x"}); !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v", err)
	}
	testwait.For(t, "the stopped plugin to be marked crashed", func() bool { return pe.Instance().Status().State == StateRestarting })
	waitGone(t, pid)
	// The next call relaunches it; on a loaded machine the relaunch alone
	// can take longer than the 500 ms call timeout, so a call may time out
	// before one answers (without another restart: the new process is healthy).
	var lastErr error
	testwait.For(t, "a call to succeed on the relaunched plugin", func() bool {
		_, lastErr = e.Embed(context.Background(), []string{"x"})
		return lastErr == nil || !errors.Is(lastErr, ErrTimeout)
	})
	if lastErr != nil {
		t.Fatalf("after relaunch: %v", lastErr)
	}
	if s := pe.Instance().Status(); s.Restarts != 1 || s.PID == pid {
		t.Fatalf("status %+v", s)
	}
}

// TestHealthLoopNoticesCrash: with the periodic check on, a crash shows in
// the status without any call.
func TestHealthLoopNoticesCrash(t *testing.T) {
	o := testOptions(t)
	o.HealthInterval = 50 * time.Millisecond
	e, h := openRef(t, o)
	pid := e.(*PluginEmbedder).Instance().PID()
	kill(t, pid, syscall.SIGKILL)
	testwait.For(t, "the health loop to notice the crash", func() bool {
		st := h.Status()
		return st[0].State == StateRestarting && st[0].LastError != ""
	})
	t.Logf("status after crash: %+v", h.Status()[0])
	if _, err := e.Embed(context.Background(), []string{"x"}); err != nil {
		t.Fatal(err)
	}
}

// TestWrapperScriptAndIdentityChange: a wrapper script passes arguments to
// the real plugin; when a relaunch reports a different embedding space
// (here: other dimensions), the plugin is disabled instead of mixing vectors.
func TestWrapperScriptAndIdentityChange(t *testing.T) {
	dir := t.TempDir()
	dimsFile := filepath.Join(dir, "dims")
	if err := os.WriteFile(dimsFile, []byte("64"), 0o644); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "metaclaw-embedder-small")
	body := "#!/bin/sh\nexec " + refPlugin + " -dims \"$(cat " + dimsFile + ")\"\n"
	if err := os.WriteFile(wrapper, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	o := testOptions(t)
	o.Dir = dir
	e, closer, err := OpenEmbedder(context.Background(), EmbedderSpec{Use: "small", Options: o}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	if e.Name() != "hashing-ngram-v1-64" {
		t.Fatalf("name %q", e.Name())
	}
	v, err := e.Embed(context.Background(), []string{"x"})
	if err != nil || len(v[0]) != 64 {
		t.Fatalf("%v %v", len(v), err)
	}
	if err := os.WriteFile(dimsFile, []byte("128"), 0o644); err != nil {
		t.Fatal(err)
	}
	pe := e.(*PluginEmbedder)
	pid := pe.Instance().PID()
	kill(t, pid, syscall.SIGKILL)
	waitGone(t, pid)
	_, err = e.Embed(context.Background(), []string{"x"})
	if err == nil || !strings.Contains(err.Error(), "changed identity") {
		t.Fatalf("err = %v", err)
	}
	if _, err := e.Embed(context.Background(), []string{"x"}); !errors.Is(err, ErrFailed) {
		t.Fatalf("then: %v", err)
	}
	if s := pe.Instance().Status(); s.State != StateFailed {
		t.Fatalf("status %+v", s)
	}
}
