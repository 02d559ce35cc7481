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
