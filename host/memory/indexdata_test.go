package memory

import (
	"context"
	"fmt"
	"math"
	"math/rand"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"
)

func TestTermDict(t *testing.T) {
	d := newTermDict()
	steps := []struct {
		op, term string
		wantID   int32 // for intern
		wantLive int   // terms in the dictionary after the step
	}{
		{"intern", "alpha", 0, 1},
		{"intern", "beta", 1, 2},
		{"intern", "alpha", 0, 2}, // a second holder: same id
		{"release", "alpha", 0, 2},
		{"release", "alpha", 0, 1}, // last holder gone: freed
		{"intern", "gamma", 0, 2},  // reuses the freed id
		{"intern", "alpha", 2, 3},
		{"release", "beta", 0, 2},
		{"release", "gamma", 0, 1},
		{"release", "alpha", 0, 0},
	}
	ids := map[string]int32{}
	for i, st := range steps {
		switch st.op {
		case "intern":
			id := d.intern(st.term)
			if id != st.wantID {
				t.Fatalf("step %d: intern %q = %d, want %d", i, st.term, id, st.wantID)
			}
			ids[st.term] = id
			if got, ok := d.lookup(st.term); !ok || got != id {
				t.Fatalf("step %d: lookup %q = %d %v", i, st.term, got, ok)
			}
		case "release":
			d.release(ids[st.term])
		}
		if len(d.ids) != st.wantLive {
			t.Fatalf("step %d: %d terms live, want %d (%v)", i, len(d.ids), st.wantLive, d.ids)
		}
	}
	if _, ok := d.lookup("alpha"); ok {
		t.Fatal("a released term is still found")
	}
}

func TestTermWeights(t *testing.T) {
	r := rand.New(rand.NewSource(3))
	var w termWeights
	if _, ok := w.get(1); ok {
		t.Fatal("an unset table finds a term")
	}
	for _, n := range []int{0, 1, 7, 8, 9, 64, 300} {
		want := map[int32]float64{}
		for len(want) < n {
			want[int32(r.Intn(2000)-100)] = r.Float64()
		}
		w.reset(n)
		for id, v := range want {
			w.put(id, v)
		}
		for id := int32(-150); id < 2100; id++ {
			got, ok := w.get(id)
			if wv, wok := want[id]; ok != wok || got != wv {
				t.Fatalf("n=%d: get(%d) = %v %v, want %v %v", n, id, got, ok, wv, wok)
			}
		}
	}
}

// testIndex adds n corpus units of two visibilities straight to an index.
func testIndex(t *testing.T, n int, seed int64) (*memIndex, []*Unit) {
	t.Helper()
	ix := newMemIndex(false)
	c := newCorpus(seed)
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	var units []*Unit
	for i := 0; i < n; i++ {
		u := c.unit([]string{"user:a", "user:b"}[i%2], now)
		u.rowid, u.ID, u.Status = int64(i+1), fmt.Sprint("mem_", i+1), StatusActive
		u.vis = visToken(u.Scope, u.Agent)
		ix.add(&u, ftsTokens(u.vis, indexTerms(&u)))
		units = append(units, &u)
	}
	return ix, units
}

// bm25Reference is the index's bm25 as it was computed before slots: a map
// per query and a full sort.
func bm25Reference(ix *memIndex, keys []visTerm, limit int) ([]int64, []float64) {
	const k1, b = 1.2, 0.75
	avgdl := float64(ix.nTok) / float64(ix.nRows)
	score := map[int64]float64{}
	for _, key := range keys {
		ps := ix.postings(key.vis, key.term)
		nHit := int64(len(ps))
		idf := math.Log((float64(int64(ix.nRows)-nHit) + 0.5) / (float64(nHit) + 0.5))
		if idf <= 0 {
			idf = 1e-6
		}
		for _, p := range ps {
			tf, dl := float64(p.tf), float64(p.dl)
			score[ix.rows[p.slot].rowid] += idf * ((tf * (k1 + 1.0)) / (tf + k1*(1-b+b*dl/avgdl)))
		}
	}
	type rs struct {
		row int64
		r   float64
	}
	var all []rs
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
	var rows []int64
	var scores []float64
	for _, x := range all {
		rows, scores = append(rows, x.row), append(scores, x.r)
	}
	return rows, scores
}

// The slot accumulator and the insertion top-k rank exactly as a map and a
// full sort, before and after rows are removed and their slots reused, and
// the scratch is left clean for the next query.
func TestIndexMatchTopK(t *testing.T) {
	ix, units := testIndex(t, 3000, 11)
	c := newCorpus(12)
	v := &indexView{ix: ix}
	check := func(stage string) {
		t.Helper()
		for i := 0; i < 60; i++ {
			var keys []visTerm
			for _, term := range distinct(Terms(c.phrase(1 + i%6))) {
				for _, vis := range []string{visToken("user:a", ""), visToken("user:b", "")} {
					keys = append(keys, visTerm{vis, term})
				}
			}
			for _, limit := range []int{1, 5, 24, 5000} {
				_, scores, err := v.match(context.Background(), keys, limit)
				if err != nil {
					t.Fatal(err)
				}
				wantRows, wantScores := bm25Reference(ix, keys, limit)
				_, gotRows := v.matchedDerived()
				if fmt.Sprint(gotRows, scores) != fmt.Sprint(wantRows, wantScores) { // exact: %v round-trips floats
					t.Fatalf("%s: %v limit %d:\ngot  %v %v\nwant %v %v", stage, keys, limit, gotRows, scores, wantRows, wantScores)
				}
			}
		}
		for _, m := range ix.scratch.free {
			for slot, x := range m.acc {
				if x != 0 {
					t.Fatalf("%s: scratch left dirty at slot %d", stage, slot)
				}
			}
		}
	}
	check("built")
	for i := 0; i < len(units); i += 3 {
		ix.remove(units[i].rowid)
	}
	for i := 0; i < 400; i++ {
		u := c.unit("user:a", time.Now())
		u.rowid, u.Status, u.vis = int64(10000+i), StatusActive, visToken("user:a", "")
		ix.add(&u, ftsTokens(u.vis, indexTerms(&u)))
	}
	check("after removals and reused slots")

	// What a row holds in the dictionary is given back when it goes (the
	// holds are read off its posting lists and derived terms).
	for slot := range ix.rows {
		if r := ix.rows[slot]; r.used {
			ix.remove(r.rowid)
		}
	}
	if len(ix.dict.ids) != 0 || ix.nRows != 0 || len(ix.post) != 0 {
		t.Fatalf("after removing every row: %d terms, %d rows, %d posting lists left", len(ix.dict.ids), ix.nRows, len(ix.post))
	}
	for id, n := range ix.dict.refs {
		if n != 0 {
			t.Fatalf("term id %d still has %d holders", id, n)
		}
	}
}

// The standing pools kept in place as units come and go rank exactly as
// selectPool over the visibility's units at the same instant, and the
// newest summaries are the newest.
func TestStandingPoolIncremental(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name     string
		units    int
		ops      int
		removeP  float64 // share of operations that remove
		ageEvery int     // operations between jumps of the clock past poolTTL (0: never)
	}{
		{"small, mostly adds", 40, 300, 0.2, 97},
		{"above the depth, churn", 600, 800, 0.5, 97},
		{"drained below the pool", 300, 600, 0.9, 97},
		{"deeper than the ranking, its best removed", 2400, 900, 0.8, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ix, units := testIndex(t, tc.units, 21)
			r := rand.New(rand.NewSource(22))
			c := newCorpus(23)
			live := map[int64]*Unit{}
			for _, u := range units {
				live[u.rowid] = u
			}
			next := int64(100000)
			clock := now
			for op := 0; op < tc.ops; op++ {
				if r.Float64() < tc.removeP && len(live) > 0 {
					victim := int64(-1)
					if vs := ix.stand[visToken("user:a", "")]; vs != nil && len(vs.ranked) > 0 && r.Intn(2) == 0 {
						victim = vs.ranked[r.Intn(min(3, len(vs.ranked)))].rowid // one the ranking holds
					}
					for id := range live { // else any one
						if victim < 0 {
							victim = id
						}
						break
					}
					ix.remove(victim)
					delete(live, victim)
				} else {
					u := c.unit([]string{"user:a", "user:b"}[r.Intn(2)], clock.Add(-time.Duration(r.Intn(100))*time.Hour))
					next++
					u.rowid, u.Status, u.vis = next, StatusActive, visToken(u.Scope, u.Agent)
					switch r.Intn(6) {
					case 0:
						exp := clock.Add(time.Duration(r.Intn(3)-1) * time.Hour) // some already expired
						u.ExpiresAt = &exp
					case 1:
						u.Status = StatusSuperseded
					case 2:
						u.Type, u.Tags = ProjectState, []string{"rule"}
					}
					ix.add(&u, ftsTokens(u.vis, indexTerms(&u)))
					live[u.rowid] = &u
				}
				if tc.ageEvery > 0 && op%tc.ageEvery == 0 {
					clock = clock.Add(poolTTL + time.Minute) // the ranking ages out
				}
				if op%7 != 0 {
					continue
				}
				for _, vis := range []string{visToken("user:a", ""), visToken("user:b", ""), visToken("user:b", "default")} {
					got, err := (&indexView{ix: ix, now: clock}).pool(context.Background(), vis)
					if err != nil {
						t.Fatal(err)
					}
					at := clock
					if vs := ix.stand[vis]; vs != nil {
						at = vs.at // the instant the ranking was made
					}
					var all, sums []*Unit
					for _, u := range live {
						if u.vis == vis && u.Status == StatusActive {
							all = append(all, u)
							if u.Type == WorkingSummary && !standingKind(u) {
								sums = append(sums, u)
							}
						}
					}
					want := selectPool(all, at)
					sort.Slice(sums, func(i, j int) bool {
						if !sums[i].SaidAt.Equal(sums[j].SaidAt) {
							return sums[i].SaidAt.After(sums[j].SaidAt)
						}
						return sums[i].rowid > sums[j].rowid
					})
					sums = sums[:min(2, len(sums))]
					if fmt.Sprint(got.rowids) != ids(want) || fmt.Sprint(got.sumRowids) != ids(sums) {
						t.Fatalf("op %d vis %s:\nstanding %v\nwant     %s\nsummary %v\nwant    %s", op, vis[:6],
							got.rowids, ids(want), got.sumRowids, ids(sums))
					}
					// The derived the pool gives (kept from pool to pool while
					// their slots hold the same units) are the units' own.
					rowids := append(slices.Clone(got.rowids), got.sumRowids...)
					for i, d := range append(slices.Clone(got.derived), got.sumDerived...) {
						ref := deriveUnit(live[rowids[i]], func(t string) int32 { id, _ := ix.dict.lookup(t); return id })
						if !sameDerived(d, ref) {
							t.Fatalf("op %d vis %s: row %d derived:\ngot  %#v\nwant %#v", op, vis[:6], rowids[i], *d, *ref)
						}
					}
				}
			}
		})
	}
}

func ids(us []*Unit) string {
	out := make([]int64, len(us))
	for i, u := range us {
		out[i] = u.rowid
	}
	return fmt.Sprint(out)
}

// The request path's shortcuts answer as the code they replace: the
// ASCII-folding continuity check as lower-casing a copy (Kelvin sign and
// dotted capital I included), the reused expansion as a fresh one, the
// term bitset as the table behind it, and order as better.
func TestRequestPathShortcuts(t *testing.T) {
	for _, text := range []string{"Let's PICK UP where we left off", "as BEFORE", "Where Were We?", "pic\u212A up the thread", "İ PİCK UP", "继续上次的工作",
		strings.Repeat("a long question about nothing in particular ", 20) + "then PREVIOUSLY", "nothing here", "", "CONTINUE", "We Were Doing the report", "resuming", "Yesterday's notes", "where"} {
		lower := strings.ToLower(text)
		want := false
		for _, h := range continuityHints {
			if strings.Contains(lower, h) {
				want = continuityCue.MatchString(text)
				break
			}
		}
		if got := continuity(text); got != want {
			t.Errorf("continuity(%q) = %v, lower-cased copy says %v", text, got, want)
		}
	}

	// The candidate table answers as a map, through growth and resets.
	var cands candTable
	for round := 0; round < 3; round++ {
		want := map[int64]*scored{}
		for i := 0; i < 40+round*400; i++ {
			id := rand.Int63n(5000) - 100
			if _, ok := want[id]; ok {
				continue
			}
			c := &scored{}
			want[id] = c
			cands.put(id, c)
		}
		for id := int64(-100); id < 4900; id++ {
			if got := cands.get(id); got != want[id] {
				t.Fatalf("round %d: candidate of %d: %p, want %p", round, id, got, want[id])
			}
		}
		cands.reset()
		for id := range want {
			if cands.get(id) != nil {
				t.Fatalf("%d still a candidate after reset", id)
			}
		}
	}

	// The signature bound rules out only pairs the exact test rules out.
	r := rand.New(rand.NewSource(3))
	for i := 0; i < 20000; i++ {
		mk := func() *scored {
			n := r.Intn(12)
			seen := map[int32]bool{}
			var ids []int32
			for len(ids) < n {
				if t := int32(r.Intn(24)) - 2; !seen[t] {
					seen[t] = true
					ids = append(ids, t)
				}
			}
			return &scored{d: deriveTermIDs(ids)}
		}
		a, b := mk(), mk()
		exact := sortedJaccard(a.d.sorted, b.d.sorted) >= 0.6
		if got := nearDuplicate(a, b); got != exact {
			t.Fatalf("nearDuplicate(%v, %v) = %v, Jaccard says %v", a.d.sorted, b.d.sorted, got, exact)
		}
		if inter := overlap(a.d.sorted, b.d.sorted); overlapBound(a.d, b.d) < inter {
			t.Fatalf("bound %d below the overlap %d of %v and %v", overlapBound(a.d, b.d), inter, a.d.sorted, b.d.sorted)
		}
	}

	var x expansion
	for _, texts := range [][]string{
		{"Which database should the migrations target?"},
		{"draft a poem about autumn leaves", "and the S3 bucket"},
		{strings.Repeat("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon ", 4) + "database"},
		{"mysql"},
	} {
		if got, want := x.expand(texts), expandQuery(texts); !reflect.DeepEqual(got, want) {
			t.Errorf("reused expansion of %q:\n%v\nfresh:\n%v", texts, got, want)
		}
	}

	var set termSet
	var table termWeights
	ids := []int32{0, 5, 63, 64, 1000, -3}
	table.reset(len(ids))
	for _, id := range ids {
		set.add(id)
		table.put(id, 1)
	}
	for id := int32(-5); id < 1100; id++ {
		_, inTable := table.get(id)
		if inTable && !set.mayHold(id) {
			t.Fatalf("the set rules out %d, which the table holds", id)
		}
		if id >= 0 && set.mayHold(id) != inTable {
			t.Fatalf("set and table disagree on %d", id)
		}
	}
	set.reset()
	for _, id := range ids {
		if id >= 0 && set.mayHold(id) {
			t.Fatalf("%d still in the set after reset", id)
		}
	}

	for _, c := range []struct {
		a, b   float64
		ra, rb int64
	}{{1, 1, 2, 3}, {1, 1, 3, 2}, {2, 1, 1, 9}, {1, 2, 9, 1}, {1, 1, 4, 4}} {
		want := 0
		if better(c.a, c.b, c.ra, c.rb) {
			want = -1
		} else if better(c.b, c.a, c.rb, c.ra) {
			want = 1
		}
		if got := order(c.a, c.b, c.ra, c.rb); got != want {
			t.Errorf("order%v = %d, better says %d", c, got, want)
		}
	}
}

// deriveTermIDs is deriveUnit for a unit holding the given distinct term ids.
func deriveTermIDs(ids []int32) *derived {
	terms := make([]string, len(ids))
	byTerm := map[string]int32{}
	for i, id := range ids {
		terms[i] = fmt.Sprintf("term%d", id+10)
		byTerm[terms[i]] = id
	}
	return deriveUnit(&Unit{Content: strings.Join(terms, " ")}, func(t string) int32 { return byTerm[t] })
}

// overlap is |a∩b| of two sorted sets.
func overlap(a, b []int32) int {
	n := 0
	for _, x := range a {
		if slices.Contains(b, x) {
			n++
		}
	}
	return n
}
