package skills

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
)

// WatchOptions tune the watcher.
type WatchOptions struct {
	// Debounce waits for a burst of changes (an editor's save, a git
	// checkout) to settle before re-indexing. Default 250 ms.
	Debounce time.Duration
	// Rescan re-reads the folder this often even without events (events can
	// be lost, e.g. on network file systems). Default 2 min; <0 disables.
	Rescan time.Duration
}

type watcher struct {
	lib  *Library
	fw   *fsnotify.Watcher
	stop chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// Watch re-indexes the library whenever a file under it changes, without a
// restart. The returned Closer stops watching.
func (l *Library) Watch(o WatchOptions) (io.Closer, error) {
	if o.Debounce <= 0 {
		o.Debounce = 250 * time.Millisecond
	}
	if o.Rescan == 0 {
		o.Rescan = 2 * time.Minute
	}
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	w := &watcher{lib: l, fw: fw, stop: make(chan struct{})}
	if err := fw.Add(l.dir); err != nil {
		fw.Close()
		return nil, err
	}
	w.addSubdirs()
	w.wg.Add(1)
	go w.loop(o)
	return w, nil
}

// addSubdirs watches every skill folder (fsnotify is not recursive).
func (w *watcher) addSubdirs() {
	ents, err := os.ReadDir(w.lib.dir)
	if err != nil {
		return
	}
	for i, e := range ents {
		if i >= MaxSkills {
			return
		}
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			_ = w.fw.Add(filepath.Join(w.lib.dir, e.Name()))
		}
	}
}

func (w *watcher) loop(o WatchOptions) {
	defer w.wg.Done()
	var timer *time.Timer
	var fire <-chan time.Time
	var rescan <-chan time.Time
	if o.Rescan > 0 {
		t := time.NewTicker(o.Rescan)
		defer t.Stop()
		rescan = t.C
	}
	sync := func(why string) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := w.lib.Sync(ctx); err != nil {
			w.lib.log.Error().Err(err).Str("trigger", why).Msg("skills: re-index failed")
		}
	}
	for {
		select {
		case <-w.stop:
			if timer != nil {
				timer.Stop()
			}
			return
		case ev, ok := <-w.fw.Events:
			if !ok {
				return
			}
			if ev.Has(fsnotify.Create) && filepath.Dir(ev.Name) == w.lib.dir {
				if fi, err := os.Stat(ev.Name); err == nil && fi.IsDir() && !strings.HasPrefix(filepath.Base(ev.Name), ".") {
					_ = w.fw.Add(ev.Name)
				}
			}
			base := filepath.Base(ev.Name)
			if strings.HasPrefix(base, ".") && filepath.Dir(ev.Name) != w.lib.dir {
				continue // our own temp files; the rename that follows is the event
			}
			if timer == nil {
				timer = time.NewTimer(o.Debounce)
			} else {
				if !timer.Stop() {
					select {
					case <-timer.C:
					default:
					}
				}
				timer.Reset(o.Debounce)
			}
			fire = timer.C
		case err, ok := <-w.fw.Errors:
			if !ok {
				return
			}
			w.lib.log.Warn().Err(err).Msg("skills: file watcher error; rescanning")
			w.addSubdirs()
			sync("watch-error")
		case <-fire:
			fire = nil
			w.addSubdirs()
			sync("change")
		case <-rescan:
			sync("rescan")
		}
	}
}

// Close stops the watcher.
func (w *watcher) Close() error {
	var err error
	w.once.Do(func() {
		close(w.stop)
		err = w.fw.Close()
		w.wg.Wait()
	})
	return err
}
