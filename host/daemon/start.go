package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/gofrs/flock"
)

// StartOptions describe how to launch the detached host.
type StartOptions struct {
	Home string
	// Args are passed to the child after `start --foreground --detached-child`
	// (e.g. --mode, --port).
	Args    []string
	Timeout time.Duration // until /healthz answers (default 30s)
}

// Start launches the host detached from the terminal (its own session,
// output to logs/daemon.out) and returns once /healthz answers.
func Start(o StartOptions) (Info, error) {
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	p := PathsFor(o.Home)
	if err := os.MkdirAll(p.RunDir, 0o700); err != nil {
		return Info{}, fmt.Errorf("create %s: %w", p.RunDir, err)
	}
	if err := os.MkdirAll(p.LogDir, 0o700); err != nil {
		return Info{}, fmt.Errorf("create %s: %w", p.LogDir, err)
	}
	if held, err := lockHeld(p.Lock); err != nil {
		return Info{}, err
	} else if held {
		info, _ := ReadInfo(o.Home)
		return info, &AlreadyRunningError{Info: info}
	}
	exe, err := os.Executable()
	if err != nil {
		return Info{}, fmt.Errorf("find own executable: %w", err)
	}
	out, err := os.OpenFile(p.Out, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return Info{}, fmt.Errorf("open %s: %w", p.Out, err)
	}
	defer out.Close()
	startOffset, _ := out.Seek(0, 2)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return Info{}, err
	}
	defer devnull.Close()
	cmd := exec.Command(exe, append([]string{"start", "--foreground", "--detached-child"}, o.Args...)...)
	cmd.Env = append(os.Environ(), "METACLAW_HOME="+o.Home)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return Info{}, fmt.Errorf("start host: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	deadline := time.Now().Add(o.Timeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			return Info{}, fmt.Errorf("host exited during start-up (%v): %s", err, tail(p.Out, startOffset))
		case <-time.After(50 * time.Millisecond):
		}
		info, err := ReadInfo(o.Home)
		if err != nil || info.PID != cmd.Process.Pid {
			continue
		}
		if healthy(info) {
			cmd.Process.Release()
			return info, nil
		}
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	return Info{}, fmt.Errorf("host did not answer /healthz within %s; see %s", o.Timeout, p.Out)
}

func healthy(info Info) bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, info.URL()+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// lockHeld reports whether a live host holds the state dir's lock.
func lockHeld(path string) (bool, error) {
	l := flock.New(path)
	ok, err := l.TryLock()
	if err != nil {
		return false, fmt.Errorf("check lock %s: %w", path, err)
	}
	if ok {
		l.Unlock()
		return false, nil
	}
	return true, nil
}

// tail returns what the child wrote since offset (at most 4 KB).
func tail(path string, offset int64) string {
	b, err := os.ReadFile(path)
	if err != nil || int64(len(b)) < offset {
		return "(no output)"
	}
	b = b[offset:]
	if len(b) > 4096 {
		b = b[len(b)-4096:]
	}
	s := strings.TrimSpace(string(b))
	if s == "" {
		return "(no output)"
	}
	return s
}

// Stop asks the running host to stop (SIGTERM) and waits until it has
// finished in-flight requests and flushed its queues.
func Stop(home string, timeout time.Duration) (Info, error) {
	info, err := ReadInfo(home)
	if err != nil {
		return info, err
	}
	if err := syscall.Kill(info.PID, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return info, ErrNotRunning
		}
		return info, fmt.Errorf("signal pid %d: %w", info.PID, err)
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if !alive(info.PID) {
			return info, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return info, fmt.Errorf("pid %d did not stop within %s; it may still be finishing requests (kill -9 %d forces it)", info.PID, timeout, info.PID)
}
