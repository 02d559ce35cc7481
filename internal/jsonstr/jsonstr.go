// Package jsonstr writes JSON strings by hand, byte for byte as
// encoding/json would, for the hot paths that build JSON without it.
package jsonstr

import (
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
	"unsafe"
)

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
	b := unsafe.Slice(unsafe.StringData(s), len(s)) // read only
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time up to the next one that needs a look:
		// blocks and prompts are mostly plain ASCII.
		i = SkipPlain(b, i)
		if i >= len(s) {
			break
		}
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

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// SkipPlain returns the index of the first byte of b at or after i that
// JSON does not write as is ('"', '\\', below 0x20) or that starts a UTF-8
// sequence (from 0x80), reading eight bytes at a time. Within the last
// seven bytes of b it stops at the first of them: the caller reads those
// one by one.
func SkipPlain(b []byte, i int) int {
	for i+8 <= len(b) {
		if m := special(binary.LittleEndian.Uint64(b[i:])); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
		i += 8
	}
	return i
}

// special marks (high bit of each byte) the bytes of the little-endian
// word w that JSON does not write as is or that start a UTF-8 sequence:
// non-ASCII, below 0x20, '"' and '\\'. Taking 0x20 from every byte
// borrows into the high bit of a byte below it, and taking 1 after the
// XOR into that of a byte equal to '"' or '\\'. A borrow can mark a byte
// above a marked one falsely, never one below: the lowest mark is exact,
// and it is the only one used.
func special(w uint64) uint64 {
	return (w | (w - 0x20*lsb) | ((w ^ '"'*lsb) - lsb) | ((w ^ '\\'*lsb) - lsb)) & msb
}
