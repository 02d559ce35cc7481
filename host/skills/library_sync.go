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
	"time"

	"github.com/metaclaw-go/metaclaw/host/tokens"
)

// Sync: the skill folder scanned, the index in the store brought up to date,
// and the in-memory snapshot the request path reads published.

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
	next.df = old.df
	if changed || next.df == nil {
		next.df = docFreq(next.sorted)
	}
	next.flags = skillFlags(next.sorted)
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
		kw, err := buildBM25Index(ctx, l.r, next.index, next.df)
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

func newEntry(s *Skill) *entry {
	e := &entry{skill: s, id: s.ID()}
	e.head = "### " + s.Name + "\n" + oneLine(s.Description) + "\n"
	e.headTokens = tokens.Count(e.head)
	if body := renderBody(s.Body); body != "" {
		e.body = body
		n := strings.Count(body, "\n") + 1
		e.lineEnd = make([]int32, 0, n)
		e.cum = make([]int32, 0, n)
		total := 0
		for start := 0; start <= len(body); {
			end := strings.IndexByte(body[start:], '\n')
			if end < 0 {
				end = len(body)
			} else {
				end += start
			}
			total += tokens.Count(body[start:end] + "\n")
			e.lineEnd = append(e.lineEnd, int32(end))
			e.cum = append(e.cum, int32(total))
			start = end + 1
		}
		e.bodyTokens = total
	}
	e.embedHash = hashOf([]byte(embedText(s)))
	packStrings(e)
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
