package memory

import (
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"unicode"
)

func TestTerms(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"I prefer spaces for indentation", []string{"prefer", "space", "indentation"}},
		{"The user prefers Spaces", []string{"user", "prefer", "space"}},
		{"We use Postgres and k8s", []string{"team", "postgresql", "kubernete"}[1:]},
		{"我更喜欢用空格缩进", []string{"我更", "更喜", "喜欢", "欢用", "用空", "空格", "格缩", "缩进"}},
		{"port 9090, UTC+8", []string{"port", "9090", "utc", "8"}},
		{"don't", nil},
		{"classes boxes matches uses", []string{"class", "box", "match", "use"}[:3]},
	}
	for _, tt := range tests {
		got := Terms(tt.in)
		if !reflect.DeepEqual(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
			t.Errorf("Terms(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// Query and memory meet across inflections.
	if normKey("preferred indentation") != normKey("prefers indenting") && normKey("prefer") != normKey("preferred") {
		t.Errorf("stems differ: %q %q", normKey("prefer"), normKey("preferred"))
	}
}

func TestOneLine(t *testing.T) {
	if got := oneLine("a  b\n c", 10); got != "a b c" {
		t.Errorf("got %q", got)
	}
	if got := oneLine("这是一个很长的句子", 7); got != "这是…" {
		t.Errorf("cut on rune boundary: %q", got)
	}
}

// Terms splits as the rune-by-rune code it replaced (termsReference, kept
// here): ASCII fast paths, stop words ruled out before they are copied.
func TestTermsAsBefore(t *testing.T) {
	texts := []string{"", "Can you help me REVIEW the deployment's Checks and make sure it handles retries?", "don't DON'T user’s users' O'Brien ''x'' '",
		"K\u212Aelvin İstanbul ÀÉÎõü straße ǅungla", "数据库迁移怎么写？我们用MySQL8吗", strings.Repeat("x", 39) + " " + strings.Repeat("y", 40) + " " + strings.Repeat("z", 41),
		strings.Repeat("é", 20) + " " + strings.Repeat("é", 21), "tz TZ pg k8s Golang mongo's macbook ies classes running preferred"}
	c := newCorpus(5)
	r := rand.New(rand.NewSource(5))
	pieces := []string{"'", "’", " ", "-", "K", "İ", "é", "中", "文", "9", "A", "z", "ß", "\xff", "ǅ", "Σ", "ς"}
	for i := 0; i < 3000; i++ {
		var b strings.Builder
		for j := r.Intn(12); j > 0; j-- {
			if r.Intn(2) == 0 {
				w := c.word()
				if r.Intn(3) == 0 {
					w = strings.ToUpper(w[:1]) + w[1:]
				}
				b.WriteString(w)
			} else {
				b.WriteString(pieces[r.Intn(len(pieces))])
			}
		}
		texts = append(texts, b.String())
	}
	for _, text := range texts {
		if got, want := Terms(text), termsReference(text); !reflect.DeepEqual(got, want) {
			t.Fatalf("Terms(%q) = %q, before %q", text, got, want)
		}
	}
}

func termsReference(text string) []string {
	var out []string
	var word, cjk []rune
	flushWord := func() {
		w := string(word)
		word = word[:0]
		if w == "" || len(w) > maxTermLen || stopEN[w] {
			return
		}
		if t, ok := wordTerm(w); ok {
			out = append(out, t)
		}
	}
	for _, r := range text {
		switch {
		case isCJK(r):
			flushWord()
			cjk = append(cjk, r)
		case unicode.IsLetter(r) || unicode.IsDigit(r) || (r == '\'' || r == '\u2019') && len(word) > 0:
			out = appendCJKTerms(out, cjk)
			cjk = cjk[:0]
			if r == '\u2019' {
				r = '\''
			}
			word = append(word, unicode.ToLower(r))
		case r == '\'' || r == '\u2019':
			out = appendCJKTerms(out, cjk)
			cjk = cjk[:0]
		default:
			flushWord()
			out = appendCJKTerms(out, cjk)
			cjk = cjk[:0]
		}
	}
	flushWord()
	return appendCJKTerms(out, cjk)
}
