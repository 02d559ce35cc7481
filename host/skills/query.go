package skills

import (
	"strings"
	"sync"
	"unicode"

	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// MaxQueryTerms bounds the terms of one MATCH expression (each OR'ed term
// costs a pass over its postings).
const MaxQueryTerms = 24

// maxTextScan bounds how much of each user text is read for terms (a pasted
// log of megabytes must not cost more than a normal message).
const maxTextScan = 4000

// stopWords are dropped from queries: function words plus the filler of chat
// requests ("could you please help me…"), which would otherwise match every
// skill that happens to use them.
var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`
a about above after again against all almost also although always am among an and another any anybody anyone
anything anyway anyways anywhere are aren around as at away back be became because become been before being
below beside besides between both but by came can cannot cant could couldn did didn do does doesn doing don done
down during each either else elsewhere enough etc even ever every everyone everything few for from further get
gets getting give given go going gone got gotten had hadn has hasn have haven having he her here hers herself
him himself his how however i id if im in into is isn it its itself ive just keep kind know known least less let
lets like likely ll made make makes making many may maybe me might mine more most mostly much must my myself
need needs neither never nevertheless next no nobody none nor not nothing now of off often oh ok okay on once one
only onto or other others otherwise our ours ourselves out over own per perhaps please pls put quite rather re
really said same say says see seem seemed seems she should shouldn since so some somebody someone something
sometime somewhat somewhere still such sure take than thank thanks that thats the their theirs them themselves
then there therefore these they thing things think this those though through thus to together too toward
towards try trying tried two under unless until up upon us use used uses using ve very via want wanted wants
was wasn way we well were weren what whatever when whenever where wherever whether which while who whoever whole
whom whose why will with within without won would wouldn yeah yes yet you your yours yourself yourselves hi hello
hey help helping thx ty lol guys folks stuff bit lot lots able actually basically currently just simply
something somehow anyone anybody hmm hm uh um
`) {
		m[w] = true
	}
	return m
}()

// isTermRune is what FTS5's unicode61 tokenizer keeps inside a token.
func isTermRune(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// splitTerms lowercases text and cuts it into unicode61-style tokens.
func splitTerms(text string) []string {
	var out []string
	eachTerm(text, func(t string) bool { out = append(out, t); return true })
	return out
}

// eachTerm calls fn with each of text's tokens (lowercased, unicode61-style:
// runs of letters and digits), one at a time, without building a slice (the
// request path and indexing read every word of long texts). The tokens are
// substrings of the lowercased text.
func eachTerm(text string, fn func(string) bool) {
	text = strings.ToLower(text)
	start := -1
	for i, r := range text {
		if isTermRune(r) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 {
			if !fn(text[start:i]) {
				return
			}
			start = -1
		}
	}
	if start >= 0 {
		fn(text[start:])
	}
}

// seenPool holds the sets QueryTerms deduplicates with (one per call, cleared
// after: no map allocated per turn).
var seenPool = sync.Pool{New: func() any { return map[string]struct{}{} }}

// keepTerm drops stop-words, single characters, long numbers and hash-like
// noise (ids, hex digests, base64) that only ever match by accident.
func keepTerm(t string) bool {
	if len(t) < 2 || len(t) > 40 || stopWords[t] {
		return false
	}
	digits := 0
	for _, r := range t {
		if unicode.IsDigit(r) {
			digits++
		}
	}
	if digits == len(t) {
		return len(t) <= 4 // 404, 500, 2024 — not ids
	}
	return digits*2 <= len(t) // "k8s", "utf8", "ipv6" stay; "a3f9c0d2" goes
}

// QueryTerms extracts the search terms of a conversation: the newest text
// first (it says what the turn is about), then older ones, deduplicated,
// at most max terms.
func QueryTerms(texts []string, max int) []string {
	if max <= 0 {
		max = MaxQueryTerms
	}
	seen := seenPool.Get().(map[string]struct{})
	defer func() {
		clear(seen)
		seenPool.Put(seen)
	}()
	var out []string
	for i := len(texts) - 1; i >= 0 && len(out) < max; i-- {
		t := textclip.Prefix(texts[i], maxTextScan)
		eachTerm(t, func(term string) bool {
			if !keepTerm(term) {
				return true
			}
			if _, dup := seen[term]; dup {
				return true
			}
			seen[term] = struct{}{}
			if out == nil {
				out = make([]string, 0, max)
			}
			out = append(out, term)
			return len(out) < max
		})
	}
	return out
}

// MatchExpr builds an FTS5 MATCH expression from terms: each term quoted (a
// string, so no user text can be read as FTS syntax: NEAR, OR, column
// filters, '*'), OR'ed together. Empty when there is nothing to search.
func MatchExpr(terms []string) string {
	var b strings.Builder
	for _, t := range terms {
		if t == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(" OR ")
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(t, `"`, `""`))
		b.WriteByte('"')
	}
	return b.String()
}

// BuildMatch is MatchExpr(QueryTerms(texts, MaxQueryTerms)).
func BuildMatch(texts []string) string { return MatchExpr(QueryTerms(texts, MaxQueryTerms)) }

// stem is a light suffix stripper for comparing texts (near-duplicate
// detection); ranking uses FTS5's Porter stemmer.
func stem(w string) string {
	for _, suf := range []string{"ations", "ation", "ings", "ing", "ies", "ied", "ers", "er", "ed", "es", "ly", "s"} {
		if len(w) > len(suf)+3 && strings.HasSuffix(w, suf) {
			w = w[:len(w)-len(suf)]
			if suf == "ies" || suf == "ied" {
				w += "y"
			}
			return w
		}
	}
	return w
}

// termCounts counts the stemmed content words of a text.
func termCounts(text string) map[string]int {
	m := map[string]int{}
	for _, t := range splitTerms(text) {
		if keepTerm(t) {
			m[stem(t)]++
		}
	}
	return m
}
