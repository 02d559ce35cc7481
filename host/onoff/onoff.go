// Package onoff is MetaClaw's pass-through switch (`metaclaw disable` /
// `metaclaw enable`): while $METACLAW_HOME/disabled exists, the plugin
// processes answer every client hook with nothing (and never start the
// host), and the proxy forwards requests untouched and records nothing.
// Nothing is unwired: `metaclaw enable` turns the layer back on at once.
package onoff

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// FileName is the marker under $METACLAW_HOME.
const FileName = "disabled"

// Path is the marker file of a state dir.
func Path(home string) string { return filepath.Join(home, FileName) }

// Disabled reports whether MetaClaw is switched off for home.
func Disabled(home string) bool {
	_, err := os.Lstat(Path(home))
	return err == nil
}

// Since returns when MetaClaw was switched off (zero when it is on).
func Since(home string) time.Time {
	st, err := os.Lstat(Path(home))
	if err != nil {
		return time.Time{}
	}
	return st.ModTime()
}

// Disable switches MetaClaw off (idempotent).
func Disable(home string) error {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("disable: %w", err)
	}
	f, err := os.OpenFile(Path(home), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("disable: %w", err)
	}
	_, err = fmt.Fprintf(f, "MetaClaw is switched off (pass-through) since %s; `metaclaw enable` turns it back on.\n", time.Now().UTC().Format(time.RFC3339))
	return errors.Join(err, f.Close())
}

// Enable switches MetaClaw back on (idempotent).
func Enable(home string) error {
	if err := os.Remove(Path(home)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("enable: %w", err)
	}
	return nil
}

// Watcher answers Disabled for hot paths, looking at the file at most once
// per interval (a request must not pay a stat every time).
type Watcher struct {
	home     string
	interval time.Duration

	mu       sync.Mutex
	checked  time.Time
	disabled bool
}

// NewWatcher watches home; interval 0 means 500ms.
func NewWatcher(home string, interval time.Duration) *Watcher {
	if interval <= 0 {
		interval = 500 * time.Millisecond
	}
	return &Watcher{home: home, interval: interval}
}

// Disabled reports the switch, at most interval old.
func (w *Watcher) Disabled() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if now := time.Now(); now.Sub(w.checked) >= w.interval {
		w.disabled, w.checked = Disabled(w.home), now
	}
	return w.disabled
}
