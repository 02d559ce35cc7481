package onoff

import (
	"os"
	"testing"
	"time"
)

func TestSwitch(t *testing.T) {
	home := t.TempDir()
	w := NewWatcher(home, time.Nanosecond)
	if Disabled(home) || w.Disabled() || !Since(home).IsZero() {
		t.Fatal("on by default")
	}
	for i := 0; i < 2; i++ { // idempotent
		if err := Disable(home); err != nil {
			t.Fatal(err)
		}
	}
	st, err := os.Stat(Path(home))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("marker: %v %v", st, err)
	}
	if !Disabled(home) || !w.Disabled() || Since(home).IsZero() {
		t.Fatal("not disabled")
	}
	for i := 0; i < 2; i++ {
		if err := Enable(home); err != nil {
			t.Fatal(err)
		}
	}
	if Disabled(home) || w.Disabled() {
		t.Fatal("not enabled")
	}
}

func TestWatcherCaches(t *testing.T) {
	home := t.TempDir()
	w := NewWatcher(home, time.Hour)
	if w.Disabled() {
		t.Fatal()
	}
	Disable(home)
	if w.Disabled() {
		t.Fatal("the watcher looked again within its interval")
	}
	if !NewWatcher(home, time.Hour).Disabled() {
		t.Fatal("a new watcher sees the switch")
	}
}
