// Package jsonstr writes JSON strings by hand, byte for byte as
// encoding/json would, for the hot paths that build JSON without it.
package jsonstr

import "unicode/utf8"

// Append appends s as a JSON string without HTML escaping, byte
// for byte as encoding/json's Encoder with SetEscapeHTML(false) writes it
// (invalid UTF-8 becomes \ufffd; U+2028 and U+2029 are escaped), without its
// buffer and reflection: the injected block and hand-built stream events
// pass here on every turn.
func Append(dst []byte, s string) []byte {
	dst = append(dst, '"')
	return append(AppendBody(dst, s), '"')
}

// AppendBody is Append without the quotes.
func AppendBody(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}
