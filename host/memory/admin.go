package memory

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/metaclaw-go/metaclaw/host/embed"
	"github.com/metaclaw-go/metaclaw/host/tokens"
	"github.com/metaclaw-go/metaclaw/internal/sqlconn"
)

// NewUnit is a memory given directly (metaclaw memory add, POST /v1/memory/store).
type NewUnit struct {
	Content    string
	Type       Type // empty: inferred (preference/rule wording), else semantic
	Scope      string
	Agent      string // empty: shared by the scope's agents
	Importance float64
	Confidence float64
	Tags       []string
	ExpiresAt  *time.Time
	Origin     string // default "manual"
}

// Add stores a memory through the same consolidation as learned ones: a
// repeat reinforces, a changed preference supersedes.
func (s *Store) Add(ctx context.Context, n NewUnit) (Unit, string, error) {
	content, _ := Redact(strings.TrimSpace(n.Content))
	if len(Terms(content)) == 0 {
		return Unit{}, "", errors.New("memory content is empty")
	}
	if len(content) > 4000 {
		return Unit{}, "", fmt.Errorf("memory content is %d bytes; the limit is 4000", len(content))
	}
	var subject, value string
	typ := n.Type
	correction := false
	// The heuristic names the slot, so "I prefer spaces" supersedes "I prefer tabs".
	if cands := ExtractText(content); len(cands) == 1 && (typ == "" || typ == cands[0].Type) {
		subject, value, correction = cands[0].Subject, cands[0].Value, cands[0].Correction
		if typ == "" {
			typ = cands[0].Type
		}
	}
	if typ == "" {
		typ = Semantic
	}
	if _, err := ParseType(string(typ)); err != nil {
		return Unit{}, "", err
	}
	now := s.now()
	origin := n.Origin
	if origin == "" {
		origin = "manual"
	}
	u := Unit{
		Scope: s.ScopeKey(n.Scope), Agent: n.Agent, Type: typ, Content: content, Subject: subject, Value: value,
		Entities: entitiesOf(content), Tags: mergeStrings(nil, n.Tags, 8), Importance: clamp01(n.Importance, 0.8),
		Confidence: clamp01(n.Confidence, 0.95), Mentions: 1, Status: StatusActive, Origin: origin,
		SaidAt: now, LastSeenAt: now, CreatedAt: now, UpdatedAt: now, ExpiresAt: n.ExpiresAt,
	}
	if correction {
		u.Tags = appendTag(u.Tags, "correction")
	}
	if err := s.admit(ctx, &u); err != nil {
		return Unit{}, "", err
	}
	vecs := s.embedUnits(ctx, []Unit{u})
	var out, uid string
	err := s.writeTx(ctx, func(tx *sqlconn.Tx) error {
		var v []float32
		if vecs != nil {
			v = vecs[0]
		}
		var err error
		out, uid, err = s.apply(ctx, tx, &u, v, now, nil)
		return err
	})
	if err != nil {
		return Unit{}, "", err
	}
	got, err := s.Get(ctx, uid)
	return got, out, err
}

// Get reads one unit by id.
func (s *Store) Get(ctx context.Context, id string) (Unit, error) {
	u, err := unitByUID(ctx, s.r, strings.TrimPrefix(id, "memory:"))
	if err != nil {
		return u, err
	}
	return u, withInjections(ctx, s.r, []*Unit{&u})
}

// Event is one audit row.
type Event struct {
	UnitID string          `json:"unit_id"`
	Scope  string          `json:"scope,omitempty"`
	Action string          `json:"action"`
	Detail json.RawMessage `json:"detail,omitempty"`
	At     time.Time       `json:"at"`
}

// Events returns a unit's audit history, oldest first.
func (s *Store) Events(ctx context.Context, id string) ([]Event, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT unit_uid, scope, action, detail, at FROM memory_events WHERE unit_uid = ? ORDER BY id LIMIT 1000`,
		strings.TrimPrefix(id, "memory:"))
	if err != nil {
		return nil, fmt.Errorf("memory: events: %w", err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var e Event
		var detail string
		var at int64
		if err := rows.Scan(&e.UnitID, &e.Scope, &e.Action, &detail, &at); err != nil {
			return nil, err
		}
		e.Detail, e.At = json.RawMessage(detail), time.UnixMilli(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

// Filter selects units for List and Export.
type Filter struct {
	Scope  string // empty: every scope
	Agent  *string
	Type   Type
	Status string // active (default), superseded, all
	Limit  int    // default 100; < 0 no limit
	Offset int
}

func (f Filter) where() (string, []any) {
	var conds []string
	var args []any
	if f.Scope != "" {
		conds = append(conds, "scope = ?")
		args = append(args, f.Scope)
	}
	if f.Agent != nil {
		conds = append(conds, "agent = ?")
		args = append(args, *f.Agent)
	}
	if f.Type != "" {
		conds = append(conds, "type = ?")
		args = append(args, string(f.Type))
	}
	switch f.Status {
	case "", StatusActive:
		conds = append(conds, "status = 'active'")
	case "all":
	default:
		conds = append(conds, "status = ?")
		args = append(args, f.Status)
	}
	if len(conds) == 0 {
		return "", nil
	}
	return " WHERE " + strings.Join(conds, " AND "), args
}

// List returns units, newest statement first.
func (s *Store) List(ctx context.Context, f Filter) ([]Unit, error) {
	if f.Scope != "" {
		f.Scope = s.ScopeKey(f.Scope)
	}
	where, args := f.where()
	limit := f.Limit
	if limit == 0 {
		limit = 100
	}
	args = append(args, limit, f.Offset)
	rows, err := s.r.QueryContext(ctx, `SELECT `+unitCols+` FROM memory_units`+where+` ORDER BY said_at DESC, id DESC LIMIT ? OFFSET ?`, args...)
	if err != nil {
		return nil, fmt.Errorf("memory: list: %w", err)
	}
	defer rows.Close()
	var out []Unit
	for rows.Next() {
		u, err := scanUnit(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	ptrs := make([]*Unit, len(out))
	for i := range out {
		ptrs[i] = &out[i]
	}
	return out, withInjections(ctx, s.r, ptrs)
}

// Patch is an edit; nil fields stay.
type Patch struct {
	Content      *string
	Type         *Type
	Importance   *float64
	Tags         *[]string
	ExpiresAt    *time.Time
	ClearExpires bool
}

// Edit changes a unit and records the old values in the audit log.
func (s *Store) Edit(ctx context.Context, id string, p Patch) (Unit, error) {
	id = strings.TrimPrefix(id, "memory:")
	now := s.now()
	if p.Content != nil {
		cur, err := s.Get(ctx, id)
		if err != nil {
			return Unit{}, err
		}
		c, _ := Redact(strings.TrimSpace(*p.Content))
		cur.Content, cur.Origin = c, "edit"
		if err := s.admit(ctx, &cur); err != nil {
			return Unit{}, err
		}
	}
	var vec []float32
	if p.Content != nil && s.o.Embedder != nil {
		if v := s.embedUnits(ctx, []Unit{{Content: *p.Content}}); v != nil {
			vec = v[0]
		}
	}
	err := s.writeTx(ctx, func(tx *sqlconn.Tx) error {
		u, err := unitByUID(ctx, tx, id)
		if err != nil {
			return err
		}
		old := map[string]any{}
		if p.Content != nil {
			c, _ := Redact(strings.TrimSpace(*p.Content))
			if len(Terms(c)) == 0 {
				return errors.New("memory content is empty")
			}
			old["content"] = u.Content
			u.Content = c
			// The slot follows the words.
			u.Subject, u.Value = "", ""
			if cands := ExtractText(c); len(cands) == 1 {
				u.Subject, u.Value = cands[0].Subject, cands[0].Value
			}
			u.Entities = entitiesOf(c)
		}
		if p.Type != nil {
			t, err := ParseType(string(*p.Type))
			if err != nil {
				return err
			}
			old["type"] = u.Type
			u.Type = t
		}
		if p.Importance != nil {
			if *p.Importance < 0 || *p.Importance > 1 {
				return errors.New("importance must be between 0 and 1")
			}
			old["importance"] = u.Importance
			u.Importance = *p.Importance
		}
		if p.Tags != nil {
			old["tags"] = u.Tags
			u.Tags = mergeStrings(nil, *p.Tags, 8)
		}
		if p.ExpiresAt != nil || p.ClearExpires {
			old["expires_at"] = u.ExpiresAt
			u.ExpiresAt = p.ExpiresAt
		}
		var expires int64
		if u.ExpiresAt != nil {
			expires = ms(*u.ExpiresAt)
		}
		var blob any
		if vec != nil {
			blob = embed.Encode(vec)
		}
		touch(tx, u.rowid)
		if _, err := tx.ExecContext(ctx, `UPDATE memory_units SET content = ?, type = ?, subject = ?, value = ?, entities = ?, tags = ?,
    importance = ?, expires_at = ?, tokens = ?, updated_at = ?, embedding = CASE WHEN ? THEN ? ELSE embedding END WHERE id = ?`,
			u.Content, string(u.Type), u.Subject, u.Value, jsonList(u.Entities), jsonList(u.Tags), u.Importance, expires,
			tokens.Count(renderLine(&u)), ms(now), p.Content != nil, blob, u.rowid); err != nil {
			return fmt.Errorf("memory: edit: %w", err)
		}
		if u.Status == StatusActive {
			if err := unindex(ctx, tx, u.rowid); err != nil {
				return err
			}
			if err := index(ctx, tx, u.rowid, u.vis, indexTerms(&u)); err != nil {
				return err
			}
		}
		return event(ctx, tx, u.ID, u.Scope, "edited", map[string]any{"old": old}, now)
	})
	if err != nil {
		return Unit{}, err
	}
	return s.Get(ctx, id)
}

// Forget deletes a unit for good. It is the only deletion: the audit row
// keeps the id, type and a hash of the content, not the content itself.
func (s *Store) Forget(ctx context.Context, id, reason string) error {
	id = strings.TrimPrefix(id, "memory:")
	now := s.now()
	return s.writeTx(ctx, func(tx *sqlconn.Tx) error {
		u, err := unitByUID(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := unindex(ctx, tx, u.rowid); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM memory_units WHERE id = ?`, u.rowid); err != nil {
			return fmt.Errorf("memory: forget: %w", err)
		}
		sum := sha256.Sum256([]byte(u.Content))
		return event(ctx, tx, u.ID, u.Scope, "forgotten", map[string]any{
			"type": u.Type, "status": u.Status, "content_sha256": hex.EncodeToString(sum[:]), "reason": reason,
		}, now)
	})
}

// Export writes units as JSON lines (no embeddings).
func (s *Store) Export(ctx context.Context, w io.Writer, f Filter) (int, error) {
	if f.Limit == 0 {
		f.Limit = -1
	}
	units, err := s.List(ctx, f)
	if err != nil {
		return 0, err
	}
	enc := json.NewEncoder(w)
	for i := range units {
		if err := enc.Encode(&units[i]); err != nil {
			return i, err
		}
	}
	return len(units), nil
}

// ImportResult counts an import.
type ImportResult struct {
	Imported int      `json:"imported"`
	Skipped  int      `json:"skipped"` // already present (same id, or same active content)
	Refused  int      `json:"refused"` // refused by the injection guard (see Refused)
	Errors   []string `json:"errors,omitempty"`
}

// importUnit accepts our export format and MetaClaw's field names.
type importUnit struct {
	Unit
	MemoryID   string   `json:"memory_id"`
	ScopeID    string   `json:"scope_id"`
	MemoryType string   `json:"memory_type"`
	Topics     []string `json:"topics"`
}

// Import reads JSON lines (metaclaw memory export, or MetaClaw's memory
// records) and inserts units that are not already present, keeping ids,
// statuses and timestamps.
func (s *Store) Import(ctx context.Context, r io.Reader) (ImportResult, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
	im := &importer{s: s, now: s.now(), contents: map[string]map[string]bool{}}
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		u, refused, err := s.importedUnit(ctx, text, im.now)
		if err != nil {
			im.res.Errors = append(im.res.Errors, fmt.Sprintf("line %d: %v", line, err))
			continue
		}
		if refused {
			im.res.Refused++
			continue
		}
		im.batch = append(im.batch, u)
		if len(im.batch) == 500 {
			if err := im.flush(ctx); err != nil {
				return im.res, err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return im.res, fmt.Errorf("memory: import: %w", err)
	}
	err := im.flush(ctx)
	return im.res, err
}

// importer is one import under way: the units read and not yet written,
// and the active contents per visibility (loaded once, to skip what is
// present).
type importer struct {
	s        *Store
	now      time.Time
	res      ImportResult
	batch    []Unit
	contents map[string]map[string]bool
}

// importedUnit parses one line into the unit to insert: ids, scope, type
// and defaults filled in, content redacted, active units past the
// injection guard (refused when not).
func (s *Store) importedUnit(ctx context.Context, text string, now time.Time) (Unit, bool, error) {
	var iu importUnit
	if err := json.Unmarshal([]byte(text), &iu); err != nil {
		return Unit{}, false, err
	}
	u := iu.Unit
	if u.ID == "" {
		u.ID = iu.MemoryID
	}
	if u.ID == "" {
		u.ID = newUID()
	}
	if u.Scope == "" {
		u.Scope = iu.ScopeID
	}
	u.Scope = s.ScopeKey(u.Scope)
	if u.Type == "" {
		u.Type = Type(iu.MemoryType)
	}
	typ, err := ParseType(string(u.Type))
	if err != nil {
		return Unit{}, false, err
	}
	u.Type = typ
	u.Content, _ = Redact(strings.TrimSpace(u.Content))
	if len(Terms(u.Content)) == 0 {
		return Unit{}, false, errors.New("empty content")
	}
	if u.Status != StatusSuperseded { // only active units reach a prompt
		if u.Origin == "" {
			u.Origin = "import"
		}
		if s.admit(ctx, &u) != nil {
			return Unit{}, true, nil
		}
	}
	importDefaults(&u, iu.Topics, now)
	return u, false, nil
}

// importDefaults fills in what an imported unit leaves out: status,
// entities (from MetaClaw's topics), scores, mentions and timestamps.
func importDefaults(u *Unit, topics []string, now time.Time) {
	if u.Status != StatusSuperseded {
		u.Status = StatusActive
	}
	if u.Status == StatusActive {
		u.SupersededBy = ""
	}
	if u.Entities == nil {
		u.Entities = mergeStrings(nil, topics, 8)
	}
	u.Importance, u.Confidence = clamp01(u.Importance, 0.5), clamp01(u.Confidence, 0.7)
	if u.Mentions <= 0 {
		u.Mentions = 1
	}
	if u.SaidAt.IsZero() {
		u.SaidAt = u.CreatedAt
	}
	if u.SaidAt.IsZero() {
		u.SaidAt = now
	}
	if u.CreatedAt.IsZero() {
		u.CreatedAt = u.SaidAt
	}
	if u.LastSeenAt.IsZero() {
		u.LastSeenAt = u.SaidAt
	}
	u.UpdatedAt = now
	if u.Origin == "" {
		u.Origin = "import"
	}
}

// flush inserts the batch read so far in one transaction, skipping the
// units already present.
func (im *importer) flush(ctx context.Context) error {
	if len(im.batch) == 0 {
		return nil
	}
	err := im.s.writeTx(ctx, func(tx *sqlconn.Tx) error {
		for i := range im.batch {
			u := &im.batch[i]
			exists, err := im.present(ctx, tx, u)
			if err != nil {
				return err
			}
			if exists {
				im.res.Skipped++
				continue
			}
			if err := insertUnit(ctx, tx, u, nil); err != nil {
				return err
			}
			if err := event(ctx, tx, u.ID, u.Scope, "imported", nil, im.now); err != nil {
				return err
			}
			im.res.Imported++
		}
		return nil
	})
	im.batch = im.batch[:0]
	return err
}

// present reports whether u is in the store already: same id, or (active)
// same content in the same visibility, this import included.
func (im *importer) present(ctx context.Context, tx *sqlconn.Tx, u *Unit) (bool, error) {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM memory_units WHERE uid = ?`, u.ID).Scan(&n); err != nil || n > 0 {
		return n > 0, err
	}
	vis := visToken(u.Scope, u.Agent)
	set, ok := im.contents[vis]
	if !ok {
		var err error
		if set, err = visActiveContents(ctx, tx, vis); err != nil {
			return false, err
		}
		im.contents[vis] = set
	}
	if u.Status == StatusActive && set[u.Content] {
		return true, nil
	}
	if u.Status == StatusActive {
		set[u.Content] = true
	}
	return false, nil
}

// visActiveContents reads the contents of a visibility's active units.
func visActiveContents(ctx context.Context, tx *sqlconn.Tx, vis string) (map[string]bool, error) {
	set := map[string]bool{}
	rows, err := tx.QueryContext(ctx, `SELECT content FROM memory_units WHERE vis = ? AND status = 'active'`, vis)
	if err != nil {
		return nil, err
	}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			rows.Close()
			return nil, err
		}
		set[c] = true
	}
	rows.Close()
	return set, nil
}

// Stats summarises the store.
type Stats struct {
	Active       int            `json:"active"`
	Superseded   int            `json:"superseded"`
	ByType       map[string]int `json:"active_by_type"`
	ByScope      map[string]int `json:"active_by_scope"`
	PendingTurns int            `json:"pending_turns"`
	Events       int            `json:"events"`
	Sessions     int            `json:"sessions_ingested"`
	Buffered     int            `json:"buffered_turns"`
	Refused      int            `json:"refused"` // candidates refused by the injection guard
}

// Stats counts units per status, type and scope (scope "" = all).
func (s *Store) Stats(ctx context.Context, scope string) (Stats, error) {
	st := Stats{ByType: map[string]int{}, ByScope: map[string]int{}}
	cond, args := "", []any{}
	if scope != "" {
		cond, args = " WHERE scope = ?", []any{s.ScopeKey(scope)}
	}
	rows, err := s.r.QueryContext(ctx, `SELECT scope, type, status, COUNT(*) FROM memory_units`+cond+` GROUP BY scope, type, status`, args...)
	if err != nil {
		return st, fmt.Errorf("memory: stats: %w", err)
	}
	for rows.Next() {
		var sc, typ, status string
		var n int
		if err := rows.Scan(&sc, &typ, &status, &n); err != nil {
			rows.Close()
			return st, err
		}
		if status == StatusActive {
			st.Active += n
			st.ByType[typ] += n
			st.ByScope[sc] += n
		} else {
			st.Superseded += n
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return st, err
	}
	if st.PendingTurns, err = s.pendingTurns(ctx); err != nil {
		return st, err
	}
	err = s.r.QueryRowContext(ctx, `SELECT (SELECT COUNT(*) FROM memory_events), (SELECT COUNT(*) FROM memory_cursors WHERE session_id NOT LIKE 'buf:%'),
    (SELECT COUNT(*) FROM memory_buffer b WHERE `+unflushedSQL+`)`).
		Scan(&st.Events, &st.Sessions, &st.Buffered)
	if err == nil {
		st.Refused, err = s.RefusedCount(ctx)
	}
	return st, err
}

// BulkInsert writes units as they are (no consolidation, no audit rows) in
// one transaction: seeding benchmarks and large restores.
func (s *Store) BulkInsert(ctx context.Context, units []Unit) error {
	now := s.now()
	return s.writeTx(ctx, func(tx *sqlconn.Tx) error {
		ins, err := tx.PrepareContext(ctx, `INSERT INTO memory_units (uid, scope, agent, vis, type, content, subject, value, entities, tags,
    importance, confidence, mentions, status, origin, source_session, tokens, said_at, last_seen_at, created_at, updated_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
		if err != nil {
			return err
		}
		defer ins.Close()
		fts, err := tx.PrepareContext(ctx, `INSERT INTO memory_fts (rowid, terms, vis) VALUES (?, ?, ?)`)
		if err != nil {
			return err
		}
		defer fts.Close()
		df := map[string]int{}
		active := 0
		for i := range units {
			u := &units[i]
			if u.ID == "" {
				u.ID = newUID()
			}
			if u.Status == "" {
				u.Status = StatusActive
			}
			if u.SaidAt.IsZero() {
				u.SaidAt = now
			}
			if u.LastSeenAt.IsZero() {
				u.LastSeenAt = u.SaidAt
			}
			u.vis = visToken(u.Scope, u.Agent)
			var expires int64
			if u.ExpiresAt != nil {
				expires = ms(*u.ExpiresAt)
			}
			res, err := ins.ExecContext(ctx, u.ID, u.Scope, u.Agent, u.vis, string(u.Type), u.Content, u.Subject, u.Value,
				jsonList(u.Entities), jsonList(u.Tags), clamp01(u.Importance, 0.5), clamp01(u.Confidence, 0.7), max(1, u.Mentions),
				u.Status, u.Origin, u.SourceSession, tokens.Count(renderLine(u)), ms(u.SaidAt), ms(u.LastSeenAt), ms(now), ms(now), expires)
			if err != nil {
				return fmt.Errorf("memory: bulk insert: %w", err)
			}
			u.rowid, _ = res.LastInsertId()
			if u.Status != StatusActive {
				continue
			}
			touch(tx, u.rowid)
			toks := ftsTokens(u.vis, indexTerms(u))
			if _, err := fts.ExecContext(ctx, u.rowid, strings.Join(toks, " "), u.vis); err != nil {
				return fmt.Errorf("memory: bulk index: %w", err)
			}
			for _, t := range distinct(toks) {
				df[t]++
			}
			df["#"+visKey(u.vis)]++
			active++
		}
		up, err := tx.PrepareContext(ctx, `INSERT INTO memory_terms (term, df) VALUES (?, ?) ON CONFLICT(term) DO UPDATE SET df = df + excluded.df`)
		if err != nil {
			return err
		}
		defer up.Close()
		df["#"] = active
		for t, n := range df {
			if _, err := up.ExecContext(ctx, t, n); err != nil {
				return fmt.Errorf("memory: bulk terms: %w", err)
			}
		}
		return nil
	})
}

// Optimize merges the FTS index into one segment (after a bulk insert or
// import; the index otherwise merges itself incrementally).
func (s *Store) Optimize(ctx context.Context) error {
	if _, err := s.w.ExecContext(ctx, `INSERT INTO memory_fts (memory_fts) VALUES ('optimize')`); err != nil {
		return fmt.Errorf("memory: optimize index: %w", err)
	}
	return nil
}
