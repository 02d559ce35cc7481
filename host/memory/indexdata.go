package memory

import (
	"context"
	"math"
	"slices"
	"sync"
)

// The index's data: every term is interned to an integer id when a unit is
// added, each unit has a dense slot, and a posting list is a pointer-free
// slice of (slot, term frequency, length) keyed by (visibility id, term id).
// The request path hashes integers, not strings, accumulates bm25 in a
// reusable per-slot array instead of a map, and the garbage collector has
// one pointer per posting list to follow, not one per posting.

// termDict interns terms to ids; an id is freed when no unit holds it. A
// term's string is a copy in text (when set: the index's arena), not one
// object per term for the collector to mark.
type termDict struct {
	ids  map[string]int32
	strs []string
	refs []int32
	free []int32
	text *arena[byte]
}

func newTermDict() termDict { return termDict{ids: map[string]int32{}} }

// intern returns t's id and counts one more holder.
func (d *termDict) intern(t string) int32 {
	id, ok := d.ids[t]
	if !ok {
		if d.text != nil {
			t = arenaStr(d.text, t)
		}
		if n := len(d.free); n > 0 {
			id = d.free[n-1]
			d.free = d.free[:n-1]
			d.strs[id] = t
		} else {
			id = int32(len(d.strs))
			d.strs = append(d.strs, t)
			d.refs = append(d.refs, 0)
		}
		d.ids[t] = id
	}
	d.refs[id]++
	return id
}

// release drops one holder of id.
func (d *termDict) release(id int32) {
	if d.refs[id]--; d.refs[id] == 0 {
		if d.text != nil {
			d.text.drop(len(d.strs[id]))
		}
		delete(d.ids, d.strs[id])
		d.strs[id] = ""
		d.free = append(d.free, id)
	}
}

func (d *termDict) lookup(t string) (int32, bool) {
	id, ok := d.ids[t]
	return id, ok
}

// ipost is one row of a posting list (no pointers: the collector skips it).
type ipost struct {
	slot int32
	tf   int32 // occurrences of the term in the row
	dl   int32 // the row's length in tokens, both columns
}

// indexRow is one indexed unit (no pointers: the row table is not
// scanned). Its derived record is the index's drv at the same slot.
type indexRow struct {
	rowid int64
	unit  aref  // its encoding, in the index's units arena
	keys  aref  // its posting lists (distinct), in keyArena; with its derived, the term ids it holds in the dictionary
	nToks int32 // its index tokens
	used  bool
}

// postKey names the posting list of a term within a visibility.
func postKey(vis, term int32) uint64 { return uint64(uint32(vis))<<32 | uint64(uint32(term)) }

// visID returns the id of a visibility key, adding it when new.
func (ix *memIndex) visID(k string) int32 {
	id, ok := ix.visIDs[k]
	if !ok {
		id = int32(len(ix.visIDs))
		ix.visIDs[k] = id
	}
	return id
}

// add indexes a unit (its row must not be in the index). The index keeps
// u's encoding and derived data, not u.
func (ix *memIndex) add(u *Unit, toks []string) {
	var slot int32
	if n := len(ix.free); n > 0 {
		slot = ix.free[n-1]
		ix.free = ix.free[:n-1]
	} else {
		slot = int32(len(ix.rows))
		ix.rows = append(ix.rows, indexRow{})
	}
	r := &ix.rows[slot]
	ix.encScratch = encodeUnit(ix.encScratch[:0], u)
	enc, uref := ix.units.alloc(len(ix.encScratch))
	copy(enc, ix.encScratch)
	r.rowid, r.unit, r.nToks, r.used = u.rowid, uref, int32(len(toks)), true
	d := &ix.drvScratch
	fillDerived(d, u, ix.dict.intern, ix.scratchInts)
	rec := ix.putDerived(slot, d)
	*d = derived{}
	dl := int32(len(toks) + 1) // + the visibility column's token
	tf := ix.tfScratch
	clear(tf)
	keys := ix.keyScratch[:0]
	for _, t := range toks {
		k, term := splitToken(t)
		key := postKey(ix.visID(k), ix.dict.intern(term))
		if tf[key] == 0 {
			keys = append(keys, key)
		}
		tf[key]++
	}
	ix.keyScratch = keys
	kept, kref := ix.keyArena.alloc(len(keys))
	copy(kept, keys)
	r.keys = kref
	for _, key := range keys {
		ix.post[key] = append(ix.post[key], ipost{slot: slot, tf: tf[key], dl: dl})
	}
	ix.slotOf[u.rowid] = slot
	ix.nRows++
	ix.nTok += int64(len(toks)) + 1
	ix.visN[visKey(u.vis)]++
	m := ix.byVis[u.vis]
	if m == nil {
		m = map[int64]struct{}{}
		ix.byVis[u.vis] = m
	}
	m[u.rowid] = struct{}{}
	ix.standingAdd(slot, rec)
}

// scratchInts is room for derived's term ids while a unit is added (they
// are then copied into the arena).
func (ix *memIndex) scratchInts(n int) []int32 {
	ix.intScratch = slices.Grow(ix.intScratch[:0], n)[:n]
	return ix.intScratch
}

// remove takes a row out of the index (no-op when absent).
func (ix *memIndex) remove(rowid int64) {
	slot, ok := ix.slotOf[rowid]
	if !ok {
		return
	}
	r := &ix.rows[slot]
	rec := ix.drv.get(slot)
	ix.standingRemove(slot, rec)
	// The dictionary's holds of this row (what add interned): each
	// token's term (tf times per posting list), derive's terms and entities.
	keys := ix.keyArena.at(r.keys)
	for _, key := range keys {
		ps := ix.post[key]
		tf := int32(0)
		for i := range ps {
			if ps[i].slot == slot {
				tf = ps[i].tf
				ps = append(ps[:i], ps[i+1:]...)
				break
			}
		}
		if len(ps) == 0 {
			delete(ix.post, key)
		} else {
			ix.post[key] = ps
		}
		for ; tf > 0; tf-- {
			ix.dict.release(int32(uint32(key)))
		}
	}
	ints := ix.ints.at(rec.ints)
	for _, id := range ints[:rec.nIDs] {
		ix.dict.release(id)
	}
	for _, id := range ints[2*rec.nIDs:] {
		if id != entEnd {
			ix.dict.release(id)
		}
	}
	ix.nRows--
	ix.nTok -= int64(r.nToks) + 1
	vis := ix.visOf(rec)
	if k := visKey(vis); ix.visN[k] <= 1 {
		delete(ix.visN, k)
	} else {
		ix.visN[k]--
	}
	delete(ix.byVis[vis], rowid)
	delete(ix.slotOf, rowid)
	delete(ix.vecs, rowid)
	ix.keyArena.drop(len(keys))
	ix.units.drop(int(r.unit.n))
	ix.ints.drop(int(rec.ints.n))
	ix.text.drop(int(rec.text.n))
	*rec = drec{}
	*r = indexRow{}
	ix.free = append(ix.free, slot)
}

// wasteful: the arenas hold more of removed units than of indexed ones;
// a rebuild gives the memory back.
func (ix *memIndex) wasteful() bool {
	return ix.units.wasteful() || ix.text.wasteful() || ix.ints.wasteful() || ix.keyArena.wasteful()
}

// unitAt decodes the unit of a used slot.
func (ix *memIndex) unitAt(slot int32) *Unit {
	u := decodeUnit(ix.units.at(ix.rows[slot].unit))
	return &u
}

// unit returns the indexed unit of a row (a copy, decoded).
func (ix *memIndex) unit(rowid int64) (*Unit, bool) {
	slot, ok := ix.slotOf[rowid]
	if !ok {
		return nil, false
	}
	return ix.unitAt(slot), true
}

// postings returns the posting list of a term within a visibility.
func (ix *memIndex) postings(vis, term string) []ipost {
	v, ok := ix.visIDs[visKey(vis)]
	if !ok {
		return nil
	}
	t, ok := ix.dict.lookup(term)
	if !ok {
		return nil
	}
	return ix.post[postKey(v, t)]
}

// matchScratch accumulates bm25 per slot in a small open-addressed table
// sized to the postings read (a few hundred: rarest bounds them), so the
// sums stay in a few cache lines whatever the index's size.
type matchScratch struct {
	lists   [][]ipost
	slots   []int32 // slot+1 (0: empty)
	acc     []float64
	mask    uint32
	touched []int32 // indices into slots, in first-touch order
	top     []slotScore
}

type slotScore struct {
	slot int32
	r    float64
}

// reset empties the table for up to n slots.
func (m *matchScratch) reset(n int) {
	size := tableSize(64, n)
	if cap(m.slots) < size {
		m.slots, m.acc = make([]int32, size), make([]float64, size)
	}
	m.slots, m.acc = m.slots[:size], m.acc[:size]
	m.mask = uint32(size - 1)
}

// cell returns the table index of slot, adding it when new.
func (m *matchScratch) cell(slot int32) uint32 {
	i := (uint32(slot) * 0x9E3779B1 >> 8) & m.mask
	for {
		switch m.slots[i] {
		case slot + 1:
			return i
		case 0:
			m.slots[i] = slot + 1
			m.touched = append(m.touched, int32(i))
			return i
		}
		i = (i + 1) & m.mask
	}
}

// scratchKept bounds the scratch arrays an index keeps for reuse (one per
// concurrent retrieval; more are allocated and dropped).
const scratchKept = 8

type scratchStack struct {
	mu   sync.Mutex
	free []*matchScratch
}

func (s *scratchStack) get() *matchScratch {
	s.mu.Lock()
	var m *matchScratch
	if n := len(s.free); n > 0 {
		m = s.free[n-1]
		s.free = s.free[:n-1]
	}
	s.mu.Unlock()
	if m == nil {
		m = &matchScratch{}
	}
	return m
}

func (s *scratchStack) put(m *matchScratch) {
	for _, i := range m.touched {
		m.slots[i], m.acc[i] = 0, 0
	}
	clear(m.lists)
	m.lists, m.touched, m.top = m.lists[:0], m.touched[:0], m.top[:0]
	s.mu.Lock()
	if len(s.free) < scratchKept {
		s.free = append(s.free, m)
	}
	s.mu.Unlock()
}

func (v *indexView) frequencies(_ context.Context, vis, terms []string) ([][]int, []int, error) {
	ix := v.ix
	n := len(terms) * len(vis)
	v.dfFlat = slices.Grow(v.dfFlat[:0], n)[:n]
	clear(v.dfFlat)
	v.df = slices.Grow(v.df[:0], len(terms))[:len(terms)]
	df, flat := v.df, v.dfFlat
	for i := range terms {
		df[i] = flat[i*len(vis) : (i+1)*len(vis)]
	}
	v.visUnits = slices.Grow(v.visUnits[:0], len(vis))[:len(vis)]
	units := v.visUnits
	var ids []int32
	for j, vs := range vis {
		k := visKey(vs)
		units[j] = ix.visN[k]
		vid, ok := ix.visIDs[k]
		if !ok {
			continue
		}
		if ids == nil {
			ids = slices.Grow(v.ids[:0], len(terms))[:len(terms)]
			v.ids = ids
			for i, t := range terms {
				if id, ok := ix.dict.lookup(t); ok {
					ids[i] = id
				} else {
					ids[i] = -1
				}
			}
		}
		for i, id := range ids {
			if id >= 0 {
				df[i][j] = len(ix.post[postKey(vid, id)])
			}
		}
	}
	return df, units, nil
}

// match computes FTS5's bm25() for the rows holding any of the tokens (their
// units nil: the index gives their derived data, matchedDerived): the
// same sums in the same order as FTS5's (so the same floating-point
// results), accumulated per slot, and the best limit kept by insertion.
func (v *indexView) match(_ context.Context, keys []visTerm, limit int) ([]*Unit, []float64, error) {
	ix := v.ix
	if len(keys) == 0 || ix.nRows == 0 || limit <= 0 {
		return nil, nil, nil
	}
	const k1, b = 1.2, 0.75
	avgdl := float64(ix.nTok) / float64(ix.nRows)
	sc := ix.scratch.get()
	defer ix.scratch.put(sc)
	n := 0
	for _, key := range keys {
		ps := ix.postings(key.vis, key.term)
		sc.lists = append(sc.lists, ps)
		n += len(ps)
	}
	sc.reset(n)
	for _, ps := range sc.lists {
		nHit := int64(len(ps))
		idf := math.Log((float64(int64(ix.nRows)-nHit) + 0.5) / (float64(nHit) + 0.5))
		if idf <= 0 {
			idf = 1e-6
		}
		for _, p := range ps {
			tf := float64(p.tf)
			sc.acc[sc.cell(p.slot)] += idf * ((tf * (k1 + 1.0)) / (tf + k1*(1-b+b*float64(p.dl)/avgdl)))
		}
	}
	// Best first: lower -score, then lower row id (read only on a tie: the
	// rows are where the cache misses are).
	before := func(a, b slotScore) bool {
		if a.r != b.r {
			return a.r < b.r
		}
		return ix.rows[a.slot].rowid < ix.rows[b.slot].rowid
	}
	top := sc.top
	for _, i := range sc.touched {
		x := slotScore{slot: sc.slots[i] - 1, r: -1.0 * sc.acc[i]}
		if len(top) == limit && !before(x, top[limit-1]) {
			continue
		}
		if len(top) < limit {
			top = append(top, x)
		} else {
			top[limit-1] = x
		}
		for i := len(top) - 1; i > 0 && before(top[i], top[i-1]); i-- {
			top[i], top[i-1] = top[i-1], top[i]
		}
	}
	sc.top = top
	units := slices.Grow(v.matched[:0], len(top))[:len(top)]
	ds := slices.Grow(v.matchedD[:0], len(top))[:len(top)]
	ids := slices.Grow(v.matchedIDs[:0], len(top))[:len(top)]
	scores := slices.Grow(v.scores[:0], len(top))[:len(top)]
	v.matched, v.matchedD, v.matchedIDs, v.scores = units, ds, ids, scores
	slots := v.slots[:0]
	for _, x := range top {
		slots = append(slots, x.slot)
	}
	v.slots = slots
	v.touched = ix.touchRecs(slots)
	for i, x := range top {
		// No unit: the index keeps none (matchedDerived stands for it).
		d := v.slab.next()
		ix.view(ix.drv.get(x.slot), d)
		units[i], ds[i], ids[i], scores[i] = nil, d, ix.rows[x.slot].rowid, x.r
	}
	return units, scores, nil
}

// matchedDerived are the derived and row ids of match's last answer
// (knowsDerived).
func (v *indexView) matchedDerived() ([]*derived, []int64) { return v.matchedD, v.matchedIDs }

func (v *indexView) units(_ context.Context, ids []int64) ([]*Unit, error) {
	out := make([]*Unit, 0, len(ids))
	for _, id := range ids {
		if u, ok := v.ix.unit(id); ok {
			out = append(out, u)
		}
	}
	return out, nil
}

// derivedRows gives the derived data of the rows it holds among ids (in
// the slices of match's answer: valid until the next match or release).
func (v *indexView) derivedRows(ids []int64) ([]*derived, []int64) {
	ds, found, slots := v.matchedD[:0], v.matchedIDs[:0], v.slots[:0]
	for _, id := range ids {
		if slot, ok := v.ix.slotOf[id]; ok {
			found, slots = append(found, id), append(slots, slot)
		}
	}
	v.slots = slots
	v.touched = v.ix.touchRecs(slots)
	for _, slot := range slots {
		d := v.slab.next()
		v.ix.view(v.ix.drv.get(slot), d)
		ds = append(ds, d)
	}
	v.matchedD, v.matchedIDs = ds, found
	return ds, found
}

// derived derives a unit the index did not give (the index's own come
// with their derived data: match, pool, derivedRows).
func (v *indexView) derived(u *Unit) *derived { return deriveUnit(u, v.termID) }

// termStr is the term of an id of the dictionary or of this query.
func (v *indexView) termStr(id int32) string {
	if id >= 0 {
		return v.ix.dict.strs[id]
	}
	for t, x := range v.extra {
		if x == id {
			return t
		}
	}
	return ""
}

// termID is a term's id in the index's dictionary; a term no unit holds
// gets an id of its own for this query (negative: it matches nothing).
func (v *indexView) termID(t string) int32 {
	if id, ok := v.ix.dict.lookup(t); ok {
		return id
	}
	if id, ok := v.extra[t]; ok {
		return id
	}
	if v.extra == nil {
		v.extra = map[string]int32{}
	}
	id := -int32(len(v.extra)) - 1
	v.extra[t] = id
	return id
}
