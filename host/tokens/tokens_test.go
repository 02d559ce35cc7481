package tokens

import (
	"strings"
	"testing"
)

func TestCount(t *testing.T) {
	tests := []struct {
		in       string
		min, max int
	}{
		{"", 0, 0},
		{"hello", 1, 1},
		{"The quick brown fox jumps over the lazy dog.", 9, 11},
		{"你好，世界", 2, 6},
		{strings.Repeat("token ", 1000), 900, 1100},
		{"\xff\xfe invalid utf8", 1, 20},
	}
	for _, tt := range tests {
		if got := Count(tt.in); got < tt.min || got > tt.max {
			t.Errorf("Count(%.20q) = %d, want in [%d,%d]", tt.in, got, tt.min, tt.max)
		}
	}
}

func TestCacheMatchesCount(t *testing.T) {
	c := NewCache(2)
	texts := []string{strings.Repeat("alpha beta ", 20), strings.Repeat("gamma ", 30), strings.Repeat("delta epsilon ", 15), "short"}
	for round := 0; round < 3; round++ {
		for _, s := range texts {
			if got, want := c.Count(s), Count(s); got != want {
				t.Fatalf("cache count %d != %d for %.20q", got, want, s)
			}
		}
	}
	if len(c.m) > 2 {
		t.Fatalf("cache grew past its bound: %d", len(c.m))
	}
}

// TestCacheCountKeyed: a keyed count is the count of the text the key stands
// for, built only on a miss, bounded like Count's entries, and apart from
// them.
func TestCacheCountKeyed(t *testing.T) {
	c := NewCache(2)
	texts := map[string]string{
		"a":      strings.Repeat("alpha beta ", 20),
		"b":      strings.Repeat("gamma ", 30),
		"c":      "short",
		"a\x00b": strings.Repeat("delta epsilon ", 15),
	}
	built := map[string]int{}
	for round := 0; round < 3; round++ {
		for _, k := range []string{"a", "a", "b", "b"} {
			got := c.CountKeyed([]byte(k), func() string { built[k]++; return texts[k] })
			if want := Count(texts[k]); got != want {
				t.Fatalf("round %d key %q: %d, want %d", round, k, got, want)
			}
		}
	}
	if built["a"] != 1 || built["b"] != 1 {
		t.Fatalf("texts built %v, want each once (two keys fit)", built)
	}
	for _, k := range []string{"c", "a\x00b", "a"} {
		if got, want := c.CountKeyed([]byte(k), func() string { built[k]++; return texts[k] }), Count(texts[k]); got != want {
			t.Fatalf("key %q: %d, want %d", k, got, want)
		}
	}
	if len(c.keyed) > 2 {
		t.Fatalf("keyed entries grew past the bound: %d", len(c.keyed))
	}
	if built["a"] != 2 {
		t.Fatalf("key a built %d times, want 2 (forgotten when the cache filled)", built["a"])
	}
	// A key equal to a text counted by Count answers with its own text's count.
	text := texts["a"]
	c.Count(text)
	if got, want := c.CountKeyed([]byte(text), func() string { return "x" }), Count("x"); got != want {
		t.Fatalf("a key equal to a counted text: %d, want %d", got, want)
	}
	key := []byte("b")
	c.CountKeyed(key, func() string { return texts["b"] })
	if allocs := testing.AllocsPerRun(100, func() { c.CountKeyed(key, func() string { return texts["b"] }) }); allocs != 0 {
		t.Fatalf("a hit allocates %.0f times", allocs)
	}
}
