package tokens

import (
	"unicode"
	"unicode/utf8"
)

// The o200k_base pre-tokenizer by hand. tiktoken-go splits text with
// o200kPattern through regexp2 and the matcher regexp2cg generated for it
// (codec/regexp.gen.go), which turns the text into a []rune and allocates a
// Match per piece (~62 B per input byte). splitter cuts the same pieces
// from the string itself, allocating nothing. It follows that generated
// matcher, quirks included, because the counts must be the codec's:
//   - U+007F is in neither [^\r\n\p{L}\p{N}] nor [^\s\p{L}\p{N}] (the
//     generated ASCII bitmaps leave out bit 127), so no alternative matches
//     it and it is in no piece;
//   - \s*[\r\n]+ backtracks \s* to the FIRST \r or \n of the whitespace run
//     (helpers.IndexOfAny2), not the last, so the piece ends after the first
//     run of line breaks;
//   - an invalid UTF-8 byte is U+FFFD, and a piece holding one is the text
//     of its runes (each such byte becomes "\uFFFD"), not the input's bytes.
// TestSplitMatchesRegexp, TestSplitEveryRune and FuzzSplitMatchesRegexp
// hold it to the regexp.

// Rune classes, as the generated matcher tests them.
const (
	cLead  uint8 = 1 << iota // [^\r\n\p{L}\p{N}]: the optional lead of a word
	cUpper                   // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	cLower                   // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	cDigit                   // \p{N}
	cSym                     // [^\s\p{L}\p{N}]
	cSpace                   // \s (unicode.IsSpace)
)

var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for b := range t {
		t[b] = runeClass(rune(b))
	}
	t[0x7f] = 0 // the generated bitmaps' gap (above)
	return t
}()

// runeClass is r's classes from the standard library's Unicode tables (the
// ones regexp2 and its generated code read).
func runeClass(r rune) uint8 {
	switch {
	case unicode.IsLetter(r):
		switch {
		case unicode.Is(unicode.Ll, r):
			return cLower
		case unicode.Is(unicode.Lu, r), unicode.Is(unicode.Lt, r):
			return cUpper
		default: // Lm, Lo
			return cUpper | cLower
		}
	case unicode.IsNumber(r):
		return cDigit
	case unicode.IsSpace(r):
		if r == '\r' || r == '\n' {
			return cSpace
		}
		return cSpace | cLead
	case unicode.Is(unicode.M, r):
		return cUpper | cLower | cLead | cSym
	default:
		return cLead | cSym
	}
}

// classAt is the classes and UTF-8 length of the rune at s[i] (0, 0 at the
// end; an invalid byte is U+FFFD of length 1, as in []rune(s)).
func classAt(s string, i int) (uint8, int) {
	if i >= len(s) {
		return 0, 0
	}
	if b := s[i]; b < utf8.RuneSelf {
		return asciiClass[b], 1
	}
	r, n := utf8.DecodeRuneInString(s[i:])
	return runeClass(r), n
}

// run is the end of the longest run of runes from s[i] that are all of
// class c.
func run(s string, i int, c uint8) int {
	for i < len(s) {
		if b := s[i]; b < utf8.RuneSelf {
			if asciiClass[b]&c == 0 {
				return i
			}
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if runeClass(r)&c == 0 {
			return i
		}
		i += n
	}
	return i
}

// splitter yields o200k_base's pre-tokenized pieces of s in order.
type splitter struct {
	s   string
	pos int
}

// next is the next piece (a substring of s), or false at the end.
func (sp *splitter) next() (string, bool) {
	for sp.pos < len(sp.s) {
		start := sp.pos
		if end := match(sp.s, start); end > start {
			sp.pos = end
			return sp.s[start:end], true
		}
		// Nothing matches here (U+007F): the regexp moves one rune on.
		_, n := classAt(sp.s, start)
		sp.pos += n
	}
	return "", false
}

// match is the end of the piece the pattern matches at s[pos] (pos when
// none does): its first alternative that matches, each tried in the order
// and with the backtracking of the generated matcher.
func match(s string, pos int) int {
	c0, n0 := classAt(s, pos)

	// [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+ + contraction:
	// with the lead, then without it.
	if c0&cLead != 0 {
		if end := lowerWord(s, pos+n0); end > 0 {
			return contraction(s, end)
		}
	}
	if end := lowerWord(s, pos); end > 0 {
		return contraction(s, end)
	}

	// [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]* + contraction.
	if c0&cLead != 0 {
		if c, _ := classAt(s, pos+n0); c&cUpper != 0 {
			return contraction(s, run(s, run(s, pos+n0, cUpper), cLower))
		}
	}
	if c0&cUpper != 0 {
		return contraction(s, run(s, run(s, pos, cUpper), cLower))
	}

	// \p{N}{1,3}
	if c0&cDigit != 0 {
		end := pos + n0
		for range 2 {
			c, n := classAt(s, end)
			if c&cDigit == 0 {
				break
			}
			end += n
		}
		return end
	}

	// ' ?[^\s\p{L}\p{N}]+[\r\n/]*' (the space and each loop atomic)
	i := pos
	if s[i] == ' ' {
		i++
	}
	if c, _ := classAt(s, i); c&cSym != 0 {
		end := run(s, i, cSym)
		for end < len(s) && (s[end] == '\r' || s[end] == '\n' || s[end] == '/') {
			end++
		}
		return end
	}

	if c0&cSpace == 0 {
		return pos
	}
	end := run(s, pos, cSpace)
	// \s*[\r\n]+: \s* gives back to the first line break of the run (above).
	for j := pos; j < end; j++ {
		if s[j] == '\r' || s[j] == '\n' {
			for j < end && (s[j] == '\r' || s[j] == '\n') {
				j++
			}
			return j
		}
	}
	// \s+(?!\S): the run at the end of the text, else all of it but its last
	// rune (which is followed by \S) if that leaves one; then \s+.
	if end == len(s) {
		return end
	}
	if _, n := utf8.DecodeLastRuneInString(s[pos:end]); end-n > pos {
		return end - n
	}
	return end
}

// lowerWord matches [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
// at s[i]: the end of the match, or -1.
func lowerWord(s string, i int) int {
	e := run(s, i, cUpper)
	if c, _ := classAt(s, e); c&cLower != 0 {
		return run(s, e, cLower)
	}
	// The first loop gives back runes until the one given back is also of
	// the second class (Lm, Lo, M), which then matches alone: the rune after
	// it is not of that class, or the loop would have stopped there. The
	// runes given back are letters or marks, so valid UTF-8 read backwards.
	for k := e; k > i; {
		r, n := utf8.DecodeLastRuneInString(s[i:k])
		if runeClass(r)&cLower != 0 {
			return k
		}
		k -= n
	}
	return -1
}

// contraction extends a word ending at s[m] by (?i:'s|'t|'re|'ve|'m|'ll|'d)
// as the generated matcher does: ASCII letters either case, and U+017F
// (ſ, which case-folds to s).
func contraction(s string, m int) int {
	if m+1 >= len(s) || s[m] != '\'' {
		return m
	}
	switch s[m+1] {
	case 'S', 'T', 's', 't', 'M', 'm', 'D', 'd':
		return m + 2
	case 'R', 'r', 'V', 'v':
		if m+2 < len(s) && s[m+2]|0x20 == 'e' {
			return m + 3
		}
	case 'L', 'l':
		if m+2 < len(s) && s[m+2]|0x20 == 'l' {
			return m + 3
		}
	case 0xc5: // U+017F is C5 BF
		if m+2 < len(s) && s[m+2] == 0xbf {
			return m + 3
		}
	}
	return m
}

// runeText is p as the regexp's pieces read when p holds invalid UTF-8:
// each invalid byte becomes U+FFFD.
func runeText(p string) string {
	b := make([]byte, 0, len(p)+8)
	for _, r := range p {
		b = utf8.AppendRune(b, r)
	}
	return string(b)
}
