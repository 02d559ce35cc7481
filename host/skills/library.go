package skills

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/embed"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/atomicfile"
)

// MaxSkills bounds how many skill folders one library loads.
const MaxSkills = 20000

// ErrNotFound is returned for an unknown skill name.
var ErrNotFound = errors.New("skill not found")

// Options configure a Library.
type Options struct {
	Dir string
	// Store holds the index in the skills' own tables.
	Store store.Tables
	Log   zerolog.Logger
	// Embedder, when set, computes vectors for embedding/hybrid retrieval in
	// the background (never on the request path).
	Embedder embed.Embedder
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// Problem is a skill file that could not be loaded (Fatal) or a finding
// that did not stop it from loading.
type Problem struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
	Fatal  bool   `json:"fatal"`
}

func (p Problem) String() string {
	kind := "warning"
	if p.Fatal {
		kind = "skipped"
	}
	return fmt.Sprintf("%s: %s: %s", p.Path, kind, p.Reason)
}

// Library is the skill folder plus its index in the store.
type Library struct {
	dir string
	w   *sql.DB
	r   *sql.DB
	log zerolog.Logger
	emb embed.Embedder
	now func() time.Time

	mu       sync.Mutex // serialises syncs and writes
	snap     atomic.Pointer[snapshot]
	problems atomic.Pointer[[]Problem]
	reported map[string]string // path → reason already logged (under mu)

	stmtOnce  sync.Once
	stmt      *sql.Stmt // BM25 of one term over every skill
	stmtQuery *sql.Stmt // BM25 of a whole expression
	stmtErr   error
	noWarm    bool // benchmarks of the uncached path
	warmOnce  sync.Once
	warmCh    chan string
	done      chan struct{}
	terms     termCache

	embedRunning atomic.Bool
	embedAgain   atomic.Bool
	bg           sync.WaitGroup
	closed       atomic.Bool
	version      atomic.Uint64
}

// entry is one skill in the snapshot with what rendering needs precomputed.
type entry struct {
	skill      *Skill
	id         string // skill.ID(), which the section reports every turn
	head       string // "### name\n" + description
	headTokens int
	body       string // the body as injected (see renderBody)
	// lineEnd[i] is where line i of body ends (its newline, or len(body));
	// cum[i] the tokens of lines 0..i, each counted with its newline.
	// Offsets rather than a string per line: nothing here for the GC to
	// follow (a library holds hundreds of thousands of lines).
	lineEnd    []int32
	cum        []int32
	bodyTokens int
	embedHash  string // hash of embedText: the vector's key
	vec        []float32
}

// line is line i of the body, without its newline.
func (e *entry) line(i int) string {
	start := 0
	if i > 0 {
		start = int(e.lineEnd[i-1]) + 1
	}
	return e.body[start:e.lineEnd[i]]
}

type snapshot struct {
	version uint64
	byName  map[string]*entry
	sorted  []*entry // by name
	active  int
	// df counts the skills each raw (unstemmed) term occurs in: queries drop
	// terms found in more than half the skills, whose BM25 weight FTS5
	// clamps to ~0 anyway, and which would make the query visit every row.
	df *termDF
	// gen changes only when the indexed content changes (not when vectors
	// arrive); the term cache is valid for one gen.
	gen   uint64
	index map[string]int32 // name → position in sorted
	// kw is FTS5's BM25 per indexed token, for gen (nil when it could not
	// be built: ranking then queries FTS5).
	kw      *bm25Index
	kwRetry bool // building kw was interrupted: the next sync tries again
	// flags are each sorted entry's status and agent scope (skillFlags),
	// so that ranking filters the skills a turn may get without reading
	// their entries (a cache miss each on the request path).
	flags []uint8
}

const (
	flagActive   = 1 << iota // status active
	flagAnyAgent             // no agent scope, or "*"
)

// skillFlags are sorted's flags.
func skillFlags(sorted []*entry) []uint8 {
	out := make([]uint8, len(sorted))
	for i, e := range sorted {
		if e.skill.Active() {
			out[i] |= flagActive
		}
		if len(e.skill.Agents) == 0 || slices.Contains(e.skill.Agents, "*") {
			out[i] |= flagAnyAgent
		}
	}
	return out
}

// Open loads the library (creating the folder if needed) and indexes it.
// Malformed files are reported and skipped; they never stop Open.
func Open(ctx context.Context, o Options) (*Library, error) {
	if o.Dir == "" {
		return nil, errors.New("skills: no directory (skills.dir)")
	}
	if o.Store == nil {
		return nil, errors.New("skills: a store is required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("skills dir %s: %w", o.Dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create skills dir: %w", err)
	}
	l := &Library{dir: dir, w: o.Store.Writer(), r: o.Store.Reader(), log: o.Log, emb: o.Embedder, now: o.Now, reported: map[string]string{}, done: make(chan struct{})}
	l.snap.Store(&snapshot{byName: map[string]*entry{}})
	empty := []Problem{}
	l.problems.Store(&empty)
	if _, err := l.Sync(ctx); err != nil {
		return nil, err
	}
	return l, nil
}

// Dir is the library folder.
func (l *Library) Dir() string { return l.dir }

// Close waits for background work (embedding) to stop.
func (l *Library) Close() error {
	if l.closed.Swap(true) {
		return nil
	}
	close(l.done)
	l.bg.Wait()
	if l.stmt != nil {
		l.stmt.Close()
	}
	if l.stmtQuery != nil {
		l.stmtQuery.Close()
	}
	return nil
}

// Problems are the findings of the last Sync.
func (l *Library) Problems() []Problem { return append([]Problem(nil), *l.problems.Load()...) }

// Get returns a copy of the named skill.
func (l *Library) Get(name string) (*Skill, bool) {
	e, ok := l.snap.Load().byName[name]
	if !ok {
		return nil, false
	}
	return e.skill.Clone(), true
}

// List returns copies of every loaded skill, sorted by name.
func (l *Library) List() []*Skill {
	s := l.snap.Load()
	out := make([]*Skill, 0, len(s.sorted))
	for _, e := range s.sorted {
		out = append(out, e.skill.Clone())
	}
	return out
}

// ActiveCount is the number of skills that may be injected.
func (l *Library) ActiveCount() int { return l.snap.Load().active }

// Version changes whenever the loaded set changes.
func (l *Library) Version() uint64 { return l.snap.Load().version }

// --- writing ---------------------------------------------------------------

// Event describes a change for the history table.
type Event struct {
	Action    string // created | updated | merged | proposed | approved | rejected | enabled | disabled | removed | imported | installed | edited
	Source    string // cli | evolver | bank | import
	SessionID string
	Reason    string
}

// folderFor returns the folder of a skill: its current one, or <dir>/<name>.
func (l *Library) folderFor(name string) (string, error) {
	if err := ValidName(name); err != nil {
		return "", err
	}
	if e, ok := l.snap.Load().byName[name]; ok {
		return filepath.Dir(e.skill.Path), nil
	}
	folder := filepath.Join(l.dir, name)
	if rel, err := filepath.Rel(l.dir, folder); err != nil || strings.HasPrefix(rel, "..") || strings.ContainsRune(rel, filepath.Separator) {
		return "", fmt.Errorf("skill name %q escapes the skill folder", name)
	}
	return folder, nil
}

// writeFileAtomic writes via a temp file and rename, so readers (and the
// watcher) never see half a file.
func writeFileAtomic(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.Write(path, data, 0o600)
}

// Save writes the skill as its SKILL.md (atomically), records the version in
// history and re-indexes. The caller sets Generation, Status and dates.
func (l *Library) Save(ctx context.Context, s *Skill, ev Event) (*Skill, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.saveLocked(ctx, s, ev)
}

func (l *Library) saveLocked(ctx context.Context, s *Skill, ev Event) (*Skill, error) {
	s = s.Clone()
	if err := s.normalize(); err != nil {
		return nil, err
	}
	folder, err := l.folderFor(s.Name)
	if err != nil {
		return nil, err
	}
	data, err := Format(s)
	if err != nil {
		return nil, err
	}
	if _, err := Parse(data); err != nil {
		return nil, fmt.Errorf("skill %s would not parse back: %w", s.Name, err)
	}
	path := filepath.Join(folder, FileName)
	if err := writeFileAtomic(path, data); err != nil {
		return nil, fmt.Errorf("write skill %s: %w", s.Name, err)
	}
	s.Path, s.Hash = path, hashOf(data)
	if err := l.recordLocked(ctx, s.Name, s.Generation, ev, string(data), s.Hash); err != nil {
		return nil, err
	}
	if _, err := l.syncLocked(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// SaveProposal writes an edit of an existing skill as PROPOSED.md beside
// it, for review; the live SKILL.md is untouched.
func (l *Library) SaveProposal(ctx context.Context, s *Skill, ev Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	s = s.Clone()
	s.Status = StatusPending
	if err := s.normalize(); err != nil {
		return err
	}
	if _, ok := l.snap.Load().byName[s.Name]; !ok {
		return fmt.Errorf("%s: %w", s.Name, ErrNotFound)
	}
	folder, err := l.folderFor(s.Name)
	if err != nil {
		return err
	}
	data, err := Format(s)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(folder, ProposalFile), data); err != nil {
		return fmt.Errorf("write proposal for %s: %w", s.Name, err)
	}
	if err := l.recordLocked(ctx, s.Name, s.Generation, ev, string(data), ""); err != nil {
		return err
	}
	_, err = l.syncLocked(ctx)
	return err
}

// Proposal returns the pending edit of a skill, if any.
func (l *Library) Proposal(name string) (*Skill, error) {
	folder, err := l.folderFor(name)
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(filepath.Join(folder, ProposalFile))
	if err != nil {
		return nil, err
	}
	s, err := Parse(raw)
	if err != nil {
		return nil, err
	}
	s.Path = filepath.Join(folder, ProposalFile)
	return s, nil
}

// readCurrent parses the skill's file from disk (not the snapshot), so an
// update never overwrites an edit the watcher has not seen yet.
func (l *Library) readCurrent(name string) (*Skill, error) {
	e, ok := l.snap.Load().byName[name]
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, ErrNotFound)
	}
	raw, err := os.ReadFile(e.skill.Path)
	if err != nil {
		return nil, fmt.Errorf("read skill %s: %w", name, err)
	}
	s, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", e.skill.Path, err)
	}
	if s.Name != name {
		return nil, fmt.Errorf("%s now names %q: %w", e.skill.Path, s.Name, ErrNotFound)
	}
	s.Path, s.Hash = e.skill.Path, hashOf(raw)
	return s, nil
}

// Update applies fn to the current file of a skill, bumps its generation when
// bump is set, and saves it.
func (l *Library) Update(ctx context.Context, name string, bump bool, ev Event, fn func(s *Skill) error) (*Skill, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.syncLocked(ctx); err != nil {
		return nil, err
	}
	s, err := l.readCurrent(name)
	if err != nil {
		return nil, err
	}
	if err := fn(s); err != nil {
		return nil, err
	}
	if s.Name != name {
		return nil, fmt.Errorf("a skill cannot be renamed (%s → %s): add a new one and remove the old", name, s.Name)
	}
	if bump {
		s.Generation++
	}
	s.Updated = l.now().UTC().Truncate(time.Second)
	return l.saveLocked(ctx, s, ev)
}

// SetStatus enables, disables or activates a skill.
func (l *Library) SetStatus(ctx context.Context, name, status string, ev Event) (*Skill, error) {
	if ev.Action == "" {
		ev.Action = map[string]string{StatusActive: "enabled", StatusDisabled: "disabled", StatusPending: "proposed"}[status]
	}
	return l.Update(ctx, name, false, ev, func(s *Skill) error {
		if s.Status == status {
			return fmt.Errorf("%s is already %s", name, status)
		}
		s.Status = status
		return nil
	})
}

// Approve makes a pending skill live: its pending edit (PROPOSED.md)
// replaces the skill, or a pending new skill becomes active.
func (l *Library) Approve(ctx context.Context, name string, ev Event) (*Skill, error) {
	if ev.Action == "" {
		ev.Action = "approved"
	}
	prop, perr := l.Proposal(name)
	if perr == nil {
		out, err := l.Update(ctx, name, false, ev, func(s *Skill) error {
			gen := max(prop.Generation, s.Generation+1)
			created := s.Created
			*s = *prop
			s.Status, s.Generation, s.Created = StatusActive, gen, created
			return nil
		})
		if err != nil {
			return nil, err
		}
		folder, _ := l.folderFor(name)
		_ = os.Remove(filepath.Join(folder, ProposalFile))
		_, err = l.Sync(ctx)
		return out, err
	}
	cur, ok := l.Get(name)
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, ErrNotFound)
	}
	if cur.Status != StatusPending {
		return nil, fmt.Errorf("%s has nothing to approve (status %s, no proposed edit)", name, cur.Status)
	}
	return l.Update(ctx, name, false, ev, func(s *Skill) error {
		s.Status = StatusActive
		return nil
	})
}

// Reject drops a pending edit, or removes a pending new skill (to the trash).
func (l *Library) Reject(ctx context.Context, name, reason string, ev Event) error {
	if ev.Action == "" {
		ev.Action = "rejected"
	}
	ev.Reason = reason
	folder, err := l.folderFor(name)
	if err != nil {
		return err
	}
	if prop, perr := l.Proposal(name); perr == nil {
		if err := os.Remove(filepath.Join(folder, ProposalFile)); err != nil {
			return err
		}
		if err := l.Record(ctx, name, prop.Generation, ev, ""); err != nil {
			return err
		}
		_, err = l.Sync(ctx)
		return err
	}
	cur, ok := l.Get(name)
	if !ok {
		return fmt.Errorf("%s: %w", name, ErrNotFound)
	}
	if cur.Status != StatusPending {
		return fmt.Errorf("%s has nothing to reject (status %s, no proposed edit); use disable or remove", name, cur.Status)
	}
	if _, err := l.Remove(ctx, name, ev); err != nil {
		return err
	}
	return nil
}

// Remove moves a skill folder to <dir>/.trash (nothing is deleted).
func (l *Library) Remove(ctx context.Context, name string, ev Event) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.snap.Load().byName[name]
	if !ok {
		return "", fmt.Errorf("%s: %w", name, ErrNotFound)
	}
	if ev.Action == "" {
		ev.Action = "removed"
	}
	folder := filepath.Dir(e.skill.Path)
	trash := filepath.Join(l.dir, ".trash")
	if err := os.MkdirAll(trash, 0o700); err != nil {
		return "", err
	}
	dest := filepath.Join(trash, fmt.Sprintf("%s.%s", filepath.Base(folder), l.now().UTC().Format("20060102T150405.000000000")))
	if err := os.Rename(folder, dest); err != nil {
		return "", fmt.Errorf("remove skill %s: %w", name, err)
	}
	raw, _ := os.ReadFile(filepath.Join(dest, FileName))
	if err := l.recordLocked(ctx, name, e.skill.Generation, ev, string(raw), ""); err != nil {
		return dest, err
	}
	_, err := l.syncLocked(ctx)
	return dest, err
}
