package skills

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/metaclaw-go/metaclaw/host/embed"
)

// Retrieval modes (skills.retrieval_mode).
const (
	ModeKeyword   = "keyword"
	ModeEmbedding = "embedding"
	ModeHybrid    = "hybrid"
)

// Column weights of bm25(): a term in the name counts most, then the
// description (it says when to use the skill) and tags, then the body.
const bm25Weights = "8.0, 4.0, 4.0, 1.0"

// termSQL is BM25 (FTS5's bm25()) of one quoted term over every skill.
const termSQL = `SELECT s.name, bm25(skills_fts, ` + bm25Weights + `)
FROM skills_fts JOIN skills s ON s.id = skills_fts.rowid
WHERE skills_fts MATCH ?`

// rankSQL ranks a whole MATCH expression in one FTS5 query (used for turns
// whose terms are not cached yet).
const rankSQL = `SELECT s.name, bm25(skills_fts, ` + bm25Weights + `) AS score
FROM skills_fts JOIN skills s ON s.id = skills_fts.rowid
WHERE skills_fts MATCH ? ORDER BY score, s.name`

// querySQL ranks a whole MATCH expression at once. The request path does
// not use it (see keywordHits); it is the reference the term cache is
// tested against, and what `metaclaw skills search --sql` runs.
const querySQL = `SELECT s.name, bm25(skills_fts, ` + bm25Weights + `) AS score
FROM skills_fts JOIN skills s ON s.id = skills_fts.rowid
WHERE skills_fts MATCH ?1 AND (?2 OR s.status = 'active')
  AND (?3 = '' OR s.agents = '' OR instr(s.agents, ?3) > 0 OR instr(s.agents, ',*,') > 0)
ORDER BY score, s.name LIMIT ?4`

// SearchOptions describe one search.
type SearchOptions struct {
	Texts []string // the conversation's recent user texts, oldest first
	Agent string   // only skills for this agent; "" = ignore agent scopes
	Limit int      // default 6
	Mode  string   // keyword (default) | embedding | hybrid
	// All includes pending and disabled skills (CLI search); injection never does.
	All bool
	// Embedder embeds the query for embedding/hybrid modes.
	Embedder embed.Embedder
	// MinRelative drops hits scoring below this fraction of the best one.
	MinRelative float64
	// Floor, when set, returns no hit at all for a turn that is not about
	// anything the library knows (keyword mode).
	Floor *RelevanceFloor
}

// RelevanceFloor decides whether a turn is about anything the library
// covers, so that a greeting or an unrelated turn gets no skill. A turn
// passes when one of its hits scores Strong (BM25, higher is better), or a
// hit that matches at least two distinct query terms scores Pair, or the
// library knows at least Coverage of the turn's query terms (a question in
// the library's vocabulary, however short). Measured on testdata/: the
// 60 off-topic turns of offtopic.jsonl and the 128 labelled ones of
// retrieval*.jsonl (see TestRelevanceFloor).
type RelevanceFloor struct {
	Strong   float64
	Pair     float64
	Coverage float64
}

// minFloorSkills: below this many skills BM25's document frequencies say
// little (one skill makes every term's IDF zero), so small libraries inject
// on any match, as before.
const minFloorSkills = 8

// DefaultFloor is the floor injection uses unless configured otherwise.
var DefaultFloor = RelevanceFloor{Strong: 6, Pair: 5, Coverage: 0.7}

// Hit is one search result.
type Hit struct {
	Skill    *Skill  `json:"skill"`
	Score    float64 `json:"score"`
	Keyword  float64 `json:"keyword,omitempty"`  // -bm25 (higher is better)
	Semantic float64 `json:"semantic,omitempty"` // cosine similarity
}

type hit struct {
	e        *entry
	score    float64
	keyword  float64
	semantic float64
	terms    int // query terms matched (keyword hits)
}

// Search ranks skills for a conversation. It only reads.
func (l *Library) Search(ctx context.Context, o SearchOptions) ([]Hit, error) {
	hits, err := l.search(ctx, o, nil)
	out := make([]Hit, len(hits))
	for i, h := range hits {
		out[i] = Hit{Skill: h.e.skill.Clone(), Score: h.score, Keyword: h.keyword, Semantic: h.semantic}
	}
	return out, err
}

func (l *Library) prepareStmts() {
	if l.stmt, l.stmtErr = l.r.Prepare(termSQL); l.stmtErr != nil {
		return
	}
	l.stmtQuery, l.stmtErr = l.r.Prepare(rankSQL)
}

func (l *Library) prepare() error {
	l.stmtOnce.Do(l.prepareStmts)
	return l.stmtErr
}

// match builds the MATCH expression for a conversation (see queryTerms).
func (s *snapshot) match(texts []string) string { return MatchExpr(s.queryTerms(texts)) }

// queryTerms are the conversation's search terms minus those found in more
// than half the skills: FTS5's bm25 clamps their IDF to 1e-6, so they
// cannot change the ranking, yet they would make the query visit every row.
func (s *snapshot) queryTerms(texts []string) []string {
	terms, _ := s.queryTermsTok(texts, nil)
	return terms
}

// queryTermsTok is queryTerms plus each kept term's token number in the
// in-memory index (unknownToken where not known), appended to toks: a
// term the skills contain is found once, for its document frequency and
// its token together.
func (s *snapshot) queryTermsTok(texts []string, toks []int32) ([]string, []int32) {
	terms := QueryTerms(texts, MaxQueryTerms*2)
	n := len(s.sorted)
	kept := terms[:0]
	for _, t := range terms {
		df, tok := 0, int32(unknownToken)
		if i := s.df.index(t); i >= 0 {
			df = int(s.df.n[i])
			if s.kw != nil {
				if st, ok := s.kw.surface(s.df, i); ok {
					tok = st
				}
			}
		}
		// A term no skill has keeps unknownToken: it may share its stem
		// with one that is (kwPostings stems it).
		if n >= 8 && df*2 > n {
			continue
		}
		kept = append(kept, t)
		toks = append(toks, tok)
		if len(kept) == MaxQueryTerms {
			break
		}
	}
	return kept, toks
}

// posting is one skill's BM25 contribution for one term.
type posting struct {
	idx   int32   // position in snapshot.sorted
	score float64 // -bm25 of the single term (higher is better)
}

// termCache keeps FTS5's per-term BM25 results for one index generation.
//
// FTS5's bm25() of an OR query is the sum, phrase by phrase, of each
// phrase's own bm25() (IDF, column weights, k1, b and document lengths are
// per phrase and per row), so summing cached single-term results gives
// exactly the score of the OR'ed MATCH expression (TestTermCacheMatchesFTS5
// checks it) while a turn costs map lookups instead of a full FTS5 query:
// agents resend the same user texts on every tool round, and user
// vocabulary repeats.
type termCache struct {
	mu    sync.RWMutex
	gen   uint64
	m     map[string][]posting
	total int
}

// maxCachedPostings bounds the cache (about 16 bytes each).
const maxCachedPostings = 1 << 20

func (c *termCache) get(gen uint64, term string) ([]posting, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.gen != gen {
		return nil, false
	}
	p, ok := c.m[term]
	return p, ok
}

func (c *termCache) reset() {
	c.mu.Lock()
	c.m, c.total = nil, 0
	c.mu.Unlock()
}

func (c *termCache) put(gen uint64, term string, p []posting) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gen != gen || c.m == nil || c.total+len(p) > maxCachedPostings {
		if gen < c.gen {
			return // a newer generation is already cached
		}
		c.gen, c.m, c.total = gen, map[string][]posting{}, 0
	}
	c.m[term] = p
	c.total += len(p) + 1
}

// termPostings returns the BM25 contribution of one term for every skill
// that contains it, from the cache or from FTS5.
func (l *Library) termPostings(ctx context.Context, snap *snapshot, term string) ([]posting, error) {
	if p, ok := l.terms.get(snap.gen, term); ok {
		return p, nil
	}
	if err := l.prepare(); err != nil {
		return nil, fmt.Errorf("skills search: %w", err)
	}
	rows, err := l.stmt.QueryContext(ctx, MatchExpr([]string{term}))
	if err != nil {
		return nil, fmt.Errorf("skills search: %w", err)
	}
	defer rows.Close()
	var out []posting
	var name string
	var score float64
	for rows.Next() {
		if err := rows.Scan(&name, &score); err != nil {
			return nil, fmt.Errorf("skills search: %w", err)
		}
		if i, ok := snap.index[name]; ok {
			out = append(out, posting{idx: i, score: -score})
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("skills search: %w", err)
	}
	if ctx.Err() == nil {
		l.terms.put(snap.gen, term, out)
	}
	return out, nil
}

// kwPostings returns a term's postings from the in-memory BM25 index; ok
// is false when the index cannot answer (not built, or a non-ASCII term).
func (s *snapshot) kwPostings(term string) ([]posting, bool) {
	if s.kw == nil {
		return nil, false
	}
	if tok, ok := s.kw.surface(s.df, s.df.index(term)); ok && tok != unknownToken {
		if tok < 0 {
			return nil, true // noToken: in the library's text, but FTS5 did not index its stem
		}
		return s.kw.list(tok), true
	}
	if !ftsASCII(term) {
		return nil, false
	}
	var arr [porterMaxToken + 8]byte
	return s.kw.lookup(porterStemBytes(&arr, term)), true
}

// scoreBuf is keywordHits' scratch, reused across turns: a score and a
// count of matched query terms per skill (zeroed again through touched
// after each turn), and each query term's postings.
type scoreBuf struct {
	scores  []float64
	nterms  []uint8
	touched []int32
	lists   []termList
	toks    []int32 // the query terms' tokens (search)
}

// termList is one query term's postings; ok is false while unknown.
type termList struct {
	ps []posting
	ok bool
}

var scorePool = sync.Pool{New: func() any { return new(scoreBuf) }}

// better orders hits: higher score first, then name.
func better(a, b *hit) bool {
	if a.keyword != b.keyword {
		return a.keyword > b.keyword
	}
	return a.e.skill.Name < b.e.skill.Name
}

// keywordHits ranks skills by FTS5's BM25 over name, description, tags
// and body: the sum of the query terms' per-term scores, from the
// in-memory index (bm25Index) or else FTS5 and its cache (termCache).
// Scores are -bm25 (higher is better). Each hit carries how many query
// terms it matched, and known is how many query terms any skill has (what
// the relevance floor needs).
//
// toks, when not nil, are the terms' token numbers from queryTermsTok.
func (l *Library) keywordHits(ctx context.Context, snap *snapshot, terms []string, toks []int32, usable func(int32) bool, limit int) (hits []hit, known int, err error) {
	if len(terms) == 0 || len(snap.sorted) == 0 || limit <= 0 {
		return nil, 0, nil
	}
	buf := scorePool.Get().(*scoreBuf)
	defer scorePool.Put(buf)
	// Terms are served by the in-memory BM25 index (every ASCII term:
	// unknown ones have no postings) or, failing that, by the term cache.
	// Several terms never seen before: one FTS5 query over the whole
	// expression is cheaper than one per term; the missing terms are
	// fetched in the background so the next turns are served from memory.
	lists := buf.lists[:0]
	missing := 0
	for k, t := range terms {
		var ps []posting
		var ok bool
		switch {
		case toks != nil && toks[k] >= 0:
			ps, ok = snap.kw.list(toks[k]), true
		case toks != nil && toks[k] == noToken:
			ok = true
		default:
			ps, ok = snap.kwPostings(t)
		}
		if !ok {
			if ps, ok = l.terms.get(snap.gen, t); !ok {
				missing++
			}
		}
		lists = append(lists, termList{ps: ps, ok: ok})
	}
	defer func() {
		clear(lists) // the postings belong to the snapshot: do not pin it
		buf.lists = lists[:0]
	}()
	if missing >= 2 {
		for _, t := range terms {
			l.warmTerm(t)
		}
		return l.keywordHitsQuery(ctx, snap, terms, usable, limit)
	}
	n := len(snap.sorted)
	if cap(buf.scores) < n {
		buf.scores, buf.nterms = make([]float64, n), make([]uint8, n)
	}
	scores, nterms := buf.scores[:n], buf.nterms[:n]
	touched := buf.touched[:0]
	defer func() {
		for _, i := range touched {
			scores[i], nterms[i] = 0, 0
		}
		buf.touched = touched[:0]
	}()
	for k, t := range terms {
		ps := lists[k].ps
		if !lists[k].ok {
			if ps, err = l.termPostings(ctx, snap, t); err != nil {
				return nil, 0, err
			}
		}
		if len(ps) > 0 {
			known++
		}
		for _, p := range ps {
			if nterms[p.idx] == 0 {
				touched = append(touched, p.idx)
			}
			scores[p.idx] += p.score
			nterms[p.idx]++
		}
	}
	// Top-limit selection: an insertion-sorted slice (limit is small).
	out := make([]hit, 0, limit)
	for _, i := range touched {
		if len(out) == limit && scores[i] < out[limit-1].keyword {
			continue // below the last kept hit: no need to read the entry
		}
		h := hit{e: snap.sorted[i], keyword: scores[i], terms: int(nterms[i])}
		if len(out) == limit && !better(&h, &out[limit-1]) {
			continue
		}
		if !usable(i) {
			continue
		}
		if len(out) < limit {
			out = append(out, h)
		} else {
			out[limit-1] = h
		}
		for j := len(out) - 1; j > 0 && better(&out[j], &out[j-1]); j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out, known, nil
}

// keywordHitsQuery ranks with one FTS5 query over the OR'ed terms, then
// counts each hit's matched terms as keywordHits does.
func (l *Library) keywordHitsQuery(ctx context.Context, snap *snapshot, terms []string, usable func(int32) bool, limit int) ([]hit, int, error) {
	l.stmtOnce.Do(l.prepareStmts)
	if l.stmtErr != nil {
		return nil, 0, fmt.Errorf("skills search: %w", l.stmtErr)
	}
	rows, err := l.stmtQuery.QueryContext(ctx, MatchExpr(terms))
	if err != nil {
		return nil, 0, fmt.Errorf("skills search: %w", err)
	}
	out := make([]hit, 0, limit)
	var name string
	var score float64
	for rows.Next() && len(out) < limit {
		if err := rows.Scan(&name, &score); err != nil {
			rows.Close()
			return nil, 0, fmt.Errorf("skills search: %w", err)
		}
		if i, ok := snap.index[name]; ok && usable(i) {
			e := snap.sorted[i]
			out = append(out, hit{e: e, keyword: -score})
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	known, err := l.countMatches(ctx, snap, terms, out)
	return out, known, err
}

// countMatches sets each hit's count of matched query terms and returns
// how many query terms any skill has (per-term postings, from the index or
// FTS5 and its cache).
func (l *Library) countMatches(ctx context.Context, snap *snapshot, terms []string, hits []hit) (int, error) {
	idx := make([]int32, len(hits))
	for i, h := range hits {
		idx[i] = snap.index[h.e.skill.Name]
	}
	known := 0
	for _, t := range terms {
		ps, ok := snap.kwPostings(t)
		if !ok {
			var err error
			if ps, err = l.termPostings(ctx, snap, t); err != nil {
				return 0, err
			}
		}
		if len(ps) > 0 {
			known++
		}
		for _, p := range ps {
			if i := slices.Index(idx, p.idx); i >= 0 {
				hits[i].terms++
			}
		}
	}
	return known, nil
}

// relevant applies the floor to a turn's keyword hits (with their matched
// term counts) given how many of its nTerms query terms the library knows.
func relevant(hits []hit, known, nTerms int, f RelevanceFloor) bool {
	for _, h := range hits {
		if h.keyword >= f.Strong {
			return true
		}
	}
	if nTerms > 0 && float64(known) >= f.Coverage*float64(nTerms) {
		return true
	}
	for _, h := range hits {
		if h.terms >= 2 && h.keyword >= f.Pair {
			return true
		}
	}
	return false
}

// warmTerm asks the background worker to cache a term's postings.
func (l *Library) warmTerm(term string) {
	if l.closed.Load() || l.noWarm {
		return
	}
	l.warmOnce.Do(func() {
		l.warmCh = make(chan string, 256)
		l.bg.Add(1)
		go l.warmLoop()
	})
	select {
	case l.warmCh <- term:
	default: // busy: a later turn will ask again
	}
}

func (l *Library) warmLoop() {
	defer l.bg.Done()
	for {
		select {
		case <-l.done:
			return
		case t := <-l.warmCh:
			snap := l.snap.Load()
			if _, ok := l.terms.get(snap.gen, t); ok {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if _, err := l.termPostings(ctx, snap, t); err != nil {
				l.log.Debug().Err(err).Msg("skills: warm term cache")
			}
			cancel()
		}
	}
}

// keywordHitsSQL ranks with one FTS5 query over the whole MATCH expression
// (the reference for keywordHits).
func (l *Library) keywordHitsSQL(ctx context.Context, match, agent string, all bool, limit int) ([]Hit, error) {
	if match == "" {
		return nil, nil
	}
	agentArg := ""
	if agent != "" {
		agentArg = "," + agent + ","
	}
	rows, err := l.r.QueryContext(ctx, querySQL, match, all, agentArg, limit)
	if err != nil {
		return nil, fmt.Errorf("skills search: %w", err)
	}
	defer rows.Close()
	snap := l.snap.Load()
	var out []Hit
	for rows.Next() {
		var name string
		var score float64
		if err := rows.Scan(&name, &score); err != nil {
			return nil, err
		}
		if e, ok := snap.byName[name]; ok {
			out = append(out, Hit{Skill: e.skill.Clone(), Score: -score, Keyword: -score})
		}
	}
	return out, rows.Err()
}

func (l *Library) search(ctx context.Context, o SearchOptions, qv *queryVecs) ([]hit, error) {
	if o.Limit <= 0 {
		o.Limit = 6
	}
	snap := l.snap.Load()
	usable := func(i int32) bool {
		f := snap.flags[i]
		if !o.All && f&flagActive == 0 {
			return false
		}
		return o.Agent == "" || f&flagAnyAgent != 0 || snap.sorted[i].skill.ForAgent(o.Agent)
	}
	mode := o.Mode
	if mode == "" {
		mode = ModeKeyword
	}
	var semErr error
	var qvec []float32
	if mode != ModeKeyword {
		if o.Embedder == nil {
			semErr = errors.New("no embedder configured")
		} else {
			qvec, semErr = qv.get(ctx, o.Embedder, o.Texts)
		}
		if semErr != nil {
			mode = ModeKeyword // fail open to keywords
		}
	}
	pool := o.Limit
	if mode == ModeHybrid {
		pool = max(o.Limit*4, 24)
	}
	var hits []hit
	if mode != ModeEmbedding {
		buf := scorePool.Get().(*scoreBuf)
		terms, toks := snap.queryTermsTok(o.Texts, buf.toks[:0])
		kw, known, err := l.keywordHits(ctx, snap, terms, toks, usable, pool)
		buf.toks = toks[:0]
		scorePool.Put(buf)
		if err != nil {
			return nil, err
		}
		hits = kw
		if o.Floor != nil && mode == ModeKeyword && len(hits) > 0 && len(snap.sorted) >= minFloorSkills && !relevant(hits, known, len(terms), *o.Floor) {
			return nil, nil
		}
	}
	if mode != ModeKeyword {
		sem := semanticHits(snap, qvec, usable, pool)
		hits = blend(hits, sem, mode)
	} else {
		for i := range hits {
			hits[i].score = hits[i].keyword
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int {
		if a.score != b.score {
			return cmp.Compare(b.score, a.score)
		}
		return strings.Compare(a.e.skill.Name, b.e.skill.Name)
	})
	if o.MinRelative > 0 && len(hits) > 0 && hits[0].score > 0 {
		cut := hits[0].score * o.MinRelative
		n := 0
		for n < len(hits) && hits[n].score >= cut {
			n++
		}
		hits = hits[:n]
	}
	if len(hits) > o.Limit {
		hits = hits[:o.Limit]
	}
	if semErr != nil && o.Mode != ModeKeyword && o.Mode != "" {
		return hits, &SemanticError{Err: semErr}
	}
	return hits, nil
}

// SemanticError says embedding retrieval was unavailable and keywords were
// used instead; the hits returned with it are still valid.
type SemanticError struct{ Err error }

func (e *SemanticError) Error() string { return "embedding retrieval unavailable: " + e.Err.Error() }
func (e *SemanticError) Unwrap() error { return e.Err }

// semanticHits scores every usable skill with a vector (exact scan).
func semanticHits(snap *snapshot, qvec []float32, usable func(int32) bool, limit int) []hit {
	if len(qvec) == 0 {
		return nil
	}
	out := make([]hit, 0, limit+1)
	for i, e := range snap.sorted {
		if e.vec == nil || !usable(int32(i)) {
			continue
		}
		s := float64(embed.Dot(qvec, e.vec))
		out = append(out, hit{e: e, semantic: s})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].semantic != out[j].semantic {
			return out[i].semantic > out[j].semantic
		}
		return out[i].e.skill.Name < out[j].e.skill.Name
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// blend merges keyword and semantic hits. embedding mode ranks by cosine;
// hybrid adds the two scores, each scaled to the best of its list.
func blend(kw, sem []hit, mode string) []hit {
	if mode == ModeEmbedding {
		for i := range sem {
			sem[i].score = sem[i].semantic
		}
		return sem
	}
	byName := map[string]*hit{}
	var out []hit
	maxK, maxS := 0.0, 0.0
	for _, h := range kw {
		maxK = max(maxK, h.keyword)
	}
	for _, h := range sem {
		maxS = max(maxS, h.semantic)
	}
	out = make([]hit, 0, len(kw)+len(sem))
	for _, h := range kw {
		out = append(out, h)
	}
	for i := range out {
		byName[out[i].e.skill.Name] = &out[i]
	}
	for _, h := range sem {
		if p, ok := byName[h.e.skill.Name]; ok {
			p.semantic = h.semantic
			continue
		}
		out = append(out, h)
	}
	for i := range out {
		var k, s float64
		if maxK > 0 {
			k = out[i].keyword / maxK
		}
		if maxS > 0 && out[i].semantic > 0 {
			s = out[i].semantic / maxS
		}
		out[i].score = 0.5*k + 0.5*s
	}
	return out
}

// queryVecs caches query embeddings: an agent's tool rounds resend the same
// user texts many times, and the embedding call is the slow part.
type queryVecs struct {
	mu   sync.Mutex
	seed maphash.Seed
	m    map[uint64][]float32
}

func newQueryVecs() *queryVecs {
	return &queryVecs{seed: maphash.MakeSeed(), m: map[uint64][]float32{}}
}

// queryText is what a conversation's query embedding is computed from:
// newest text first, bounded.
func queryText(texts []string) string {
	var b strings.Builder
	for i := len(texts) - 1; i >= 0 && b.Len() < 2000; i-- {
		t := strings.TrimSpace(texts[i])
		if t == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		if len(t) > 2000-b.Len() {
			t = t[:2000-b.Len()]
		}
		b.WriteString(t)
	}
	return b.String()
}

func (q *queryVecs) get(ctx context.Context, e embed.Embedder, texts []string) ([]float32, error) {
	text := queryText(texts)
	if text == "" {
		return nil, nil
	}
	if q == nil {
		v, err := e.Embed(ctx, []string{text})
		if err != nil || len(v) == 0 {
			return nil, err
		}
		return v[0], nil
	}
	h := maphash.String(q.seed, e.Name()+"\x00"+text)
	q.mu.Lock()
	v, ok := q.m[h]
	q.mu.Unlock()
	if ok {
		return v, nil
	}
	vs, err := e.Embed(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	if len(vs) == 0 {
		return nil, errors.New("embedder returned no vector")
	}
	q.mu.Lock()
	if len(q.m) >= 256 {
		clear(q.m)
	}
	q.m[h] = vs[0]
	q.mu.Unlock()
	return vs[0], nil
}
