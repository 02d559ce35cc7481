package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/daemon"
	"github.com/metaclaw-go/metaclaw/host/logging"
	"github.com/metaclaw-go/metaclaw/internal/fakellm"
)

// TestHostRunsWithItsGCPercent starts the real host as a process and reads
// the GC pacing it runs with (daemon.SetGC's debug line, read back from
// the runtime): runtime.gc_percent by default and when set, and GOGC from
// the environment over it.
func TestHostRunsWithItsGCPercent(t *testing.T) {
	up := fakellm.New()
	defer up.Close()
	for _, tc := range []struct {
		name string
		env  []string
		gogc int64
		from string
	}{
		{"the default", nil, 200, "config"},
		{"runtime.gc_percent", []string{"METACLAW_RUNTIME_GC_PERCENT=300"}, 300, "config"},
		{"GOGC in the environment wins", []string{"METACLAW_RUNTIME_GC_PERCENT=300", "GOGC=150"}, 150, "environment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Later entries win: the test's own GOGC or GOMEMLIMIT, if
			// any, is cleared unless the case sets it.
			env := append([]string{"METACLAW_LOG_LEVEL=debug", "GOGC=", "GOMEMLIMIT="}, tc.env...)
			h := startHost(t, up.URL, env...)
			// SetGC runs before the host listens, so its line is written
			// by the time startHost returns.
			line, ok := gcPacingLine(t, h.home)
			h.cmd.Process.Signal(syscall.SIGTERM)
			h.cmd.Wait()
			if !ok {
				t.Fatalf("no \"GC pacing\" line in the host's log; its output:\n%s", h.out.String())
			}
			if line.GOGC != tc.gogc || line.From != tc.from {
				t.Errorf("host runs with GOGC %d from %s, want %d from %s", line.GOGC, line.From, tc.gogc, tc.from)
			}
		})
	}
}

type gcPacing struct {
	Msg  string `json:"message"`
	GOGC int64  `json:"gogc"`
	From string `json:"from"`
}

// gcPacingLine finds SetGC's line in the host's JSON log file.
func gcPacingLine(t *testing.T, home string) (gcPacing, bool) {
	t.Helper()
	f, err := os.Open(filepath.Join(daemon.PathsFor(home).LogDir, logging.FileName))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l gcPacing
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "GC pacing" {
			return l, true
		}
	}
	return gcPacing{}, false
}
