package skills

import (
	"slices"
	"strings"
	"testing"
)

// eachTerm must cut exactly the tokens of the unicode61 definition: the
// lowercased text's fields of letters and digits.
var eachTermCases = []string{
	"",
	"Deploy the API to k8s, then roll back v2.3!",
	"  leading and trailing  ",
	"İstanbul ÜBER Straße naïve café",       // lowercasing changes length and adds a combining mark
	"日本語のテキスト and mixed-script words",       // no separators inside CJK runs
	"bad \xff\xfe utf8 \xc3 here",           // invalid UTF-8 separates
	"numbers 404 2024 a3f9c0d2 utf8 ipv6 x", // digits are term runes
}

func TestEachTermCutsUnicode61Tokens(t *testing.T) {
	for _, text := range eachTermCases {
		checkEachTerm(t, text)
	}
}

func FuzzEachTerm(f *testing.F) {
	for _, text := range eachTermCases {
		f.Add(text)
	}
	f.Fuzz(checkEachTerm)
}

func checkEachTerm(t *testing.T, text string) {
	var got []string
	eachTerm(text, func(term string) bool {
		got = append(got, term)
		return true
	})
	if want := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !isTermRune(r) }); !slices.Equal(got, want) {
		t.Fatalf("eachTerm(%q) = %q, fields of letters and digits = %q", text, got, want)
	}
}
