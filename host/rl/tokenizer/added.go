package tokenizer

import (
	"sort"
	"unicode"
	"unicode/utf8"
)

// AddedToken is an entry of tokenizer.json's added_tokens: a string that is
// always one token (the chat markers <|im_start|>, <think>, <tool_call>, …).
type AddedToken struct {
	ID      int    `json:"id"`
	Content string `json:"content"`
	// Special tokens are dropped by Decode when asked to skip them; the
	// others (Qwen's <think> and <tool_call>) are ordinary text to a reader.
	Special    bool `json:"special"`
	SingleWord bool `json:"single_word"`
	LStrip     bool `json:"lstrip"`
	RStrip     bool `json:"rstrip"`
	Normalized bool `json:"normalized"`
}

// addedMatcher finds added tokens in text: leftmost match first, the longest
// token at that position, as the reference's Aho-Corasick (LeftmostLongest).
type addedMatcher struct {
	byFirst [256][]*AddedToken // candidates by first byte, longest first
}

func newAddedMatcher(tokens []*AddedToken) *addedMatcher {
	m := &addedMatcher{}
	for _, t := range tokens {
		if t.Content == "" {
			continue
		}
		b := t.Content[0]
		m.byFirst[b] = append(m.byFirst[b], t)
	}
	for b := range m.byFirst {
		sort.SliceStable(m.byFirst[b], func(i, j int) bool {
			return len(m.byFirst[b][i].Content) > len(m.byFirst[b][j].Content)
		})
	}
	return m
}

// segment is a part of the input: either an added token or text to encode.
type segment struct {
	text  string
	token *AddedToken
}

// split cuts s around the added tokens it contains. Whitespace absorbed by
// lstrip/rstrip tokens is dropped from the neighbouring text.
func (m *addedMatcher) split(s string, dst []segment) []segment {
	textStart := 0
	for i := 0; i < len(s); i++ {
		cands := m.byFirst[s[i]]
		if len(cands) == 0 {
			continue
		}
		var tok *AddedToken
		for _, c := range cands {
			if len(s)-i >= len(c.Content) && s[i:i+len(c.Content)] == c.Content && (!c.SingleWord || singleWordOK(s, i, i+len(c.Content))) {
				tok = c
				break
			}
		}
		if tok == nil {
			continue
		}
		start, end := i, i+len(tok.Content)
		if tok.LStrip {
			for start > textStart {
				r, n := utf8.DecodeLastRuneInString(s[textStart:start])
				if !unicode.IsSpace(r) {
					break
				}
				start -= n
			}
		}
		if tok.RStrip {
			for end < len(s) {
				r, n := utf8.DecodeRuneInString(s[end:])
				if !unicode.IsSpace(r) {
					break
				}
				end += n
			}
		}
		if start > textStart {
			dst = append(dst, segment{text: s[textStart:start]})
		}
		dst = append(dst, segment{token: tok})
		textStart = end
		i = end - 1
	}
	if textStart < len(s) {
		dst = append(dst, segment{text: s[textStart:]})
	}
	return dst
}

// singleWordOK reports whether s[start:end] is not glued to word characters.
func singleWordOK(s string, start, end int) bool {
	isWord := func(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) }
	if start > 0 {
		if r, _ := utf8.DecodeLastRuneInString(s[:start]); isWord(r) {
			return false
		}
	}
	if end < len(s) {
		if r, _ := utf8.DecodeRuneInString(s[end:]); isWord(r) {
			return false
		}
	}
	return true
}
