package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/metaclaw-go/metaclaw/host/embed"
	"github.com/metaclaw-go/metaclaw/internal/sqlconn"
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

// poolTTL bounds how long a standing pool's ranking is reused (it includes
// recency); writes update it in place.
const poolTTL = 10 * time.Minute

type memIndex struct {
	mu      sync.RWMutex
	gen     int64
	spoiled bool  // out of step with the store until rebuilt
	nRows   int   // rows of memory_fts
	nTok    int64 // tokens of memory_fts over every row and column

	dict   termDict
	visIDs map[string]int32 // visibility key → id (of the posting keys)
	rows   []indexRow       // by slot
	drv    chunked[drec]    // by slot: each row's derived record (no pointers)
	names  names            // the visibilities and types the records name
	free   []int32          // free slots

	slotOf map[int64]int32    // row id → slot
	post   map[uint64][]ipost // postKey(visibility, term) → rows holding it, each once, with its count
	visN   map[string]int     // rows per visibility key (memory_terms' "#"+key)
	byVis  map[string]map[int64]struct{}
	vecs   map[int64][]float32 // embeddings (with an embedder only)
	withV  bool

	// The arenas of the rows' data (indexarena.go).
	units    arena[byte]   // the units, encoded
	text     arena[byte]   // the strings derived holds
	ints     arena[int32]  // derived's term ids
	keyArena arena[uint64] // the rows' posting keys

	// add's scratch (under the write lock): term counts, posting keys, the
	// unit's encoding, its derived data and term ids before they are
	// copied into the arenas.
	tfScratch  map[uint64]int32
	keyScratch []uint64
	encScratch []byte
	drvScratch derived
	intScratch []int32
	scratch    scratchStack

	poolMu sync.Mutex // guards the cached rankings in standing (readers rank under the read lock)
	stand  map[string]*visStanding
}

func newMemIndex(withVecs bool) *memIndex {
	ix := &memIndex{
		dict: newTermDict(), visIDs: map[string]int32{}, slotOf: map[int64]int32{}, post: map[uint64][]ipost{}, visN: map[string]int{},
		byVis: map[string]map[int64]struct{}{}, vecs: map[int64][]float32{}, withV: withVecs,
		tfScratch: map[uint64]int32{}, stand: map[string]*visStanding{},
	}
	ix.dict.text = &ix.text
	return ix
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
var txTouched sync.Map // *sqlconn.Tx → *touchSet

type touchSet struct {
	mu   sync.Mutex
	rows map[int64]bool
}

// touch notes that a transaction changed a unit or its index row.
func touch(tx *sqlconn.Tx, rowid int64) {
	if v, ok := txTouched.Load(tx); ok {
		t := v.(*touchSet)
		t.mu.Lock()
		t.rows[rowid] = true
		t.mu.Unlock()
	}
}

// touchUID is touch for a unit known by its public id.
func touchUID(ctx context.Context, tx *sqlconn.Tx, uid string) error {
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
	if ix.spoiled || ix.wasteful() {
		return -1 // the poller rebuilds it
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
		if _, ok := ix.slotOf[id]; ok {
			ix.vecs[id] = embed.Decode(b)
		}
	}
	return rows.Err()
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
	ix    *memIndex
	now   time.Time
	extra map[string]int32 // ids of terms no unit holds (termID)

	// The slices its answers are made in (valid until releaseSource).
	df         [][]int
	dfFlat     []int
	visUnits   []int
	ids        []int32
	matched    []*Unit
	matchedD   []*derived
	matchedIDs []int64
	scores     []float64
	slab       viewSlab // the derived made of the index's records
	slots      []int32  // the slots viewed
	touched    int64    // what touchRecs read
}

// splitToken separates an index token into its visibility key and term.
func splitToken(t string) (string, string) {
	if len(t) <= visKeyLen {
		return t, ""
	}
	return t[:visKeyLen], t[visKeyLen:]
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
// locked until releaseSource), else SQLite.
func (s *Store) source(ctx context.Context) (source, error) {
	if ix := s.idx.cur.Load(); ix != nil {
		ix.mu.RLock()
		v := views.Get().(*indexView)
		v.ix, v.now = ix, s.now()
		return v, nil
	}
	return s.sqlSourceNow(ctx)
}

// releaseSource ends what source began.
func releaseSource(src source) {
	v, ok := src.(*indexView)
	if !ok {
		return
	}
	v.ix.mu.RUnlock()
	clear(v.extra)
	clear(v.matched)
	clear(v.matchedD)
	v.slab.reset()
	*v = indexView{slab: v.slab, extra: v.extra, df: v.df[:0], dfFlat: v.dfFlat[:0], visUnits: v.visUnits[:0], ids: v.ids[:0], matched: v.matched[:0], matchedD: v.matchedD[:0], matchedIDs: v.matchedIDs[:0], scores: v.scores[:0], slots: v.slots[:0]}
	views.Put(v)
}

// views are reused: a view keeps the slices its answers are made in.
var views = sync.Pool{New: func() any { return new(indexView) }}
