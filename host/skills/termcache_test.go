package skills

import (
	"context"
	"math"
	"testing"
)

// TestTermCacheMatchesFTS5 checks that ranking by summed per-term FTS5
// bm25() (the request path, with its cache) gives the same skills, in the
// same order, with the same scores, as one FTS5 query over the OR'ed MATCH
// expression.
func TestTermCacheMatchesFTS5(t *testing.T) {
	for _, tc := range []struct {
		name string
		lib  func(t *testing.T) *Library
	}{
		{"bank", func(t *testing.T) *Library { l, _ := bankLib(t); return l }},
		{"synthetic-120", func(t *testing.T) *Library { return syntheticLibrary(t, 120) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lib := tc.lib(t)
			ctx := context.Background()
			snap := lib.snap.Load()
			all := func(*entry) bool { return true }
			cases := append(loadLabelled(t, "testdata/retrieval.jsonl"), loadLabelled(t, "testdata/retrieval_holdout.jsonl")...)
			for round := 0; round < 2; round++ { // cold, then from the cache
				for _, c := range cases {
					terms := snap.queryTerms(c.Texts)
					got, err := lib.keywordHits(ctx, snap, terms, all, 1000)
					if err != nil {
						t.Fatal(err)
					}
					want, err := lib.keywordHitsSQL(ctx, MatchExpr(terms), "", true, 1000)
					if err != nil {
						t.Fatal(err)
					}
					if len(got) != len(want) {
						t.Fatalf("%q: %d hits, FTS5 query has %d", c.Texts, len(got), len(want))
					}
					for i := range got {
						if got[i].e.skill.Name != want[i].Skill.Name || math.Abs(got[i].keyword-want[i].Keyword) > 1e-9*math.Abs(want[i].Keyword) {
							t.Fatalf("%q: hit %d = %s (%.12f), FTS5 query says %s (%.12f)", c.Texts, i, got[i].e.skill.Name, got[i].keyword, want[i].Skill.Name, want[i].Keyword)
						}
					}
				}
			}
		})
	}
}
