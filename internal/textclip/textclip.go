// Package textclip shortens text for error messages, log lines, prompts and
// tables without ever splitting a UTF-8 sequence, so what it returns is valid
// UTF-8 whenever its input is.
//
// The byte variants bound what is kept of s in bytes (what a store, a log
// line or a prompt budget counts); Runes bounds the characters a terminal
// column shows.
package textclip

import "unicode/utf8"

// Mark is what Ellipsis and Runes put where they cut.
const Mark = "…"

// Prefix returns the longest prefix of s of at most n bytes that does not end
// inside a UTF-8 sequence (s itself when it fits; "" when n <= 0).
func Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:prefixLen(s, n)]
}

// Suffix returns the longest suffix of s of at most n bytes that does not
// start inside a UTF-8 sequence (s itself when it fits; "" when n <= 0).
func Suffix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - max(n, 0)
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return s[i:]
}

// Ellipsis returns s when it is at most n bytes, else Prefix(s, n) followed
// by Mark: the text kept is at most n bytes, the mark comes on top (at most
// n+len(Mark) bytes in all).
func Ellipsis(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:prefixLen(s, n)] + Mark
}

// Runes returns s when it has at most n runes, else its first n-1 runes
// followed by Mark: n runes in all, the mark counted (a table column of
// width n). It returns "" when n <= 0 and s does not fit.
func Runes(s string, n int) string {
	if n <= 0 {
		return ""
	}
	if len(s) <= n { // n bytes are at most n runes
		return s
	}
	end, count := 0, 0
	for i := range s {
		if count == n-1 {
			end = i
		}
		if count == n {
			return s[:end] + Mark
		}
		count++
	}
	return s
}

// prefixLen is the length of Prefix(s, n) for len(s) > n.
func prefixLen(s string, n int) int {
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}
