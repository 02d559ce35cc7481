package tokens

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
)

// o200kPattern is the o200k_base pre-tokenizer, exactly as tiktoken-go's
// codec compiles it. regexp2.MustCompile (as the codec) runs the matcher the
// codec package generated and registered for it, which is the reference the
// splitter follows (regexp2.Compile would interpret the pattern, which
// differs on U+007F).
const o200kPattern = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`

var refSplit = regexp2.MustCompile(o200kPattern, regexp2.None)

// regexpPieces is the codec's split of s: each match as the codec reads it.
func regexpPieces(t testing.TB, s string) []string {
	var out []string
	m, err := refSplit.FindStringMatch(s)
	for m != nil && err == nil {
		out = append(out, m.String())
		m, err = refSplit.FindNextMatch(m)
	}
	if err != nil {
		t.Fatalf("regexp on %q: %v", s, err)
	}
	return out
}

// splitPieces is the splitter's split of s, pieces holding invalid UTF-8
// read as count reads them.
func splitPieces(s string) []string {
	var out []string
	sp := splitter{s: s}
	for p, ok := sp.next(); ok; p, ok = sp.next() {
		if !utf8.ValidString(p) {
			p = runeText(p)
		}
		out = append(out, p)
	}
	return out
}

func samePieces(t testing.TB, s string) {
	t.Helper()
	want, got := regexpPieces(t, s), splitPieces(s)
	if len(want) != len(got) {
		t.Fatalf("split(%q):\n got %q\nwant %q", s, got, want)
	}
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("split(%q): piece %d is %q, regexp %q\n got %q\nwant %q", s, i, got[i], want[i], got, want)
		}
	}
}

// splitCases covers each alternative of the pattern and the runes where
// the generated matcher is particular.
var splitCases = []string{
	"", "a", "A", " ", "\n", "'", "hello world", "Hello World", "HELLO WORLD", "HELLOworld", "helloWORLD",
	"The quick brown fox jumps over the lazy dog.", "  two spaces", "trailing   ", "tab\tseparated\tvalues",
	// contractions, every case, and near misses
	"it's don't they're we've I'm you'll he'd", "IT'S DON'T THEY'RE WE'VE I'M YOU'LL HE'D",
	"It'S dOn'T tHeY'rE wE'vE i'M yOu'Ll He'D", "'s 't 're 've 'm 'll 'd", "x'r x'v x'l x'lx x'ls x're'", "don'tcha O'Neil rock'n'roll",
	"word'", "word''s", "ABC's ABC'S abc'S", "a'ſ A'ſ", "x'\u017fy", "Ǆ'S ǅ's ǆ'd", "ʰ's", "x'Ｓ",
	// digits
	"1", "12", "123", "1234", "12345678901", "3.14159", "1,000,000", "v1.2.3", "abc123def", "٣٤٥٦٧", "١٢3", "²³⁴⁵", "Ⅻ Ⅷ", "x²",
	// punctuation runs and the trailing [\r\n/]*
	"!!!", " !!!", "  !!!", "...\n\n", "--/\n//x", "a/b/c", "$100.00 & 50% off!!!", "https://example.com/a/b?q=1#f",
	"{\"k\":[1,2,{\"x\":null}]}\n", "<tag attr=\"v\">text</tag>", "**bold** _it_ `code`", "\"quoted\"", "(a) [b] {c}",
	// whitespace runs and newlines
	"a\nb", "a\n\nb", "a \n b", "a  \n  \n  b", " \n", "\n ", "\r\n", "a\r\n\r\nb", "  \t\n\t  x", "\n\n\n", "x   ", "x   y",
	"\u00a0x", "x\u00a0\u00a0y", "\u3000日本", "a\u2028b", "a\u2029\u2029b", "\u0085x", "x\u0085\u0085", "\v\fx", "\u1680\u2000\u200ax",
	"\u200bzero\u200bwidth", "\ufeffbom",
	// scripts
	"你好，世界！这是一个测试。", "日本語のテキストとカタカナ、ひらがな。", "Привет, мир! Ёжик в тумане.", "ПРИВЕТ мир", "مرحبا بالعالم",
	"שלום עולם", "नमस्ते दुनिया", "한국어 텍스트입니다", "Ελληνικά ΚΕΊΜΕΝΑ", "ǅungla ǈ", "ﬁne ﬂow", "ΣΊΣΥΦΟΣ",
	"mixed中文English日本語русский123", "ℌello ℍ", "Ⓐ ⓑ",
	// combining marks
	"e\u0301 a\u0308 n\u0303", "\u0301", "\u0301\u0301x", "x\u0301", "A\u0301B\u0301c", "!\u0301", " \u0301a", "1\u0301", "\u0301'S",
	"\u20dd\u20de", "क्षत्रिय", "ñ\u0303\u0303",
	// emoji and symbols
	"😀", "emoji 😀👍🏽🚀", "family 👨‍👩‍👧‍👦", "flags 🇫🇷🇯🇵", "❤️ ☺︎", "a😀b", "😀😀 😀", "© ® ™ € £ ¥",
	// controls, U+007F and invalid UTF-8
	"a\x7fb", "\x7f", " \x7f", "\x7f\x7f a", "x\x00y\x01z", "\x1c\x1d\x1e\x1f", "\x1fword", "\x80", "\xff\xfe invalid", "a\xc3(b",
	"\xe2\x82", "ok\xf0\x9f\x98", "\xed\xa0\x80", "\xc0\xaf", "x\xffy", " \xff", "\xffabc", "abc\xff's", "\xef\xbf\xbd", "\ufffd\xff",
}

// TestSplitMatchesRegexp: the splitter cuts the regexp's pieces.
func TestSplitMatchesRegexp(t *testing.T) {
	if got := regexpPieces(t, "a\x7fb"); strings.Join(got, "|") != "a|b" {
		t.Fatalf("the reference is not the codec's generated matcher: %q", got)
	}
	for _, s := range splitCases {
		samePieces(t, s)
	}
	for _, s := range corpus(t) {
		samePieces(t, s)
	}
}

// TestSplitRuneClasses: runes of every Unicode category, each in contexts
// that tell its classes (the lead of a word, upper, lower, digit, symbol,
// space) apart: every rune below U+0800 and every space, up to 64 runes of
// each general category spread over it, and every 251st rune (unassigned
// ones included). Every rune takes 80 s against the regexp; the classes
// come from the categories, so these stand for the rest.
func TestSplitRuneClasses(t *testing.T) {
	seen := map[rune]bool{}
	var runes []rune
	add := func(r rune) {
		if !seen[r] && !(r >= 0xd800 && r <= 0xdfff) {
			seen[r] = true
			runes = append(runes, r)
		}
	}
	for r := rune(0); r < 0x800; r++ {
		add(r)
	}
	for r := rune(0); r <= utf8.MaxRune; r += 251 {
		add(r)
	}
	each := func(tab *unicode.RangeTable, f func(rune)) {
		for _, g := range tab.R16 {
			for r := rune(g.Lo); r <= rune(g.Hi); r += rune(g.Stride) {
				f(r)
			}
		}
		for _, g := range tab.R32 {
			for r := rune(g.Lo); r <= rune(g.Hi); r += rune(g.Stride) {
				f(r)
			}
		}
	}
	each(unicode.White_Space, add)
	for name, tab := range unicode.Categories {
		if len(name) != 2 {
			continue
		}
		var all []rune
		each(tab, func(r rune) { all = append(all, r) })
		for i := 0; i < 64 && i < len(all); i++ {
			add(all[i*len(all)/min(64, len(all))])
		}
		add(all[len(all)-1])
	}
	var b strings.Builder
	for _, r := range runes {
		c := string(r)
		b.Reset()
		for _, ctx := range [...]string{"a", "A", "ab", "!", " ", "1", "\n", "'s"} {
			b.WriteString(c + ctx + "\u3000")
			b.WriteString(ctx + c + "\u3000")
		}
		b.WriteString(c + c + c + c + "x" + c + c + " \n")
		samePieces(t, b.String())
	}
	t.Logf("%d runes", len(runes))
}

// FuzzSplitMatchesRegexp compares the pieces on any input.
func FuzzSplitMatchesRegexp(f *testing.F) {
	for _, s := range splitCases {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		samePieces(t, s)
	})
}

// TestSplitAllocatesNothing: splitting and counting valid text whose pieces
// are short allocates nothing.
func TestSplitAllocatesNothing(t *testing.T) {
	Warm()
	text := strings.Repeat("The user's prompt, with code `x := f(1234)` and 日本語 text 😀.\n\n", 50)
	if a := testing.AllocsPerRun(20, func() {
		sp := splitter{s: text}
		for _, ok := sp.next(); ok; _, ok = sp.next() {
		}
	}); a != 0 {
		t.Fatalf("split: %.0f allocations", a)
	}
	if a := testing.AllocsPerRun(20, func() { Count(text) }); a != 0 {
		t.Fatalf("Count: %.0f allocations", a)
	}
}
