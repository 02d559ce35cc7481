package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/dlclark/regexp2/v2"
)

// regexPieces splits s with the pattern itself, run by regexp2 (a
// backtracking engine with look-ahead), as the reference does.
func regexPieces(t testing.TB, re *regexp2.Regexp, s string) []string {
	t.Helper()
	p := splitPre{m: regexMatcher{re}, behavior: behaviorIsolated}
	return p.appendPieces(nil, s)
}

func scannerPieces(g gptScanner, s string) []string {
	var out []string
	g.split(s, func(p string) { out = append(out, p) })
	return out
}

var scannerSamples = []string{
	"", "a", " ", "\n", "Hello world", "Hello, world!", "  two  spaces  ", "trailing   ",
	"don't I'LL it'S we'Ve 're 'm 'd 'x '", "''s", "a'sb", "12345", "v1.2.3", "x123y",
	"\n\n\n", " \n \n  x", "\r\n\r\n", "\t\ttabs\t", "a\u00a0b\u3000c", "\u2028\u2029\u0085",
	"((a))", " ((", "!!!\n\n", " !!! \n", "...\r\n  x", "你好，世界！", "😀😀 😀", "e\u0301",
	"   \n", "x \n y", "\t\n\tx", " 'll", "'ſ 'ſt", "١٢٣ ½", "a\u0300b", "#!/bin/sh\n\nexit 0\n",
	"   leading", "a  \t  b", "end with space ", "end with newline\n", "\u200b\u200bzw",
}

func TestScannerMatchesRegex(t *testing.T) {
	for _, c := range []struct {
		pattern string
		digits  int
	}{{qwenPattern, 1}, {llama3Pattern, 3}} {
		re := regexp2.MustCompile(c.pattern, regexp2.None)
		g := gptScanner{maxDigits: c.digits}
		for _, s := range scannerSamples {
			want := regexPieces(t, re, s)
			got := scannerPieces(g, s)
			if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
				t.Errorf("digits=%d %q:\n got %q\nwant %q", c.digits, s, got, want)
			}
		}
	}
}

func FuzzScannerMatchesRegex(f *testing.F) {
	for _, s := range scannerSamples {
		f.Add(s)
	}
	qwen := regexp2.MustCompile(qwenPattern, regexp2.None)
	llama := regexp2.MustCompile(llama3Pattern, regexp2.None)
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) {
			return // Encode makes text valid UTF-8 before splitting
		}
		for _, c := range []struct {
			re *regexp2.Regexp
			g  gptScanner
		}{{qwen, gptScanner{1}}, {llama, gptScanner{3}}} {
			want := regexPieces(t, c.re, s)
			got := scannerPieces(c.g, s)
			if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
				t.Fatalf("digits=%d %q:\n got %q\nwant %q", c.g.maxDigits, s, got, want)
			}
		}
	})
}
