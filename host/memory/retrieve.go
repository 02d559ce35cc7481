package memory

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/embed"
	"github.com/metaclaw-go/metaclaw/host/tokens"
)

// Retrieval is read-only: it never writes (the request path must not wait
// for the writer, and reading must not change what is read). Which units were
// injected is known from the turns' injected ids and counted at ingestion.

// Hit is a ranked unit.
type Hit struct {
	Unit
	Score   float64  `json:"score"`
	Matched []string `json:"matched_terms,omitempty"`
	Reason  string   `json:"reason,omitempty"`
}

// Query asks for the memories relevant to a turn.
type Query struct {
	Scope string // scope key (core.Scope.Key()); "default" means memory.scope
	Agent string // the asking agent: it sees the scope's shared units and its own
	// Texts are the recent user messages, oldest first (core.Query.UserTexts).
	Texts []string
	// TopK and MaxTokens override the store's options when > 0.
	TopK      int
	MaxTokens int
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
	res, err := s.Retrieve(ctx, Query{Scope: q.Scope.Key(), Agent: agent, Texts: q.UserTexts})
	return res.Section, err
}

// Counts implements core.Counter.
func (s *Store) Counts(ctx context.Context) map[string]int {
	out := map[string]int{}
	if n, err := s.ActiveCount(ctx); err == nil {
		out["memories"] = n
	}
	pendingCounts(ctx, s.r, out)
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

// Retrieve ranks the visible units for q and renders the top ones within
// the token budget.
func (s *Store) Retrieve(ctx context.Context, q Query) (Result, error) {
	topK, budget := q.TopK, q.MaxTokens
	if topK <= 0 {
		topK = s.o.TopK
	}
	if budget <= 0 {
		budget = s.o.MaxTokens
	}
	hits, err := s.rank(ctx, q, true, 4*topK+8)
	if err != nil {
		return Result{}, err
	}
	chosen := fit(hits, topK, budget)
	sec := Render(chosen, budget)
	return Result{Section: sec, Hits: chosen}, nil
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
	hits, err := s.rankVis(ctx, q, vis, false, sq.Limit)
	if len(hits) > sq.Limit {
		hits = hits[:sq.Limit]
	}
	return hits, err
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

// visCache holds, for one visibility token and one generation, the units
// every query of that token considers (standing preferences and facts, the
// newest session summary) and their embeddings.
type visCache struct {
	gen      int64
	standing []Unit
	sets     []map[string]struct{} // term sets of the standing units
	summary  []Unit
	vecs     []vecEntry
	vecsOK   bool
}

// unitTermSet is what a query's terms are matched against.
func unitTermSet(u *Unit) map[string]struct{} {
	set := make(map[string]struct{}, 16)
	for _, t := range indexTerms(u) {
		set[t] = struct{}{}
	}
	return set
}

type vecEntry struct {
	rowid int64
	v     []float32
}

// genTTL is how long a generation read from the database is trusted:
// writes through this Store are seen at once; writes by another process
// (the CLI) within this delay.
const genTTL = 250 * time.Millisecond

func (s *Store) currentGeneration(ctx context.Context) (int64, error) {
	s.genMu.Lock()
	defer s.genMu.Unlock()
	local := s.localGen.Load()
	if local == s.genLocal && !s.genAt.IsZero() && time.Since(s.genAt) < genTTL {
		return s.genVal, nil
	}
	v, err := generation(ctx, s.r)
	if err != nil {
		return 0, err
	}
	s.genVal, s.genAt, s.genLocal = v, time.Now(), local
	return v, nil
}

// standingFor returns the cached standing units of one token.
func (s *Store) standingFor(ctx context.Context, vis string, gen int64) (*visCache, error) {
	s.cacheMu.Lock()
	c := s.cache[vis]
	s.cacheMu.Unlock()
	if c != nil && c.gen == gen {
		return c, nil
	}
	c = &visCache{gen: gen}
	for _, typ := range []Type{Preference, Semantic, ProjectState} {
		rows, err := s.r.QueryContext(ctx, `SELECT `+unitCols+` FROM memory_units WHERE vis = ? AND status = 'active' AND type = ?
ORDER BY importance DESC LIMIT 16`, vis, string(typ))
		if err != nil {
			return nil, fmt.Errorf("memory: standing: %w", err)
		}
		for rows.Next() {
			u, err := scanUnit(rows)
			if err != nil {
				rows.Close()
				return nil, err
			}
			// Personal facts ("my timezone is…", the user's name) always
			// apply; other facts need the conversation to touch them.
			if typ != Semantic || strings.HasPrefix(u.Subject, "fact:my ") || u.Subject == "fact:name" {
				c.standing = append(c.standing, u)
				c.sets = append(c.sets, unitTermSet(&u))
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+unitCols+` FROM memory_units WHERE vis = ? AND status = 'active' AND type = 'working_summary'
ORDER BY said_at DESC LIMIT 2`, vis)
	if err != nil {
		return nil, fmt.Errorf("memory: summaries: %w", err)
	}
	for rows.Next() {
		u, err := scanUnit(rows)
		if err != nil {
			rows.Close()
			return nil, err
		}
		c.summary = append(c.summary, u)
	}
	rows.Close()
	s.cacheMu.Lock()
	if len(s.cache) > 4096 {
		clear(s.cache)
	}
	s.cache[vis] = c
	s.cacheMu.Unlock()
	return c, rows.Err()
}

// vectors returns the cached embeddings of one token.
func (s *Store) vectors(ctx context.Context, c *visCache, vis string) ([]vecEntry, error) {
	s.cacheMu.Lock()
	if c.vecsOK {
		v := c.vecs
		s.cacheMu.Unlock()
		return v, nil
	}
	s.cacheMu.Unlock()
	rows, err := s.r.QueryContext(ctx, `SELECT id, embedding FROM memory_units WHERE vis = ? AND status = 'active' AND embedding IS NOT NULL`, vis)
	if err != nil {
		return nil, fmt.Errorf("memory: embeddings: %w", err)
	}
	defer rows.Close()
	var out []vecEntry
	for rows.Next() {
		var e vecEntry
		var b []byte
		if err := rows.Scan(&e.rowid, &b); err != nil {
			return nil, err
		}
		e.v = embed.Decode(b)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	s.cacheMu.Lock()
	c.vecs, c.vecsOK = out, true
	s.cacheMu.Unlock()
	return out, nil
}

// queryTerms are the distinct terms of the texts, newest text first.
func queryTerms(texts []string) []string {
	var out []string
	for i := len(texts) - 1; i >= 0 && len(out) < 48; i-- {
		out = append(out, Terms(texts[i])...)
	}
	out = distinct(out)
	if len(out) > 48 {
		out = out[:48]
	}
	return out
}

var continuityCue = regexp.MustCompile(`(?i)\b(?:last time|yesterday|earlier|previous(?:ly)?|where were we|where did we leave|continue|pick up|resume|as before|we discussed|we were (?:doing|working))\b|上次|昨天|之前|继续|接着|刚才`)

func (s *Store) rank(ctx context.Context, q Query, standing bool, limit int) ([]Hit, error) {
	return s.rankVis(ctx, q, nil, standing, limit)
}

// rankVis scores the candidates: FTS5 bm25() over the rarest query terms,
// plus (standing) the scope's preferences and personal facts and its newest
// session summary, plus (embeddings) the nearest units by cosine.
func (s *Store) rankVis(ctx context.Context, q Query, vis []string, standing bool, limit int) ([]Hit, error) {
	scope := s.ScopeKey(q.Scope)
	if vis == nil {
		vis = visible(scope, q.Agent)
	}
	now := s.now()
	qterms := queryTerms(q.Texts)
	gen, err := s.currentGeneration(ctx)
	if err != nil {
		return nil, fmt.Errorf("memory: %w", err)
	}

	// Document frequencies (per visibility) decide which terms are worth
	// asking FTS5 for: a term in most units costs much and ranks little.
	if max := 600 / len(vis); len(qterms) > max {
		qterms = qterms[:max]
	}
	keyDF, err := s.frequencies(ctx, vis, qterms)
	if err != nil {
		return nil, err
	}
	df := make(map[string]int, len(qterms))
	total := 0
	for _, v := range vis {
		k := visKey(v)
		total += keyDF["#"+k]
		for _, t := range qterms {
			df[t] += keyDF[k+t]
		}
	}
	idf := func(t string) float64 {
		d := float64(df[t])
		return math.Log(1 + (float64(total)-d+0.5)/(d+0.5))
	}
	var present []string
	for _, t := range qterms {
		if df[t] > 0 {
			present = append(present, t)
		}
	}
	// Rarest first, within a budget of postings: the work FTS5 does is
	// bounded whatever the query, and rare terms are the ones that rank.
	sort.SliceStable(present, func(i, j int) bool { return df[present[i]] < df[present[j]] })
	budget := max(200, total/400)
	var match []string
	spent := 0
	for _, t := range present {
		if len(match) == 8 || spent+df[t] > budget && len(match) > 0 {
			break
		}
		if df[t] > budget {
			break
		}
		match = append(match, t)
		spent += df[t]
	}

	// Candidates point at units (the standing ones are shared with the
	// cache, read-only); only the final hits are copied.
	type cand struct {
		u        *Unit
		set      map[string]struct{}
		standing bool
	}
	cands := make(map[int64]*cand, 64)
	var order []int64
	add := func(u *Unit, set map[string]struct{}, standing bool) {
		if c, ok := cands[u.rowid]; ok {
			c.standing = c.standing || standing
			return
		}
		cands[u.rowid] = &cand{u: u, set: set, standing: standing}
		order = append(order, u.rowid)
	}
	bm := map[int64]float64{}
	if len(match) > 0 {
		var phrases []string
		for _, t := range match {
			for _, v := range vis {
				if k := visKey(v) + t; keyDF[k] > 0 {
					phrases = append(phrases, k)
				}
			}
		}
		units, err := s.ftsUnits(ctx, phrases, 24, bm)
		if err != nil {
			return nil, err
		}
		for i := range units {
			add(&units[i], nil, false)
		}
	}
	cue := false
	for _, t := range q.Texts {
		if continuityCue.MatchString(t) {
			cue = true
		}
	}
	var caches []*visCache
	if standing || s.embeddingsOn() {
		for _, v := range vis {
			c, err := s.standingFor(ctx, v, gen)
			if err != nil {
				return nil, err
			}
			caches = append(caches, c)
		}
	}
	if standing {
		for _, c := range caches {
			for i := range c.standing {
				add(&c.standing[i], c.sets[i], true)
			}
			if cue {
				for i := range c.summary {
					add(&c.summary[i], nil, false)
				}
			}
		}
	}
	cos := map[int64]float64{}
	if s.embeddingsOn() && len(q.Texts) > 0 {
		if err := s.nearest(ctx, q, vis, caches, cos); err != nil {
			s.o.Log.Debug().Err(err).Msg("memory: query embedding failed; ranking without it")
		} else {
			var need []int64
			for id := range cos {
				if _, ok := cands[id]; !ok {
					need = append(need, id)
				}
			}
			units, err := unitsByRowids(ctx, s.r, need)
			if err != nil {
				return nil, fmt.Errorf("memory: read hits: %w", err)
			}
			for i := range units {
				add(&units[i], nil, false)
			}
		}
	}

	// Score: lexical (bm25 and idf-weighted coverage of the query), entity
	// overlap, embedding similarity, importance (decayed), recency, type.
	var qw float64
	qset := make(map[string]struct{}, len(present))
	for _, t := range present {
		qset[t] = struct{}{}
		qw += idf(t)
	}
	maxBM := 0.0
	for _, v := range bm {
		maxBM = max(maxBM, -v)
	}
	type scored struct {
		c       *cand
		score   float64
		matched []string
		emb     float64
	}
	out := make([]scored, 0, len(order))
	for _, id := range order {
		c := cands[id]
		u := c.u
		if u.Status != StatusActive || u.ExpiresAt != nil && !u.ExpiresAt.After(now) || !contains(vis, u.vis) {
			continue
		}
		uterms := c.set
		if uterms == nil {
			uterms = unitTermSet(u)
		}
		var cov float64
		var matched []string
		for _, t := range present {
			if _, ok := uterms[t]; ok {
				cov += idf(t)
				matched = append(matched, t)
			}
		}
		emb := cos[id]
		isCue := u.Type == WorkingSummary && cue
		// Session summaries quote what was said, superseded statements
		// included: they come only when the user asks to pick up the thread.
		if !((len(matched) > 0 || emb >= 0.35 || c.standing) && u.Type != WorkingSummary || isCue) {
			continue
		}
		if qw > 0 {
			cov /= qw
		}
		lex := 0.0
		if b, ok := bm[id]; ok && maxBM > 0 {
			lex = 0.5 * (-b / maxBM)
		}
		lex += 0.5 * min(1, 2*cov)
		ent := 0.0
		if len(u.Entities) > 0 && len(matched) > 0 {
			n := 0
			for _, e := range u.Entities {
				for _, t := range Terms(e) {
					if _, ok := qset[t]; ok {
						n++
						break
					}
				}
			}
			ent = float64(n) / float64(len(u.Entities))
		}
		imp := effectiveImportance(u, now)
		ageDays := now.Sub(u.LastSeenAt).Hours() / 24
		rec := math.Exp(-max(0, ageDays) / 14)
		score := 0.45*lex + 0.1*ent + 0.3*imp + 0.1*rec
		if s.embeddingsOn() {
			score += 0.3 * max(0, emb)
		}
		if isCue {
			score += 0.3
		}
		score *= typeBoost[u.Type] * (0.8 + 0.2*u.Confidence)
		out = append(out, scored{c: c, score: math.Round(score*1e4) / 1e4, matched: matched, emb: emb})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].score != out[j].score {
			return out[i].score > out[j].score
		}
		return out[i].c.u.rowid > out[j].c.u.rowid
	})
	if len(out) > limit {
		out = out[:limit]
	}
	hits := make([]Hit, len(out))
	for i, o := range out {
		sort.Strings(o.matched)
		hits[i] = Hit{Unit: *o.c.u, Score: o.score, Matched: o.matched,
			Reason: reason(len(o.matched) > 0, o.c.standing, o.emb >= 0.35, o.c.u.Type == WorkingSummary && cue)}
	}
	return hits, nil
}

func reason(lex, standing, emb, cue bool) string {
	var r []string
	if lex {
		r = append(r, "matched")
	}
	if emb {
		r = append(r, "similar")
	}
	if standing {
		r = append(r, "standing")
	}
	if cue {
		r = append(r, "continuity")
	}
	return strings.Join(r, ",")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

var typeBoost = map[Type]float64{Preference: 1, Semantic: 1, ProjectState: 1, Episodic: 0.85, WorkingSummary: 0.8}

// halfLife is how fast a type's importance fades after it was last stated.
var halfLife = map[Type]float64{Preference: 365, Semantic: 270, ProjectState: 120, Episodic: 30, WorkingSummary: 7}

// effectiveImportance is computed at read time from timestamps (so decay is
// idempotent): importance, reinforced by repetition, halved every half-life
// since the unit was last stated; stated preferences and facts keep at least
// half their weight.
func effectiveImportance(u *Unit, now time.Time) float64 {
	imp := u.Importance
	if u.Mentions > 1 {
		imp += 0.05 * math.Log2(float64(u.Mentions))
	}
	imp = min(1, imp)
	age := max(0, now.Sub(u.LastSeenAt).Hours()/24)
	hl := halfLife[u.Type]
	if hl == 0 {
		hl = 90
	}
	d := math.Pow(0.5, age/hl)
	floor := 0.1
	if u.Type == Preference || u.Type == Semantic {
		floor = 0.5
	}
	return imp * max(d, floor)
}

// frequencies reads the counts of the (visibility, term) keys and of the
// visibilities' units.
func (s *Store) frequencies(ctx context.Context, vis, terms []string) (map[string]int, error) {
	return frequenciesIn(ctx, s.r, vis, terms)
}

func frequenciesIn(ctx context.Context, q queryer, vis, terms []string) (map[string]int, error) {
	args := make([]any, 0, len(vis)*(len(terms)+1))
	for _, v := range vis {
		k := visKey(v)
		args = append(args, "#"+k)
		for _, t := range terms {
			args = append(args, k+t)
		}
	}
	df := make(map[string]int, len(args))
	rows, err := q.QueryContext(ctx, `SELECT term, df FROM memory_terms WHERE term IN (?`+strings.Repeat(",?", len(args)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("memory: term frequencies: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var t string
		var n int
		if err := rows.Scan(&t, &n); err != nil {
			return nil, err
		}
		df[t] = n
	}
	return df, rows.Err()
}

// ftsQuery is the MATCH expression for any of the index tokens.
func ftsQuery(tokens []string) string {
	var b strings.Builder
	b.WriteString("terms : (")
	for i, t := range tokens {
		if i > 0 {
			b.WriteString(" OR ")
		}
		b.WriteString(`"`)
		b.WriteString(t)
		b.WriteString(`"`)
	}
	b.WriteString(")")
	return b.String()
}

// ftsUnits runs bm25() ranking (lower is better) and reads the units found,
// in one statement; bm receives row id → score.
func (s *Store) ftsUnits(ctx context.Context, tokens []string, limit int, bm map[int64]float64) ([]Unit, error) {
	if len(tokens) == 0 {
		return nil, nil
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+prefixed("u.", unitCols)+`, f.r FROM
    (SELECT rowid, bm25(memory_fts, 1.0, 0.0) AS r FROM memory_fts WHERE memory_fts MATCH ? ORDER BY r LIMIT ?) f
    JOIN memory_units u ON u.id = f.rowid`, ftsQuery(tokens), limit)
	if err != nil {
		return nil, fmt.Errorf("memory: search: %w", err)
	}
	defer rows.Close()
	out := make([]Unit, 0, limit)
	for rows.Next() {
		var r float64
		u, err := scanUnitPlus(rows, &r)
		if err != nil {
			return nil, fmt.Errorf("memory: search: %w", err)
		}
		bm[u.rowid] = r
		out = append(out, u)
	}
	return out, rows.Err()
}

// prefixed qualifies a column list with a table alias.
func prefixed(alias, cols string) string {
	parts := strings.Split(cols, ",")
	for i, p := range parts {
		parts[i] = alias + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

func (s *Store) embeddingsOn() bool {
	return s.o.Embedder != nil && s.o.Mode != "keyword"
}

// nearest embeds the query and scans the visible vectors exactly.
func (s *Store) nearest(ctx context.Context, q Query, vis []string, caches []*visCache, cos map[int64]float64) error {
	text := strings.Join(q.Texts, "\n")
	if len(text) > 4000 {
		text = text[len(text)-4000:]
	}
	ectx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	vecs, err := s.o.Embedder.Embed(ectx, []string{text})
	if err != nil || len(vecs) != 1 {
		if err == nil {
			err = fmt.Errorf("embedder returned %d vectors", len(vecs))
		}
		return err
	}
	qv := vecs[0]
	type sc struct {
		id int64
		c  float64
	}
	var best []sc
	for i, c := range caches {
		entries, err := s.vectors(ctx, c, vis[i])
		if err != nil {
			return err
		}
		for _, e := range entries {
			if d := float64(embed.Dot(qv, e.v)); d >= 0.2 {
				best = append(best, sc{e.rowid, d})
			}
		}
	}
	sort.Slice(best, func(i, j int) bool { return best[i].c > best[j].c })
	if len(best) > 24 {
		best = best[:24]
	}
	for _, b := range best {
		cos[b.id] = b.c
	}
	return nil
}

// fit picks, best first, the hits that fit topK and the token budget.
func fit(hits []Hit, topK, budget int) []Hit {
	var out []Hit
	used := 0
	groups := map[Type]bool{}
	for _, h := range hits {
		if len(out) == topK {
			break
		}
		cost := h.tokens + 1
		if !groups[h.Type] {
			cost += 8 // group header
		}
		if used+cost > budget-4 {
			continue
		}
		used += cost
		groups[h.Type] = true
		out = append(out, h)
	}
	return out
}

var groupTitle = map[Type]string{
	Preference:     "Preferences and rules",
	Semantic:       "Facts",
	ProjectState:   "Project state",
	Episodic:       "Events",
	WorkingSummary: "Recent sessions",
}

// Render writes the hits as the "Memories" section: grouped by type in a
// fixed order, each group in the order things were said, so the same set of
// memories always renders to the same text. Hits beyond the budget (as
// measured by the real tokenizer) are dropped, lowest score first.
//
// Sizes come from each unit's line, counted with the real tokenizer when the
// unit was written, plus the group headers: an upper bound of the body's
// count (lines are joined by newlines, which BPE never merges into fewer
// tokens than the parts), so the request path does not tokenize.
func Render(hits []Hit, budget int) core.Section {
	for len(hits) > 0 {
		n := bodyTokens(hits)
		if budget <= 0 || n <= budget {
			body := renderBody(hits)
			ids := make([]string, len(hits))
			for i, h := range hits {
				ids[i] = "memory:" + h.ID
			}
			return core.Section{Title: "Memories", Body: body, IDs: ids, Tokens: n}
		}
		hits = hits[:len(hits)-1] // hits are best first
	}
	return core.Section{Title: "Memories"}
}

var (
	headerOnce sync.Once
	headerToks map[Type]int
)

// bodyTokens bounds the token count of renderBody(hits).
func bodyTokens(hits []Hit) int {
	headerOnce.Do(func() {
		headerToks = map[Type]int{}
		for t, title := range groupTitle {
			headerToks[t] = tokens.Count("### " + title + "\n")
		}
	})
	seen := map[Type]bool{}
	n := 0
	for i := range hits {
		h := &hits[i]
		if !seen[h.Type] {
			seen[h.Type] = true
			n += headerToks[h.Type] + 1
		}
		if h.tokens == 0 {
			h.tokens = tokens.Count(renderLine(&h.Unit))
		}
		n += h.tokens + 1
	}
	return n
}

func renderBody(hits []Hit) string {
	byType := map[Type][]Hit{}
	for _, h := range hits {
		byType[h.Type] = append(byType[h.Type], h)
	}
	var b strings.Builder
	for _, t := range Types {
		group := byType[t]
		if len(group) == 0 {
			continue
		}
		sort.Slice(group, func(i, j int) bool {
			if !group[i].SaidAt.Equal(group[j].SaidAt) {
				return group[i].SaidAt.Before(group[j].SaidAt)
			}
			return group[i].ID < group[j].ID
		})
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("### ")
		b.WriteString(groupTitle[t])
		b.WriteString("\n")
		for _, h := range group {
			b.WriteString(renderLine(&h.Unit))
			b.WriteString("\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
