package skills

import (
	"context"
	"slices"
	"testing"
)

// referenceHits is keywordHits done the plain way: every term stemmed and
// looked up, scores summed in query-term order, every matching skill
// sorted, the usable ones kept.
func referenceHits(snap *snapshot, terms []string, usable func(*entry) bool, limit int) ([]hit, int) {
	scores := map[int32]float64{}
	nterms := map[int32]int{}
	known := 0
	for _, t := range terms {
		ps := snap.kw.lookup([]byte(porterStem(t)))
		if len(ps) > 0 {
			known++
		}
		for _, p := range ps {
			scores[p.idx] += p.score
			nterms[p.idx]++
		}
	}
	var all []hit
	for i, s := range scores {
		if e := snap.sorted[i]; usable(e) {
			all = append(all, hit{e: e, keyword: s, terms: nterms[i]})
		}
	}
	slices.SortFunc(all, func(a, b hit) int {
		if better(&a, &b) {
			return -1
		}
		return 1
	})
	return all[:min(limit, len(all))], known
}

// TestKeywordHitsMatchReference checks the request path's keyword ranking
// (surface-term lookups, threshold skipping, the snapshot's status and
// agent flags) against referenceHits on the 1,000-skill library (a tenth
// of it scoped to another agent, some disabled) with proxybench's question
// shape and the labelled turns: same skills, order, scores (bit for bit)
// and matched-term counts, for injection's filter, another agent's, and
// all skills.
func TestKeywordHitsMatchReference(t *testing.T) {
	if testing.Short() {
		t.Skip("short: the 1,000-skill library takes seconds to write and index")
	}
	lib := syntheticLibrary(t, 1000)
	lib.noWarm = true
	snap := lib.snap.Load()
	if snap.kw == nil || len(snap.kw.surfTok) == 0 {
		t.Fatal("no in-memory BM25 index or no surface terms")
	}
	cases := append(agentQuestions(t, 300, 11), equivalenceCases(t)...)
	ctx := context.Background()
	for _, f := range []struct {
		agent string
		all   bool
	}{{"default", false}, {"other-agent", false}, {"", true}} {
		usable := func(e *entry) bool {
			return (f.all || e.skill.Active()) && (f.agent == "" || e.skill.ForAgent(f.agent))
		}
		for _, limit := range []int{6, 24} {
			for _, texts := range cases {
				terms := snap.queryTerms(texts)
				if len(terms) == 0 || slices.ContainsFunc(terms, func(t string) bool { return !ftsASCII(t) }) {
					continue // non-ASCII terms are served by FTS5: TestTermCacheMatchesFTS5
				}
				got, err := lib.search(ctx, SearchOptions{Texts: texts, Agent: f.agent, All: f.all, Limit: limit, Mode: ModeKeyword}, nil)
				if err != nil {
					t.Fatal(err)
				}
				want, _ := referenceHits(snap, terms, usable, limit)
				if len(got) != len(want) {
					t.Fatalf("%+v/%d %q: %d hits, reference %d", f, limit, texts, len(got), len(want))
				}
				for i := range got {
					if got[i].e != want[i].e || got[i].keyword != want[i].keyword || got[i].terms != want[i].terms {
						t.Fatalf("%+v/%d %q: hit %d = %s (%v, %d terms), reference %s (%v, %d terms)", f, limit, texts, i,
							got[i].e.skill.Name, got[i].keyword, got[i].terms, want[i].e.skill.Name, want[i].keyword, want[i].terms)
					}
				}
			}
		}
	}
}
