package daemon

import (
	"bytes"
	"encoding/json"
	"runtime/debug"
	"testing"

	"github.com/rs/zerolog"
)

func TestGCPercentFor(t *testing.T) {
	for _, tc := range []struct {
		name            string
		gogc, memLimit  string
		configured, out int
	}{
		{"the configured percent", "", "", 200, 200},
		{"Go's own default, when configured", "", "", 100, 100},
		{"any positive percent", "", "", 50, 50},
		{"GOGC in the environment wins", "100", "", 200, 0},
		{"GOGC=off in the environment wins", "off", "", 200, 0},
		{"even an odd GOGC wins (Go reads it as 100)", "junk", "", 200, 0},
		{"GOMEMLIMIT in the environment leaves Go's pacing", "", "512MiB", 200, 0},
		{"both in the environment", "300", "1GiB", 200, 0},
		{"a percent validation refuses is never applied", "", "", 0, 0},
		{"nor a negative one", "", "", -1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := gcPercentFor(tc.gogc, tc.memLimit, tc.configured); got != tc.out {
				t.Errorf("gcPercentFor(%q, %q, %d) = %d, want %d", tc.gogc, tc.memLimit, tc.configured, got, tc.out)
			}
		})
	}
}

// gcLine is the debug line SetGC logs.
type gcLine struct {
	Msg         string `json:"message"`
	GOGC        int64  `json:"gogc"`
	MemoryLimit int64  `json:"memory_limit"`
	From        string `json:"from"`
	Configured  int    `json:"gc_percent"`
}

// TestSetGC applies the policy to this test process: without GOGC or
// GOMEMLIMIT the runtime runs with the configured percent; with GOGC set
// the process keeps what it has. The log line reports what the runtime
// runs with, read back.
func TestSetGC(t *testing.T) {
	before := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	for _, tc := range []struct {
		name       string
		gogc       string
		configured int
		want       int64
		from       string
	}{
		{"config applies", "", 300, 300, "config"},
		{"a second start applies the new value", "", 150, 150, "config"},
		// The runtime read GOGC when this process started; SetGC leaves
		// the percent it runs with alone (150, from the case above).
		{"environment wins", "100", 400, 150, "environment"},
		{"a percent validation refuses changes nothing", "", 0, 150, "go default"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			t.Setenv("GOMEMLIMIT", "")
			var buf bytes.Buffer
			SetGC(tc.configured, zerolog.New(&buf).Level(zerolog.DebugLevel))
			if pct, _ := GCSettings(); pct != tc.want {
				t.Errorf("the runtime runs with GOGC %d, want %d", pct, tc.want)
			}
			var l gcLine
			if err := json.Unmarshal(buf.Bytes(), &l); err != nil {
				t.Fatalf("log line %q: %v", buf.String(), err)
			}
			if l.Msg != "GC pacing" || l.GOGC != tc.want || l.From != tc.from || l.Configured != tc.configured || l.MemoryLimit <= 0 {
				t.Errorf("log line %+v, want GOGC %d from %s", l, tc.want, tc.from)
			}
		})
	}
}

// TestGCSettingsReadsOff: GOGC=off is reported as -1, not as the uint64
// runtime/metrics carries it in.
func TestGCSettingsReadsOff(t *testing.T) {
	before := debug.SetGCPercent(-1)
	t.Cleanup(func() { debug.SetGCPercent(before) })
	if pct, _ := GCSettings(); pct != -1 {
		t.Errorf("GOGC off read as %d, want -1", pct)
	}
}
