package memory

import (
	"context"
	"fmt"
	"iter"
	"math/bits"
	"slices"

	"github.com/metaclaw-go/metaclaw/host/core"
)

// Retrieval is read-only: it never writes (the request path must not wait
// for the writer, and reading must not change what is read). Which units were
// injected is known from the turns' injected ids and counted at ingestion.
//
// The Memories section has two parts with their own limits:
//
//   - the standing rules and preferences of the scope, carried on every
//     main turn whatever the task (the user expects a house rule to hold),
//     ranked by mentions, recency and importance — and by relevance to the
//     turn — with no two about the same slot or in near-identical words
//     (memory.standing_top_k);
//   - the facts, project state, events and (when the user picks up a
//     thread) session summaries relevant to the turn (memory.top_k), which
//     have a share of the budget of their own, so a fact that answers the
//     question is never displaced by a preference that does not. A turn that
//     no memory serves gets the standing rules only.

// Hit is a ranked unit.
type Hit struct {
	Unit
	Score   float64  `json:"score"`
	Matched []string `json:"matched_terms,omitempty"`
	Reason  string   `json:"reason,omitempty"`

	line string // the rendered bullet, when known
}

// Query asks for the memories relevant to a turn.
type Query struct {
	Scope string // scope key (core.Scope.Key()); "default" means memory.scope
	Agent string // the asking agent: it sees the scope's shared units and its own
	// Texts are the recent user messages, oldest first (core.Query.UserTexts).
	Texts []string
	// TopK (facts), StandingK (standing rules) and MaxTokens override the
	// store's options when > 0.
	TopK      int
	StandingK int
	MaxTokens int

	sectionOnly bool // the request path: no copies of the units
}

// Result is the rendered section and what it holds.
type Result struct {
	Section core.Section
	Hits    []Hit
}

// Name implements core.Provider.
func (s *Store) Name() string { return "memory" }

// Context implements core.Provider: the "Memories" section for a turn.
func (s *Store) Context(ctx context.Context, q core.Query) (core.Section, error) {
	agent := q.Agent
	if agent == "" {
		agent = "default"
	}
	res, err := s.Retrieve(ctx, Query{Scope: q.Scope.Key(), Agent: agent, Texts: q.UserTexts, sectionOnly: true})
	return res.Section, err
}

// Counts implements core.Counter.
func (s *Store) Counts(ctx context.Context) map[string]int {
	out := map[string]int{}
	if n, err := s.ActiveCount(ctx); err == nil {
		out["memories"] = n
	}
	s.pendingCounts(ctx, out)
	if n, err := s.RefusedCount(ctx); err == nil {
		out["memories_refused"] = n
	}
	return out
}

// ActiveCount is the number of active units (all scopes).
func (s *Store) ActiveCount(ctx context.Context) (int, error) {
	var n int
	err := s.r.QueryRowContext(ctx, `SELECT COALESCE((SELECT df FROM memory_terms WHERE term = '#'), 0)`).Scan(&n)
	return n, err
}

// factShare is the part of memory.max_tokens reserved for the facts
// relevant to the turn; the standing rules have the rest (and whatever the
// facts leave).
const factShare = 0.4

// Retrieve ranks the visible units for q and renders the standing rules and
// the relevant facts within their limits and the token budget.
func (s *Store) Retrieve(ctx context.Context, q Query) (Result, error) {
	topK, standingK, budget := q.TopK, q.StandingK, q.MaxTokens
	if topK <= 0 {
		topK = s.o.TopK
	}
	if standingK <= 0 {
		standingK = max(0, s.o.StandingK)
	}
	if budget <= 0 {
		budget = s.o.MaxTokens
	}
	src, err := s.source(ctx)
	if err != nil {
		return Result{}, err
	}
	defer releaseSource(src)
	return s.retrieveFrom(ctx, src, q, topK, standingK, budget, q.sectionOnly)
}

func (s *Store) retrieveFrom(ctx context.Context, src source, q Query, topK, standingK, budget int, sectionOnly bool) (Result, error) {
	sc := newScoreScratch()
	defer sc.release()
	all, err := s.score(ctx, src, q, nil, true, sc)
	if err != nil {
		return Result{}, err
	}
	rules, facts := sc.rules[:0], sc.facts[:0]
	for _, c := range all {
		switch {
		case c.standingKind:
			if c.pool || len(c.matched) > 0 {
				rules = append(rules, c)
			}
		case c.relevant:
			facts = append(facts, c)
		}
	}
	sc.rules, sc.facts = rules, facts

	var groups typeSet
	var picked [2 * maxPicked]*scored
	chosenFacts, used := fit(bestFirst(facts, betterFact), topK, int(factShare*float64(budget)), 0, &groups, nil, picked[:0:maxPicked])
	chosenRules, _ := fit(bestFirst(rules, betterRule), standingK, budget, used, &groups, nearDuplicate, picked[maxPicked:maxPicked])
	n := len(chosenRules) + len(chosenFacts)
	var itemsBuf [2 * maxPicked]item
	items := itemsBuf[:0]
	if n > len(itemsBuf) {
		items = make([]item, 0, n)
	}
	chosen := func(yield func(*scored) bool) {
		for _, c := range chosenRules {
			if !yield(c) {
				return
			}
		}
		for _, c := range chosenFacts {
			if !yield(c) {
				return
			}
		}
	}
	for c := range chosen {
		items = append(items, item{typ: c.d.typ, said: c.d.said, id: c.d.id, line: c.d.line, tokens: c.d.w.tokens})
	}
	res := Result{Section: renderItems(items, budget)}
	if !sectionOnly {
		res.Hits = make([]Hit, 0, n)
		for c := range chosen {
			h, err := c.hit(ctx, src, c.standingKind)
			if err != nil {
				return Result{}, err
			}
			res.Hits = append(res.Hits, h)
		}
	}
	return res, nil
}

// maxPicked is how many facts, and rules, retrieval picks without
// allocating (the limits are a few).
const maxPicked = 16

func better(a, b float64, ra, rb int64) bool {
	if a != b {
		return a > b
	}
	return ra > rb
}

func betterFact(a, b *scored) bool { return better(a.score, b.score, a.d.w.rowid, b.d.w.rowid) }
func betterRule(a, b *scored) bool { return better(a.rule, b.rule, a.d.w.rowid, b.d.w.rowid) }

// bestFirst hands over cands best first by better (a strict total order:
// the row id breaks ties), reordering cands in place. It is a heap, not a
// sort: fit stops after a few picks, and sorting every candidate of the
// turn took a tenth of retrieval's time on the request path (issue 10).
func bestFirst(cands []*scored, better func(a, b *scored) bool) iter.Seq[*scored] {
	return func(yield func(*scored) bool) {
		n := len(cands)
		for i := n/2 - 1; i >= 0; i-- {
			siftDown(cands, i, n, better)
		}
		for n > 0 {
			top := cands[0]
			n--
			cands[0], cands[n] = cands[n], cands[0]
			siftDown(cands, 0, n, better)
			if !yield(top) {
				return
			}
		}
	}
}

// siftDown restores the heap order of h[:n] below i (the best at the root).
func siftDown(h []*scored, i, n int, better func(a, b *scored) bool) {
	for {
		c := 2*i + 1
		if c >= n {
			return
		}
		if r := c + 1; r < n && better(h[r], h[c]) {
			c = r
		}
		if !better(h[c], h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// order is better as a comparison (best first) for slices.SortFunc.
func order(a, b float64, ra, rb int64) int {
	switch {
	case better(a, b, ra, rb):
		return -1
	case better(b, a, rb, ra):
		return 1
	}
	return 0
}

// typeSet is a set of unit types (the group headers fit has counted).
type typeSet [8]bool

func (g *typeSet) has(t Type) bool { return g[typeRank(t)] }
func (g *typeSet) add(t Type)      { g[typeRank(t)] = true }

// fit picks, best first, up to k candidates whose lines fit the budget
// (used tokens are already spent; group headers count once), skipping
// those too close to one already picked; it appends them to out.
func fit(cands iter.Seq[*scored], k, budget, used int, groups *typeSet, near func(a, b *scored) bool, out []*scored) ([]*scored, int) {
	for c := range cands {
		if len(out) == k {
			break
		}
		cost := c.d.w.tokens + 1
		if !groups.has(c.d.typ) {
			cost += 8 // group header
		}
		if used+cost > budget-4 {
			continue
		}
		if near != nil {
			dup := false
			for _, o := range out {
				if near(o, c) {
					dup = true
					break
				}
			}
			if dup {
				continue
			}
		}
		used += cost
		groups.add(c.d.typ)
		out = append(out, c)
	}
	return out, used
}

// nearDuplicate: two standing units about the same slot, or in nearly the
// same words (consolidation merges paraphrases; this also holds for units
// learned before it did, or added by hand).
func nearDuplicate(a, b *scored) bool {
	if a.d.slot != "" && a.d.slot == b.d.slot {
		return true
	}
	x, y := len(a.d.sorted), len(b.d.sorted)
	if 10*min(x, y) < 6*max(x, y) { // |a∩b|/|a∪b| ≤ min/max < 0.6
		return false
	}
	if 8*overlapBound(a.d, b.d) < 3*(x+y) { // |a∩b| < 0.375 (|a|+|b|): |a∩b|/|a∪b| < 0.6
		return false
	}
	return sortedJaccard(a.d.sorted, b.d.sorted) >= 0.6
}

// overlapBound bounds |a∩b| of two units' terms from their signatures: the
// common terms set bits both signatures hold, and at most |a| − bits(a)
// of a's terms share a bit with another of a's.
func overlapBound(a, b *derived) int {
	return min(bits.OnesCount64(a.sig&b.sig)+len(a.sorted)-a.sigN, bits.OnesCount64(a.sig&b.sig)+len(b.sorted)-b.sigN)
}

// SearchQuery is a lexical search (CLI, HTTP).
type SearchQuery struct {
	Scope string
	// Agent limits results to the scope's shared units and that agent's;
	// AllAgents searches every agent's units of the scope.
	Agent     string
	AllAgents bool
	Text      string
	Limit     int
}

// Search ranks the units matching a query (no standing units, no budget).
// A query naming a slot's category ("database") finds the units in that
// slot ("we switched to MySQL").
func (s *Store) Search(ctx context.Context, sq SearchQuery) ([]Hit, error) {
	if sq.Limit <= 0 {
		sq.Limit = 20
	}
	q := Query{Scope: sq.Scope, Agent: sq.Agent, Texts: []string{sq.Text}}
	var vis []string
	if sq.AllAgents {
		var err error
		if vis, err = s.scopeVis(ctx, s.ScopeKey(sq.Scope)); err != nil {
			return nil, err
		}
	}
	// Searches (CLI, HTTP, tools) read SQLite: the freshest counts.
	src, err := s.sqlSourceNow(ctx)
	if err != nil {
		return nil, err
	}
	sc := newScoreScratch()
	defer sc.release()
	all, err := s.score(ctx, src, q, vis, false, sc)
	if err != nil {
		return nil, err
	}
	var found []*scored
	for _, c := range all {
		if len(c.matched) > 0 || c.emb >= minCosine {
			found = append(found, c)
		}
	}
	slices.SortFunc(found, func(a, b *scored) int { return order(a.score, b.score, a.d.w.rowid, b.d.w.rowid) })
	if len(found) > sq.Limit {
		found = found[:sq.Limit]
	}
	hits := make([]Hit, len(found))
	units := make([]*Unit, len(found))
	for i, c := range found {
		h, err := c.hit(ctx, src, false)
		if err != nil {
			return nil, err
		}
		hits[i] = h
		units[i] = &hits[i].Unit
	}
	return hits, withInjections(ctx, s.r, units)
}

// scopeVis lists the visibility tokens of every agent in a scope.
func (s *Store) scopeVis(ctx context.Context, scope string) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT agent FROM memory_units WHERE scope = ?`, scope)
	if err != nil {
		return nil, fmt.Errorf("memory: agents: %w", err)
	}
	defer rows.Close()
	vis := []string{visToken(scope, "")}
	for rows.Next() {
		var a string
		if err := rows.Scan(&a); err != nil {
			return nil, err
		}
		if a != "" {
			vis = append(vis, visToken(scope, a))
		}
	}
	return vis, rows.Err()
}
