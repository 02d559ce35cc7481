package skills

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/embed"
	"github.com/metaclaw-go/metaclaw/host/tokens"
)

// ProviderOptions configure injection (skills.top_k, skills.max_tokens,
// skills.retrieval_mode).
type ProviderOptions struct {
	TopK      int    // skills per turn; 0 injects none
	MaxTokens int    // budget of the section body; 0 = no budget (top_k still bounds it)
	Mode      string // keyword | embedding | hybrid
	Embedder  embed.Embedder
	// MinRelative drops skills scoring below this fraction of the best match
	// (weak matches cost tokens and distract). Default DefaultMinRelative;
	// negative disables.
	MinRelative float64
	// Floor keeps skills out of turns the library knows nothing about
	// (greetings, small talk, unrelated questions): nil means DefaultFloor;
	// NoFloor injects for every turn with any match.
	Floor   *RelevanceFloor
	NoFloor bool
	Log     zerolog.Logger
}

// DefaultMinRelative is the relevance cut used when none is configured.
const DefaultMinRelative = 0.35

// preamble opens the section body.
const preamble = "Procedures that match this conversation. Follow the ones that apply; ignore the rest."

// Provider injects skills into turns. It implements core.Provider and core.Counter.
type Provider struct {
	lib  *Library
	o    ProviderOptions
	qv   *queryVecs
	preT int

	warnMu   sync.Mutex
	lastWarn time.Time
}

var (
	_ core.Provider = (*Provider)(nil)
	_ core.Counter  = (*Provider)(nil)
)

// NewProvider returns the injection provider of a library.
func NewProvider(lib *Library, o ProviderOptions) *Provider {
	if o.MinRelative == 0 {
		o.MinRelative = DefaultMinRelative
	}
	if o.MinRelative < 0 {
		o.MinRelative = 0
	}
	if o.Mode == "" {
		o.Mode = ModeKeyword
	}
	if o.Floor == nil && !o.NoFloor {
		f := DefaultFloor
		o.Floor = &f
	}
	if o.NoFloor {
		o.Floor = nil
	}
	return &Provider{lib: lib, o: o, qv: newQueryVecs(), preT: tokens.Count(preamble + "\n\n")}
}

// Name implements core.Provider.
func (p *Provider) Name() string { return "skills" }

// Counts implements core.Counter.
func (p *Provider) Counts(context.Context) map[string]int {
	return map[string]int{"skills": p.lib.ActiveCount()}
}

// Context implements core.Provider: the top skills for the conversation,
// rendered within the budget. It never writes.
func (p *Provider) Context(ctx context.Context, q core.Query) (core.Section, error) {
	if p.o.TopK <= 0 {
		return core.Section{}, nil
	}
	hits, err := p.lib.search(ctx, SearchOptions{
		Texts: q.UserTexts, Agent: agentOf(q.Agent), Limit: p.o.TopK, Mode: p.o.Mode,
		Embedder: p.o.Embedder, MinRelative: p.o.MinRelative, Floor: p.o.Floor,
	}, p.qv)
	var semErr *SemanticError
	if errors.As(err, &semErr) {
		p.warnSemantic(semErr)
	} else if err != nil {
		return core.Section{}, err
	}
	if len(hits) == 0 {
		return core.Section{}, nil
	}
	return p.render(hits), nil
}

func agentOf(a string) string {
	if a == "" {
		return "default"
	}
	return a
}

func (p *Provider) warnSemantic(err error) {
	p.warnMu.Lock()
	defer p.warnMu.Unlock()
	if time.Since(p.lastWarn) < time.Minute {
		return
	}
	p.lastWarn = time.Now()
	p.o.Log.Warn().Err(err).Msg("skills: embedding retrieval failed; ranking by keywords")
}

// Select returns the skills a turn would get, in order (tests, CLI, API).
func (p *Provider) Select(ctx context.Context, q core.Query) ([]Hit, error) {
	hits, err := p.lib.search(ctx, SearchOptions{
		Texts: q.UserTexts, Agent: agentOf(q.Agent), Limit: p.o.TopK, Mode: p.o.Mode,
		Embedder: p.o.Embedder, MinRelative: p.o.MinRelative, Floor: p.o.Floor,
	}, p.qv)
	out := make([]Hit, len(hits))
	for i, h := range hits {
		out[i] = Hit{Skill: h.e.skill.Clone(), Score: h.score, Keyword: h.keyword, Semantic: h.semantic}
	}
	var semErr *SemanticError
	if errors.As(err, &semErr) {
		err = nil
	}
	return out, err
}

// render lays the hits out within the budget: every selected skill keeps its
// name and description (lowest-ranked dropped first if even those do not
// fit); the body budget is shared so that no body gets more than the
// largest equal share (water-filling), leftovers going to the best-ranked
// skills; bodies are cut at line boundaries.
func (p *Provider) render(hits []hit) core.Section {
	budget := p.o.MaxTokens
	used := p.preT
	n := len(hits)
	if budget > 0 {
		for n > 0 {
			total := used
			for _, h := range hits[:n] {
				total += h.e.headTokens + 1
			}
			if total <= budget {
				used = total
				break
			}
			n--
		}
		if n == 0 {
			return core.Section{}
		}
	} else {
		for _, h := range hits[:n] {
			used += h.e.headTokens + 1
		}
	}
	hits = hits[:n]
	allot := make([]int, n)
	if budget <= 0 {
		for i, h := range hits {
			allot[i] = h.e.bodyTokens
		}
	} else {
		allot = share(hits, budget-used)
	}

	bodies := make([]string, n)
	tails := make([]string, n)
	size := len(preamble)
	for i, h := range hits {
		bodies[i], tails[i], _ = h.e.bodyWithin(allot[i])
		size += len(h.e.head) + len(bodies[i]) + len(tails[i]) + 4
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteString(preamble)
	ids := make([]string, 0, n)
	total := used
	for i, h := range hits {
		b.WriteString("\n\n")
		b.WriteString(h.e.head)
		if bodies[i] != "" {
			b.WriteString("\n")
			b.WriteString(bodies[i])
			b.WriteString(tails[i])
			total += allot[i]
		}
		ids = append(ids, h.e.id)
	}
	return core.Section{Title: "Skills", Body: b.String(), IDs: ids, Tokens: total}
}

// minBody is the smallest body worth including (a cut procedure shorter than
// this is more confusing than helpful).
const minBody = 24

// share splits the body budget: cap c such that sum(min(body_i, c)) fits,
// then what trimming at line boundaries leaves over goes to the best-ranked.
func share(hits []hit, budget int) []int {
	n := len(hits)
	allot := make([]int, n)
	if budget <= 0 || n == 0 {
		return allot
	}
	sizes := make([]int, n)
	sum := 0
	for i, h := range hits {
		sizes[i] = h.e.bodyTokens
		sum += sizes[i]
	}
	if sum <= budget {
		copy(allot, sizes)
		return allot
	}
	sorted := append([]int(nil), sizes...)
	sort.Ints(sorted)
	capTokens, below := 0, 0
	for k, s := range sorted {
		rest := n - k
		if below+s*rest >= budget {
			capTokens = (budget - below) / rest
			break
		}
		below += s
	}
	left := budget
	for i := range hits {
		allot[i] = min(sizes[i], capTokens)
		// What this body will really use once cut at a line boundary.
		_, used := hits[i].e.bodyCut(allot[i])
		allot[i] = used
		left -= used
	}
	for i := range hits {
		if left <= 0 {
			break
		}
		if allot[i] < sizes[i] {
			_, used := hits[i].e.bodyCut(allot[i] + left)
			left -= used - allot[i]
			allot[i] = used
		}
	}
	return allot
}

// bodyCut says how many body lines fit within limit tokens and what they
// cost (the closing fence and ellipsis of a cut body included); -1 lines
// means the whole body.
func (e *entry) bodyCut(limit int) (lines, tokens int) {
	if e.bodyTokens == 0 || limit < minBody {
		return 0, 0
	}
	if e.bodyTokens <= limit {
		return -1, e.bodyTokens
	}
	const tail = 4 // "…" and a possible closing fence
	// cum is increasing: find the number of lines whose total fits.
	k := sort.Search(len(e.cum), func(i int) bool { return int(e.cum[i]) > limit-tail })
	for k > 0 && strings.TrimSpace(e.line(k-1)) == "" {
		k--
	}
	if k == 0 || int(e.cum[k-1]) < minBody {
		return 0, 0
	}
	return k, int(e.cum[k-1]) + tail
}

// bodyWithin returns the longest prefix of whole body lines within limit
// tokens, what follows it (a closing fence if the cut falls inside a code
// block, and an ellipsis line when something was cut), and its token
// count. The prefix is a slice of the body: rendering copies it once.
func (e *entry) bodyWithin(limit int) (prefix, tail string, tokens int) {
	k, t := e.bodyCut(limit)
	switch {
	case k < 0:
		return e.body, "", t
	case k == 0:
		return "", "", 0
	}
	fences := 0
	for i := range k {
		if strings.HasPrefix(strings.TrimSpace(e.line(i)), "```") {
			fences++
		}
	}
	end := min(int(e.lineEnd[k-1])+1, len(e.body)) // the lines and the last one's newline
	if fences%2 == 1 {
		return e.body[:end], "```\n…", t
	}
	return e.body[:end], "…", t
}
