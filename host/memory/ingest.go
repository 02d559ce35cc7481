package memory

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/metaclaw-go/metaclaw/host/embed"
	"github.com/metaclaw-go/metaclaw/host/safety"
	"github.com/metaclaw-go/metaclaw/host/tokens"
)

// Batch is a set of turns to learn from (also the body of
// POST /v1/memory/ingest in MetaClaw's sidecar shape).
type Batch struct {
	SessionID string `json:"session_id"`
	// Scope and Agent apply to turns that name none.
	Scope string `json:"scope_id,omitempty"`
	Agent string `json:"agent,omitempty"`
	Turns []Turn `json:"turns"`
	// Final asks for the session's working summary, made from SummaryTurns
	// (or Turns when empty).
	Final        bool   `json:"final,omitempty"`
	SummaryTurns []Turn `json:"summary_turns,omitempty"`

	// after runs inside the write transaction (cursor, buffer bookkeeping),
	// so learning and its bookkeeping commit or roll back together.
	after func(ctx context.Context, tx *sql.Tx) error
	// before runs first inside the write transaction (withdrawing the
	// provisional units of the turns this batch mines for real).
	before func(ctx context.Context, tx *sql.Tx) error
	// provisional marks a quick pass (see provisional.go): extracted by
	// extractor, origin OriginProvisional, turns not marked as ingested,
	// what it did noted in log.
	provisional *provisionalPass
}

// IngestResult counts what a batch did.
type IngestResult struct {
	Added      int      `json:"added"`
	Reinforced int      `json:"reinforced"`
	Superseded int      `json:"superseded"`
	Skipped    int      `json:"skipped"` // turns already ingested (duplicates)
	Turns      int      `json:"turns"`   // turns mined
	IDs        []string `json:"ids,omitempty"`
}

func (r *IngestResult) add(o IngestResult) {
	r.Added += o.Added
	r.Reinforced += o.Reinforced
	r.Superseded += o.Superseded
	r.Skipped += o.Skipped
	r.Turns += o.Turns
	r.IDs = append(r.IDs, o.IDs...)
}

// Outcome of consolidating one candidate.
const (
	OutcomeAdded      = "added"
	OutcomeReinforced = "reinforced"
	OutcomeSuperseded = "superseded" // added, and replaced older units
	OutcomeStale      = "stale"      // added as superseded: a newer statement already says otherwise
)

// maxTurnText bounds how much of one message is mined.
const maxTurnText = 16000

// prepare fills in scope, agent and time, and redacts.
func (s *Store) prepare(b *Batch, t *Turn) {
	if t.Scope == "" {
		t.Scope = b.Scope
	}
	t.Scope = s.ScopeKey(t.Scope)
	if t.Agent == "" {
		t.Agent = b.Agent
	}
	if t.Agent == "" {
		t.Agent = "default"
	}
	if t.SessionID == "" {
		t.SessionID = b.SessionID
	}
	if len(t.User) > maxTurnText {
		t.User = t.User[:maxTurnText]
	}
	if len(t.Assistant) > maxTurnText {
		t.Assistant = t.Assistant[:maxTurnText]
	}
	t.User = safety.StripPasted(t.User) // what the user pasted for processing is not what they said (guard.go)
	var secrets []string
	t.User, secrets = safety.RedactCollect(t.User)
	t.Assistant, _ = Redact(t.Assistant)
	t.Assistant = safety.ScrubValues(t.Assistant, secrets) // the assistant repeating it back
}

// saidAt maps a turn's wall-clock time onto the store's clock (identity in
// production; tests that move the clock forward move statements with it).
func (s *Store) saidAt(t Turn) time.Time {
	now := s.now()
	if t.At.IsZero() {
		return now
	}
	return t.At.Add(now.Sub(time.Now()))
}

// Ingest extracts and consolidates a batch. Turns already ingested (same
// Source) are skipped, so a batch may be retried safely. Everything a batch
// writes commits in one transaction.
func (s *Store) Ingest(ctx context.Context, b Batch) (IngestResult, error) {
	var res IngestResult
	for i := range b.Turns {
		s.prepare(&b, &b.Turns[i])
	}
	for i := range b.SummaryTurns {
		s.prepare(&b, &b.SummaryTurns[i])
	}
	// Skip turns mined before (a retry, or a remote host resending).
	fresh := b.Turns[:0:0]
	seen, err := s.seenSources(ctx, b.Turns)
	if err != nil {
		return res, err
	}
	for _, t := range b.Turns {
		if t.Source != "" && seen[t.Source] {
			res.Skipped++
			continue
		}
		fresh = append(fresh, t)
	}
	ex := s.o.Extractor
	if b.provisional != nil {
		ex = b.provisional.extractor
	}
	cands, err := ex.Extract(ctx, fresh)
	if err != nil {
		return res, fmt.Errorf("memory: extract: %w", err)
	}
	var summary *Candidate
	var summaryTurn Turn
	if b.Final {
		st := b.SummaryTurns
		if len(st) == 0 {
			st = b.Turns
		}
		if len(st) > 0 {
			c, ok, err := s.o.Extractor.Summarize(ctx, st)
			if err != nil {
				return res, fmt.Errorf("memory: summarize: %w", err)
			}
			if ok {
				summary = &c
				summaryTurn = st[len(st)-1]
			}
		}
	}
	units := make([]Unit, 0, len(cands)+1)
	unitTurn := make([]int, 0, len(cands)+1) // index into fresh, -1 for the summary
	now := s.now()
	for _, c := range cands {
		if c.Turn < 0 || c.Turn >= len(fresh) {
			continue
		}
		u, ok := s.candidateUnit(c, fresh[c.Turn], now)
		if !ok || s.admit(ctx, &u) != nil {
			continue
		}
		if b.provisional != nil {
			u.Origin = OriginProvisional
		}
		units = append(units, u)
		unitTurn = append(unitTurn, c.Turn)
	}
	if summary != nil {
		if u, ok := s.candidateUnit(*summary, summaryTurn, now); ok && s.admit(ctx, &u) == nil {
			u.Agent = summaryTurn.Agent
			u.Subject = "summary:" + summaryTurn.SessionID
			u.Value = normKey(u.Content)
			u.Origin = "summary"
			u.SourceTurns = nil
			for _, t := range b.SummaryTurns {
				if t.TurnID != 0 {
					u.SourceTurns = append(u.SourceTurns, t.TurnID)
				}
			}
			units = append(units, u)
			unitTurn = append(unitTurn, -1)
		}
	}
	vecs := s.embedUnits(ctx, units)
	err = s.writeTx(ctx, func(tx *sql.Tx) error {
		if b.before != nil {
			if err := b.before(ctx, tx); err != nil {
				return err
			}
		}
		skip := map[int]bool{}
		for i, t := range fresh {
			if t.Source == "" || b.provisional != nil {
				continue // a provisional pass leaves the turns to the real extraction
			}
			r, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO memory_sources (source, at) VALUES (?, ?)`, t.Source, ms(now))
			if err != nil {
				return fmt.Errorf("memory: sources: %w", err)
			}
			if n, _ := r.RowsAffected(); n == 0 {
				skip[i] = true // ingested concurrently
				res.Skipped++
			}
		}
		res.Turns = len(fresh) - len(skip)
		for i := range units {
			if ti := unitTurn[i]; ti >= 0 && skip[ti] {
				continue
			}
			var v []float32
			if vecs != nil {
				v = vecs[i]
			}
			out, uid, err := s.apply(ctx, tx, &units[i], v, now)
			if err != nil {
				return err
			}
			switch out {
			case OutcomeAdded, OutcomeStale:
				res.Added++
			case OutcomeReinforced:
				res.Reinforced++
			case OutcomeSuperseded:
				res.Added++
				res.Superseded++
			}
			res.IDs = append(res.IDs, uid)
			b.provisional.note(out, uid)
		}
		for i, t := range fresh {
			if skip[i] || len(t.Injected) == 0 || b.provisional != nil {
				continue
			}
			if err := countInjected(ctx, tx, t.Injected, s.saidAt(t)); err != nil {
				return err
			}
		}
		if b.after != nil {
			return b.after(ctx, tx)
		}
		return nil
	})
	if err != nil {
		return IngestResult{}, err
	}
	return res, nil
}

// seenSources reports which of the turns' sources were ingested before.
func (s *Store) seenSources(ctx context.Context, turns []Turn) (map[string]bool, error) {
	seen := map[string]bool{}
	var args []any
	for _, t := range turns {
		if t.Source != "" {
			args = append(args, t.Source)
		}
	}
	for len(args) > 0 {
		n := min(len(args), 400)
		chunk := args[:n]
		args = args[n:]
		rows, err := s.r.QueryContext(ctx, `SELECT source FROM memory_sources WHERE source IN (?`+strings.Repeat(",?", len(chunk)-1)+`)`, chunk...)
		if err != nil {
			return nil, fmt.Errorf("memory: sources: %w", err)
		}
		for rows.Next() {
			var src string
			if err := rows.Scan(&src); err != nil {
				rows.Close()
				return nil, err
			}
			seen[src] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	return seen, nil
}

// countInjected notes that units were injected into a turn.
func countInjected(ctx context.Context, tx *sql.Tx, ids []string, at time.Time) error {
	for _, id := range ids {
		uid, ok := strings.CutPrefix(id, "memory:")
		if !ok {
			continue
		}
		if _, err := tx.ExecContext(ctx, `UPDATE memory_units SET injected_count = injected_count + 1, last_injected_at = MAX(last_injected_at, ?) WHERE uid = ?`,
			ms(at), uid); err != nil {
			return fmt.Errorf("memory: injected: %w", err)
		}
	}
	return nil
}

// candidateUnit turns an extractor's candidate into a unit. Facts about the
// user and the project are shared by the scope's agents; episodes and
// session summaries stay private to the agent they happened with.
func (s *Store) candidateUnit(c Candidate, t Turn, now time.Time) (Unit, bool) {
	content, _ := Redact(strings.TrimSpace(c.Content))
	content = oneLine(content, 1000)
	if len(Terms(content)) == 0 {
		return Unit{}, false
	}
	typ, err := ParseType(string(c.Type))
	if err != nil {
		return Unit{}, false
	}
	// A statement about a secret that was redacted away is not worth keeping.
	if strings.Contains(content, RedactedPrefix) && typ != WorkingSummary {
		return Unit{}, false
	}
	said := s.saidAt(t)
	u := Unit{
		Scope: t.Scope, Type: typ, Content: content, Subject: oneLine(c.Subject, 200), Value: oneLine(c.Value, 200),
		Entities: mergeStrings(nil, c.Entities, 8), Tags: mergeStrings(nil, c.Tags, 8),
		Importance: clamp01(c.Importance, 0.5), Confidence: clamp01(c.Confidence, 0.7), Mentions: 1, Status: StatusActive,
		Origin: s.o.Extractor.Name(), SourceSession: t.SessionID, SaidAt: said, LastSeenAt: said, CreatedAt: now, UpdatedAt: now,
	}
	if t.TurnID != 0 {
		u.SourceTurns = []int64{t.TurnID}
	}
	if typ == Episodic || typ == WorkingSummary {
		u.Agent = t.Agent
	}
	if c.Correction {
		u.Tags = appendTag(u.Tags, "correction")
	}
	if c.TTL > 0 {
		e := said.Add(c.TTL)
		u.ExpiresAt = &e
	}
	return u, true
}

func clamp01(v, def float64) float64 {
	if v <= 0 || v != v {
		return def
	}
	return min(1, v)
}

// embedUnits embeds the units' content; nil without an embedder or on failure.
func (s *Store) embedUnits(ctx context.Context, units []Unit) [][]float32 {
	if s.o.Embedder == nil || len(units) == 0 {
		return nil
	}
	texts := make([]string, len(units))
	for i, u := range units {
		texts[i] = u.Content
	}
	vecs, err := s.o.Embedder.Embed(ctx, texts)
	if err != nil || len(vecs) != len(units) {
		s.o.Log.Warn().Err(err).Msg("memory: embedding failed; units stored without vectors")
		return nil
	}
	return vecs
}

// apply consolidates one new unit inside a write transaction:
//
//   - same subject, same value, or nearly the same words → the existing unit
//     is reinforced (mentions, confidence, last seen; the new wording is kept
//     in the audit row, or replaces the old one when it says strictly more);
//   - same subject, other value → the user changed their mind: the newer
//     statement supersedes the older (which stays, status superseded);
//   - a correction without a subject supersedes the most similar older unit;
//   - otherwise the unit is added.
func (s *Store) apply(ctx context.Context, tx *sql.Tx, u *Unit, vec []float32, now time.Time) (string, string, error) {
	u.vis = visToken(u.Scope, u.Agent)
	consolidate := !s.o.NoConsolidate
	var conflicts []Unit
	if u.Subject != "" {
		rows, err := tx.QueryContext(ctx, `SELECT `+unitCols+` FROM memory_units WHERE vis = ? AND subject = ? AND subject != '' AND status = 'active'`, u.vis, u.Subject)
		if err != nil {
			return "", "", fmt.Errorf("memory: consolidate: %w", err)
		}
		var same []Unit
		for rows.Next() {
			o, err := scanUnit(rows)
			if err != nil {
				rows.Close()
				return "", "", err
			}
			if o.Value == u.Value {
				same = append(same, o)
			} else {
				conflicts = append(conflicts, o)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return "", "", err
		}
		if len(same) > 0 {
			return OutcomeReinforced, same[0].ID, s.reinforce(ctx, tx, &same[0], u, vec, now)
		}
	}
	var similar []Unit
	if len(conflicts) == 0 {
		var err error
		similar, err = similarUnits(ctx, tx, u)
		if err != nil {
			return "", "", err
		}
		uset := TermSet(u.Content)
		for i := range similar {
			o := &similar[i]
			if o.Type != u.Type || o.Subject != "" && u.Subject != "" && o.Subject != u.Subject {
				continue
			}
			oset := TermSet(o.Content)
			if normKey(o.Content) == normKey(u.Content) || consolidate && jaccard(oset, uset) >= 0.8 {
				return OutcomeReinforced, o.ID, s.reinforce(ctx, tx, o, u, vec, now)
			}
		}
	}
	if !consolidate {
		conflicts, similar = nil, nil
	}
	if len(conflicts) == 0 && u.Correction() && len(similar) > 0 {
		if o := correctionTarget(u, similar); o != nil {
			conflicts = []Unit{*o}
		}
	}
	// Newer statements win; an older statement arriving late (sessions are
	// ingested in any order) is kept, but as superseded.
	var newest *Unit
	for i := range conflicts {
		if conflicts[i].SaidAt.After(u.SaidAt) && (newest == nil || conflicts[i].SaidAt.After(newest.SaidAt)) {
			newest = &conflicts[i]
		}
	}
	if newest != nil {
		u.Status, u.SupersededBy = StatusSuperseded, newest.ID
	}
	if err := insertUnit(ctx, tx, u, vec); err != nil {
		return "", "", err
	}
	if err := event(ctx, tx, u.ID, u.Scope, "created", map[string]any{"origin": u.Origin, "turns": u.SourceTurns, "session": u.SourceSession}, now); err != nil {
		return "", "", err
	}
	if newest != nil {
		return OutcomeStale, u.ID, event(ctx, tx, u.ID, u.Scope, "superseded", map[string]string{"by": newest.ID, "reason": "a newer statement says otherwise"}, now)
	}
	if len(conflicts) == 0 {
		if u.Type == WorkingSummary {
			return OutcomeAdded, u.ID, capSummaries(ctx, tx, u, now)
		}
		return OutcomeAdded, u.ID, nil
	}
	for i := range conflicts {
		if err := supersede(ctx, tx, &conflicts[i], u.ID, now, "changed: "+oneLine(u.Content, 200)); err != nil {
			return "", "", err
		}
	}
	return OutcomeSuperseded, u.ID, nil
}

// Correction reports whether a unit was tagged as a correction.
func (u *Unit) Correction() bool {
	for _, t := range u.Tags {
		if t == "correction" {
			return true
		}
	}
	return false
}

// correctionTarget picks the older unit a subject-less correction replaces:
// the one sharing the most words (at least two, and half of the shorter).
func correctionTarget(u *Unit, similar []Unit) *Unit {
	uset := TermSet(u.Content)
	var best *Unit
	bestScore := 0.0
	for i := range similar {
		o := &similar[i]
		if o.Type == Episodic || o.Type == WorkingSummary || o.SaidAt.After(u.SaidAt) || o.Subject != "" && u.Subject != "" {
			continue
		}
		oset := TermSet(o.Content)
		inter := 0
		for t := range uset {
			if _, ok := oset[t]; ok {
				inter++
			}
		}
		if inter < 2 {
			continue
		}
		score := float64(inter) / float64(min(len(uset), len(oset)))
		if score >= 0.5 && score > bestScore {
			best, bestScore = o, score
		}
	}
	return best
}

// similarUnits are the active units of u's visibility that share the most
// terms with it (bm25 over its rarest terms).
func similarUnits(ctx context.Context, tx *sql.Tx, u *Unit) ([]Unit, error) {
	terms := distinct(Terms(u.Content))
	if len(terms) == 0 {
		return nil, nil
	}
	if len(terms) > 32 {
		terms = terms[:32]
	}
	// Its rarest terms, within a budget of postings (a near-duplicate shares
	// them; common words would make bm25 score most of the scope).
	keyDF, err := frequenciesIn(ctx, tx, []string{u.vis}, terms)
	if err != nil {
		return nil, err
	}
	k := visKey(u.vis)
	sort.SliceStable(terms, func(i, j int) bool { return keyDF[k+terms[i]] < keyDF[k+terms[j]] })
	var toks []string
	spent, budget := 0, max(200, keyDF["#"+k]/400)
	for _, t := range terms {
		n := keyDF[k+t]
		if n == 0 {
			continue
		}
		if len(toks) == 8 || spent+n > budget && len(toks) > 0 || n > 20*budget {
			break
		}
		toks = append(toks, k+t)
		spent += n
	}
	if len(toks) == 0 {
		return nil, nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? ORDER BY bm25(memory_fts, 1.0, 0.0) LIMIT 8`, ftsQuery(toks))
	if err != nil {
		return nil, fmt.Errorf("memory: similar: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	units, err := unitsByRowids(ctx, tx, ids)
	if err != nil {
		return nil, fmt.Errorf("memory: similar: %w", err)
	}
	out := units[:0]
	for _, o := range units {
		if o.Status == StatusActive {
			out = append(out, o)
		}
	}
	return out, nil
}

// reinforce merges a repeated statement into the existing unit.
func (s *Store) reinforce(ctx context.Context, tx *sql.Tx, o, u *Unit, vec []float32, now time.Time) error {
	content := o.Content
	oset, uset := TermSet(o.Content), TermSet(u.Content)
	superset := len(uset) > len(oset)
	for t := range oset {
		if _, ok := uset[t]; !ok {
			superset = false
			break
		}
	}
	if superset {
		content = u.Content // says strictly more
	}
	lastSeen := o.LastSeenAt
	if u.LastSeenAt.After(lastSeen) {
		lastSeen = u.LastSeenAt
	}
	expires := int64(0)
	if o.ExpiresAt != nil {
		expires = ms(*o.ExpiresAt)
		if u.ExpiresAt != nil {
			expires = max(expires, ms(*u.ExpiresAt))
		}
	}
	merged := *o
	merged.Content, merged.LastSeenAt = content, lastSeen
	merged.Entities = mergeStrings(o.Entities, u.Entities, 8)
	merged.Tags = mergeStrings(o.Tags, u.Tags, 8)
	merged.SourceTurns = mergeTurns(o.SourceTurns, u.SourceTurns)
	tok := tokens.Count(renderLine(&merged))
	var blob any
	if len(vec) > 0 && content != o.Content {
		blob = embed.Encode(vec)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE memory_units SET content = ?, entities = ?, tags = ?, mentions = mentions + 1,
    importance = MAX(importance, ?), confidence = MIN(1.0, MAX(confidence, ?) + 0.05), last_seen_at = ?, updated_at = ?,
    expires_at = ?, source_turns = ?, tokens = ?, embedding = COALESCE(?, embedding) WHERE id = ?`,
		content, jsonList(merged.Entities), jsonList(merged.Tags), u.Importance, u.Confidence, ms(lastSeen), ms(now),
		expires, jsonList(merged.SourceTurns), tok, blob, o.rowid); err != nil {
		return fmt.Errorf("memory: reinforce: %w", err)
	}
	if content != o.Content || len(merged.Entities) != len(o.Entities) || len(merged.Tags) != len(o.Tags) {
		if err := unindex(ctx, tx, o.rowid); err != nil {
			return err
		}
		if err := index(ctx, tx, o.rowid, o.vis, indexTerms(&merged)); err != nil {
			return err
		}
	}
	detail := map[string]any{"turns": u.SourceTurns, "session": u.SourceSession, "origin": u.Origin}
	if u.Content != o.Content {
		detail["wording"] = u.Content // nothing said is lost
	}
	if content != o.Content {
		detail["replaced"] = o.Content
	}
	return event(ctx, tx, o.ID, o.Scope, "reinforced", detail, now)
}

// maxSummaries is how many session summaries stay active per agent and scope.
const maxSummaries = 3

func capSummaries(ctx context.Context, tx *sql.Tx, u *Unit, now time.Time) error {
	rows, err := tx.QueryContext(ctx, `SELECT `+unitCols+` FROM memory_units WHERE vis = ? AND type = 'working_summary' AND status = 'active'
ORDER BY said_at DESC, id DESC LIMIT -1 OFFSET ?`, u.vis, maxSummaries)
	if err != nil {
		return fmt.Errorf("memory: summaries: %w", err)
	}
	var old []Unit
	for rows.Next() {
		o, err := scanUnit(rows)
		if err != nil {
			rows.Close()
			return err
		}
		old = append(old, o)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for i := range old {
		if err := supersede(ctx, tx, &old[i], u.ID, now, "older session summary"); err != nil {
			return err
		}
	}
	return nil
}
