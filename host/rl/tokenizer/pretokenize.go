package tokenizer

import (
	"fmt"
	"strings"

	"github.com/dlclark/regexp2/v2"
)

// A preTokenizer cuts a normalized segment into the pieces that BPE encodes
// one by one. Pieces are raw (not yet byte-level) strings.
type preTokenizer interface {
	appendPieces(dst []string, s string) []string
}

type sequencePre []preTokenizer

func (q sequencePre) appendPieces(dst []string, s string) []string {
	pieces := []string{s}
	for _, p := range q {
		var next []string
		for _, piece := range pieces {
			next = p.appendPieces(next, piece)
		}
		pieces = next
	}
	return append(dst, pieces...)
}

// splitBehavior is what Split does with the parts its pattern matched,
// named as in tokenizer.json.
type splitBehavior string

const (
	behaviorRemoved            splitBehavior = "Removed"
	behaviorIsolated           splitBehavior = "Isolated"
	behaviorMergedWithPrevious splitBehavior = "MergedWithPrevious"
	behaviorMergedWithNext     splitBehavior = "MergedWithNext"
	behaviorContiguous         splitBehavior = "Contiguous"
)

// matcher reports the byte ranges of the non-overlapping matches in s, in
// order.
type matcher interface {
	matches(s string) [][2]int
}

type splitPre struct {
	m        matcher
	behavior splitBehavior
	invert   bool
	// scanner, when set, replaces m for Isolated splits: its pieces are the
	// matches and there are no gaps.
	scanner *gptScanner
}

func (p splitPre) appendPieces(dst []string, s string) []string {
	if p.scanner != nil {
		p.scanner.split(s, func(piece string) { dst = append(dst, piece) })
		return dst
	}
	type part struct {
		start, end int
		match      bool
	}
	var parts []part
	prev := 0
	for _, m := range p.m.matches(s) {
		if m[0] != prev {
			parts = append(parts, part{prev, m[0], false})
		}
		parts = append(parts, part{m[0], m[1], true})
		prev = m[1]
	}
	if prev != len(s) {
		parts = append(parts, part{prev, len(s), false})
	}
	if p.invert {
		for i := range parts {
			parts[i].match = !parts[i].match
		}
	}
	// The folds below follow the Hugging Face implementation; "remove"
	// marks parts that are dropped (only Removed drops any).
	type out struct {
		start, end int
		remove     bool
	}
	var outs []out
	switch p.behavior {
	case behaviorIsolated:
		for _, pt := range parts {
			outs = append(outs, out{pt.start, pt.end, false})
		}
	case behaviorRemoved:
		for _, pt := range parts {
			outs = append(outs, out{pt.start, pt.end, pt.match})
		}
	case behaviorContiguous:
		prevMatch := false
		for _, pt := range parts {
			if pt.match == prevMatch && len(outs) > 0 {
				outs[len(outs)-1].end = pt.end
			} else {
				outs = append(outs, out{pt.start, pt.end, false})
			}
			prevMatch = pt.match
		}
	case behaviorMergedWithPrevious:
		prevMatch := false
		for _, pt := range parts {
			if pt.match && !prevMatch && len(outs) > 0 {
				outs[len(outs)-1].end = pt.end
			} else {
				outs = append(outs, out{pt.start, pt.end, false})
			}
			prevMatch = pt.match
		}
	case behaviorMergedWithNext:
		prevMatch := false
		for i := len(parts) - 1; i >= 0; i-- {
			pt := parts[i]
			if pt.match && !prevMatch && len(outs) > 0 {
				outs[len(outs)-1].start = pt.start
			} else {
				outs = append(outs, out{pt.start, pt.end, false})
			}
			prevMatch = pt.match
		}
		for i, j := 0, len(outs)-1; i < j; i, j = i+1, j-1 {
			outs[i], outs[j] = outs[j], outs[i]
		}
	}
	for _, o := range outs {
		if !o.remove && o.end > o.start {
			dst = append(dst, s[o.start:o.end])
		}
	}
	return dst
}

type regexMatcher struct{ re *regexp2.Regexp }

func (r regexMatcher) matches(s string) [][2]int {
	idx, err := r.re.FindAllStringIndex(s, -1)
	if err != nil {
		// Only a match timeout or stack limit gets here; neither is set for
		// these patterns, so treat the text as one unmatched part.
		return nil
	}
	out := make([][2]int, len(idx))
	for i, m := range idx {
		out[i] = [2]int{m[0], m[1]}
	}
	return out
}

type literalMatcher struct{ lit string }

func (l literalMatcher) matches(s string) [][2]int {
	var out [][2]int
	if l.lit == "" {
		return nil
	}
	for off := 0; ; {
		i := strings.Index(s[off:], l.lit)
		if i < 0 {
			return out
		}
		out = append(out, [2]int{off + i, off + i + len(l.lit)})
		off += i + len(l.lit)
	}
}

// gpt2Pattern is the split the ByteLevel pre-tokenizer applies when its
// use_regex is true.
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// byteLevelPre is the ByteLevel pre-tokenizer. The byte-to-rune spelling
// itself happens inside the BPE model, which works on raw bytes.
type byteLevelPre struct {
	addPrefixSpace bool
	split          *splitPre // nil unless use_regex
}

func (b byteLevelPre) appendPieces(dst []string, s string) []string {
	if b.addPrefixSpace && !strings.HasPrefix(s, " ") {
		s = " " + s
	}
	if b.split == nil {
		return append(dst, s)
	}
	return b.split.appendPieces(dst, s)
}

// compileSplitRegex compiles a tokenizer.json regex, using the hand-written
// scanner when the pattern is one it implements.
func compileSplitRegex(pattern string, behavior splitBehavior, invert bool) (*splitPre, error) {
	if behavior == behaviorIsolated && !invert {
		switch pattern {
		case qwenPattern:
			return &splitPre{behavior: behavior, scanner: &gptScanner{maxDigits: 1}}, nil
		case llama3Pattern:
			return &splitPre{behavior: behavior, scanner: &gptScanner{maxDigits: 3}}, nil
		}
	}
	re, err := regexp2.Compile(pattern, regexp2.None)
	if err != nil {
		return nil, fmt.Errorf("pre-tokenizer regex %q: %w", pattern, err)
	}
	return &splitPre{m: regexMatcher{re}, behavior: behavior, invert: invert}, nil
}
