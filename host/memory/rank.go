package memory

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"math"
	"math/bits"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/metaclaw-go/metaclaw/host/embed"
)

// Ranking: which units a turn's words reach (bm25 over the rarest query
// terms, the scope's standing pool, with embeddings the nearest vectors,
// session summaries when the user picks up a thread), and how each scores.
// The same code ranks from the in-memory index (the request path) and from
// SQLite (the reference the index is tested against).

// source is where ranking reads units.
type source interface {
	// frequencies returns, for each term, its document frequency in each
	// visibility (df[i][j]: terms[i] in vis[j]) and each visibility's units.
	frequencies(ctx context.Context, vis, terms []string) (df [][]int, units []int, err error)
	// match returns the best limit units holding any of the (visibility,
	// term) postings by bm25 (lower is better), best first, ties by row id.
	match(ctx context.Context, keys []visTerm, limit int) ([]*Unit, []float64, error)
	// pool returns one visibility's standing pool and newest summaries.
	pool(ctx context.Context, vis string) (*visPool, error)
	// units reads units by row id (embedding hits), in any order.
	units(ctx context.Context, ids []int64) ([]*Unit, error)
	// vectors returns one visibility's embeddings.
	vectors(ctx context.Context, vis string) ([]vecEntry, error)
	// derived returns what matching needs of a unit's words.
	derived(u *Unit) *derived
	// termID is the id derived gives a term (the same for the same term
	// within one query).
	termID(t string) int32
	// termStr is the term of an id termID gave or derived holds.
	termStr(id int32) string
}

// visTerm is one posting list: a term within a visibility.
type visTerm struct {
	vis, term string
}

// token is the FTS5 token of a posting list.
func (k visTerm) token() string { return visKey(k.vis) + k.term }

// derived is what matching needs of a unit's words, computed once per unit
// by the index (the SQL path computes it per query). Terms are compared by
// id: the index's dictionary, or the SQL source's own for one query (the
// source gives a term's string back: termStr). It also holds, side by side,
// what ranking reads of the unit (weights), so scoring a candidate reads
// one object and not the unit's scattered fields. The index keeps its
// records without pointers (drec) and hands out a derived made from one
// (its slices and strings views of the index's arenas).
type derived struct {
	w      unitWeights // first: what the first tests of a candidate read share its cache lines
	ids    []int32     // the distinct index terms' ids, in index order
	sorted []int32     // the ids, sorted (for overlap)
	ents   []int32     // the term ids of each entity, each followed by entEnd
	nEnts  int
	line   string    // the rendered bullet
	sig    uint64    // a bit per term id (id mod 64): bounds overlaps (nearDuplicate)
	sigN   int       // bits set in sig
	id     string    // the unit's public id
	said   time.Time // in UTC (rendering reads its instant only)
	vis    string
	typ    Type
	slot   string // the subject, when it names a slot of its own (slotted)
}

// entEnd ends an entity's term ids in derived.ents.
const entEnd = math.MinInt32

func deriveUnit(u *Unit, id func(string) int32) *derived {
	d := new(derived)
	fillDerived(d, u, id, func(n int) []int32 { return make([]int32, n) })
	return d
}

// fillDerived derives u into d: ids gives a term's id, slab the room for
// the term ids (ids, sorted and ents, in that order).
func fillDerived(d *derived, u *Unit, id func(string) int32, slab func(int) []int32) {
	terms := distinct(indexTerms(u))
	n := len(terms)
	var ets [][]string
	ne := 0
	for _, e := range u.Entities {
		ts := Terms(e)
		ets = append(ets, ts)
		ne += len(ts) + 1
	}
	ints := slab(2*n + ne) // one allocation for the three lists
	*d = derived{ids: ints[:n:n], sorted: ints[n : 2*n : 2*n], ents: ints[2*n:], nEnts: len(u.Entities), line: renderLine(u), w: weightsOf(u),
		id: u.ID, said: u.SaidAt.UTC(), vis: u.vis, typ: u.Type}
	if slotted(u.Subject) {
		d.slot = u.Subject
	}
	for i, t := range terms {
		d.ids[i] = id(t)
	}
	copy(d.sorted, d.ids)
	slices.Sort(d.sorted)
	for _, t := range d.ids {
		d.sig |= 1 << (uint32(t) & 63)
	}
	d.sigN = bits.OnesCount64(d.sig)
	k := 0
	for _, ts := range ets {
		for _, t := range ts {
			d.ents[k] = id(t)
			k++
		}
		d.ents[k] = entEnd
		k++
	}
}

// unitWeights is what scoring reads of a unit, computed from it once. It
// holds no pointer: the index keeps it as it is, in records the garbage
// collector does not scan.
type unitWeights struct {
	rowid     int64
	hasExpiry bool
	active    bool
	standing  bool    // standingKind
	summary   bool    // a session summary
	lastSeen  instant // in UTC
	expires   instant // when hasExpiry
	impR      float64 // importance reinforced by repetition, at most 1
	hl        float64 // importance's half-life, days
	floor     float64 // the share of importance that never fades
	ment      float64 // the standing score's mentions term
	boost     float64 // the fact score's type and confidence factor
	tokens    int
}

// instant is a time without its zone (a time.Time holds a pointer to
// one): seconds and nanoseconds since 1970, read back in UTC.
type instant struct {
	sec  int64
	nsec int32
}

func instantOf(t time.Time) instant { return instant{t.Unix(), int32(t.Nanosecond())} }

// time is the instant in UTC.
func (i instant) time() time.Time { return time.Unix(i.sec, int64(i.nsec)).UTC() }

// after reports whether i is later than t.
func (i instant) after(t instant) bool { return i.sec > t.sec || i.sec == t.sec && i.nsec > t.nsec }

func weightsOf(u *Unit) unitWeights {
	w := unitWeights{rowid: u.rowid, lastSeen: instantOf(u.LastSeenAt), active: u.Status == StatusActive, standing: standingKind(u),
		summary: u.Type == WorkingSummary, tokens: u.tokens}
	if u.ExpiresAt != nil {
		w.expires, w.hasExpiry = instantOf(*u.ExpiresAt), true
	}
	imp := u.Importance
	if u.Mentions > 1 {
		imp += 0.05 * math.Log2(float64(u.Mentions))
	}
	w.impR = min(1, imp)
	w.hl = halfLife[u.Type]
	if w.hl == 0 {
		w.hl = 90
	}
	w.floor = 0.1
	if u.Type == Preference || u.Type == Semantic {
		w.floor = 0.5
	}
	w.ment = min(1, math.Log2(float64(max(1, u.Mentions)))/4)
	w.boost = typeBoost[u.Type] * (0.8 + 0.2*u.Confidence)
	return w
}

// live: active, not expired at now.
func (w *unitWeights) live(now time.Time) bool {
	return w.active && (!w.hasExpiry || w.expires.time().After(now))
}

// ageDays is how long ago, in days, the unit was last stated (0 when in the
// future).
func (w *unitWeights) ageDays(now time.Time) float64 {
	return max(0, now.Sub(w.lastSeen.time()).Hours()/24)
}

// importance is the unit's importance at age days since it was last
// stated, computed at read time from timestamps (so decay is idempotent):
// importance, reinforced by repetition, halved every half-life; stated
// preferences and facts keep at least half their weight. 2^-x is
// 0.5^x; math.Pow took two thirds of ranking's time on the request path
// (about 80 ns a candidate against Exp2's 8).
func (w *unitWeights) importance(age float64) float64 {
	return w.impR * max(math.Exp2(-age/w.hl), w.floor)
}

// sortedJaccard is |a∩b| / |a∪b| of two sorted sets.
func sortedJaccard(a, b []int32) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	i, j, inter := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			inter++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// visPool is what every query of a visibility considers: the standing
// units (best standingPool by standing score) and the newest summaries.
type visPool struct {
	standing []*Unit
	summary  []*Unit
	// derived and rowids are the standing units' (the index's: nil from
	// SQLite), so scoring reads them and not the units; sumDerived and
	// sumRowids the summaries'. The index keeps no units: with its derived
	// data, a unit is nil.
	derived    []*derived
	rowids     []int64
	sumDerived []*derived
	sumRowids  []int64
}

// knowsDerived is a source (the index) whose match answers come with the
// units' derived data and row ids (of match's i-th unit, the i-th of each).
type knowsDerived interface {
	matchedDerived() ([]*derived, []int64)
}

// derivedByRow is a source (the index) that gives units' derived data by
// row id (the rows it holds, in the order asked), without the units.
type derivedByRow interface {
	derivedRows(ids []int64) ([]*derived, []int64)
}

// standingPool bounds the standing units a query considers.
const standingPool = 48

type vecEntry struct {
	rowid int64
	v     []float32
}

// standingKind: a unit that applies to every turn — a preference or rule
// (the team's rules included: "we never promise dates"), or the user's name.
func standingKind(u *Unit) bool {
	return u.Type == Preference || u.Subject == "fact:name" || u.Type == ProjectState && hasTag(u.Tags, "rule")
}

func hasTag(tags []string, t string) bool {
	for _, x := range tags {
		if x == t {
			return true
		}
	}
	return false
}

// standingScore ranks standing units without a query: importance (decayed,
// reinforced by repetition), how often it was stated, how recently.
func standingScore(u *Unit, now time.Time) float64 {
	w := weightsOf(u)
	age := w.ageDays(now)
	return w.standingScore(age, w.importance(age))
}

// standingScore is standingScore at age days with importance imp.
func (w *unitWeights) standingScore(age, imp float64) float64 {
	rec := math.Exp(-age / 30)
	return 0.5*imp + 0.3*w.ment + 0.2*rec
}

// selectPool keeps the best standingPool standing units, best first.
func selectPool(units []*Unit, now time.Time) []*Unit {
	type su struct {
		u *Unit
		s float64
	}
	all := make([]su, 0, len(units))
	for _, u := range units {
		if standingKind(u) && u.Status == StatusActive && (u.ExpiresAt == nil || u.ExpiresAt.After(now)) {
			all = append(all, su{u, standingScore(u, now)})
		}
	}
	slices.SortFunc(all, func(a, b su) int { return order(a.s, b.s, a.u.rowid, b.u.rowid) })
	if len(all) > standingPool {
		all = all[:standingPool]
	}
	out := make([]*Unit, len(all))
	for i, x := range all {
		out[i] = x.u
	}
	return out
}

var continuityCue = regexp.MustCompile(`(?i)\b(?:last time|yesterday|earlier|previous(?:ly)?|where were we|where did we leave|continue|pick up|resume|as before|we discussed|we were (?:doing|working))\b|上次|昨天|之前|继续|接着|刚才`)

// continuityHints are substrings one of which every continuityCue match
// holds: most texts are ruled out without running the expression.
var continuityHints = []string{"last time", "yesterday", "earlier", "previous", "where ", "continu", "pick up", "resum", "as before", "discussed", "we were", "上次", "昨天", "之前", "继续", "接着", "刚才"}

func continuity(text string) bool {
	if !isASCII(text) { // lower-casing may turn other letters into ASCII ones (K)
		lower := strings.ToLower(text)
		for _, h := range continuityHints {
			if strings.Contains(lower, h) {
				return continuityCue.MatchString(text)
			}
		}
		return false
	}
	// One lower-cased copy (on the stack for a turn's question), then the
	// library's vectorised search per hint.
	var buf [512]byte
	lower := buf[:0]
	if len(text) > len(buf) {
		lower = make([]byte, 0, len(text))
	}
	for i := 0; i < len(text); i++ {
		lower = append(lower, lowerASCII(text[i]))
	}
	for _, h := range continuityHints {
		if h[0] < 0x80 && bytes.Contains(lower, []byte(h)) {
			return continuityCue.MatchString(text)
		}
	}
	return false
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + ('a' - 'A')
	}
	return c
}

// minCosine is the similarity at which an embedding alone makes a unit a
// candidate.
const minCosine = 0.35

// relevantCoverage is the share of the query (idf-weighted) a fact must
// cover, when it matches only one of its terms, to be relevant to the turn.
const relevantCoverage = 0.15

// scored is one candidate and its scores.
type scored struct {
	u            *Unit
	d            *derived
	pool         bool // from the standing pool
	standingKind bool
	cue          bool // a session summary, asked for
	matched      []string
	emb          float64
	bm           float64 // bm25 (lower is better), when hasBM
	hasBM        bool
	score        float64 // as a fact: relevance, importance, recency, type
	rule         float64 // as a standing rule: standing score and relevance
	relevant     bool    // as a fact: the turn is about it
}

// hit copies the unit out (the candidates point into shared caches and
// their scratch); a candidate the index gave without its unit is read from
// src.
func (c *scored) hit(ctx context.Context, src source, asRule bool) (Hit, error) {
	var matched []string
	if len(c.matched) > 0 {
		matched = slices.Clone(c.matched)
		sort.Strings(matched)
	}
	score := c.score
	if asRule {
		score = c.rule
	}
	var u Unit
	if c.u != nil {
		u = *c.u
	} else {
		us, err := src.units(ctx, []int64{c.d.w.rowid})
		if err != nil {
			return Hit{}, fmt.Errorf("memory: read hit %d: %w", c.d.w.rowid, err)
		}
		if len(us) != 1 {
			return Hit{}, fmt.Errorf("memory: read hit %d: %w", c.d.w.rowid, ErrNotFound)
		}
		u = *us[0]
	}
	return Hit{Unit: u, Score: math.Round(score*1e4) / 1e4, Matched: matched,
		Reason: reason(len(c.matched) > 0, c.pool, c.emb >= minCosine, c.cue), line: strings.Clone(c.d.line)}, nil
}

// scoreScratch is what one scoring works in: maps and slices reused from
// query to query (the request path allocates little).
type scoreScratch struct {
	cands   candTable
	order   []*scored // the candidates, in the order they were added
	slab    []scored  // candidates, allocated together
	maxBM   float64   // the best bm25 (negated) among the lexical matches
	cos     map[int64]float64
	qidf    termWeights // weighted idf of the query's terms, by term id
	out     []*scored
	matched []string // the candidates' matched terms, one after another
	keys    []visTerm
	qt      queryTerms
	qset    termSet // the query's term ids (a first test before qidf)
	qterms  []string
	ex      expansion
	facts   []*scored
	rules   []*scored
	touched int32 // what touch read (kept, so the reads are not optimised away)
}

// termSet is a bitset of (non-negative) term ids: a cheap first test, in
// a few cache lines, before the weights table. A negative id (a term no unit
// holds) is left to the table.
type termSet struct {
	bits []uint64
	ids  []int32
}

func (s *termSet) add(id int32) {
	if id < 0 {
		return
	}
	w := int(id >> 6)
	if w >= len(s.bits) {
		s.bits = slices.Grow(s.bits, w+1-len(s.bits))[:w+1] // bits past len are zero (reset clears what it set)
	}
	s.bits[w] |= 1 << (uint32(id) & 63)
	s.ids = append(s.ids, id)
}

// mayHold is false when id is surely not in the set.
func (s *termSet) mayHold(id int32) bool {
	if id < 0 {
		return true
	}
	w := int(id >> 6)
	return w < len(s.bits) && s.bits[w]&(1<<(uint32(id)&63)) != 0
}

func (s *termSet) reset() {
	for _, id := range s.ids {
		s.bits[id>>6] = 0
	}
	s.ids = s.ids[:0]
}

var scoreScratches = sync.Pool{New: func() any {
	// Room for every candidate of two visibilities (their pools, the
	// lexical matches, summaries) in one slab.
	return &scoreScratch{slab: make([]scored, 0, 128), cos: map[int64]float64{}}
}}

func newScoreScratch() *scoreScratch { return scoreScratches.Get().(*scoreScratch) }

// release returns the scratch for reuse: nothing score returned may be
// used after it.
func (sc *scoreScratch) release() {
	sc.cands.reset()
	clear(sc.order)
	sc.maxBM = 0
	clear(sc.cos)
	clear(sc.slab)
	clear(sc.out)
	clear(sc.matched)
	clear(sc.facts)
	clear(sc.rules)
	sc.qset.reset()
	sc.order, sc.slab, sc.out, sc.matched, sc.keys = sc.order[:0], sc.slab[:0], sc.out[:0], sc.matched[:0], sc.keys[:0]
	sc.facts, sc.rules = sc.facts[:0], sc.rules[:0]
	sc.qt = queryTerms{df: sc.qt.df[:0], present: sc.qt.present[:0], match: sc.qt.match[:0], byRarity: sc.qt.byRarity[:0]}
	scoreScratches.Put(sc)
}

// candTable maps row ids to candidates: an open-addressed table that grows
// with them (a few dozen per query), cleared by what it holds.
type candTable struct {
	keys []int64
	vals []*scored
	used []int32 // the cells in use
	mask uint64
}

func (t *candTable) home(id int64) uint64 { return (uint64(id) * 0x9E3779B97F4A7C15 >> 32) & t.mask }

func (t *candTable) get(id int64) *scored {
	if len(t.vals) == 0 {
		return nil
	}
	for i := t.home(id); t.vals[i] != nil; i = (i + 1) & t.mask {
		if t.keys[i] == id {
			return t.vals[i]
		}
	}
	return nil
}

// put adds id (not in the table) with c.
func (t *candTable) put(id int64, c *scored) {
	if 2*(len(t.used)+1) > len(t.vals) {
		t.grow()
	}
	i := t.home(id)
	for t.vals[i] != nil {
		i = (i + 1) & t.mask
	}
	t.keys[i], t.vals[i] = id, c
	t.used = append(t.used, int32(i))
}

func (t *candTable) grow() {
	keys, vals, used := t.keys, t.vals, t.used
	size := max(256, 2*len(vals))
	t.keys, t.vals, t.used, t.mask = make([]int64, size), make([]*scored, size), make([]int32, 0, size/2), uint64(size-1)
	for _, i := range used {
		t.put(keys[i], vals[i])
	}
}

func (t *candTable) reset() {
	for _, i := range t.used {
		t.vals[i] = nil
	}
	t.used = t.used[:0]
}

// tableSize is the size of an open-addressed table for n keys: a power of
// two no smaller than least, at most half full.
func tableSize(least, n int) int {
	size := least
	for size < 2*n {
		size *= 2
	}
	return size
}

// termWeights maps term ids to weights: a small open-addressed table, as
// the hot loop looks up every term of every candidate.
type termWeights struct {
	keys []int32
	vals []float64
	used []bool
	mask uint32
}

// reset empties the table for up to n terms.
func (w *termWeights) reset(n int) {
	size := tableSize(16, n)
	if cap(w.keys) < size {
		w.keys, w.vals, w.used = make([]int32, size), make([]float64, size), make([]bool, size)
	}
	w.keys, w.vals, w.used = w.keys[:size], w.vals[:size], w.used[:size]
	clear(w.used)
	w.mask = uint32(size - 1)
}

func (w *termWeights) home(id int32) uint32 { return (uint32(id) * 0x9E3779B1 >> 16) & w.mask }

func (w *termWeights) put(id int32, v float64) {
	i := w.home(id)
	for w.used[i] && w.keys[i] != id {
		i = (i + 1) & w.mask
	}
	w.keys[i], w.vals[i], w.used[i] = id, v, true
}

func (w *termWeights) get(id int32) (float64, bool) {
	if w.mask == 0 {
		return 0, false
	}
	for i := w.home(id); w.used[i]; i = (i + 1) & w.mask {
		if w.keys[i] == id {
			return w.vals[i], true
		}
	}
	return 0, false
}

// score finds and scores the candidates of q (in sc, until it is
// released). standing adds the scope's standing pool and, on a continuity
// cue, its newest summaries.
func (s *Store) score(ctx context.Context, src source, q Query, vis []string, standing bool, sc *scoreScratch) ([]*scored, error) {
	scope := s.ScopeKey(q.Scope)
	if vis == nil {
		vis = visible(scope, q.Agent)
	}
	now := s.now()
	qt, err := sc.weighQuery(ctx, src, sc.ex.expand(q.Texts), vis)
	if err != nil {
		return nil, err
	}
	if err := sc.addLexical(ctx, src, qt, vis); err != nil {
		return nil, err
	}
	cue := asksContinuity(q.Texts)
	if err := s.addPools(ctx, src, vis, standing, cue, sc); err != nil {
		return nil, err
	}
	if err := s.addNearest(ctx, src, q, vis, sc); err != nil {
		return nil, err
	}
	qw := sc.weighTerms(src, qt)
	return s.rankCandidates(src, vis, now, cue, standing, qw, sc), nil
}

// queryTerms is the query's terms with their document frequencies (per
// visibility), and which of them are asked of the lexical index. It lives
// in the scratch: its slices are reused from query to query.
type queryTerms struct {
	qs       []qterm
	dfv      [][]int // by term, then visibility
	df       []int   // by term, over all visibilities
	total    int     // units visible
	present  []int   // indices of the terms some unit holds
	match    []int   // indices of the terms to match postings for
	byRarity []int
}

// weighQuery reads the document frequencies of the query's terms and picks
// the ones worth asking for: a term in most units costs much and ranks
// little.
func (sc *scoreScratch) weighQuery(ctx context.Context, src source, qs []qterm, vis []string) (*queryTerms, error) {
	if max := 600 / len(vis); len(qs) > max {
		qs = qs[:max]
	}
	qterms := sc.qterms[:0]
	for _, x := range qs {
		qterms = append(qterms, x.t)
	}
	sc.qterms = qterms
	dfv, visUnits, err := src.frequencies(ctx, vis, qterms)
	if err != nil {
		return nil, err
	}
	qt := &sc.qt
	qt.qs, qt.dfv, qt.total = qs, dfv, 0
	qt.df, qt.present = slices.Grow(qt.df[:0], len(qs))[:len(qs)], qt.present[:0]
	clear(qt.df)
	for j := range vis {
		qt.total += visUnits[j]
	}
	for i := range qs {
		for j := range vis {
			qt.df[i] += dfv[i][j]
		}
		if qt.df[i] > 0 {
			qt.present = append(qt.present, i)
		}
	}
	qt.rarest()
	return qt, nil
}

// rarest picks the terms to match (qt.match), rarest first, within a
// budget of postings: the work is bounded whatever the query, and rare
// terms are the ones that rank.
func (qt *queryTerms) rarest() {
	df := qt.df
	byRarity := append(qt.byRarity[:0], qt.present...)
	qt.byRarity = byRarity
	slices.SortStableFunc(byRarity, func(a, b int) int { return cmp.Compare(df[a], df[b]) })
	budget := max(200, qt.total/400)
	match := qt.match[:0]
	spent := 0
	for _, i := range byRarity {
		if len(match) == 8 || spent+df[i] > budget && len(match) > 0 || df[i] > budget {
			break
		}
		match = append(match, i)
		spent += df[i]
	}
	qt.match = match
}

// idf is the inverse document frequency of term i.
func (qt *queryTerms) idf(i int) float64 {
	d := float64(qt.df[i])
	return math.Log(1 + (float64(qt.total)-d+0.5)/(d+0.5))
}

// add makes u, of row rowid, a candidate (once; pool marks it as from the
// standing pool). d is u's derived when the source knows it (nil:
// rankCandidates asks; then u is not nil); neither is read here (cache
// misses: touch overlaps them).
func (sc *scoreScratch) add(u *Unit, d *derived, rowid int64, pool bool) *scored {
	if c := sc.cands.get(rowid); c != nil {
		c.pool = c.pool || pool
		return c
	}
	var c *scored
	if len(sc.slab) < cap(sc.slab) { // never grown: the candidates point into it
		sc.slab = append(sc.slab, scored{u: u, d: d, pool: pool})
		c = &sc.slab[len(sc.slab)-1]
	} else {
		c = &scored{u: u, d: d, pool: pool}
	}
	sc.cands.put(rowid, c)
	sc.order = append(sc.order, c)
	return c
}

// addKnown adds the i-th of units whose derived and row ids the source
// gave (ds and ids, nil when it did not).
func (sc *scoreScratch) addKnown(u *Unit, ds []*derived, ids []int64, i int, pool bool) *scored {
	if ds == nil {
		return sc.add(u, nil, u.rowid, pool)
	}
	return sc.add(u, ds[i], ids[i], pool)
}

// addLexical adds the best bm25 matches of the chosen terms, keeping their
// scores.
func (sc *scoreScratch) addLexical(ctx context.Context, src source, qt *queryTerms, vis []string) error {
	if len(qt.match) == 0 {
		return nil
	}
	keys := sc.keys
	for _, i := range qt.match {
		for j, v := range vis {
			if qt.dfv[i][j] > 0 {
				keys = append(keys, visTerm{v, qt.qs[i].t})
			}
		}
	}
	sc.keys = keys
	units, scores, err := src.match(ctx, keys, 24)
	if err != nil {
		return err
	}
	var ds []*derived
	var ids []int64
	if k, ok := src.(knowsDerived); ok {
		ds, ids = k.matchedDerived()
	}
	for i, u := range units {
		c := sc.addKnown(u, ds, ids, i, false)
		c.bm, c.hasBM = scores[i], true
		sc.maxBM = max(sc.maxBM, -scores[i])
	}
	return nil
}

// asksContinuity reports whether any text asks to pick up the thread.
func asksContinuity(texts []string) bool {
	for _, t := range texts {
		if readQueryText(t).cue {
			return true
		}
	}
	return false
}

// addPools adds, when standing, each visibility's standing pool and (on a
// continuity cue) its newest summaries.
func (s *Store) addPools(ctx context.Context, src source, vis []string, standing, cue bool, sc *scoreScratch) error {
	if !standing {
		return nil
	}
	for _, v := range vis {
		p, err := src.pool(ctx, v)
		if err != nil {
			return err
		}
		for i, u := range p.standing {
			sc.addKnown(u, p.derived, p.rowids, i, true)
		}
		if cue {
			for i, u := range p.summary {
				sc.addKnown(u, p.sumDerived, p.sumRowids, i, false)
			}
		}
	}
	return nil
}

// addNearest adds the units whose embeddings are nearest the query's (their
// similarities in sc.cos); a failed query embedding ranks without them.
func (s *Store) addNearest(ctx context.Context, src source, q Query, vis []string, sc *scoreScratch) error {
	if !s.embeddingsOn() || len(q.Texts) == 0 {
		return nil
	}
	if err := s.nearest(ctx, src, q, vis, sc.cos); err != nil {
		s.o.Log.Debug().Err(err).Msg("memory: query embedding failed; ranking without it")
		return nil
	}
	var need []int64
	for id := range sc.cos {
		if sc.cands.get(id) == nil {
			need = append(need, id)
		}
	}
	sort.Slice(need, func(i, j int) bool { return need[i] < need[j] })
	if k, ok := src.(derivedByRow); ok { // the index: no unit decoded
		ds, ids := k.derivedRows(need)
		for i := range ds {
			sc.addKnown(nil, ds, ids, i, false)
		}
		return nil
	}
	units, err := src.units(ctx, need)
	if err != nil {
		return fmt.Errorf("memory: read hits: %w", err)
	}
	for _, u := range units {
		sc.add(u, nil, u.rowid, false)
	}
	return nil
}

// weighTerms fills sc.qidf with the weighted idf of the query's present
// terms, by term id, and returns their sum.
func (sc *scoreScratch) weighTerms(src source, qt *queryTerms) float64 {
	var qw float64
	sc.qidf.reset(len(qt.present))
	for _, i := range qt.present {
		w := qt.qs[i].w * qt.idf(i)
		id := src.termID(qt.qs[i].t)
		sc.qidf.put(id, w)
		sc.qset.add(id)
		qw += w
	}
	return qw
}

// rankCandidates scores every live, visible candidate that the turn is
// about (or that stands), in the order they were added: lexical (bm25 and
// idf-weighted coverage of the query), entity overlap, embedding
// similarity, importance (decayed), recency, type. When standing (the
// request path), a standing unit is scored as a rule only: retrieval never
// weighs it as a fact.
func (s *Store) rankCandidates(src source, vis []string, now time.Time, cue, standing bool, qw float64, sc *scoreScratch) []*scored {
	maxBM := sc.maxBM
	embOn := s.embeddingsOn()
	sc.touch()
	out := sc.out
	for _, c := range sc.order {
		d := c.d
		if d == nil {
			d = src.derived(c.u)
		}
		w := &d.w
		if !w.live(now) || !contains(vis, d.vis) {
			continue
		}
		c.d = d
		matched, cov := sc.coverage(src, d)
		emb := 0.0
		if len(sc.cos) > 0 {
			emb = sc.cos[w.rowid]
		}
		isCue := w.summary && cue
		// Session summaries quote what was said, superseded statements
		// included: they come only when the user asks to pick up the thread.
		if !((len(matched) > 0 || emb >= minCosine || c.pool) && !w.summary || isCue) {
			continue
		}
		if qw > 0 {
			cov /= qw
		}
		lex := 0.0
		if c.hasBM && maxBM > 0 {
			lex = 0.5 * (-c.bm / maxBM)
		}
		lex += 0.5 * min(1, 2*cov)
		c.matched, c.emb, c.cue = matched, emb, isCue
		c.standingKind = w.standing
		relevant := len(matched) > 0 && (len(matched) >= 2 || cov >= relevantCoverage) || emb >= minCosine || isCue
		if standing && !c.standingKind && !relevant {
			continue // the request path keeps a fact only when the turn is about it
		}
		age := w.ageDays(now)
		imp := w.importance(age)
		if !standing || !c.standingKind {
			ent := 0.0
			if len(matched) > 0 {
				ent = sc.entityOverlap(d)
			}
			c.score = w.factScore(age, imp, lex, ent, emb, embOn, isCue)
			c.relevant = relevant
		}
		if c.standingKind {
			rel := 0.0
			if len(matched) > 0 || emb >= minCosine {
				rel = lex + 0.3*max(0, emb)
			}
			c.rule = math.Round((w.standingScore(age, imp)+0.5*rel)*1e4) / 1e4
		}
		out = append(out, c)
	}
	sc.out = out
	return out
}

// touch reads, first, what scoring reads of each candidate known to the
// index: loads independent of each other, which the processor overlaps,
// where the scoring loop would wait for each candidate's in turn (they are
// cache misses: the candidates are scattered over the heap).
func (sc *scoreScratch) touch() {
	var sum int32
	for _, c := range sc.order {
		if d := c.d; d != nil && len(d.ids) > 0 {
			sum += d.ids[0] + int32(d.w.tokens)
		}
	}
	sc.touched = sum
}

// coverage returns the query terms d holds (in sc.matched, capped so
// later appends cannot overwrite them) and the sum of their weights.
func (sc *scoreScratch) coverage(src source, d *derived) ([]string, float64) {
	var cov float64
	from := len(sc.matched)
	for _, t := range d.ids {
		if !sc.qset.mayHold(t) {
			continue
		}
		if w, ok := sc.qidf.get(t); ok {
			cov += w
			sc.matched = append(sc.matched, src.termStr(t))
		}
	}
	return sc.matched[from:len(sc.matched):len(sc.matched)], cov
}

// entityOverlap is the share of d's entities the query names (any of an
// entity's terms).
func (sc *scoreScratch) entityOverlap(d *derived) float64 {
	if d.nEnts == 0 {
		return 0
	}
	n := 0
	named := false
	for _, t := range d.ents {
		if t == entEnd {
			if named {
				n++
			}
			named = false
			continue
		}
		if !named && sc.qset.mayHold(t) {
			if _, ok := sc.qidf.get(t); ok {
				named = true
			}
		}
	}
	return float64(n) / float64(d.nEnts)
}

// factScore weighs a candidate as a fact at age days with importance imp:
// relevance, importance (decayed), recency, embedding similarity, the
// continuity cue, then type and confidence.
func (w *unitWeights) factScore(age, imp, lex, ent, emb float64, embOn, isCue bool) float64 {
	rec := math.Exp(-age / 14)
	score := 0.45*lex + 0.1*ent + 0.3*imp + 0.1*rec
	if embOn {
		score += 0.3 * max(0, emb)
	}
	if isCue {
		score += 0.3
	}
	score *= w.boost
	return math.Round(score*1e4) / 1e4
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

func (s *Store) embeddingsOn() bool {
	return s.o.Embedder != nil && s.o.Mode != "keyword"
}

// nearest embeds the query and scans the visible vectors exactly.
func (s *Store) nearest(ctx context.Context, src source, q Query, vis []string, cos map[int64]float64) error {
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
	for _, v := range vis {
		entries, err := src.vectors(ctx, v)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if len(e.v) != len(qv) {
				continue
			}
			if d := float64(embed.Dot(qv, e.v)); d >= 0.2 {
				best = append(best, sc{e.rowid, d})
			}
		}
	}
	sort.Slice(best, func(i, j int) bool { return better(best[i].c, best[j].c, best[i].id, best[j].id) })
	if len(best) > 24 {
		best = best[:24]
	}
	for _, b := range best {
		cos[b.id] = b.c
	}
	return nil
}
