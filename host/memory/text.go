package memory

import (
	"bytes"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// Terms are what lexical retrieval matches on: lower-cased letter/digit runs
// with a light English stemmer, and CJK text as overlapping character bigrams
// (Chinese has no spaces, so whole runs would never match a query). The same
// function feeds the FTS5 index, the document-frequency table and queries, so
// the three always agree. Stop words are dropped.

// maxTermLen bounds one term (longer runs are hashes, base64 and the like).
const maxTermLen = 40

// isCJK reports whether r is a Han, Hiragana, Katakana or Hangul character.
func isCJK(r rune) bool {
	if r < 0x1100 {
		return false // below Hangul Jamo: Latin, Greek, Cyrillic, …
	}
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// Terms splits text into index terms, in order, duplicates kept.
func Terms(text string) []string {
	var out []string
	var wordBuf [maxTermLen + 8]byte
	word := wordBuf[:0] // UTF-8, lower-cased
	var cjk []rune
	flushWord := func() {
		if len(word) == 0 {
			return
		}
		raw := word
		word = word[:0]
		if len(raw) > maxTermLen {
			return
		}
		// A stop word is ruled out before it is copied into a string.
		apostrophe := bytes.IndexByte(raw, '\'') >= 0
		if !apostrophe && stopEN[string(raw)] {
			return
		}
		if w, ok := wordTerm(string(raw)); ok {
			out = append(out, w)
		}
	}
	flushCJK := func() {
		out = appendCJKTerms(out, cjk)
		cjk = cjk[:0]
	}
	for _, r := range text {
		switch {
		case isCJK(r):
			flushWord()
			cjk = append(cjk, r)
		case r < utf8.RuneSelf && ('a' <= r && r <= 'z' || '0' <= r && r <= '9'):
			flushCJK()
			word = append(word, byte(r))
		case 'A' <= r && r <= 'Z':
			flushCJK()
			word = append(word, byte(r)+('a'-'A'))
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			flushCJK()
			word = utf8.AppendRune(word, unicode.ToLower(r))
		case r == '\'' || r == '\u2019':
			// "don't", "user's": keep the apostrophe out of the term but do
			// not split the word in two.
			flushCJK()
			if len(word) > 0 {
				word = append(word, '\'')
			}
		default:
			flushWord()
			flushCJK()
		}
	}
	flushWord()
	flushCJK()
	return out
}

// wordTerm is the term of a lower-cased word (false: none, a stop word).
func wordTerm(w string) (string, bool) {
	if strings.IndexByte(w, '\'') >= 0 && stopEN[strings.ReplaceAll(w, "'", "")] {
		return "", false
	}
	if a, ok := aliases[w]; ok {
		w = stem(a)
	} else {
		w = canonical(stem(w))
	}
	if w == "" || stopEN[w] {
		return "", false
	}
	return w, true
}

// appendCJKTerms appends the terms of a run of CJK characters: the
// character alone, or its overlapping bigrams.
func appendCJKTerms(out []string, cjk []rune) []string {
	switch len(cjk) {
	case 0:
	case 1:
		if s := string(cjk); !stopZH1[s] {
			out = append(out, s)
		}
	default:
		for i := 0; i+1 < len(cjk); i++ {
			if b := string(cjk[i : i+2]); !stopZH[b] {
				out = append(out, b)
			}
		}
	}
	return out
}

// TermSet is the distinct terms of text.
func TermSet(text string) map[string]struct{} {
	ts := Terms(text)
	m := make(map[string]struct{}, len(ts))
	for _, t := range ts {
		m[t] = struct{}{}
	}
	return m
}

// distinct returns terms without duplicates, first occurrence order.
func distinct(ts []string) []string {
	seen := make(map[string]struct{}, len(ts))
	out := ts[:0:0]
	for _, t := range ts {
		if _, ok := seen[t]; ok {
			continue
		}
		seen[t] = struct{}{}
		out = append(out, t)
	}
	return out
}

// stem lower-cases and strips the commonest English suffixes. It is
// deliberately conservative: all that matters is that a query and a memory
// that use different inflections of a word meet.
func stem(w string) string {
	w = strings.TrimRight(w, "'")
	if i := strings.IndexByte(w, '\''); i >= 0 {
		switch w[i:] {
		case "'s":
			w = w[:i]
		case "'t", "'re", "'ve", "'ll", "'d", "'m":
			// contractions: "don't" → "dont" (a stop word)
			w = w[:i] + w[i+1:]
		default:
			w = strings.ReplaceAll(w, "'", "")
		}
	}
	if !isASCII(w) || len(w) <= 3 {
		return w
	}
	switch {
	case strings.HasSuffix(w, "ies") && len(w) > 4:
		return w[:len(w)-3] + "y"
	case strings.HasSuffix(w, "es") && len(w) > 4 && sibilant(w[:len(w)-2]):
		return w[:len(w)-2]
	case strings.HasSuffix(w, "ss") || strings.HasSuffix(w, "us") || strings.HasSuffix(w, "is"):
		return w
	case strings.HasSuffix(w, "s"):
		return w[:len(w)-1]
	case strings.HasSuffix(w, "ing") && len(w) > 5:
		return undouble(w[:len(w)-3])
	case strings.HasSuffix(w, "ed") && len(w) > 4:
		return undouble(w[:len(w)-2])
	}
	return w
}

func sibilant(s string) bool {
	return strings.HasSuffix(s, "ss") || strings.HasSuffix(s, "x") || strings.HasSuffix(s, "z") ||
		strings.HasSuffix(s, "ch") || strings.HasSuffix(s, "sh")
}

// undouble turns "preferr" into "prefer" and "runn" into "run".
func undouble(s string) string {
	n := len(s)
	if n >= 3 && s[n-1] == s[n-2] && !strings.ContainsRune("aeiouls", rune(s[n-1])) {
		return s[:n-1]
	}
	return s
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// jaccard is |a∩b| / |a∪b| of two term sets.
func jaccard(a, b map[string]struct{}) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for t := range a {
		if _, ok := b[t]; ok {
			inter++
		}
	}
	union := len(a) + len(b) - inter
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}

// normKey is a canonical form of a phrase for equality checks: its sorted
// distinct terms.
func normKey(text string) string {
	ts := distinct(Terms(text))
	sort.Strings(ts)
	return strings.Join(ts, " ")
}

// oneLine collapses whitespace and trims text to at most n bytes (on a rune
// boundary), adding an ellipsis when cut.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return strings.TrimSpace(textclip.Prefix(s, n)) + textclip.Mark
}

var stopEN = setOf(`a an the and or but if then else of to in on at by for with from into onto about as is are was were be been being
am do does did doing have has had having i me my mine myself you your yours we us our ours he him his she her it its they them their
this that these those there here what which who whom whose when where why how all any both each few more most other some such no nor
not only own same so than too very can could will would shall should may might must just also now please thank thanks hi hello hey
ok okay yes yeah let lets get got make made like want need know think really actually dont doesnt didnt isnt arent wasnt im ive id
youre thats whats its use using used one two up out over again further once s t don should've`)

// stopZH are frequent Chinese function bigrams (and single characters) that
// carry no topic.
var stopZH = setOf(`我们 你们 他们 她们 它们 这个 那个 一个 什么 怎么 可以 就是 还是 但是 因为 所以 如果 已经 没有 不是 的是 是的 了吗 一下 一些 这样 那样
这些 那些 现在 时候 的话 我的 你的 他的 她的 我是 你是 是我 是你 请你 帮我 给我 吗？ 了。 的。 是不 不要`)

var stopZH1 = setOf(`的 了 是 我 你 他 她 它 在 和 也 就 都 而 及 与 着 或 一 不 吗 呢 吧 啊 呀 么 这 那 有 个 请`)

func setOf(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}
