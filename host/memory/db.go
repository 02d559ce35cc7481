package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/metaclaw-go/metaclaw/host/embed"
	"github.com/metaclaw-go/metaclaw/host/tokens"
	"github.com/metaclaw-go/metaclaw/internal/sqlconn"
)

const unitCols = `id, uid, scope, agent, vis, type, content, subject, value, entities, tags, importance, confidence,
    mentions, status, superseded_by, origin, source_session, source_turns, tokens, said_at, last_seen_at,
    created_at, updated_at, expires_at, injected_count, last_injected_at`

type scanner interface{ Scan(dest ...any) error }

func scanUnit(sc scanner) (Unit, error) {
	return scanUnitPlus(sc)
}

// scanUnitPlus scans unitCols followed by extra columns.
func scanUnitPlus(sc scanner, extra ...any) (Unit, error) {
	var u Unit
	var typ, ents, tags, turns string
	var said, seen, created, updated, expires, lastInj int64
	dest := []any{&u.rowid, &u.ID, &u.Scope, &u.Agent, &u.vis, &typ, &u.Content, &u.Subject, &u.Value, &ents, &tags,
		&u.Importance, &u.Confidence, &u.Mentions, &u.Status, &u.SupersededBy, &u.Origin, &u.SourceSession, &turns,
		&u.tokens, &said, &seen, &created, &updated, &expires, &u.InjectedCount, &lastInj}
	err := sc.Scan(append(dest, extra...)...)
	if err != nil {
		return u, err
	}
	u.Type = Type(typ)
	if ents != "[]" {
		_ = json.Unmarshal([]byte(ents), &u.Entities)
	}
	if tags != "[]" {
		_ = json.Unmarshal([]byte(tags), &u.Tags)
	}
	if turns != "[]" {
		_ = json.Unmarshal([]byte(turns), &u.SourceTurns)
	}
	u.SaidAt, u.LastSeenAt, u.CreatedAt, u.UpdatedAt = fromMS(said), fromMS(seen), fromMS(created), fromMS(updated)
	u.ExpiresAt, u.LastInjectedAt = optTime(expires), optTime(lastInj)
	return u, nil
}

func jsonList[T any](v []T) string {
	if len(v) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// indexTerms is what the FTS row of a unit holds.
func indexTerms(u *Unit) []string {
	t := Terms(u.Content)
	for _, e := range u.Entities {
		t = append(t, Terms(e)...)
	}
	for _, g := range u.Tags {
		t = append(t, Terms(g)...)
	}
	return t
}

// renderLine is a unit's bullet in the injected block: its statement on
// one line, then its attached block (if any) indented under it.
func renderLine(u *Unit) string {
	line, block := splitContent(u.Content)
	out := "- " + oneLine(line, 600) + " (" + u.LastSeenAt.UTC().Format("2006-01-02") + ")"
	if block = strings.TrimSpace(block); block == "" {
		return out
	}
	if len(block) > maxBlock+8 {
		block = boundBlock(strings.Split(block, "\n"), false)
	}
	var b strings.Builder
	b.WriteString(out)
	for _, l := range strings.Split(block, "\n") {
		b.WriteString("\n  ")
		b.WriteString(strings.TrimRight(l, " \t"))
	}
	return b.String()
}

// insertUnit writes a new unit (and indexes it when active).
func insertUnit(ctx context.Context, tx *sqlconn.Tx, u *Unit, emb []float32) error {
	if u.ID == "" {
		u.ID = newUID()
	}
	u.vis = visToken(u.Scope, u.Agent)
	u.tokens = tokens.Count(renderLine(u))
	var blob any
	if len(emb) > 0 {
		blob = embed.Encode(emb)
	}
	var expires int64
	if u.ExpiresAt != nil {
		expires = ms(*u.ExpiresAt)
	}
	var lastInj int64
	if u.LastInjectedAt != nil {
		lastInj = ms(*u.LastInjectedAt)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO memory_units (uid, scope, agent, vis, type, content, subject, value, entities, tags,
    importance, confidence, mentions, status, superseded_by, origin, source_session, source_turns, tokens, said_at, last_seen_at,
    created_at, updated_at, expires_at, injected_count, last_injected_at, embedding)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		u.ID, u.Scope, u.Agent, u.vis, string(u.Type), u.Content, u.Subject, u.Value, jsonList(u.Entities), jsonList(u.Tags),
		u.Importance, u.Confidence, max(u.Mentions, 1), u.Status, u.SupersededBy, u.Origin, u.SourceSession, jsonList(u.SourceTurns),
		u.tokens, ms(u.SaidAt), ms(u.LastSeenAt), ms(u.CreatedAt), ms(u.UpdatedAt), expires, u.InjectedCount, lastInj, blob)
	if err != nil {
		return fmt.Errorf("memory: insert: %w", err)
	}
	u.rowid, _ = res.LastInsertId()
	if u.Status == StatusActive {
		return index(ctx, tx, u.rowid, u.vis, indexTerms(u))
	}
	return nil
}

// The FTS index holds, for each active unit, its terms prefixed with the
// unit's visibility key ("v1a2b…" + "indentation"): a query for a scope asks
// for exactly that scope's postings, and bm25() computes its statistics over
// them rather than over every unit. memory_terms counts, per key, the active
// units holding it ("#" + key: the units of one visibility; "#": all).

// visKey is the prefix of a visibility's index tokens.
func visKey(vis string) string {
	if len(vis) > visKeyLen {
		return vis[:visKeyLen]
	}
	return vis
}

// visKeyLen is the length of a visibility key ("v" and 16 hex digits).
const visKeyLen = 17

// ftsTokens prefixes terms with the visibility key (duplicates kept: bm25
// weighs term frequency).
func ftsTokens(vis string, terms []string) []string {
	k := visKey(vis)
	out := make([]string, len(terms))
	for i, t := range terms {
		out[i] = k + t
	}
	return out
}

// index adds a unit to the FTS index and the document frequencies.
func index(ctx context.Context, tx *sqlconn.Tx, rowid int64, vis string, terms []string) error {
	touch(tx, rowid)
	toks := ftsTokens(vis, terms)
	if _, err := tx.ExecContext(ctx, `INSERT INTO memory_fts (rowid, terms, vis) VALUES (?, ?, ?)`, rowid, strings.Join(toks, " "), vis); err != nil {
		return fmt.Errorf("memory: index: %w", err)
	}
	return adjustDF(ctx, tx, append(distinct(toks), "#"+visKey(vis), "#"), 1)
}

// unindex removes a unit from the FTS index (no-op when it is not there).
func unindex(ctx context.Context, tx *sqlconn.Tx, rowid int64) error {
	touch(tx, rowid)
	var terms, vis string
	err := tx.QueryRowContext(ctx, `SELECT terms, vis FROM memory_fts WHERE rowid = ?`, rowid).Scan(&terms, &vis)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("memory: unindex: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM memory_fts WHERE rowid = ?`, rowid); err != nil {
		return fmt.Errorf("memory: unindex: %w", err)
	}
	return adjustDF(ctx, tx, append(distinct(strings.Fields(terms)), "#"+visKey(vis), "#"), -1)
}

// adjustDF adds delta to the count of each key.
func adjustDF(ctx context.Context, tx *sqlconn.Tx, keys []string, delta int) error {
	st, err := tx.PrepareContext(ctx, `INSERT INTO memory_terms (term, df) VALUES (?, ?) ON CONFLICT(term) DO UPDATE SET df = df + excluded.df`)
	if err != nil {
		return fmt.Errorf("memory: terms: %w", err)
	}
	defer st.Close()
	for _, k := range keys {
		if _, err := st.ExecContext(ctx, k, delta); err != nil {
			return fmt.Errorf("memory: terms: %w", err)
		}
	}
	if delta < 0 {
		if _, err := tx.ExecContext(ctx, `DELETE FROM memory_terms WHERE df <= 0 AND term != '#'`); err != nil {
			return fmt.Errorf("memory: terms: %w", err)
		}
	}
	return nil
}

// event appends an audit row.
func event(ctx context.Context, tx *sqlconn.Tx, uid, scope, action string, detail any, at time.Time) error {
	b := []byte("{}")
	if detail != nil {
		b, _ = json.Marshal(detail)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO memory_events (unit_uid, scope, action, detail, at) VALUES (?, ?, ?, ?, ?)`,
		uid, scope, action, string(b), ms(at)); err != nil {
		return fmt.Errorf("memory: audit: %w", err)
	}
	return nil
}

// unitByRowid reads one unit inside a transaction or from the pool.
func unitByRowid(ctx context.Context, q queryer, rowid int64) (Unit, error) {
	u, err := scanUnit(q.QueryRowContext(ctx, `SELECT `+unitCols+` FROM memory_units WHERE id = ?`, rowid))
	if errors.Is(err, sql.ErrNoRows) {
		return u, ErrNotFound
	}
	return u, err
}

func unitByUID(ctx context.Context, q queryer, uid string) (Unit, error) {
	u, err := scanUnit(q.QueryRowContext(ctx, `SELECT `+unitCols+` FROM memory_units WHERE uid = ?`, uid))
	if errors.Is(err, sql.ErrNoRows) {
		return u, fmt.Errorf("%w: %s", ErrNotFound, uid)
	}
	if err != nil {
		return u, fmt.Errorf("memory: read %s: %w", uid, err)
	}
	return u, nil
}

// unitsByRowids reads units by row id, in no particular order.
func unitsByRowids(ctx context.Context, q queryer, ids []int64) ([]Unit, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := q.QueryContext(ctx, `SELECT `+unitCols+` FROM memory_units WHERE id IN (?`+strings.Repeat(",?", len(ids)-1)+`)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]Unit, 0, len(ids))
	for rows.Next() {
		u, err := scanUnit(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// supersede marks old as replaced by newUID and drops it from the index.
func supersede(ctx context.Context, tx *sqlconn.Tx, old *Unit, newUID string, now time.Time, why string) error {
	touch(tx, old.rowid)
	if _, err := tx.ExecContext(ctx, `UPDATE memory_units SET status = 'superseded', superseded_by = ?, updated_at = ? WHERE id = ?`,
		newUID, ms(now), old.rowid); err != nil {
		return fmt.Errorf("memory: supersede: %w", err)
	}
	if err := unindex(ctx, tx, old.rowid); err != nil {
		return err
	}
	return event(ctx, tx, old.ID, old.Scope, "superseded", map[string]string{"by": newUID, "reason": why}, now)
}

// mergeTurns appends turn ids, keeping the newest 50.
func mergeTurns(a, b []int64) []int64 {
	seen := map[int64]bool{}
	var out []int64
	for _, t := range append(append([]int64{}, a...), b...) {
		if t != 0 && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	if len(out) > 50 {
		out = out[len(out)-50:]
	}
	return out
}

func mergeStrings(a, b []string, limit int) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range append(append([]string{}, a...), b...) {
		k := strings.ToLower(strings.TrimSpace(s))
		if k == "" || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, strings.TrimSpace(s))
		if len(out) == limit {
			break
		}
	}
	return out
}
