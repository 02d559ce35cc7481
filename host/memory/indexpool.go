package memory

import (
	"context"
	"slices"
	"sort"
	"time"
)

// The standing pools of the index. Each visibility keeps its standing units
// (and session summaries) apart from the rest as units are added and
// removed, and a ranking of the best of them made at one instant: a write
// inserts into or deletes from that ranking in place, so neither a request
// nor a learned turn re-reads the visibility's units. The ranking is redone
// when it has lost too many of its units to removals, or after poolTTL (the
// scores include recency).

// poolDepth is how many standing units a ranking holds: removals eat into
// it before the visibility is ranked again.
const poolDepth = 2 * standingPool

// visStanding is one visibility's standing units and their ranking, by
// slot (no pointers: maps and slices the collector skips).
type visStanding struct {
	cands map[int64]int32 // active standing units (standingKind): row id → slot
	sums  map[int64]int32 // active session summaries

	// Under poolMu: ranked holds, best first, the best len(ranked) units of
	// cands that had not expired at `at`, scored at `at` (all of them when
	// complete).
	ranked   []rankedUnit
	at       time.Time
	valid    bool
	complete bool
	sumTop   []int32 // the slots of the newest two summaries
	sumOK    bool
	p        *visPool // built from ranked and sumTop; nil after a change
	touched  int64    // what touchRecs read

	// The derived the pools were built from, by slot, kept from one pool to
	// the next (a record does not change while its slot holds it: a write
	// removes and adds): a write rebuilds the pool without viewing again
	// the units it had. Those the latest pool does not hold are dropped.
	views   map[int32]*poolView
	viewGen uint32
}

type poolView struct {
	d   derived
	gen uint32 // the pool that last used it
}

type rankedUnit struct {
	slot  int32
	rowid int64
	s     float64
}

var emptyPool = &visPool{}

// standingAdd notes a unit just added to the index at slot (under its
// write lock).
func (ix *memIndex) standingAdd(slot int32, r *drec) {
	w := &r.w
	if !w.active || !w.standing && !w.summary {
		return
	}
	vis := ix.visOf(r)
	vs := ix.stand[vis]
	if vs == nil {
		vs = &visStanding{cands: map[int64]int32{}, sums: map[int64]int32{}}
		ix.stand[vis] = vs
	}
	ix.poolMu.Lock()
	defer ix.poolMu.Unlock()
	vs.p = nil
	if !w.standing {
		vs.sums[w.rowid] = slot
		vs.sumOK = false
		return
	}
	vs.cands[w.rowid] = slot
	if vs.valid {
		vs.insert(slot, w)
	}
}

// standingRemove notes a unit about to be removed from the index (under
// its write lock).
func (ix *memIndex) standingRemove(slot int32, r *drec) {
	vs := ix.stand[ix.visOf(r)]
	if vs == nil {
		return
	}
	rowid := r.w.rowid
	ix.poolMu.Lock()
	defer ix.poolMu.Unlock()
	delete(vs.views, slot)
	if _, ok := vs.sums[rowid]; ok {
		delete(vs.sums, rowid)
		vs.sumOK, vs.p = false, nil
	}
	if _, ok := vs.cands[rowid]; !ok {
		return
	}
	delete(vs.cands, rowid)
	vs.p = nil
	if !vs.valid {
		return
	}
	for i := range vs.ranked {
		if vs.ranked[i].rowid == rowid {
			vs.ranked = slices.Delete(vs.ranked, i, i+1)
			break
		}
	}
	if !vs.complete && len(vs.ranked) < standingPool {
		vs.valid = false
	}
}

// insert puts a new standing unit into the ranking, scored at its instant.
func (vs *visStanding) insert(slot int32, w *unitWeights) {
	if w.hasExpiry && !w.expires.time().After(vs.at) {
		return
	}
	x := rankedUnit{slot, w.rowid, standingAt(w, vs.at)}
	n := len(vs.ranked)
	if !vs.complete && (n == 0 || !better(x.s, vs.ranked[n-1].s, x.rowid, vs.ranked[n-1].rowid)) {
		return // below what the ranking holds: it stays a true prefix
	}
	i := sort.Search(n, func(i int) bool { return better(x.s, vs.ranked[i].s, x.rowid, vs.ranked[i].rowid) })
	vs.ranked = slices.Insert(vs.ranked, i, x)
	if len(vs.ranked) > poolDepth {
		vs.ranked = vs.ranked[:poolDepth]
		vs.complete = false
	}
}

// rank ranks the standing units at now (as selectPool does), keeping the
// best poolDepth.
func (vs *visStanding) rank(ix *memIndex, now time.Time) {
	top := make([]rankedUnit, 0, min(len(vs.cands), poolDepth)+1)
	n := 0
	for rowid, slot := range vs.cands {
		w := &ix.drv.get(slot).w
		if w.hasExpiry && !w.expires.time().After(now) {
			continue
		}
		n++
		x := rankedUnit{slot, rowid, standingAt(w, now)}
		if len(top) == poolDepth && !better(x.s, top[poolDepth-1].s, rowid, top[poolDepth-1].rowid) {
			continue
		}
		if len(top) < poolDepth {
			top = append(top, x)
		} else {
			top[poolDepth-1] = x
		}
		for i := len(top) - 1; i > 0 && better(top[i].s, top[i-1].s, top[i].rowid, top[i-1].rowid); i-- {
			top[i], top[i-1] = top[i-1], top[i]
		}
	}
	vs.ranked, vs.at, vs.valid, vs.complete = top, now, true, n <= poolDepth
}

// standingAt is standingScore from the weights the index derived.
func standingAt(w *unitWeights, now time.Time) float64 {
	age := w.ageDays(now)
	return w.standingScore(age, w.importance(age))
}

// newestSummaries returns the slots of the two newest summaries (by when
// they were said, then row id).
func newestSummaries(ix *memIndex, sums map[int64]int32) []int32 {
	newer := func(a, b int32) bool {
		da, db := ix.drv.get(a), ix.drv.get(b)
		if da.said != db.said {
			return da.said.after(db.said)
		}
		return da.w.rowid > db.w.rowid
	}
	var top []int32
	for _, slot := range sums {
		switch {
		case len(top) < 2:
			top = append(top, slot)
		case newer(slot, top[1]):
			top[1] = slot
		default:
			continue
		}
		if len(top) == 2 && newer(top[1], top[0]) {
			top[0], top[1] = top[1], top[0]
		}
	}
	return top
}

// pool gives the standing units and summaries by their derived data and
// row ids (their units nil: the index keeps none). The derived are made
// once per ranking and kept with it (a few dozen per visibility).
func (v *indexView) pool(_ context.Context, vis string) (*visPool, error) {
	ix := v.ix
	vs := ix.stand[vis]
	if vs == nil {
		return emptyPool, nil
	}
	ix.poolMu.Lock()
	defer ix.poolMu.Unlock()
	if !vs.valid || v.now.Sub(vs.at) >= poolTTL || v.now.Before(vs.at) {
		vs.rank(ix, v.now)
		vs.p = nil
	}
	if !vs.sumOK {
		vs.sumTop, vs.sumOK, vs.p = newestSummaries(ix, vs.sums), true, nil
	}
	if vs.p == nil {
		n := min(len(vs.ranked), standingPool)
		p := &visPool{standing: make([]*Unit, n), derived: make([]*derived, n), rowids: make([]int64, n),
			summary: make([]*Unit, len(vs.sumTop)), sumDerived: make([]*derived, len(vs.sumTop)), sumRowids: make([]int64, len(vs.sumTop))}
		vs.viewGen++
		var fresh []int32 // the slots to view: touched first (touchRecs)
		for _, x := range vs.ranked[:n] {
			if vs.views[x.slot] == nil {
				fresh = append(fresh, x.slot)
			}
		}
		for _, slot := range vs.sumTop {
			if vs.views[slot] == nil {
				fresh = append(fresh, slot)
			}
		}
		vs.touched = ix.touchRecs(fresh)
		for i := range p.standing {
			x := vs.ranked[i]
			p.derived[i], p.rowids[i] = vs.view(ix, x.slot), x.rowid
		}
		for i, slot := range vs.sumTop {
			p.sumDerived[i], p.sumRowids[i] = vs.view(ix, slot), ix.rows[slot].rowid
		}
		for slot, pv := range vs.views {
			if pv.gen != vs.viewGen {
				delete(vs.views, slot)
			}
		}
		vs.p = p
	}
	return vs.p, nil
}

// view returns the derived of a slot the pool holds, made once while the
// slot holds its unit (under poolMu).
func (vs *visStanding) view(ix *memIndex, slot int32) *derived {
	pv := vs.views[slot]
	if pv == nil {
		if vs.views == nil {
			vs.views = map[int32]*poolView{}
		}
		pv = new(poolView)
		ix.view(ix.drv.get(slot), &pv.d)
		vs.views[slot] = pv
	}
	pv.gen = vs.viewGen
	return &pv.d
}
