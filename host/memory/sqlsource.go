package memory

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/metaclaw-go/metaclaw/host/embed"
)

// sqlSource ranks from SQLite: FTS5's bm25() and the memory_terms counts,
// with the standing pools and embeddings cached per generation. It is the
// reference the in-memory index is tested against, and what serves when
// the index is off.
type sqlSource struct {
	s    *Store
	gen  int64
	now  time.Time
	dict map[string]int32 // term ids of this query (termID)
	strs []string         // their terms, by id
}

// visCache holds, for one visibility token and one generation, its pool and
// its embeddings.
type visCache struct {
	gen    int64
	pool   *visPool
	vecs   []vecEntry
	vecsOK bool
}

// genTTL is how long a generation read from the database is trusted:
// writes through this Store are seen at once; writes by another process
// (the CLI) within this delay.
const genTTL = 250 * time.Millisecond

func (s *Store) currentGeneration(ctx context.Context) (int64, error) {
	s.genMu.Lock()
	defer s.genMu.Unlock()
	local := s.localGen.Load()
	if local == s.genLocal && !s.genAt.IsZero() && time.Since(s.genAt) < genTTL {
		return s.genVal, nil
	}
	v, err := generation(ctx, s.r)
	if err != nil {
		return 0, err
	}
	s.genVal, s.genAt, s.genLocal = v, time.Now(), local
	return v, nil
}

// sqlSourceNow is the SQL source at the current generation.
func (s *Store) sqlSourceNow(ctx context.Context) (*sqlSource, error) {
	gen, err := s.currentGeneration(ctx)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}
	return &sqlSource{s: s, gen: gen, now: s.now()}, nil
}

func (q *sqlSource) frequencies(ctx context.Context, vis, terms []string) ([][]int, []int, error) {
	keyDF, err := frequenciesIn(ctx, q.s.r, vis, terms)
	if err != nil {
		return nil, nil, err
	}
	df := make([][]int, len(terms))
	for i, t := range terms {
		df[i] = make([]int, len(vis))
		for j, v := range vis {
			df[i][j] = keyDF[visKey(v)+t]
		}
	}
	units := make([]int, len(vis))
	for j, v := range vis {
		units[j] = keyDF["#"+visKey(v)]
	}
	return df, units, nil
}

func frequenciesIn(ctx context.Context, db queryer, vis, terms []string) (map[string]int, error) {
	args := make([]any, 0, len(vis)*(len(terms)+1)+1)
	args = append(args, "#")
	for _, v := range vis {
		k := visKey(v)
		args = append(args, "#"+k)
		for _, t := range terms {
			args = append(args, k+t)
		}
	}
	df := make(map[string]int, len(args))
	rows, err := db.QueryContext(ctx, `SELECT term, df FROM memory_terms WHERE term IN (?`+strings.Repeat(",?", len(args)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("memory: term frequencies: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		var n int
		if err := rows.Scan(&t, &n); err != nil {
			return nil, err
		}
		df[t] = n
	}
	return df, rows.Err()
}

// ftsQuery is the MATCH expression for any of the index tokens.
func ftsQuery(tokens []string) string {
	var b strings.Builder
	b.WriteString("terms : (")
	for i, t := range tokens {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString(`"`)
		b.WriteString(t)
		b.WriteString(`"`)
	}
	b.WriteString(")")
	return b.String()
}

// match runs bm25() ranking (lower is better; ties by row id) and reads the
// units found, in one statement.
func (q *sqlSource) match(ctx context.Context, keys []visTerm, limit int) ([]*Unit, []float64, error) {
	if len(keys) == 0 {
		return nil, nil, nil
	}
	tokens := make([]string, len(keys))
	for i, k := range keys {
		tokens[i] = k.token()
	}
	rows, err := q.s.r.QueryContext(ctx, `SELECT `+prefixed("u.", unitCols)+`, f.r FROM
    (SELECT rowid, bm25(memory_fts, 1.0, 0.0) AS r FROM memory_fts WHERE memory_fts MATCH ? ORDER BY r, rowid LIMIT ?) f
    JOIN memory_units u ON u.id = f.rowid ORDER BY f.r, f.rowid`, ftsQuery(tokens), limit)
	if err != nil {
		return nil, nil, fmt.Errorf("memory: search: %w", err)
	}
	defer rows.Close()
	var units []*Unit
	var scores []float64
	for rows.Next() {
		var r float64
		u, err := scanUnitPlus(rows, &r)
		if err != nil {
			return nil, nil, fmt.Errorf("memory: search: %w", err)
		}
		units = append(units, &u)
		scores = append(scores, r)
	}
	return units, scores, rows.Err()
}

// prefixed qualifies a column list with a table alias.
func prefixed(alias, cols string) string {
	parts := strings.Split(cols, ",")
	for i, p := range parts {
		parts[i] = alias + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

func (q *sqlSource) cache(vis string) *visCache {
	q.s.cacheMu.Lock()
	defer q.s.cacheMu.Unlock()
	c := q.s.cache[vis]
	if c == nil || c.gen != q.gen {
		if len(q.s.cache) > 4096 {
			clear(q.s.cache)
		}
		c = &visCache{gen: q.gen}
		q.s.cache[vis] = c
	}
	return c
}

// pool reads a visibility's standing units and newest summaries (cached
// for the generation).
func (q *sqlSource) pool(ctx context.Context, vis string) (*visPool, error) {
	c := q.cache(vis)
	q.s.cacheMu.Lock()
	p := c.pool
	q.s.cacheMu.Unlock()
	if p != nil {
		return p, nil
	}
	p = &visPool{}
	rows, err := q.s.r.QueryContext(ctx, `SELECT `+unitCols+` FROM memory_units WHERE vis = ? AND status = 'active'
AND (type = 'preference' OR subject = 'fact:name' OR type = 'project_state' AND tags LIKE '%"rule"%')`, vis)
	if err != nil {
		return nil, fmt.Errorf("memory: standing: %w", err)
	}
	var all []*Unit
	for rows.Next() {
		u, err := scanUnit(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		all = append(all, &u)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	p.standing = selectPool(all, q.now)
	rows, err = q.s.r.QueryContext(ctx, `SELECT `+unitCols+` FROM memory_units WHERE vis = ? AND status = 'active' AND type = 'working_summary'
ORDER BY said_at DESC, id DESC LIMIT 2`, vis)
	if err != nil {
		return nil, fmt.Errorf("memory: summaries: %w", err)
	}
	for rows.Next() {
		u, err := scanUnit(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		p.summary = append(p.summary, &u)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	q.s.cacheMu.Lock()
	c.pool = p
	q.s.cacheMu.Unlock()
	return p, nil
}

func (q *sqlSource) units(ctx context.Context, ids []int64) ([]*Unit, error) {
	us, err := unitsByRowids(ctx, q.s.r, ids)
	out := make([]*Unit, len(us))
	for i := range us {
		out[i] = &us[i]
	}
	return out, err
}

// vectors returns the cached embeddings of one visibility.
func (q *sqlSource) vectors(ctx context.Context, vis string) ([]vecEntry, error) {
	c := q.cache(vis)
	q.s.cacheMu.Lock()
	if c.vecsOK {
		v := c.vecs
		q.s.cacheMu.Unlock()
		return v, nil
	}
	q.s.cacheMu.Unlock()
	rows, err := q.s.r.QueryContext(ctx, `SELECT id, embedding FROM memory_units WHERE vis = ? AND status = 'active' AND embedding IS NOT NULL`, vis)
	if err != nil {
		return nil, fmt.Errorf("memory: embeddings: %w", err)
	}
	defer rows.Close()
	var out []vecEntry
	for rows.Next() {
		var e vecEntry
		var b []byte
		if err := rows.Scan(&e.rowid, &b); err != nil {
			return nil, err
		}
		e.v = embed.Decode(b)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	q.s.cacheMu.Lock()
	c.vecs, c.vecsOK = out, true
	q.s.cacheMu.Unlock()
	return out, nil
}

func (q *sqlSource) derived(u *Unit) *derived { return deriveUnit(u, q.termID) }

func (q *sqlSource) termID(t string) int32 {
	if q.dict == nil {
		q.dict = map[string]int32{}
	}
	id, ok := q.dict[t]
	if !ok {
		id = int32(len(q.dict))
		q.dict[t] = id
		q.strs = append(q.strs, t)
	}
	return id
}

func (q *sqlSource) termStr(id int32) string { return q.strs[id] }
