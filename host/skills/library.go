package skills

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/embed"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/host/tokens"
)

// MaxSkills bounds how many skill folders one library loads.
const MaxSkills = 20000

// ErrNotFound is returned for an unknown skill name.
var ErrNotFound = errors.New("skill not found")

// Options configure a Library.
type Options struct {
	Dir string
	// Store holds the index; its Writer/Reader pools are used directly.
	Store *store.SQLite
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
	head       string // "### name\n" + description
	headTokens int
	body       string   // the body as injected (see renderBody)
	lines      []string // its lines
	cum        []int    // cum[i] = tokens of lines[:i+1] (each line counted with its newline)
	bodyTokens int
	words      map[string]int // light term counts (near-duplicate checks)
	uniq       []string       // distinct raw terms (document frequencies)
	embedHash  string         // hash of embedText: the vector's key
	vec        []float32
}

type snapshot struct {
	version uint64
	byName  map[string]*entry
	sorted  []*entry // by name
	active  int
	// df counts the skills each raw (unstemmed) term occurs in: queries drop
	// terms found in more than half the skills, whose BM25 weight FTS5
	// clamps to ~0 anyway, and which would make the query visit every row.
	df map[string]int
	// gen changes only when the indexed content changes (not when vectors
	// arrive); the term cache is valid for one gen.
	gen   uint64
	index map[string]int32 // name → position in sorted
	// kw is FTS5's BM25 per indexed token, for gen (nil when it could not
	// be built: ranking then queries FTS5).
	kw      *bm25Index
	kwRetry bool // building kw was interrupted: the next sync tries again
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

// SyncReport says what a Sync changed in the index.
type SyncReport struct {
	Loaded, Added, Updated, Removed int
	Problems                        []Problem
}

// scanned is one file found by scan.
type scanned struct {
	skill  *Skill
	folder string
	raw    []byte
}

// scan reads every <dir>/<folder>/SKILL.md, one level deep, sorted by folder.
func (l *Library) scan() ([]scanned, []Problem, error) {
	ents, err := os.ReadDir(l.dir)
	if err != nil {
		return nil, nil, fmt.Errorf("read skills dir: %w", err)
	}
	var out []scanned
	var problems []Problem
	seen := map[string]string{}
	for _, de := range ents {
		name := de.Name()
		if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
			continue
		}
		folder := filepath.Join(l.dir, name)
		if !de.IsDir() {
			if de.Type()&fs.ModeSymlink == 0 {
				continue
			}
			if fi, err := os.Stat(folder); err != nil || !fi.IsDir() {
				continue
			}
		}
		path := filepath.Join(folder, FileName)
		fi, err := os.Stat(path)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				problems = append(problems, Problem{Path: path, Reason: err.Error(), Fatal: true})
			}
			continue
		}
		if len(out) >= MaxSkills {
			problems = append(problems, Problem{Path: path, Reason: fmt.Sprintf("more than %d skills; the rest are not loaded", MaxSkills), Fatal: true})
			break
		}
		if fi.Size() > MaxFileBytes {
			problems = append(problems, Problem{Path: path, Reason: fmt.Sprintf("file is larger than %d KiB", MaxFileBytes>>10), Fatal: true})
			continue
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			problems = append(problems, Problem{Path: path, Reason: err.Error(), Fatal: true})
			continue
		}
		s, err := Parse(raw)
		if err != nil {
			var pe *ParseError
			reason := err.Error()
			if errors.As(err, &pe) {
				reason = pe.Reason
			}
			problems = append(problems, Problem{Path: path, Reason: reason, Fatal: true})
			continue
		}
		if other, dup := seen[s.Name]; dup {
			problems = append(problems, Problem{Path: path, Reason: fmt.Sprintf("duplicate name %q (already loaded from %s)", s.Name, other), Fatal: true})
			continue
		}
		seen[s.Name] = path
		s.Path = path
		s.Hash = hashOf(raw)
		if _, err := os.Stat(filepath.Join(folder, ProposalFile)); err == nil {
			s.HasProposal = true
		}
		s.Warnings = s.lint(name)
		for _, w := range s.Warnings {
			problems = append(problems, Problem{Path: path, Reason: w})
		}
		out = append(out, scanned{skill: s, folder: name, raw: raw})
	}
	return out, problems, nil
}

func hashOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Sync re-reads the folder, brings the index in line with the files and
// publishes a new snapshot. It writes only when something changed.
func (l *Library) Sync(ctx context.Context) (SyncReport, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.syncLocked(ctx)
}

type indexRow struct {
	hash, path string
}

func (l *Library) syncLocked(ctx context.Context) (SyncReport, error) {
	var rep SyncReport
	found, problems, err := l.scan()
	if err != nil {
		// Keep serving what we have: a missing or unreadable folder is not
		// a reason to forget every skill.
		l.log.Error().Err(err).Str("dir", l.dir).Msg("skills: cannot read the skill folder; keeping the loaded skills")
		return rep, nil
	}
	rep.Problems = problems
	rep.Loaded = len(found)
	l.reportProblems(problems)
	// Problems become visible only with the snapshot they explain (after
	// publish): a caller that sees a file reported broken must no longer
	// be served the skill it held.
	defer l.problems.Store(&problems)

	existing := map[string]indexRow{}
	rows, err := l.w.QueryContext(ctx, `SELECT name, hash, path FROM skills`)
	if err != nil {
		return rep, fmt.Errorf("skills index: %w", err)
	}
	for rows.Next() {
		var n string
		var r indexRow
		if err := rows.Scan(&n, &r.hash, &r.path); err != nil {
			rows.Close()
			return rep, fmt.Errorf("skills index: %w", err)
		}
		existing[n] = r
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return rep, fmt.Errorf("skills index: %w", err)
	}

	var changed []scanned
	present := map[string]bool{}
	for _, f := range found {
		present[f.skill.Name] = true
		r, ok := existing[f.skill.Name]
		if !ok {
			rep.Added++
			changed = append(changed, f)
		} else if r.hash != f.skill.Hash || r.path != f.skill.Path {
			rep.Updated++
			changed = append(changed, f)
		}
	}
	var removed []string
	for n := range existing {
		if !present[n] {
			removed = append(removed, n)
		}
	}
	sort.Strings(removed)
	rep.Removed = len(removed)
	if len(changed) > 0 || len(removed) > 0 {
		if err := l.writeIndex(ctx, changed, removed, existing); err != nil {
			return rep, err
		}
	}
	l.publish(ctx, found)
	if rep.Added+rep.Updated+rep.Removed > 0 {
		l.log.Info().Int("skills", rep.Loaded).Int("added", rep.Added).Int("updated", rep.Updated).Int("removed", rep.Removed).Msg("skills indexed")
	}
	if l.emb != nil {
		l.embedMissing()
	}
	return rep, nil
}

func (l *Library) reportProblems(problems []Problem) {
	now := map[string]string{}
	for _, p := range problems {
		if !p.Fatal {
			continue
		}
		now[p.Path] = p.Reason
		if l.reported[p.Path] != p.Reason {
			l.log.Warn().Str("path", p.Path).Str("reason", p.Reason).Msg("skills: skipping a malformed skill file (see metaclaw skills lint)")
		}
	}
	l.reported = now
}

func joinAgents(a []string) string {
	if len(a) == 0 {
		return ""
	}
	return "," + strings.Join(a, ",") + ","
}

func (l *Library) writeIndex(ctx context.Context, changed []scanned, removed []string, existing map[string]indexRow) error {
	tx, err := l.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("skills index: %w", err)
	}
	defer tx.Rollback()
	now := l.now().UnixMilli()
	for _, f := range changed {
		s := f.skill
		args := []any{s.Path, s.Description, s.Category, strings.Join(s.Tags, " "), joinAgents(s.Agents), s.Status, s.Generation,
			s.Source, s.Body, s.Hash, msOf(s.Created), msOf(s.Updated), now, s.Name}
		if _, ok := existing[s.Name]; ok {
			_, err = tx.ExecContext(ctx, `UPDATE skills SET path=?, description=?, category=?, tags=?, agents=?, status=?, generation=?,
source=?, body=?, hash=?, created_at=?, updated_at=?, indexed_at=? WHERE name=?`, args...)
		} else {
			_, err = tx.ExecContext(ctx, `INSERT INTO skills (path, description, category, tags, agents, status, generation,
source, body, hash, created_at, updated_at, indexed_at, name) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)`, args...)
		}
		if err != nil {
			return fmt.Errorf("skills index %s: %w", s.Name, err)
		}
		// Every version ever seen goes to history (hand edits included);
		// writers that already recorded this exact version are not repeated.
		var last string
		err = tx.QueryRowContext(ctx, `SELECT hash FROM skill_history WHERE name = ? AND content != '' ORDER BY id DESC LIMIT 1`, s.Name).Scan(&last)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("skills history %s: %w", s.Name, err)
		}
		if last != s.Hash {
			action := "indexed"
			if last != "" {
				action = "file-edit"
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO skill_history (name, generation, action, source, content, hash, created_at) VALUES (?,?,?,?,?,?,?)`,
				s.Name, s.Generation, action, "file", string(f.raw), s.Hash, now); err != nil {
				return fmt.Errorf("skills history %s: %w", s.Name, err)
			}
		}
	}
	for _, n := range removed {
		if _, err := tx.ExecContext(ctx, `DELETE FROM skills WHERE name = ?`, n); err != nil {
			return fmt.Errorf("skills index: remove %s: %w", n, err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM skill_vectors WHERE name = ?`, n); err != nil {
			return fmt.Errorf("skills index: remove %s: %w", n, err)
		}
		var lastAction string
		_ = tx.QueryRowContext(ctx, `SELECT action FROM skill_history WHERE name = ? ORDER BY id DESC LIMIT 1`, n).Scan(&lastAction)
		if lastAction != "removed" && lastAction != "rejected" {
			if _, err := tx.ExecContext(ctx, `INSERT INTO skill_history (name, action, source, reason, created_at) VALUES (?,?,?,?,?)`,
				n, "removed", "file", "SKILL.md no longer in the skill folder", now); err != nil {
				return fmt.Errorf("skills history %s: %w", n, err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("skills index: commit: %w", err)
	}
	return nil
}

func msOf(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// publish builds the snapshot the request path reads, reusing entries whose
// file did not change (token counts are the expensive part).
func (l *Library) publish(ctx context.Context, found []scanned) {
	old := l.snap.Load()
	var vecs map[string]storedVec
	loaded := false
	next := &snapshot{byName: make(map[string]*entry, len(found)), sorted: make([]*entry, 0, len(found))}
	changed := len(found) != len(old.sorted)
	for _, f := range found {
		var e *entry
		reused := false
		if o, ok := old.byName[f.skill.Name]; ok && o.skill.Hash == f.skill.Hash && o.skill.Path == f.skill.Path && o.skill.HasProposal == f.skill.HasProposal {
			e, reused = o, true
		} else {
			changed = true
			e = newEntry(f.skill)
			if o, ok := old.byName[f.skill.Name]; ok && o.embedHash == e.embedHash {
				e.vec = o.vec
			}
		}
		if e.vec == nil && l.emb != nil {
			if !loaded {
				vecs, loaded = l.loadVectors(ctx), true
			}
			if v, ok := vecs[f.skill.Name]; ok && v.hash == e.embedHash {
				if reused {
					cp := *e
					e = &cp
				}
				e.vec = v.vec
			}
		}
		next.byName[f.skill.Name] = e
		next.sorted = append(next.sorted, e)
		if e.skill.Active() {
			next.active++
		}
	}
	sort.Slice(next.sorted, func(i, j int) bool { return next.sorted[i].skill.Name < next.sorted[j].skill.Name })
	next.df = docFreq(next.sorted)
	next.index = make(map[string]int32, len(next.sorted))
	for i, e := range next.sorted {
		next.index[e.skill.Name] = int32(i)
	}
	next.version = l.version.Add(1)
	next.gen = old.gen
	next.kw = old.kw
	if changed || old.gen == 0 {
		next.gen = next.version
		next.kw = nil
	}
	if next.kw == nil && len(next.sorted) > 0 && (next.gen != old.gen || old.kwRetry) {
		kw, err := buildBM25Index(ctx, l.r, next.index)
		if err != nil {
			// A cancelled sync is retried by the next one; other errors
			// (a library too large for the index) wait for a content change.
			next.kwRetry = ctx.Err() != nil
			l.log.Warn().Err(err).Msg("skills: in-memory BM25 index unavailable, ranking through FTS5 queries")
		}
		next.kw = kw
	}
	l.snap.Store(next)
}

func docFreq(entries []*entry) map[string]int {
	df := make(map[string]int, 4096)
	for _, e := range entries {
		for _, t := range e.uniq {
			df[t]++
		}
	}
	return df
}

func newEntry(s *Skill) *entry {
	e := &entry{skill: s}
	e.head = "### " + s.Name + "\n" + oneLine(s.Description) + "\n"
	e.headTokens = tokens.Count(e.head)
	if body := renderBody(s.Body); body != "" {
		e.body = body
		e.lines = strings.Split(body, "\n")
		e.cum = make([]int, len(e.lines))
		total := 0
		for i, ln := range e.lines {
			total += tokens.Count(ln + "\n")
			e.cum[i] = total
		}
		e.bodyTokens = total
	}
	e.embedHash = hashOf([]byte(embedText(s)))
	all := s.Name + " " + s.Description + " " + strings.Join(s.Tags, " ") + " " + s.Body
	e.words = termCounts(all)
	seen := map[string]bool{}
	for _, t := range splitTerms(all) {
		if !seen[t] && keepTerm(t) {
			seen[t] = true
			e.uniq = append(e.uniq, t)
		}
	}
	return e
}

// renderBody is the body as injected: a leading "# Title" line repeats the
// "### name" header the section already has, so it is dropped.
func renderBody(body string) string {
	body = strings.TrimSpace(body)
	if strings.HasPrefix(body, "# ") {
		if _, rest, ok := strings.Cut(body, "\n"); ok {
			body = strings.TrimSpace(rest)
		} else {
			body = ""
		}
	}
	return body
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

type storedVec struct {
	hash string
	vec  []float32
}

func (l *Library) loadVectors(ctx context.Context) map[string]storedVec {
	if l.emb == nil {
		return nil
	}
	rows, err := l.r.QueryContext(ctx, `SELECT name, hash, vec FROM skill_vectors WHERE model = ?`, l.emb.Name())
	if err != nil {
		l.log.Warn().Err(err).Msg("skills: read vectors")
		return nil
	}
	defer rows.Close()
	out := map[string]storedVec{}
	for rows.Next() {
		var n, h string
		var b []byte
		if rows.Scan(&n, &h, &b) == nil {
			out[n] = storedVec{hash: h, vec: embed.Decode(b)}
		}
	}
	return out
}

// embedText is what a skill's vector is computed from.
func embedText(s *Skill) string {
	body := s.Body
	if len(body) > 1500 {
		body = body[:1500]
	}
	return s.Name + ". " + s.Description + ". " + strings.Join(s.Tags, ", ") + ". " + body
}

// embedMissing computes vectors for skills that lack one, in the background.
func (l *Library) embedMissing() {
	if l.closed.Load() {
		return
	}
	if !l.embedRunning.CompareAndSwap(false, true) {
		l.embedAgain.Store(true)
		return
	}
	l.bg.Add(1)
	go func() {
		defer l.bg.Done()
		defer l.embedRunning.Store(false)
		for round := 0; round < 5 && !l.closed.Load(); round++ {
			l.embedAgain.Store(false)
			if err := l.embedOnce(); err != nil {
				l.log.Warn().Err(err).Msg("skills: embedding skills failed; retrieval uses keywords for the rest")
				return
			}
			if !l.embedAgain.Load() {
				return
			}
		}
	}()
}

// EmbedWait runs the embedding pass synchronously (tests, CLI).
func (l *Library) EmbedWait(ctx context.Context) error {
	if l.emb == nil {
		return nil
	}
	return l.embedOnce()
}

func (l *Library) embedOnce() error {
	snap := l.snap.Load()
	var todo []*entry
	for _, e := range snap.sorted {
		if e.vec == nil {
			todo = append(todo, e)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	model := l.emb.Name()
	for start := 0; start < len(todo); start += 32 {
		if l.closed.Load() {
			return nil
		}
		batch := todo[start:min(start+32, len(todo))]
		texts := make([]string, len(batch))
		for i, e := range batch {
			texts[i] = embedText(e.skill)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		vecs, err := l.emb.Embed(ctx, texts)
		cancel()
		if err != nil {
			return err
		}
		now := l.now().UnixMilli()
		for i, e := range batch {
			if i >= len(vecs) || len(vecs[i]) == 0 {
				continue
			}
			if _, err := l.w.ExecContext(context.Background(), `INSERT INTO skill_vectors (name, model, hash, vec, updated_at) VALUES (?,?,?,?,?)
ON CONFLICT(name) DO UPDATE SET model=excluded.model, hash=excluded.hash, vec=excluded.vec, updated_at=excluded.updated_at`,
				e.skill.Name, model, e.embedHash, embed.Encode(vecs[i]), now); err != nil {
				return fmt.Errorf("store skill vector: %w", err)
			}
		}
		l.attachVectors(batch, vecs)
	}
	return nil
}

// attachVectors publishes a snapshot in which the given entries carry vectors.
func (l *Library) attachVectors(batch []*entry, vecs [][]float32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur := l.snap.Load()
	next := &snapshot{byName: make(map[string]*entry, len(cur.byName)), sorted: make([]*entry, 0, len(cur.sorted)), active: cur.active, df: cur.df, gen: cur.gen, index: cur.index, kw: cur.kw, kwRetry: cur.kwRetry}
	upd := map[string][]float32{}
	for i, e := range batch {
		if i < len(vecs) && len(vecs[i]) > 0 {
			upd[e.skill.Name+"\x00"+e.embedHash] = vecs[i]
		}
	}
	for _, e := range cur.sorted {
		if v, ok := upd[e.skill.Name+"\x00"+e.embedHash]; ok {
			cp := *e
			cp.vec = v
			e = &cp
		}
		next.byName[e.skill.Name] = e
		next.sorted = append(next.sorted, e)
	}
	next.version = l.version.Add(1)
	l.snap.Store(next)
}

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
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
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

// Record adds an event to the history (e.g. a rejected proposal).
func (l *Library) Record(ctx context.Context, name string, generation int, ev Event, content string) error {
	return l.recordLocked(ctx, name, generation, ev, content, "")
}

func (l *Library) recordLocked(ctx context.Context, name string, generation int, ev Event, content, hash string) error {
	_, err := l.w.ExecContext(ctx, `INSERT INTO skill_history (name, generation, action, source, session_id, reason, content, hash, created_at) VALUES (?,?,?,?,?,?,?,?,?)`,
		name, generation, ev.Action, ev.Source, ev.SessionID, truncate(ev.Reason, 2000), content, hash, l.now().UnixMilli())
	if err != nil {
		return fmt.Errorf("skills history: %w", err)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

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

// HistoryEntry is one row of a skill's history.
type HistoryEntry struct {
	ID         int64     `json:"id"`
	Name       string    `json:"name"`
	Generation int       `json:"generation"`
	Action     string    `json:"action"`
	Source     string    `json:"source,omitempty"`
	SessionID  string    `json:"session_id,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	Content    string    `json:"content,omitempty"`
	Hash       string    `json:"hash,omitempty"`
	At         time.Time `json:"at"`
}

// History lists history rows, newest first: one skill's, or every skill's
// when name is empty. Content is included when withContent is set.
func (l *Library) History(ctx context.Context, name string, limit int, withContent bool) ([]HistoryEntry, error) {
	if limit <= 0 {
		limit = 100
	}
	q := `SELECT id, name, generation, action, source, session_id, reason, CASE WHEN ? THEN content ELSE '' END, hash, created_at FROM skill_history`
	args := []any{withContent}
	if name != "" {
		q += ` WHERE name = ?`
		args = append(args, name)
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := l.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("skills history: %w", err)
	}
	defer rows.Close()
	var out []HistoryEntry
	for rows.Next() {
		var h HistoryEntry
		var at int64
		if err := rows.Scan(&h.ID, &h.Name, &h.Generation, &h.Action, &h.Source, &h.SessionID, &h.Reason, &h.Content, &h.Hash, &at); err != nil {
			return nil, fmt.Errorf("skills history: %w", err)
		}
		h.At = time.UnixMilli(at)
		out = append(out, h)
	}
	return out, rows.Err()
}

// HistoryVersion returns one history row with its content.
func (l *Library) HistoryVersion(ctx context.Context, id int64) (HistoryEntry, error) {
	var h HistoryEntry
	var at int64
	err := l.r.QueryRowContext(ctx, `SELECT id, name, generation, action, source, session_id, reason, content, hash, created_at FROM skill_history WHERE id = ?`, id).
		Scan(&h.ID, &h.Name, &h.Generation, &h.Action, &h.Source, &h.SessionID, &h.Reason, &h.Content, &h.Hash, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return h, fmt.Errorf("history version %d: %w", id, ErrNotFound)
	}
	h.At = time.UnixMilli(at)
	return h, err
}
