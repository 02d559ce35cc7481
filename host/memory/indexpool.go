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

// visStanding is one visibility's standing units and their ranking.
type visStanding struct {
	cands map[int64]*Unit // active standing units (standingKind)
	sums  map[int64]*Unit // active session summaries

	// Under poolMu: ranked holds, best first, the best len(ranked) units of
	// cands that had not expired at `at`, scored at `at` (all of them when
	// complete).
	ranked   []rankedUnit
	at       time.Time
	valid    bool
	complete bool
	sumTop   []*Unit // the newest two summaries
	sumOK    bool
	p        *visPool // built from ranked and sumTop; nil after a change
}

type rankedUnit struct {
	u *Unit
	s float64
}

var emptyPool = &visPool{}

// standingAdd notes a unit just added to the index (under its write lock).
func (ix *memIndex) standingAdd(u *Unit) {
	stand, sum := standingKind(u), u.Type == WorkingSummary
	if u.Status != StatusActive || !stand && !sum {
		return
	}
	vs := ix.stand[u.vis]
	if vs == nil {
		vs = &visStanding{cands: map[int64]*Unit{}, sums: map[int64]*Unit{}}
		ix.stand[u.vis] = vs
	}
	ix.poolMu.Lock()
	defer ix.poolMu.Unlock()
	vs.p = nil
	if !stand {
		vs.sums[u.rowid] = u
		vs.sumOK = false
		return
	}
	vs.cands[u.rowid] = u
	if vs.valid {
		vs.insert(u)
	}
}

// standingRemove notes a unit just removed from the index (under its write
// lock).
func (ix *memIndex) standingRemove(u *Unit) {
	vs := ix.stand[u.vis]
	if vs == nil {
		return
	}
	ix.poolMu.Lock()
	defer ix.poolMu.Unlock()
	if _, ok := vs.sums[u.rowid]; ok {
		delete(vs.sums, u.rowid)
		vs.sumOK, vs.p = false, nil
	}
	if _, ok := vs.cands[u.rowid]; !ok {
		return
	}
	delete(vs.cands, u.rowid)
	vs.p = nil
	if !vs.valid {
		return
	}
	for i := range vs.ranked {
		if vs.ranked[i].u.rowid == u.rowid {
			vs.ranked = slices.Delete(vs.ranked, i, i+1)
			break
		}
	}
	if !vs.complete && len(vs.ranked) < standingPool {
		vs.valid = false
	}
}

// insert puts a new standing unit into the ranking, scored at its instant.
func (vs *visStanding) insert(u *Unit) {
	if u.ExpiresAt != nil && !u.ExpiresAt.After(vs.at) {
		return
	}
	x := rankedUnit{u, standingAt(u, vs.at)}
	n := len(vs.ranked)
	if !vs.complete && (n == 0 || !better(x.s, vs.ranked[n-1].s, u.rowid, vs.ranked[n-1].u.rowid)) {
		return // below what the ranking holds: it stays a true prefix
	}
	i := sort.Search(n, func(i int) bool { return better(x.s, vs.ranked[i].s, u.rowid, vs.ranked[i].u.rowid) })
	vs.ranked = slices.Insert(vs.ranked, i, x)
	if len(vs.ranked) > poolDepth {
		vs.ranked = vs.ranked[:poolDepth]
		vs.complete = false
	}
}

// rank ranks the standing units at now (as selectPool does), keeping the
// best poolDepth.
func (vs *visStanding) rank(now time.Time) {
	top := make([]rankedUnit, 0, min(len(vs.cands), poolDepth)+1)
	n := 0
	for _, u := range vs.cands {
		if u.ExpiresAt != nil && !u.ExpiresAt.After(now) {
			continue
		}
		n++
		x := rankedUnit{u, standingAt(u, now)}
		if len(top) == poolDepth && !better(x.s, top[poolDepth-1].s, u.rowid, top[poolDepth-1].u.rowid) {
			continue
		}
		if len(top) < poolDepth {
			top = append(top, x)
		} else {
			top[poolDepth-1] = x
		}
		for i := len(top) - 1; i > 0 && better(top[i].s, top[i-1].s, top[i].u.rowid, top[i-1].u.rowid); i-- {
			top[i], top[i-1] = top[i-1], top[i]
		}
	}
	vs.ranked, vs.at, vs.valid, vs.complete = top, now, true, n <= poolDepth
}

// standingAt is standingScore from the weights the index derived.
func standingAt(u *Unit, now time.Time) float64 {
	if u.d == nil {
		return standingScore(u, now)
	}
	w := &u.d.w
	age := w.ageDays(now)
	return w.standingScore(age, w.importance(age))
}

// newestSummaries returns the two newest summaries (by when they were
// said, then row id).
func newestSummaries(sums map[int64]*Unit) []*Unit {
	newer := func(a, b *Unit) bool {
		if !a.SaidAt.Equal(b.SaidAt) {
			return a.SaidAt.After(b.SaidAt)
		}
		return a.rowid > b.rowid
	}
	var top []*Unit
	for _, u := range sums {
		switch {
		case len(top) < 2:
			top = append(top, u)
		case newer(u, top[1]):
			top[1] = u
		default:
			continue
		}
		if len(top) == 2 && newer(top[1], top[0]) {
			top[0], top[1] = top[1], top[0]
		}
	}
	return top
}

func (v *indexView) pool(_ context.Context, vis string) (*visPool, error) {
	ix := v.ix
	vs := ix.stand[vis]
	if vs == nil {
		return emptyPool, nil
	}
	ix.poolMu.Lock()
	defer ix.poolMu.Unlock()
	if !vs.valid || v.now.Sub(vs.at) >= poolTTL || v.now.Before(vs.at) {
		vs.rank(v.now)
		vs.p = nil
	}
	if !vs.sumOK {
		vs.sumTop, vs.sumOK, vs.p = newestSummaries(vs.sums), true, nil
	}
	if vs.p == nil {
		n := min(len(vs.ranked), standingPool)
		p := &visPool{standing: make([]*Unit, n), summary: vs.sumTop, derived: make([]*derived, n), rowids: make([]int64, n)}
		for i := range p.standing {
			u := vs.ranked[i].u
			p.standing[i], p.derived[i], p.rowids[i] = u, u.d, u.rowid
		}
		vs.p = p
	}
	return vs.p, nil
}
