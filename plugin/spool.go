package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/metaclaw-go/metaclaw/internal/atomicfile"
)

// Spool holds observe/end events the host could not take, one file per
// event under $METACLAW_HOME/spool/ (dir 0700, files 0600), bounded in count
// and bytes (oldest dropped first). Delivery is write-ahead: an event is
// written as a claimed file before it is sent and removed once the host has
// acknowledged it, so a plugin process that dies mid-call loses nothing.
//
// File names: <unix-nanos>-<pid>-<seq>.json when waiting for replay, with a
// ".<pid>.claim" suffix while one process is sending it. Claims of dead
// processes are released by the next replay.
type Spool struct {
	dir      string
	maxBytes int64
	maxFiles int
	seq      atomic.Int64
	mu       sync.Mutex
	dropped  atomic.Int64
}

// Entry is one spooled call.
type Entry struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	At     time.Time       `json:"at"`
	Client string          `json:"client,omitempty"`
}

// Spool limits.
const (
	DefaultSpoolBytes = 32 << 20
	DefaultSpoolFiles = 20000
	maxEntryBytes     = 4 << 20
)

// SpoolDir is the spool under a state dir.
func SpoolDir(home string) string { return filepath.Join(home, "spool") }

// NewSpool opens (lazily creates) a spool.
func NewSpool(dir string, maxBytes int64, maxFiles int) *Spool {
	if maxBytes <= 0 {
		maxBytes = DefaultSpoolBytes
	}
	if maxFiles <= 0 {
		maxFiles = DefaultSpoolFiles
	}
	return &Spool{dir: dir, maxBytes: maxBytes, maxFiles: maxFiles}
}

// Dir is where the spool lives.
func (s *Spool) Dir() string { return s.dir }

// Dropped counts events discarded to keep the spool bounded.
func (s *Spool) Dropped() int64 { return s.dropped.Load() }

// Claim writes e as a file claimed by this process and returns a handle to
// settle it: Done (delivered: remove) or Release (not delivered: leave it
// for replay).
func (s *Spool) Claim(e Entry) (*Claim, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	if len(b) > maxEntryBytes {
		return nil, fmt.Errorf("spool: event of %d bytes is larger than %d", len(b), maxEntryBytes)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	s.makeRoom(int64(len(b)))
	name := fmt.Sprintf("%020d-%d-%d.json", time.Now().UnixNano(), os.Getpid(), s.seq.Add(1))
	claimed := filepath.Join(s.dir, name+claimSuffix())
	if err := atomicfile.Write(claimed, b, 0o600); err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	return &Claim{path: claimed, base: filepath.Join(s.dir, name)}, nil
}

// Claim is one event in flight.
type Claim struct {
	path, base string
	once       sync.Once
}

// Done removes a delivered event.
func (c *Claim) Done() { c.once.Do(func() { os.Remove(c.path) }) }

// Release leaves an undelivered event for replay.
func (c *Claim) Release() { c.once.Do(func() { os.Rename(c.path, c.base) }) }

func claimSuffix() string { return "." + strconv.Itoa(os.Getpid()) + ".claim" }

type spoolFile struct {
	name string
	size int64
}

// files lists spool files (waiting and claimed) oldest first.
func (s *Spool) files() []spoolFile {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil
	}
	var out []spoolFile
	for _, e := range ents {
		// dot files are atomicfile's temp files still being written (maybe by
		// another process); .tmp ones are from older versions
		if !e.Type().IsRegular() || strings.HasPrefix(e.Name(), ".") || strings.HasSuffix(e.Name(), ".tmp") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, spoolFile{e.Name(), info.Size()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// makeRoom drops the oldest waiting events until one of n bytes fits.
func (s *Spool) makeRoom(n int64) {
	files := s.files()
	var total int64
	for _, f := range files {
		total += f.size
	}
	for i := 0; i < len(files) && (total+n > s.maxBytes || len(files)-i >= s.maxFiles); i++ {
		if strings.HasSuffix(files[i].name, ".claim") {
			continue
		}
		if os.Remove(filepath.Join(s.dir, files[i].name)) == nil {
			total -= files[i].size
			s.dropped.Add(1)
		}
	}
}

// Len counts waiting (unclaimed) events.
func (s *Spool) Len() int {
	n := 0
	for _, f := range s.files() {
		if strings.HasSuffix(f.name, ".json") {
			n++
		}
	}
	return n
}

// Replay sends waiting events oldest first until one fails with a transport
// error (the host went away: stop) or ctx ends. send returning a permanent
// error (the host refused the event) drops that event; transient errors
// leave it in place. It reports how many were delivered.
func (s *Spool) Replay(ctx context.Context, send func(context.Context, Entry) error, transient func(error) bool) (int, error) {
	s.releaseDead()
	delivered := 0
	for _, f := range s.files() {
		if ctx.Err() != nil {
			return delivered, ctx.Err()
		}
		if !strings.HasSuffix(f.name, ".json") {
			continue
		}
		base := filepath.Join(s.dir, f.name)
		claimed := base + claimSuffix()
		if os.Rename(base, claimed) != nil {
			continue // another process took it
		}
		b, err := os.ReadFile(claimed)
		var e Entry
		if err == nil {
			err = json.Unmarshal(b, &e)
		}
		if err != nil || e.Method == "" {
			os.Remove(claimed) // unreadable: nothing to replay
			continue
		}
		if err := send(ctx, e); err != nil {
			if transient(err) {
				os.Rename(claimed, base)
				return delivered, err
			}
			os.Remove(claimed)
			continue
		}
		os.Remove(claimed)
		delivered++
	}
	return delivered, nil
}

// releaseDead returns claims of processes that no longer run to the queue.
func (s *Spool) releaseDead() {
	for _, f := range s.files() {
		if !strings.HasSuffix(f.name, ".claim") {
			continue
		}
		parts := strings.Split(strings.TrimSuffix(f.name, ".claim"), ".")
		if len(parts) < 3 {
			continue
		}
		pid, err := strconv.Atoi(parts[len(parts)-1])
		if err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		base := strings.Join(parts[:len(parts)-1], ".")
		os.Rename(filepath.Join(s.dir, f.name), filepath.Join(s.dir, base))
	}
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
