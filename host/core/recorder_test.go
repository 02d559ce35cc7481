package core

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/store"
)

// gatedStore wraps the real store: it can hold the next RecordTurns call,
// refuse batches holding a poisoned turn (the way SQLite refuses a row that
// is too big), or refuse everything (a full disk).
type gatedStore struct {
	*store.SQLite
	gate    chan struct{} // when set, the next RecordTurns waits for it
	entered chan struct{}
	down    atomic.Bool
	calls   atomic.Int32
	mu      sync.Mutex
}

func (g *gatedStore) RecordTurns(ctx context.Context, turns []*store.Turn) error {
	g.calls.Add(1)
	g.mu.Lock()
	gate := g.gate
	g.gate = nil
	g.mu.Unlock()
	if gate != nil {
		close(g.entered)
		<-gate
	}
	if g.down.Load() {
		return errors.New("disk I/O error")
	}
	for _, t := range turns {
		if strings.Contains(t.RequestJSON, "POISON") {
			return errors.New("string or blob too big")
		}
	}
	return g.SQLite.RecordTurns(ctx, turns)
}

func newGated(t *testing.T, dir string, o Options) (*Core, *gatedStore) {
	t.Helper()
	st, err := store.OpenSQLite(context.Background(), filepath.Join(dir, store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	g := &gatedStore{SQLite: st}
	o.Store, o.Log = g, zerolog.Nop()
	c := New(o)
	t.Cleanup(func() { c.Close(); st.Close() })
	return c, g
}

// hold makes the recorder's next write wait, and returns once it waits.
func (g *gatedStore) hold(t *testing.T, c *Core) (release func()) {
	gate := make(chan struct{})
	g.mu.Lock()
	g.gate, g.entered = gate, make(chan struct{})
	entered := g.entered
	g.mu.Unlock()
	c.Observe(turn("warm-up", "{}"))
	<-entered
	return func() { close(gate) }
}

func turn(session, req string) *store.Turn {
	return &store.Turn{SessionID: session, Agent: "a", TurnType: TurnMain, RequestJSON: req, ResponseText: "answer", Status: 200}
}

// waitQueued waits until n turns wait in the recorder's queue.
func waitQueued(t *testing.T, c *Core, n int) {
	t.Helper()
	for i := 0; len(c.rec.queue) < n; i++ {
		if i > 10000 {
			t.Fatalf("queue holds %d turns, want %d", len(c.rec.queue), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestObserveDurableSharesCommits(t *testing.T) {
	c, g := newGated(t, t.TempDir(), Options{})
	release := g.hold(t, c)
	const n = 40
	errs := make(chan error, n)
	ids := make(chan *store.Turn, n)
	for i := 0; i < n; i++ {
		go func() {
			tr := turn(fmt.Sprintf("s%d", i), "{}")
			errs <- c.ObserveDurable(context.Background(), tr)
			ids <- tr
		}()
	}
	waitQueued(t, c, n)
	release()
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
		// Durable means visible to another connection the moment the call returns.
		tr := <-ids
		got, err := g.SQLite.SessionTurns(context.Background(), tr.SessionID)
		if err != nil || len(got) != 1 || got[0].ID != tr.ID {
			t.Fatalf("turn of %s not in the store when ObserveDurable returned: %v %v", tr.SessionID, got, err)
		}
	}
	if calls := g.calls.Load(); calls != 2 {
		t.Errorf("%d writes for %d waiting turns and one in flight, want 2 (group commit)", calls, n)
	}
}

func TestOneBadRowDoesNotLoseTheBatch(t *testing.T) {
	c, g := newGated(t, t.TempDir(), Options{})
	var listened atomic.Int32
	c.OnTurn(func(context.Context, *store.Turn) { listened.Add(1) })
	release := g.hold(t, c)
	var wg sync.WaitGroup
	for i := 0; i < 10; i++ {
		req := "{}"
		if i == 4 {
			req = `{"messages":[{"role":"user","content":"POISON"}]}`
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := c.ObserveDurable(context.Background(), turn("batch", req)); err != nil {
				t.Error(err)
			}
		}()
	}
	waitQueued(t, c, 10)
	release()
	wg.Wait()
	turns, err := g.SQLite.SessionTurns(context.Background(), "batch")
	if err != nil || len(turns) != 10 {
		t.Fatalf("%d turns stored, want 10 (%v)", len(turns), err)
	}
	failed := 0
	for _, tr := range turns {
		if tr.Status == StatusNotStored {
			failed++
			if !strings.Contains(tr.Error, "string or blob too big") || strings.Contains(tr.RequestJSON, "POISON") {
				t.Errorf("stub: %+v", tr)
			}
		} else if tr.ResponseText != "answer" {
			t.Errorf("good turn lost its body: %+v", tr)
		}
	}
	stats, _ := c.Stats(context.Background())
	if failed != 1 || stats.NotStoredWhole != 1 || stats.UnpersistedTurns != 0 {
		t.Errorf("failed stubs %d, stats %+v", failed, stats)
	}
	if listened.Load() != 11 {
		t.Errorf("listeners saw %d turns, want 11", listened.Load())
	}
}

func TestRefusedTurnsAreSpooledAndWrittenLater(t *testing.T) {
	dir := t.TempDir()
	spool := filepath.Join(dir, "spool")
	c, g := newGated(t, dir, Options{SpoolDir: spool})
	g.down.Store(true)
	for i := 0; i < 3; i++ {
		if err := c.ObserveDurable(context.Background(), turn("down", "{}")); err != nil {
			t.Fatalf("spooled turn reported as lost: %v", err)
		}
	}
	if err := c.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if stats, _ := c.Stats(context.Background()); stats.SpooledTurns != 3 {
		t.Fatalf("spooled %d", stats.SpooledTurns)
	}
	files, _ := filepath.Glob(filepath.Join(spool, "turns-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("spool files %v", files)
	}
	if fi, err := os.Stat(files[0]); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("spool file mode: %v %v", fi.Mode(), err)
	}
	c.Close()

	// The next start (store writable again) writes them before anything else.
	g.down.Store(false)
	c2 := New(Options{Store: g, Log: zerolog.Nop(), SpoolDir: spool})
	defer c2.Close()
	if err := c2.ObserveDurable(context.Background(), turn("after", "{}")); err != nil {
		t.Fatal(err)
	}
	if err := c2.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	turns, _ := g.SQLite.SessionTurns(context.Background(), "down")
	if len(turns) != 3 {
		t.Fatalf("%d spooled turns written back, want 3", len(turns))
	}
	if files, _ := filepath.Glob(filepath.Join(spool, "turns-*.jsonl")); len(files) != 0 {
		t.Fatalf("spool not emptied: %v", files)
	}
}

func TestObserveBoundsBodies(t *testing.T) {
	c, st := newCore(t, Options{MaxBodyBytes: 1000})
	big := `{"messages":[{"role":"user","content":"` + strings.Repeat("z", 5000) + `"}]}`
	tr := turn("big", big)
	tr.ResponseText = strings.Repeat("w", 5000)
	if err := c.ObserveDurable(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	got, _ := st.SessionTurns(context.Background(), "big")
	if len(got) != 1 || len(got[0].RequestJSON) > 1100 || len(got[0].ResponseText) > 1100 || !strings.Contains(got[0].ResponseText, "bytes not stored]") {
		t.Fatalf("stored %d / %d bytes", len(got[0].RequestJSON), len(got[0].ResponseText))
	}
}
