package memory

import (
	"math/rand"
	"slices"
	"testing"
)

// TestBestFirstIsTheSortedOrder: the heap hands over the candidates in
// exactly the order the full sort gave (scores with ties, broken by row
// id), so fit picks the same units as before, whatever k and budget.
func TestBestFirstIsTheSortedOrder(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	types := []Type{Preference, Semantic, ProjectState, Episodic}
	for _, n := range []int{0, 1, 2, 3, 7, 16, 100, 257} {
		for round := range 20 {
			cands := make([]*scored, n)
			for i := range cands {
				d := &derived{typ: types[r.Intn(len(types))]}
				d.w.rowid = int64(r.Intn(4 * (n + 1)))
				d.w.tokens = 5 + r.Intn(60)
				// Few distinct scores, so ties are common.
				cands[i] = &scored{d: d, score: float64(r.Intn(5)) / 4, rule: float64(r.Intn(3)) / 2}
			}
			// Row ids are unique in a store.
			seen := map[int64]bool{}
			for _, c := range cands {
				for seen[c.d.w.rowid] {
					c.d.w.rowid++
				}
				seen[c.d.w.rowid] = true
			}
			for _, byRule := range []bool{false, true} {
				better, cmp := betterFact, func(a, b *scored) int { return order(a.score, b.score, a.d.w.rowid, b.d.w.rowid) }
				if byRule {
					better, cmp = betterRule, func(a, b *scored) int { return order(a.rule, b.rule, a.d.w.rowid, b.d.w.rowid) }
				}
				want := slices.Clone(cands)
				slices.SortFunc(want, cmp)
				var got []*scored
				for c := range bestFirst(slices.Clone(cands), better) {
					got = append(got, c)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("n=%d round %d byRule=%v: best-first order differs from the sort", n, round, byRule)
				}
				// fit over both, with a budget that makes it skip some.
				k, budget := 1+r.Intn(8), 20+r.Intn(300)
				var g1, g2 typeSet
				a, usedA := fit(slices.Values(want), k, budget, 0, &g1, nil, nil)
				b, usedB := fit(bestFirst(slices.Clone(cands), better), k, budget, 0, &g2, nil, nil)
				if !slices.Equal(a, b) || usedA != usedB || g1 != g2 {
					t.Fatalf("n=%d round %d byRule=%v k=%d budget=%d: fit picked %d (%d tokens) from the heap, %d (%d) from the sort", n, round, byRule, k, budget, len(b), usedB, len(a), usedA)
				}
			}
		}
	}
}
