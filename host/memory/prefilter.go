package memory

import (
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"
	"unsafe"
)

// The heuristic extractor tries dozens of regular expressions on every
// statement of every turn, and most statements match none: a turn with
// nothing to learn cost ~40 µs of backtracking. A guarded expression first
// asks a question answered with a few substring searches — does the text
// hold one of the literals every match must hold (and, for an expression
// anchored at the start, begin with one of the literals every match begins
// with)? — and runs the expression only when it does. The literals are
// derived from the expression's syntax tree, so they cannot drift from it;
// text and literals are compared case-folded (the orbit of each rune under
// Unicode simple folding, as (?i) matches), which can only widen what the
// question lets through. A skipped call is one the expression would have
// answered with no match: what is extracted does not change
// (TestPrefilterMatchesRegexp, FuzzPrefilter audit every skip).

// guardedRegexp is a regexp behind a literal prefilter. Methods it does not
// override run the expression unguarded.
type guardedRegexp struct {
	*regexp.Regexp
	// prefixes: a match begins at the text's start with one of these
	// (folded); nil when unknown.
	prefixes []string
	// needs: a match contains one literal of each set (folded).
	needs [][]string
	// needBytes are the bytes of each literal of needs: a literal with a
	// byte the text lacks needs no search.
	needBytes [][]byteSet
}

// byteSet is a set of byte values.
type byteSet [4]uint64

func (b *byteSet) add(c byte) { b[c>>6] |= 1 << (c & 63) }

func bytesOf(s []byte) byteSet {
	var b byteSet
	for _, c := range s {
		b.add(c)
	}
	return b
}

func (b *byteSet) within(o *byteSet) bool {
	return b[0]&^o[0] == 0 && b[1]&^o[1] == 0 && b[2]&^o[2] == 0 && b[3]&^o[3] == 0
}

// guards are every guarded regexp (the tests audit them all).
var guards []*guardedRegexp

// mustGuard compiles a guarded regexp and registers it in guards.
func mustGuard(pattern string) *guardedRegexp {
	g := compileGuard(pattern)
	guards = append(guards, g)
	return g
}

// compileGuard compiles a guarded regexp.
func compileGuard(pattern string) *guardedRegexp {
	g := &guardedRegexp{Regexp: regexp.MustCompile(pattern)}
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		panic(err) // MustCompile accepted it
	}
	re = re.Simplify()
	if startAnchored(re) {
		if set, nullable, ok := firstLiterals(re); ok && !nullable && !slices.Contains(set, "") {
			g.prefixes = set
		}
	}
	for _, set := range neededLiterals(re) {
		if !slices.Contains(set, "") {
			g.needs = append(g.needs, set)
			bs := make([]byteSet, len(set))
			for i, lit := range set {
				for j := range len(lit) {
					bs[i].add(lit[j])
				}
			}
			g.needBytes = append(g.needBytes, bs)
		}
	}
	return g
}

var (
	// guardsOff runs every guarded expression unguarded (the differential
	// tests compare the two).
	guardsOff atomic.Bool
	// guardAudit makes every skip run the expression anyway and record a
	// match it should not have skipped (tests).
	guardAudit  atomic.Bool
	guardMissMu sync.Mutex
	guardMisses []string
)

// may reports whether the expression may match s.
func (g *guardedRegexp) may(s string) bool {
	if (g.prefixes == nil && g.needs == nil) || guardsOff.Load() {
		return true
	}
	var buf [256]byte
	f := foldString(buf[:0], s)
	present := bytesOf(f)
	ok := g.check(unsafe.String(unsafe.SliceData(f), len(f)), &present)
	if !ok && guardAudit.Load() && g.Regexp.MatchString(s) {
		guardMissMu.Lock()
		guardMisses = append(guardMisses, g.String()+" skipped "+s)
		guardMissMu.Unlock()
		return true
	}
	return ok
}

func (g *guardedRegexp) check(f string, present *byteSet) bool {
	if g.prefixes != nil {
		found := false
		for _, p := range g.prefixes {
			if strings.HasPrefix(f, p) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	for i, set := range g.needs {
		if !containsAny(f, present, set, g.needBytes[i]) {
			return false
		}
	}
	return true
}

func containsAny(s string, present *byteSet, set []string, bytes []byteSet) bool {
	for i, n := range set {
		if bytes[i].within(present) && strings.Contains(s, n) {
			return true
		}
	}
	return false
}

func (g *guardedRegexp) MatchString(s string) bool {
	return g.may(s) && g.Regexp.MatchString(s)
}

func (g *guardedRegexp) FindString(s string) string {
	if !g.may(s) {
		return ""
	}
	return g.Regexp.FindString(s)
}

func (g *guardedRegexp) FindStringIndex(s string) []int {
	if !g.may(s) {
		return nil
	}
	return g.Regexp.FindStringIndex(s)
}

func (g *guardedRegexp) FindStringSubmatch(s string) []string {
	if !g.may(s) {
		return nil
	}
	return g.Regexp.FindStringSubmatch(s)
}

func (g *guardedRegexp) FindStringSubmatchIndex(s string) []int {
	if !g.may(s) {
		return nil
	}
	return g.Regexp.FindStringSubmatchIndex(s)
}

func (g *guardedRegexp) FindAllString(s string, n int) []string {
	if !g.may(s) {
		return nil
	}
	return g.Regexp.FindAllString(s, n)
}

func (g *guardedRegexp) FindAllStringIndex(s string, n int) [][]int {
	if !g.may(s) {
		return nil
	}
	return g.Regexp.FindAllStringIndex(s, n)
}

func (g *guardedRegexp) FindAllStringSubmatch(s string, n int) [][]string {
	if !g.may(s) {
		return nil
	}
	return g.Regexp.FindAllStringSubmatch(s, n)
}

func (g *guardedRegexp) FindAllStringSubmatchIndex(s string, n int) [][]int {
	if !g.may(s) {
		return nil
	}
	return g.Regexp.FindAllStringSubmatchIndex(s, n)
}

// ReplaceAllString returns s itself when nothing matches, as the regexp does.
func (g *guardedRegexp) ReplaceAllString(s, repl string) string {
	if !g.may(s) {
		return s
	}
	return g.Regexp.ReplaceAllString(s, repl)
}

// foldString appends s with every rune replaced by the smallest rune of its
// simple-folding orbit ('a' and 'A' → 'A', 'ſ' → 'S'); bytes that are not
// UTF-8 are kept. Two runes (?i) matches to each other fold alike.
func foldString(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			dst = append(dst, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 || r >= 0x3000 && r <= 0x9fff {
			dst = append(dst, s[i:i+n]...) // not UTF-8, or CJK (no case)
		} else {
			dst = utf8.AppendRune(dst, foldRune(r))
		}
		i += n
	}
	return dst
}

// foldRune is the smallest rune of r's simple-folding orbit.
func foldRune(r rune) rune {
	min := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < min {
			min = f
		}
	}
	return min
}

func foldLiteral(rs []rune) string {
	return string(foldString(nil, string(rs)))
}

// zeroWidth: an assertion that matches no text.
func zeroWidth(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginText, syntax.OpEndText, syntax.OpBeginLine, syntax.OpEndLine,
		syntax.OpWordBoundary, syntax.OpNoWordBoundary, syntax.OpEmptyMatch:
		return true
	}
	return false
}

// startAnchored reports whether every match of re begins at the text's start.
func startAnchored(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginText:
		return true
	case syntax.OpConcat:
		return len(re.Sub) > 0 && startAnchored(re.Sub[0])
	case syntax.OpCapture:
		return startAnchored(re.Sub[0])
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if !startAnchored(s) {
				return false
			}
		}
		return true
	}
	return false
}

// maxClass is the largest character class read as a set of one-rune
// literals.
const maxClass = 8

// classLiterals lists a small class's runes as folded literals.
func classLiterals(re *syntax.Regexp) ([]string, bool) {
	var out []string
	for i := 0; i+1 < len(re.Rune); i += 2 {
		if re.Rune[i+1]-re.Rune[i] >= maxClass {
			return nil, false
		}
		for r := re.Rune[i]; r <= re.Rune[i+1]; r++ {
			out = append(out, foldLiteral([]rune{r}))
			if len(out) > maxClass {
				return nil, false
			}
		}
	}
	return dedupe(out), len(out) > 0
}

// firstLiterals returns literals one of which every non-empty match of re
// begins with; nullable reports that re can match the empty string (then
// what follows it may come first). ok is false when nothing is known.
func firstLiterals(re *syntax.Regexp) (set []string, nullable, ok bool) {
	switch {
	case zeroWidth(re):
		return nil, true, true
	}
	switch re.Op {
	case syntax.OpLiteral:
		return []string{foldLiteral(re.Rune)}, len(re.Rune) == 0, true
	case syntax.OpCharClass:
		set, ok := classLiterals(re)
		return set, false, ok
	case syntax.OpCapture:
		return firstLiterals(re.Sub[0])
	case syntax.OpStar, syntax.OpQuest:
		set, _, ok := firstLiterals(re.Sub[0])
		return set, true, ok
	case syntax.OpPlus:
		return firstLiterals(re.Sub[0])
	case syntax.OpRepeat:
		set, nullable, ok := firstLiterals(re.Sub[0])
		return set, nullable || re.Min == 0, ok
	case syntax.OpAlternate:
		var out []string
		nullable := false
		for _, s := range re.Sub {
			set, n, ok := firstLiterals(s)
			if !ok {
				return nil, false, false
			}
			out, nullable = append(out, set...), nullable || n
		}
		return dedupe(out), nullable, true
	case syntax.OpConcat:
		var out []string
		for _, s := range re.Sub {
			set, n, ok := firstLiterals(s)
			if !ok {
				return nil, false, false
			}
			out = append(out, set...)
			if !n {
				return dedupe(out), false, true
			}
		}
		return dedupe(out), true, true
	}
	return nil, false, false
}

// maxNeeds bounds the literal sets a guard checks.
const maxNeeds = 3

// neededLiterals returns sets of literals such that every match of re
// contains one literal of each set; nil when nothing is known.
func neededLiterals(re *syntax.Regexp) [][]string {
	switch re.Op {
	case syntax.OpLiteral:
		if len(re.Rune) == 0 {
			return nil
		}
		return [][]string{{foldLiteral(re.Rune)}}
	case syntax.OpCharClass:
		if set, ok := classLiterals(re); ok {
			return [][]string{set}
		}
		return nil
	case syntax.OpCapture, syntax.OpPlus:
		return neededLiterals(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min == 0 {
			return nil
		}
		return neededLiterals(re.Sub[0])
	case syntax.OpAlternate:
		// One set: each branch's tightest.
		var out []string
		for _, s := range re.Sub {
			sets := neededLiterals(s)
			if len(sets) == 0 {
				return nil // a branch that needs nothing
			}
			out = append(out, tightest(sets)...)
		}
		return [][]string{dedupe(out)}
	case syntax.OpConcat:
		// Every part's sets hold; the tightest few are kept.
		var all [][]string
		for _, s := range re.Sub {
			for _, set := range neededLiterals(s) {
				if !slices.ContainsFunc(all, func(x []string) bool { return slices.Equal(x, set) }) {
					all = append(all, set)
				}
			}
		}
		slices.SortStableFunc(all, func(a, b []string) int {
			switch {
			case tighter(a, b):
				return -1
			case tighter(b, a):
				return 1
			}
			return 0
		})
		return all[:min(len(all), maxNeeds)]
	}
	return nil
}

func tightest(sets [][]string) []string {
	var best []string
	for _, s := range sets {
		if best == nil || tighter(s, best) {
			best = s
		}
	}
	return best
}

// tighter: a set whose shortest literal is longer (then, a smaller set)
// lets less text through.
func tighter(a, b []string) bool {
	if ma, mb := shortest(a), shortest(b); ma != mb {
		return ma > mb
	}
	return len(a) < len(b)
}

func shortest(set []string) int {
	n := -1
	for _, s := range set {
		if n < 0 || len(s) < n {
			n = len(s)
		}
	}
	return n
}

func dedupe(set []string) []string {
	slices.Sort(set)
	return slices.Compact(set)
}
