package idle

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type fixedDetector struct {
	d  time.Duration
	ok bool
}

func (f fixedDetector) Name() string                         { return "fixed" }
func (f fixedDetector) Idle(time.Time) (time.Duration, bool) { return f.d, f.ok }
func (f fixedDetector) Wake() <-chan struct{}                { return nil }
func (f fixedDetector) Close() error                         { return nil }

func TestIdleCombinesInputAndTraffic(t *testing.T) {
	start := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		det     Detector
		touched time.Duration // before now; 0 = never since start
		open    bool
		why     string
	}{
		{"traffic only, quiet", nil, 0, true, "proxy traffic only"},
		{"traffic only, recent request", nil, 10 * time.Minute, false, "no proxy traffic"},
		{"input idle and quiet", fixedDetector{45 * time.Minute, true}, 0, true, "fixed + proxy traffic"},
		{"typing, no traffic", fixedDetector{time.Minute, true}, 0, false, "no input (fixed)"},
		{"input idle, recent request", fixedDetector{45 * time.Minute, true}, 5 * time.Minute, false, "no proxy traffic"},
		{"detector without an answer", fixedDetector{0, false}, 0, true, "fixed + proxy traffic"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := start.Add(time.Hour)
			s := NewSource(30*time.Minute, tc.det, "", start)
			defer s.Close()
			if tc.touched > 0 {
				s.Touch(now.Add(-tc.touched))
				s.Touch(start) // an older touch never moves it back
			}
			v := s.Check(now)
			if v.Open != tc.open || !strings.Contains(v.Reason, tc.why) {
				t.Fatalf("%+v, want open=%v and %q", v, tc.open, tc.why)
			}
			if !v.Open && (len(v.Upcoming) != 1 || !v.Upcoming[0].End.IsZero()) {
				t.Fatalf("closed idle source should say when it could open: %+v", v.Upcoming)
			}
		})
	}
	if v := NewSource(0, nil, "", start).Check(start.Add(time.Hour)); v.Open {
		t.Fatal("threshold 0 must disable idle windows")
	}
}

// The macOS detector runs a real child process; here a script stands in for
// ioreg and prints what ioreg prints.
func TestIORegPolling(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "ioreg")
	value := filepath.Join(dir, "ns")
	os.WriteFile(value, []byte("1800000000000"), 0o600) // 30 minutes
	os.WriteFile(script, []byte(`#!/bin/sh
[ "$1 $2" = "-c IOHIDSystem" ] || { echo "bad args: $*" >&2; exit 2; }
echo '+-o IOHIDSystem  <class IOHIDSystem, id 0x100000403, registered, matched, active, busy 0 (0 ms), retain 22>'
echo '    {'
echo '      "HIDIdleTime" = '$(cat `+value+`)
echo '    }'
`), 0o700)
	r := NewIOReg(script, 20*time.Millisecond)
	defer r.Close()
	if d, ok := r.Idle(time.Now()); !ok || d < 30*time.Minute {
		t.Fatalf("idle %s %v (err %v)", d, ok, r.Err())
	}
	// Input: HIDIdleTime drops, the poll notices and wakes the scheduler.
	os.WriteFile(value, []byte("2000000"), 0o600)
	select {
	case <-r.Wake():
	case <-time.After(10 * time.Second):
		t.Fatal("no wake-up after input")
	}
	if d, ok := r.Idle(time.Now()); !ok || d > time.Minute {
		t.Fatalf("after input: %s %v", d, ok)
	}
	bad := NewIOReg(filepath.Join(dir, "missing"), time.Hour)
	defer bad.Close()
	if _, ok := bad.Idle(time.Now()); ok || bad.Err() == nil {
		t.Fatal("a missing ioreg must report no answer")
	}
}

func TestParseHIDIdleTime(t *testing.T) {
	d, err := ParseHIDIdleTime([]byte(`| |   "HIDIdleTime" = 5017341666` + "\n"))
	if err != nil || d != 5017341666 {
		t.Fatalf("%s %v", d, err)
	}
	for _, bad := range []string{"", `"HIDIdleTime" = -5`, `"HIDIdleTime" = 99999999999999999999999`, `"Other" = 5`} {
		if _, err := ParseHIDIdleTime([]byte(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzParseHIDIdleTime(f *testing.F) {
	f.Add([]byte(`"HIDIdleTime" = 123`))
	f.Add([]byte(`{"HIDIdleTime"=0}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := ParseHIDIdleTime(b)
		if err == nil && d < 0 {
			t.Fatalf("negative idle %s", d)
		}
	})
}
