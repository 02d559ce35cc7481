package proxy

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math/bits"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/metaclaw-go/metaclaw/internal/jsonstr"
)

// The request path touches a few fields of bodies that are often 50 KB or
// more (agent system prompts, long histories). Decoding them with
// encoding/json validates every byte on every Unmarshal; instead the body is
// validated once and then sliced with these scanners, which assume valid JSON.

// validJSON is json.Valid, about eight times faster on an agent's body (a
// 6 KB system prompt: 9 µs instead of 70 µs on a loaded 2-core machine):
// jsontext's scanner, told to accept what encoding/json accepts (invalid
// UTF-8, duplicate names). What it refuses is asked of json.Valid, so a
// corner where the two grammars differ (FuzzValidJSON) still parses as
// before; only bad bodies pay twice.
//
// scanValid comes first: a body of long strings (a system prompt, history)
// is scanned eight bytes at a time, about a fifth of jsontext's
// instructions on an agent's body (callgrind, BenchmarkAgentTurn).
func validJSON(b []byte) bool {
	return scanValid(b) || jsontext.Value(b).IsValid(validOpts...) || json.Valid(b)
}

// maxScanDepth bounds scanValid's nesting; a deeper body is left to the
// other checks (encoding/json allows 10,000 levels).
const maxScanDepth = 256

// scanValid reports whether b is one JSON value (surrounded by
// whitespace), accepting what json.Valid accepts (duplicate names, invalid
// UTF-8 inside strings) and never more: what it refuses, validJSON asks the
// slower checks about (FuzzValidJSON holds it to that).
func scanValid(b []byte) bool {
	i, ok := scanValue(b, skipWS(b, 0), 0)
	return ok && skipWS(b, i) == len(b)
}

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
		i = skipWS(b, i+1)
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
				if i = skipWS(b, i); i >= len(b) || b[i] != ':' {
					return i, false
				}
				i = skipWS(b, i+1)
			}
			if i, ok = scanValue(b, i, depth+1); !ok {
				return i, false
			}
			if i = skipWS(b, i); i >= len(b) {
				return i, false
			}
			switch b[i] {
			case end:
				return i + 1, true
			case ',':
				i = skipWS(b, i+1)
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
		for i+8 <= len(b) {
			if m := stringStops(binary.LittleEndian.Uint64(b[i:])); m != 0 {
				i += bits.TrailingZeros64(m) / 8
				break
			}
			i += 8
		}
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

// stringStops marks (high bit of each byte) the bytes of the little-endian
// word w a string scan must look at: '"', '\\', below 0x20, and from 0x80
// (taken as they are, one by one). The lowest mark is exact (a borrow
// only comes out of a marked byte), and it is the only one used; the
// formula is internal/jsonstr's.
func stringStops(w uint64) uint64 {
	const lsb, msb = 0x0101010101010101, 0x8080808080808080
	return (w | (w - 0x20*lsb) | ((w ^ '"'*lsb) - lsb) | ((w ^ '\\'*lsb) - lsb)) & msb
}

var validOpts = []jsontext.Options{jsontext.AllowInvalidUTF8(true), jsontext.AllowDuplicateNames(true)}

// field is one member of a JSON object: its key and its raw value.
type field struct {
	key string
	val []byte
}

func isWS(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipWS(b []byte, i int) int {
	for i < len(b) && isWS(b[i]) {
		i++
	}
	return i
}

// skipString returns the index just past the string starting at b[i] == '"'.
func skipString(b []byte, i int) int {
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

// skipValue returns the index just past the value starting at or after i.
func skipValue(b []byte, i int) int {
	i = skipWS(b, i)
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for i < len(b) {
			switch b[i] {
			case '"':
				i = skipString(b, i)
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
		for i < len(b) && !isWS(b[i]) && b[i] != ',' && b[i] != '}' && b[i] != ']' {
			i++
		}
		return i
	}
}

// objectFields splits a valid JSON object into its members, in order.
func objectFields(b []byte) []field {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil
	}
	var out []field
	i++
	for {
		i = skipWS(b, i)
		if i >= len(b) || b[i] == '}' {
			return out
		}
		if b[i] == ',' {
			i++
			continue
		}
		ks := i
		i = skipString(b, i)
		key := decodeKey(b[ks:i])
		i = skipWS(b, i)
		if i < len(b) && b[i] == ':' {
			i++
		}
		vs := skipWS(b, i)
		i = skipValue(b, vs)
		out = append(out, field{key: key, val: b[vs:i]})
	}
}

func decodeKey(q []byte) string {
	if len(q) >= 2 && bytes.IndexByte(q, '\\') < 0 && utf8.Valid(q) {
		return string(q[1 : len(q)-1])
	}
	var s string
	_ = json.Unmarshal(q, &s)
	return s
}

// arrayItems splits a valid JSON array into its raw elements.
func arrayItems(b []byte) [][]byte {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil
	}
	var out [][]byte
	i++
	for {
		i = skipWS(b, i)
		if i >= len(b) || b[i] == ']' {
			return out
		}
		if b[i] == ',' {
			i++
			continue
		}
		s := i
		i = skipValue(b, i)
		out = append(out, b[s:i])
	}
}

// lookup returns the raw value of key in fields.
func lookup(fields []field, key string) ([]byte, bool) {
	for _, f := range fields {
		if f.key == key {
			return f.val, true
		}
	}
	return nil, false
}

// appendObject writes fields as a JSON object (values are already valid JSON).
func appendObject(dst []byte, fields []field) []byte {
	dst = append(dst, '{')
	for i, f := range fields {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, f.key)
		dst = append(dst, ':')
		dst = append(dst, f.val...)
	}
	return append(dst, '}')
}

// stringValue decodes a raw value that should be a JSON string.
func stringValue(raw []byte) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
		return string(raw[1 : len(raw)-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}
