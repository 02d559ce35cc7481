package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// The pre-tokenizer pattern of Qwen2/Qwen3 (and, with \p{N}{1,3}, of
// Llama 3) is
//
//	(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//
// A backtracking engine runs it at a few MB/s; agent prompts are tens of
// kilobytes per turn. gptScanner reproduces its leftmost-first matches by
// hand, one alternative at a time, and is checked against regexp2 running the
// pattern itself by table tests and a fuzz target (scanner_test.go).
const (
	qwenPattern   = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	llama3Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

type runeClass uint8

const (
	clsOther   runeClass = iota // neither letter, number nor white space
	clsLetter                   // \p{L}
	clsNumber                   // \p{N}
	clsSpace                    // \s other than CR and LF
	clsNewline                  // \r or \n
)

var asciiClass [128]runeClass

func init() {
	for r := rune(0); r < 128; r++ {
		asciiClass[r] = classifySlow(r)
	}
}

func classifySlow(r rune) runeClass {
	switch {
	case r == '\r' || r == '\n':
		return clsNewline
	case unicode.IsLetter(r):
		return clsLetter
	case unicode.IsNumber(r):
		return clsNumber
	case unicode.Is(unicode.White_Space, r):
		return clsSpace
	}
	return clsOther
}

func classify(r rune) runeClass {
	if r < 128 {
		return asciiClass[r]
	}
	return classifySlow(r)
}

// gptScanner splits text like the pattern above, with maxDigits numbers per
// piece (1 for Qwen, 3 for Llama 3).
type gptScanner struct{ maxDigits int }

// split calls emit with every piece of s in order; the pieces cover s.
func (g gptScanner) split(s string, emit func(piece string)) {
	for i := 0; i < len(s); {
		j := g.next(s, i)
		emit(s[i:j])
		i = j
	}
}

// at decodes the rune at i; past the end it reports a zero-width rune so the
// alternatives below need no bounds checks.
func at(s string, i int) (rune, int, runeClass) {
	if i >= len(s) {
		return -1, 0, clsOther
	}
	c := s[i]
	if c < utf8.RuneSelf {
		return rune(c), 1, asciiClass[c]
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	return r, n, classify(r)
}

// next returns the end of the match that starts at i (i < len(s)).
func (g gptScanner) next(s string, i int) int {
	r0, n0, c0 := at(s, i)

	// (?i:'s|'t|'re|'ve|'m|'ll|'d)
	if r0 == '\'' {
		if end := contraction(s, i+1); end > 0 {
			return end
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+
	switch c0 {
	case clsLetter:
		return letters(s, i+n0)
	case clsOther, clsSpace:
		if _, n1, c1 := at(s, i+n0); c1 == clsLetter {
			return letters(s, i+n0+n1)
		}
	}
	// \p{N} or \p{N}{1,3}
	if c0 == clsNumber {
		j := i + n0
		for k := 1; k < g.maxDigits; k++ {
			_, n, c := at(s, j)
			if c != clsNumber || n == 0 {
				break
			}
			j += n
		}
		return j
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`
	j := -1
	if c0 == clsOther {
		j = i
	} else if r0 == ' ' {
		if _, n1, c1 := at(s, i+1); c1 == clsOther && n1 > 0 {
			j = i + 1
		}
	}
	if j >= 0 {
		for {
			_, n, c := at(s, j)
			if c != clsOther || n == 0 {
				break
			}
			j += n
		}
		for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
			j++
		}
		return j
	}
	// Only white space is left (c0 is clsSpace or clsNewline). Find the run.
	end, lastNL, lastStart := i, -1, i
	for {
		r, n, c := at(s, end)
		if n == 0 || (c != clsSpace && c != clsNewline) {
			break
		}
		if r == '\r' || r == '\n' {
			lastNL = end
		}
		lastStart = end
		end += n
	}
	// \s*[\r\n]+ : the run up to and including its last line break.
	if lastNL >= 0 {
		return lastNL + 1
	}
	// \s+(?!\S) : the whole run at the end of the text, else all but its last
	// rune (which then starts the next piece, e.g. " word").
	if end == len(s) {
		return end
	}
	if lastStart > i {
		return lastStart
	}
	// \s+
	return end
}

// letters returns the end of the run of letters starting at i (at least one
// letter is known to be at i).
func letters(s string, i int) int {
	for {
		_, n, c := at(s, i)
		if c != clsLetter || n == 0 {
			return i
		}
		i += n
	}
}

// contraction matches s|t|re|ve|m|ll|d case-insensitively at i (after an
// apostrophe at i-1) and returns the end, or 0. Only ASCII letters fold, as
// in regexp2 and the JavaScript reference; Oniguruma would also fold U+017F
// (long s) to s, which changes a piece only in text such as "'ſt".
func contraction(s string, i int) int {
	r1, n1 := fold(s, i)
	switch r1 {
	case 's', 't', 'm', 'd':
		return i + n1
	case 'r', 'v', 'l':
		want := 'e'
		if r1 == 'l' {
			want = 'l'
		}
		if r2, n2 := fold(s, i+n1); r2 == want {
			return i + n1 + n2
		}
	}
	return 0
}

func fold(s string, i int) (rune, int) {
	r, n, _ := at(s, i)
	if r >= 'A' && r <= 'Z' {
		return r + 'a' - 'A', n
	}
	return r, n
}
