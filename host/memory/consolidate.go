package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/metaclaw-go/metaclaw/host/embed"
	"github.com/metaclaw-go/metaclaw/host/tokens"
	"github.com/metaclaw-go/metaclaw/internal/sqlconn"
)

// Consolidation: each new unit is compared, in its scope and agent, with
// what is there — a repeat or a paraphrase reinforces the existing unit, a
// change of mind supersedes it, anything else is added.

// apply consolidates one new unit inside a write transaction:
//
//   - same subject, same value, or nearly the same words → the existing unit
//     is reinforced (mentions, confidence, last seen; the new wording is kept
//     in the audit row, or replaces the old one when it says strictly more);
//   - same subject, other value → the user changed their mind: the newer
//     statement supersedes the older (which stays, status superseded);
//   - a correction without a subject supersedes the most similar older unit;
//   - otherwise the unit is added.
//
// batch maps the units already written by this batch to the message each
// came from: two statements of one message are never one rule.
func (s *Store) apply(ctx context.Context, tx *sqlconn.Tx, u *Unit, vec []float32, now time.Time, batch map[string]string) (string, string, error) {
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
		var cos map[int64]float64
		if consolidate && len(vec) > 0 {
			if cos, err = cosines(ctx, tx, similar, vec); err != nil {
				return "", "", err
			}
		}
		for i := range similar {
			o := &similar[i]
			if u.msg != "" && batch[o.ID] == u.msg {
				continue
			}
			if !consolidate {
				// Exact repeats still merge.
				if o.Type == u.Type && normKey(o.Content) == normKey(u.Content) && (o.Subject == "" || u.Subject == "" || o.Subject == u.Subject) {
					return OutcomeReinforced, o.ID, s.reinforce(ctx, tx, o, u, vec, now)
				}
				continue
			}
			if paraphrase(o, u, cos[o.rowid]) {
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
func similarUnits(ctx context.Context, tx *sqlconn.Tx, u *Unit) ([]Unit, error) {
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

// reinforce merges a repeated statement (or a paraphrase) into the
// existing unit: one more mention, the better wording kept (every wording
// stays in the audit history), a rule stated as a preference stays one.
func (s *Store) reinforce(ctx context.Context, tx *sqlconn.Tx, o, u *Unit, vec []float32, now time.Time) error {
	content := o.Content
	if betterWording(o.Content, u.Content) {
		content = u.Content
	}
	typ := o.Type
	if u.Type == Preference && o.Type == Semantic {
		typ = Preference // a fact restated as a rule is a standing rule
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
	merged.Content, merged.LastSeenAt, merged.Type = content, lastSeen, typ
	merged.Entities = mergeStrings(o.Entities, u.Entities, 8)
	merged.Tags = mergeStrings(o.Tags, u.Tags, 8)
	merged.SourceTurns = mergeTurns(o.SourceTurns, u.SourceTurns)
	tok := tokens.Count(renderLine(&merged))
	var blob any
	if len(vec) > 0 && content != o.Content {
		blob = embed.Encode(vec)
	}
	touch(tx, o.rowid)
	if _, err := tx.ExecContext(ctx, `UPDATE memory_units SET content = ?, type = ?, entities = ?, tags = ?, mentions = mentions + 1,
    importance = MAX(importance, ?), confidence = MIN(1.0, MAX(confidence, ?) + 0.05), last_seen_at = ?, updated_at = ?,
    expires_at = ?, source_turns = ?, tokens = ?, embedding = COALESCE(?, embedding) WHERE id = ?`,
		content, string(typ), jsonList(merged.Entities), jsonList(merged.Tags), u.Importance, u.Confidence, ms(lastSeen), ms(now),
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

// cosines reads the embeddings of the similar units and returns their
// cosine with vec.
func cosines(ctx context.Context, tx *sqlconn.Tx, similar []Unit, vec []float32) (map[int64]float64, error) {
	out := map[int64]float64{}
	for _, o := range similar {
		var b []byte
		if err := tx.QueryRowContext(ctx, `SELECT embedding FROM memory_units WHERE id = ? AND embedding IS NOT NULL`, o.rowid).Scan(&b); err != nil {
			if errors.Is(err, sql.ErrNoRows) {
				continue
			}
			return nil, fmt.Errorf("memory: embeddings: %w", err)
		}
		if v := embed.Decode(b); len(v) == len(vec) {
			out[o.rowid] = float64(embed.Dot(v, vec))
		}
	}
	return out, nil
}

// maxSummaries is how many session summaries stay active per agent and scope.
const maxSummaries = 3

func capSummaries(ctx context.Context, tx *sqlconn.Tx, u *Unit, now time.Time) error {
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
