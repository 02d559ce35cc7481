package core

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/metaclaw-go/metaclaw/host/store"
)

// spool keeps turns the store refused as JSON lines in private files, one
// file per spill, until the store takes them back (a file per transaction,
// so a replay is all or nothing; a crash between commit and removal can
// repeat a file's turns, never lose them).
type spool struct {
	dir string
	mu  sync.Mutex
	cur string // file being appended to; closed for replay when a new spill starts
}

const spoolPrefix = "turns-"

func (s *spool) files() []string {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), spoolPrefix) && strings.HasSuffix(e.Name(), ".jsonl") {
			out = append(out, filepath.Join(s.dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out
}

// count is the number of spooled turns (one per line).
func (s *spool) count() int {
	n := 0
	for _, f := range s.files() {
		b, err := os.ReadFile(f)
		if err == nil {
			n += strings.Count(string(b), "\n")
		}
	}
	return n
}

func (s *spool) write(t *store.Turn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	if s.cur == "" {
		s.cur = filepath.Join(s.dir, spoolPrefix+strconv.FormatInt(time.Now().UnixNano(), 10)+".jsonl")
	}
	line, err := json.Marshal(t)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	f, err := os.OpenFile(s.cur, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	_, err = f.Write(append(line, '\n'))
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("spool: %w", err)
	}
	return nil
}

// replay hands each spool file's turns to record and removes the file once
// record succeeds. It stops at the first failure and returns the turns replayed.
func (s *spool) replay(record func([]*store.Turn) error) (int, error) {
	s.mu.Lock()
	s.cur = "" // the next spill starts a new file
	s.mu.Unlock()
	n := 0
	for _, f := range s.files() {
		turns, err := readSpool(f)
		if err != nil {
			return n, err
		}
		if len(turns) > 0 {
			if err := record(turns); err != nil {
				return n, err
			}
		}
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return n, fmt.Errorf("spool: %w", err)
		}
		n += len(turns)
	}
	return n, nil
}

func readSpool(path string) ([]*store.Turn, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("spool: %w", err)
	}
	defer f.Close()
	var turns []*store.Turn
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var t store.Turn
		if err := json.Unmarshal(sc.Bytes(), &t); err != nil {
			continue // a line cut by a crash mid-write: the rest of the file still counts
		}
		t.ID, t.TurnIndex = 0, 0
		turns = append(turns, &t)
	}
	return turns, sc.Err()
}
