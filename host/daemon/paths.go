// Package daemon runs the host: the foreground process (store, core, proxy,
// signals, graceful shutdown) and the lifecycle around it (start detached,
// lock, pid file, stop, status).
package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/atomicfile"
)

// Paths are the host's files under $METACLAW_HOME.
type Paths struct {
	Home   string
	RunDir string // lock, pid file, sockets (0700)
	Lock   string
	Info   string // JSON pid file
	LogDir string
	DB     string
	Out    string // the detached daemon's stdout/stderr
	// TurnSpool holds turns the store refused until it takes them (0700).
	TurnSpool string
}

// PathsFor lays out the state dir.
func PathsFor(home string) Paths {
	run := filepath.Join(home, "run")
	logs := filepath.Join(home, "logs")
	return Paths{
		Home:   home,
		RunDir: run,
		Lock:   filepath.Join(run, "metaclaw.lock"),
		Info:   filepath.Join(run, "metaclaw.json"),
		LogDir: logs,
		DB:     filepath.Join(home, store.DBFile),
		Out:    filepath.Join(logs, "daemon.out"),

		TurnSpool: filepath.Join(home, "turn-spool"),
	}
}

// Info is what a running host publishes in its pid file.
type Info struct {
	PID       int       `json:"pid"`
	Addr      string    `json:"addr"` // host:port actually bound
	Mode      string    `json:"mode"`
	Version   string    `json:"version"`
	StartedAt time.Time `json:"started_at"`
}

// URL is the base URL of the running proxy.
func (i Info) URL() string { return "http://" + i.Addr }

func writeInfo(path string, info Info) error {
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write pid file: %w", err)
	}
	return nil
}

// ErrNotRunning means no live host owns the state dir.
var ErrNotRunning = errors.New("metaclaw is not running")

// ReadInfo returns the running host's info. A pid file whose process is gone
// is removed and reported as ErrNotRunning.
func ReadInfo(home string) (Info, error) {
	p := PathsFor(home)
	b, err := os.ReadFile(p.Info)
	if errors.Is(err, os.ErrNotExist) {
		return Info{}, ErrNotRunning
	}
	if err != nil {
		return Info{}, fmt.Errorf("read pid file: %w", err)
	}
	var info Info
	if err := json.Unmarshal(b, &info); err != nil || info.PID <= 0 {
		return Info{}, fmt.Errorf("pid file %s is damaged; remove it if no metaclaw is running", p.Info)
	}
	if !alive(info.PID) {
		os.Remove(p.Info)
		return Info{}, ErrNotRunning
	}
	return info, nil
}

// alive reports whether pid is a running process. A zombie (exited, not yet
// reaped by whoever adopted the detached host) counts as gone.
func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	if err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
		// Format: pid (comm) state …; comm may contain spaces and parentheses.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && b[i+2] == 'Z' {
			return false
		}
	}
	return true
}
