package textclip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClip(t *testing.T) {
	type fn struct {
		name string
		f    func(string, int) string
	}
	prefix, suffix, ellipsis, runes := fn{"Prefix", Prefix}, fn{"Suffix", Suffix}, fn{"Ellipsis", Ellipsis}, fn{"Runes", Runes}
	for _, c := range []struct {
		fn   fn
		s    string
		n    int
		want string
	}{
		{prefix, "", 0, ""},
		{prefix, "abc", 3, "abc"},
		{prefix, "abc", 2, "ab"},
		{prefix, "abc", 0, ""},
		{prefix, "abc", -1, ""},
		{prefix, "aé", 2, "a"}, // é is two bytes: keeping one would split it
		{prefix, "aé", 3, "aé"},
		{prefix, "😀x", 3, ""},
		{prefix, "x😀", 4, "x"},

		{suffix, "abc", 3, "abc"},
		{suffix, "abc", 2, "bc"},
		{suffix, "abc", 0, ""},
		{suffix, "éa", 2, "a"},
		{suffix, "x😀", 4, "😀"},
		{suffix, "x😀", 3, ""},

		{ellipsis, "abc", 3, "abc"},
		{ellipsis, "abcd", 3, "abc…"},
		{ellipsis, "abc", 0, "…"},
		{ellipsis, strings.Repeat("é", 10), 5, "éé…"},
		{ellipsis, "日本語", 7, "日本…"},

		{runes, "", 0, ""},
		{runes, "abc", 0, ""},
		{runes, "abc", 1, "…"},
		{runes, "abc", 3, "abc"},
		{runes, "abcd", 3, "ab…"},
		{runes, "日本語", 3, "日本語"},
		{runes, "日本語です", 3, "日本…"},
		{runes, "日本語です", 5, "日本語です"},
	} {
		if got := c.fn.f(c.s, c.n); got != c.want {
			t.Errorf("%s(%q, %d) = %q, want %q", c.fn.name, c.s, c.n, got, c.want)
		}
	}
}

func FuzzClip(f *testing.F) {
	for _, s := range []string{"", "abc", "aé", "x😀y", "日本語です", "\xff\xfe", strings.Repeat("é", 40)} {
		for _, n := range []int{-1, 0, 1, 2, 3, 4, 7, 100} {
			f.Add(s, n)
		}
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		valid := utf8.ValidString(s)
		check := func(name, got string, fits bool) {
			t.Helper()
			if valid && !utf8.ValidString(got) {
				t.Fatalf("%s(%q, %d) = %q: not valid UTF-8", name, s, n, got)
			}
			if fits && got != s {
				t.Fatalf("%s(%q, %d) = %q: changed text that fits", name, s, n, got)
			}
		}

		for _, c := range []struct {
			name string
			cut  func(string, int) string
			part func(s, part string) bool
		}{{"Prefix", Prefix, strings.HasPrefix}, {"Suffix", Suffix, strings.HasSuffix}} {
			got := c.cut(s, n)
			check(c.name, got, len(s) <= n)
			if !c.part(s, got) || len(got) > max(n, 0) {
				t.Fatalf("%s(%q, %d) = %q: not a part of s within %d bytes", c.name, s, n, got, n)
			}
			if valid && len(s) > n && len(got) <= n-utf8.UTFMax {
				t.Fatalf("%s(%q, %d) = %q: cut more than one rune short", c.name, s, n, got)
			}
		}

		e, p := Ellipsis(s, n), Prefix(s, n)
		check("Ellipsis", e, len(s) <= n)
		if len(s) > n && e != p+Mark {
			t.Fatalf("Ellipsis(%q, %d) = %q, want Prefix+Mark %q", s, n, e, p+Mark)
		}

		if valid {
			r := Runes(s, n)
			count := utf8.RuneCountInString(s)
			check("Runes", r, count <= n)
			if got := utf8.RuneCountInString(r); got > max(n, 0) {
				t.Fatalf("Runes(%q, %d) = %q: %d runes", s, n, r, got)
			}
			if count > n && n > 0 && (!strings.HasSuffix(r, Mark) || !strings.HasPrefix(s, strings.TrimSuffix(r, Mark)) || utf8.RuneCountInString(r) != n) {
				t.Fatalf("Runes(%q, %d) = %q: want the first %d runes and the mark", s, n, r, n-1)
			}
		}
	})
}
