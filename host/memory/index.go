package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/metaclaw-go/metaclaw/host/embed"
)

// The in-memory memory index: the request path ranks without SQLite.
//
// It mirrors memory_fts (every indexed unit, its index tokens as stored) and
// the units themselves, and computes bm25 exactly as FTS5's bm25() does
// (k1 = 1.2, b = 0.75, idf clamped to 1e-6, the terms column weighted 1 and
// the visibility column 0, the document length counted over both columns),
// so it ranks exactly as the SQL path (TestIndexMatchesSQL). It is built
// once at start; after each write transaction of this Store the rows it
// touched are read back and updated in place (incremental, under the
// index's write lock, serialised with the commits); a write by another
// process (the CLI) bumps the generation, which a poller notices and answers
// with a rebuild in the background. Retrieval takes the read lock for the
// whole query, so it sees one consistent state.

// maxIndexUnits bounds the in-memory index; a larger memory ranks from SQLite.
const maxIndexUnits = 2_000_000

// indexPoll is how often the generation is checked for writes by other
// processes.
const indexPoll = 500 * time.Millisecond

// maxIncremental bounds the rows one commit updates in place; a larger
// change (a bulk import) makes the poller rebuild.
const maxIncremental = 20000

// poolTTL bounds how long a standing pool is reused without writes (its
// ranking includes recency).
const poolTTL = 10 * time.Minute

type memIndex struct {
	mu      sync.RWMutex
	gen     int64
	spoiled bool  // out of step with the store until rebuilt
	nRows   int   // rows of memory_fts
	nTok    int64 // tokens of memory_fts over every row and column

	units  map[int64]*Unit
	der    map[int64]*derived
	toks   map[int64][]string            // index tokens of each row (memory_fts.terms), duplicates kept
	post   map[string]map[string][]ipost // visibility key → term → rows holding it, each once, with its count
	visN   map[string]int                // rows per visibility key (memory_terms' "#"+key)
	byVis  map[string]map[int64]struct{}
	vecs   map[int64][]float32 // embeddings (with an embedder only)
	withV  bool
	intern map[string]string

	poolMu sync.Mutex
	pools  map[string]*cachedPool
}

type ipost struct {
	row int64
	tf  float64
	dl  float64 // the row's length in tokens, both columns
}

type cachedPool struct {
	p  *visPool
	at time.Time
}

func newMemIndex(withVecs bool) *memIndex {
	return &memIndex{
		units: map[int64]*Unit{}, der: map[int64]*derived{}, toks: map[int64][]string{}, post: map[string]map[string][]ipost{}, visN: map[string]int{},
		byVis: map[string]map[int64]struct{}{}, vecs: map[int64][]float32{}, withV: withVecs, intern: map[string]string{},
		pools: map[string]*cachedPool{},
	}
}

// indexState is the Store's index and its housekeeping.
type indexState struct {
	cur     atomic.Pointer[memIndex]
	applyMu sync.Mutex // serialises commits with the updates they cause
	stop    chan struct{}
	done    chan struct{}

	// While a rebuild reads the store, this Store's commits note what they
	// touched (under applyMu), to be applied to the new index before it
	// replaces the current one: a rebuild does not hold commits up.
	building bool
	pending  map[int64]bool
	pendGens []int64
}

// txTouched maps a write transaction to the rows it changed.
var txTouched sync.Map // *sql.Tx → *touchSet

type touchSet struct {
	mu   sync.Mutex
	rows map[int64]bool
}

// touch notes that a transaction changed a unit or its index row.
func touch(tx *sql.Tx, rowid int64) {
	if v, ok := txTouched.Load(tx); ok {
		t := v.(*touchSet)
		t.mu.Lock()
		t.rows[rowid] = true
		t.mu.Unlock()
	}
}

// touchUID is touch for a unit known by its public id.
func touchUID(ctx context.Context, tx *sql.Tx, uid string) error {
	if _, ok := txTouched.Load(tx); !ok {
		return nil
	}
	var id int64
	err := tx.QueryRowContext(ctx, `SELECT id FROM memory_units WHERE uid = ?`, uid).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	touch(tx, id)
	return nil
}

// StartIndex builds the in-memory index and keeps it current until
// StopIndex. Without it, retrieval ranks from SQLite.
func (s *Store) StartIndex(ctx context.Context) error {
	ix, err := s.buildIndex(ctx)
	if err != nil {
		return err
	}
	if ix == nil {
		return nil // too large: SQLite serves
	}
	s.idx.cur.Store(ix)
	s.idx.stop, s.idx.done = make(chan struct{}), make(chan struct{})
	go s.pollIndex(s.idx.stop, s.idx.done)
	return nil
}

// StopIndex stops keeping the index current (retrieval falls back to SQLite).
func (s *Store) StopIndex() {
	if s.idx.stop != nil {
		close(s.idx.stop)
		<-s.idx.done
		s.idx.stop = nil
	}
	s.idx.cur.Store(nil)
}

func (s *Store) pollIndex(stop, done chan struct{}) {
	defer close(done)
	t := time.NewTicker(indexPoll)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ix := s.idx.cur.Load()
		if ix == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		if g, err := generation(ctx, s.r); err == nil && g != ix.generation() && s.staleIndex(ctx) {
			if err := s.rebuildIndex(ctx); err != nil {
				s.o.Log.Warn().Err(err).Msg("memory: index rebuild failed; retrying")
			}
		}
		cancel()
	}
}

// staleIndex checks, between commits, whether the store's generation is
// ahead of the index's (a commit of this Store updates both under applyMu:
// outside it the two may be read in between).
func (s *Store) staleIndex(ctx context.Context) bool {
	s.idx.applyMu.Lock()
	defer s.idx.applyMu.Unlock()
	ix := s.idx.cur.Load()
	g, err := generation(ctx, s.r)
	return err == nil && ix != nil && g != ix.generation()
}

// rebuildIndex builds a new index from the store while commits go on, then
// applies what they touched and swaps it in.
func (s *Store) rebuildIndex(ctx context.Context) error {
	s.idx.applyMu.Lock()
	s.idx.building, s.idx.pending, s.idx.pendGens = true, map[int64]bool{}, nil
	s.idx.applyMu.Unlock()
	nx, err := s.buildIndex(ctx)
	s.idx.applyMu.Lock()
	defer s.idx.applyMu.Unlock()
	pending, gens := s.idx.pending, s.idx.pendGens
	s.idx.building, s.idx.pending, s.idx.pendGens = false, nil, nil
	if err != nil || nx == nil {
		return err
	}
	if err := s.refreshInto(ctx, nx, pending); err != nil {
		return err
	}
	// The commits during the build: if they follow the snapshot without a
	// gap, the new index is as new as the last of them; otherwise another
	// process wrote too, and the next poll rebuilds again.
	sort.Slice(gens, func(i, j int) bool { return gens[i] < gens[j] })
	for _, g := range gens {
		if g == nx.gen+1 {
			nx.gen = g
		}
	}
	if s.idx.cur.Load() != nil {
		s.idx.cur.Store(nx)
	}
	return nil
}

func (ix *memIndex) generation() int64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if ix.spoiled {
		return -1
	}
	return ix.gen
}

// buildIndex reads every indexed unit in one read transaction (nil when
// there are more than maxIndexUnits).
func (s *Store) buildIndex(ctx context.Context) (*memIndex, error) {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("memory: index: %w", err)
	}
	defer tx.Rollback()
	gen, err := generation(ctx, tx)
	if err != nil {
		return nil, fmt.Errorf("memory: index: %w", err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM memory_fts`).Scan(&n); err != nil {
		return nil, fmt.Errorf("memory: index: %w", err)
	}
	if n > maxIndexUnits {
		s.o.Log.Warn().Int("units", n).Msg("memory: too many units for the in-memory index; ranking from SQLite")
		return nil, nil
	}
	ix := newMemIndex(s.o.Embedder != nil)
	ix.gen = gen
	rows, err := tx.QueryContext(ctx, `SELECT `+prefixed("u.", unitCols)+`, f.terms FROM memory_fts f JOIN memory_units u ON u.id = f.rowid`)
	if err != nil {
		return nil, fmt.Errorf("memory: index: %w", err)
	}
	for rows.Next() {
		var terms string
		u, err := scanUnitPlus(rows, &terms)
		if err != nil {
			rows.Close()
			return nil, fmt.Errorf("memory: index: %w", err)
		}
		ix.add(&u, strings.Fields(terms))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("memory: index: %w", err)
	}
	if ix.withV {
		if err := ix.loadVectors(ctx, tx, nil); err != nil {
			return nil, err
		}
	}
	return ix, nil
}

// loadVectors reads the embeddings of the given rows (all when nil).
func (ix *memIndex) loadVectors(ctx context.Context, q queryer, ids []int64) error {
	query := `SELECT id, embedding FROM memory_units WHERE status = 'active' AND embedding IS NOT NULL`
	var args []any
	if ids != nil {
		if len(ids) == 0 {
			return nil
		}
		query += ` AND id IN (?` + strings.Repeat(",?", len(ids)-1) + `)`
		for _, id := range ids {
			args = append(args, id)
		}
	}
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("memory: index embeddings: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var b []byte
		if err := rows.Scan(&id, &b); err != nil {
			return err
		}
		if _, ok := ix.units[id]; ok {
			ix.vecs[id] = embed.Decode(b)
		}
	}
	return rows.Err()
}

// add indexes a unit (its row must not be in the index).
func (ix *memIndex) add(u *Unit, toks []string) {
	for i, t := range toks {
		if v, ok := ix.intern[t]; ok {
			toks[i] = v
		} else {
			ix.intern[t] = t
		}
	}
	ix.units[u.rowid] = u
	ix.der[u.rowid] = deriveUnit(u)
	ix.toks[u.rowid] = toks
	ix.nRows++
	ix.nTok += int64(len(toks)) + 1 // + the visibility column's token
	ix.visN[visKey(u.vis)]++
	m := ix.byVis[u.vis]
	if m == nil {
		m = map[int64]struct{}{}
		ix.byVis[u.vis] = m
	}
	m[u.rowid] = struct{}{}
	tf := make(map[string]float64, len(toks))
	order := make([]string, 0, len(toks))
	for _, t := range toks {
		if tf[t] == 0 {
			order = append(order, t)
		}
		tf[t]++
	}
	dl := float64(len(toks) + 1)
	for _, t := range order {
		k, term := splitToken(t)
		m := ix.post[k]
		if m == nil {
			m = map[string][]ipost{}
			ix.post[k] = m
		}
		m[term] = append(m[term], ipost{row: u.rowid, tf: tf[t], dl: dl})
	}
	ix.dropPool(u.vis)
}

// remove takes a row out of the index (no-op when absent).
func (ix *memIndex) remove(rowid int64) {
	u, ok := ix.units[rowid]
	if !ok {
		return
	}
	toks := ix.toks[rowid]
	seen := make(map[string]bool, len(toks))
	for _, t := range toks {
		if seen[t] {
			continue
		}
		seen[t] = true
		k, term := splitToken(t)
		m := ix.post[k]
		ps := m[term]
		for i := range ps {
			if ps[i].row == rowid {
				ps = append(ps[:i], ps[i+1:]...)
				break
			}
		}
		if len(ps) == 0 {
			delete(m, term)
			delete(ix.intern, t)
			if len(m) == 0 {
				delete(ix.post, k)
			}
		} else {
			m[term] = ps
		}
	}
	ix.nRows--
	ix.nTok -= int64(len(toks)) + 1
	if k := visKey(u.vis); ix.visN[k] <= 1 {
		delete(ix.visN, k)
	} else {
		ix.visN[k]--
	}
	delete(ix.byVis[u.vis], rowid)
	delete(ix.units, rowid)
	delete(ix.der, rowid)
	delete(ix.toks, rowid)
	delete(ix.vecs, rowid)
	ix.dropPool(u.vis)
}

func (ix *memIndex) dropPool(vis string) {
	ix.poolMu.Lock()
	delete(ix.pools, vis)
	ix.poolMu.Unlock()
}

// rowsRead are the rows a change touched, as they now are: the indexed
// units (the others were superseded or deleted) and their embeddings.
type rowsRead struct {
	rows  map[int64]bool
	found []foundRow
	vecs  map[int64][]float32
}

type foundRow struct {
	u    Unit
	toks []string
}

// readRows reads the given rows through q (the write transaction, which
// sees its own writes, or the pool).
func readRows(ctx context.Context, q queryer, rows map[int64]bool, withVecs bool) (*rowsRead, error) {
	r := &rowsRead{rows: rows}
	ids := make([]int64, 0, len(rows))
	for id := range rows {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), 400)]
		ids = ids[len(chunk):]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rs, err := q.QueryContext(ctx, `SELECT `+prefixed("u.", unitCols)+`, f.terms FROM memory_fts f JOIN memory_units u ON u.id = f.rowid
WHERE f.rowid IN (?`+strings.Repeat(",?", len(chunk)-1)+`)`, args...)
		if err != nil {
			return nil, fmt.Errorf("memory: index refresh: %w", err)
		}
		for rs.Next() {
			var terms string
			u, err := scanUnitPlus(rs, &terms)
			if err != nil {
				rs.Close()
				return nil, fmt.Errorf("memory: index refresh: %w", err)
			}
			r.found = append(r.found, foundRow{u, strings.Fields(terms)})
		}
		rs.Close()
		if err := rs.Err(); err != nil {
			return nil, err
		}
		if withVecs {
			vs, err := q.QueryContext(ctx, `SELECT id, embedding FROM memory_units WHERE embedding IS NOT NULL AND id IN (?`+strings.Repeat(",?", len(chunk)-1)+`)`, args...)
			if err != nil {
				return nil, fmt.Errorf("memory: index refresh: %w", err)
			}
			for vs.Next() {
				var id int64
				var b []byte
				if err := vs.Scan(&id, &b); err != nil {
					vs.Close()
					return nil, err
				}
				if r.vecs == nil {
					r.vecs = map[int64][]float32{}
				}
				r.vecs[id] = embed.Decode(b)
			}
			vs.Close()
			if err := vs.Err(); err != nil {
				return nil, err
			}
		}
	}
	return r, nil
}

// apply puts the rows read into ix (under its write lock).
func (ix *memIndex) apply(r *rowsRead) {
	for id := range r.rows {
		ix.remove(id)
	}
	for i := range r.found {
		u := &r.found[i].u
		ix.add(u, r.found[i].toks)
		if v, ok := r.vecs[u.rowid]; ok && ix.withV {
			ix.vecs[u.rowid] = v
		}
	}
}

// refreshInto re-reads the given rows from the store and updates ix.
func (s *Store) refreshInto(ctx context.Context, ix *memIndex, rows map[int64]bool) error {
	if len(rows) == 0 {
		return nil
	}
	r, err := readRows(ctx, s.r, rows, ix.withV)
	if err != nil {
		return err
	}
	ix.mu.Lock()
	ix.apply(r)
	ix.mu.Unlock()
	return nil
}

// indexView is the index as one query sees it (read-locked).
type indexView struct {
	ix  *memIndex
	now time.Time
}

func (v *indexView) frequencies(_ context.Context, vis, terms []string) ([][]int, []int, error) {
	ix := v.ix
	df := make([][]int, len(terms))
	flat := make([]int, len(terms)*len(vis))
	for i := range terms {
		df[i] = flat[i*len(vis) : (i+1)*len(vis)]
	}
	units := make([]int, len(vis))
	for j, vs := range vis {
		k := visKey(vs)
		units[j] = ix.visN[k]
		m := ix.post[k]
		if m == nil {
			continue
		}
		for i, t := range terms {
			df[i][j] = len(m[t])
		}
	}
	return df, units, nil
}

// splitToken separates an index token into its visibility key and term.
func splitToken(t string) (string, string) {
	if len(t) <= visKeyLen {
		return t, ""
	}
	return t[:visKeyLen], t[visKeyLen:]
}

// match computes FTS5's bm25() for the rows holding any of the tokens.
func (v *indexView) match(_ context.Context, keys []visTerm, limit int) ([]*Unit, []float64, error) {
	ix := v.ix
	if len(keys) == 0 || ix.nRows == 0 {
		return nil, nil, nil
	}
	const k1, b = 1.2, 0.75
	avgdl := float64(ix.nTok) / float64(ix.nRows)
	score := map[int64]float64{}
	for _, key := range keys {
		ps := ix.post[visKey(key.vis)][key.term]
		nHit := int64(len(ps))
		idf := math.Log((float64(int64(ix.nRows)-nHit) + 0.5) / (float64(nHit) + 0.5))
		if idf <= 0 {
			idf = 1e-6
		}
		for _, p := range ps {
			score[p.row] += idf * ((p.tf * (k1 + 1.0)) / (p.tf + k1*(1-b+b*p.dl/avgdl)))
		}
	}
	type rs struct {
		row int64
		r   float64
	}
	all := make([]rs, 0, len(score))
	for row, sc := range score {
		all = append(all, rs{row, -1.0 * sc})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].r != all[j].r {
			return all[i].r < all[j].r
		}
		return all[i].row < all[j].row
	})
	if len(all) > limit {
		all = all[:limit]
	}
	units := make([]*Unit, len(all))
	scores := make([]float64, len(all))
	for i, x := range all {
		units[i], scores[i] = ix.units[x.row], x.r
	}
	return units, scores, nil
}

func (v *indexView) pool(_ context.Context, vis string) (*visPool, error) {
	ix := v.ix
	ix.poolMu.Lock()
	c := ix.pools[vis]
	ix.poolMu.Unlock()
	if c != nil && v.now.Sub(c.at) < poolTTL && !v.now.Before(c.at) {
		return c.p, nil
	}
	var cands, sums []*Unit
	for id := range ix.byVis[vis] {
		u := ix.units[id]
		if u.Status != StatusActive {
			continue
		}
		switch {
		case standingKind(u):
			cands = append(cands, u)
		case u.Type == WorkingSummary:
			sums = append(sums, u)
		}
	}
	p := &visPool{standing: selectPool(cands, v.now)}
	sort.Slice(sums, func(i, j int) bool {
		if !sums[i].SaidAt.Equal(sums[j].SaidAt) {
			return sums[i].SaidAt.After(sums[j].SaidAt)
		}
		return sums[i].rowid > sums[j].rowid
	})
	if len(sums) > 2 {
		sums = sums[:2]
	}
	p.summary = sums
	ix.poolMu.Lock()
	ix.pools[vis] = &cachedPool{p: p, at: v.now}
	ix.poolMu.Unlock()
	return p, nil
}

func (v *indexView) units(_ context.Context, ids []int64) ([]*Unit, error) {
	out := make([]*Unit, 0, len(ids))
	for _, id := range ids {
		if u, ok := v.ix.units[id]; ok {
			out = append(out, u)
		}
	}
	return out, nil
}

func (v *indexView) vectors(_ context.Context, vis string) ([]vecEntry, error) {
	ix := v.ix
	ids := make([]int64, 0, len(ix.byVis[vis]))
	for id := range ix.byVis[vis] {
		if _, ok := ix.vecs[id]; ok {
			ids = append(ids, id)
		}
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	out := make([]vecEntry, len(ids))
	for i, id := range ids {
		out[i] = vecEntry{rowid: id, v: ix.vecs[id]}
	}
	return out, nil
}

// source returns what ranking reads: the in-memory index when it runs (read
// locked until release), else SQLite.
func (s *Store) source(ctx context.Context) (source, func(), error) {
	if ix := s.idx.cur.Load(); ix != nil {
		ix.mu.RLock()
		return &indexView{ix: ix, now: s.now()}, ix.mu.RUnlock, nil
	}
	src, err := s.sqlSourceNow(ctx)
	return src, func() {}, err
}

func (v *indexView) derived(u *Unit) *derived {
	if d, ok := v.ix.der[u.rowid]; ok && v.ix.units[u.rowid] == u {
		return d
	}
	return deriveUnit(u)
}
