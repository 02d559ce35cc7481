// Package jsonscan validates JSON and walks valid JSON without decoding it.
//
// The request path and learning touch a few fields of bodies that are
// often 50 KB or more (an agent's system prompt, MetaClaw's injected block,
// long histories). Decoding them with encoding/json validates and copies
// every byte on every Unmarshal; instead a body is validated once (Valid)
// and then sliced with the Skip functions, which assume valid JSON.
package jsonscan

import (
	"bytes"
	"encoding/json"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/metaclaw-go/metaclaw/internal/jsonstr"
)

// Valid is json.Valid, several times faster on an agent's body. A fast
// scanner (strings are read eight bytes at a time) comes first; it accepts
// what json.Valid accepts (duplicate names, invalid UTF-8 inside strings)
// and never more. What it refuses (a corner, or nesting deeper than
// maxScanDepth) is asked of jsontext's scanner, told to accept what
// encoding/json accepts, and what that refuses of json.Valid itself: a
// corner where the grammars differ answers as encoding/json does
// (FuzzValid), and only bad bodies pay more than once.
func Valid(b []byte) bool {
	return FastValid(b) || jsontext.Value(b).IsValid(validOpts...) || json.Valid(b)
}

var validOpts = []jsontext.Options{jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true)}

// FastValid is Valid's first check alone: true only for what json.Valid
// accepts, false for some of that too (tests use it to check that real
// bodies take the fast path).
func FastValid(b []byte) bool {
	i, ok := scanValue(b, SkipWS(b, 0), 0)
	return ok && SkipWS(b, i) == len(b)
}

// maxScanDepth bounds FastValid's nesting; a deeper body is left to the
// other checks (encoding/json allows 10,000 levels).
const maxScanDepth = 256

// scanValue returns the index just past the value at b[i] and whether it is valid.
func scanValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return scanString(b, i)
	case c == '{' || c == '[':
		if depth >= maxScanDepth {
			return i, false
		}
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		i = SkipWS(b, i+1)
		if i < len(b) && b[i] == end {
			return i + 1, true
		}
		for {
			var ok bool
			if end == '}' {
				if i >= len(b) || b[i] != '"' {
					return i, false
				}
				if i, ok = scanString(b, i); !ok {
					return i, false
				}
				if i = SkipWS(b, i); i >= len(b) || b[i] != ':' {
					return i, false
				}
				i = SkipWS(b, i+1)
			}
			if i, ok = scanValue(b, i, depth+1); !ok {
				return i, false
			}
			if i = SkipWS(b, i); i >= len(b) {
				return i, false
			}
			switch b[i] {
			case end:
				return i + 1, true
			case ',':
				i = SkipWS(b, i+1)
			default:
				return i, false
			}
		}
	case c == 't':
		return scanWord(b, i, "true")
	case c == 'f':
		return scanWord(b, i, "false")
	case c == 'n':
		return scanWord(b, i, "null")
	case c == '-' || (c >= '0' && c <= '9'):
		return scanNumber(b, i)
	}
	return i, false
}

func scanWord(b []byte, i int, w string) (int, bool) {
	if len(b)-i >= len(w) && string(b[i:i+len(w)]) == w {
		return i + len(w), true
	}
	return i, false
}

// scanNumber: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) (int, bool) {
	digits := func(i int) (int, bool) {
		j := i
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j, j > i
	}
	if b[i] == '-' {
		i++
	}
	var ok bool
	if i < len(b) && b[i] == '0' {
		i++
	} else if i, ok = digits(i); !ok {
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		if i, ok = digits(i + 1); !ok {
			return i, false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i, ok = digits(i); !ok {
			return i, false
		}
	}
	return i, true
}

// scanString returns the index just past the string at b[i] == '"' and
// whether it is valid: no control byte, known escapes only. Bytes from
// 0x80 are taken as they are, as encoding/json takes them.
func scanString(b []byte, i int) (int, bool) {
	i++
	for {
		i = jsonstr.SkipPlain(b, i) // eight bytes at a time to the next that needs a look
		if i >= len(b) {
			return i, false
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return i, false
				}
				i += 6
			default:
				return i, false
			}
		case c < 0x20:
			return i, false
		default:
			i++
		}
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// IsWS reports whether c is JSON whitespace.
func IsWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// SkipWS returns the index of the first non-whitespace byte at or after i.
func SkipWS(b []byte, i int) int {
	for i < len(b) && IsWS(b[i]) {
		i++
	}
	return i
}

// SkipString returns the index just past the string starting at b[i] == '"'.
func SkipString(b []byte, i int) int {
	i++
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return len(b)
		}
		i += j
		// An odd run of backslashes before the quote escapes it.
		k := i - 1
		for k >= 0 && b[k] == '\\' {
			k--
		}
		if (i-1-k)%2 == 0 {
			return i + 1
		}
		i++
	}
}

// SkipValue returns the index just past the value starting at or after i.
func SkipValue(b []byte, i int) int {
	i = SkipWS(b, i)
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return SkipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = SkipString(b, i)
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
			i++
		}
		return len(b)
	default:
		for i < len(b) && !IsWS(b[i]) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
			i++
		}
		return i
	}
}

// Member reads the object member whose key starts at b[i] == '"' (b is
// valid JSON): its raw key (quotes and escapes as written), its raw value,
// and the index just past the value.
func Member(b []byte, i int) (key, val []byte, next int) {
	ks := i
	i = SkipString(b, i)
	key = b[ks:i]
	if i = SkipWS(b, i); i < len(b) && b[i] == ':' {
		i++
	}
	vs := SkipWS(b, i)
	i = SkipValue(b, vs)
	return key, b[vs:i], i
}
