package proxy

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/metaclaw-go/metaclaw/internal/jsonscan"
	"github.com/metaclaw-go/metaclaw/internal/jsonstr"
)

// The request path touches a few fields of bodies that are often 50 KB or
// more (agent system prompts, long histories): the body is validated once
// (jsonscan.Valid) and then sliced with these helpers, which assume valid
// JSON.

// field is one member of a JSON object: its key and its raw value.
type field struct {
	key string
	val []byte
}

// objectFields splits a valid JSON object into its members, in order.
func objectFields(b []byte) []field {
	i := jsonscan.SkipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil
	}
	var out []field
	i++
	for {
		i = jsonscan.SkipWS(b, i)
		if i >= len(b) || b[i] == '}' {
			return out
		}
		if b[i] == ',' {
			i++
			continue
		}
		var key, val []byte
		key, val, i = jsonscan.Member(b, i)
		out = append(out, field{key: decodeKey(key), val: val})
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
	i := jsonscan.SkipWS(b, 0)
	if i >= len(b) || b[i] != '[' {
		return nil
	}
	var out [][]byte
	i++
	for {
		i = jsonscan.SkipWS(b, i)
		if i >= len(b) || b[i] == ']' {
			return out
		}
		if b[i] == ',' {
			i++
			continue
		}
		s := i
		i = jsonscan.SkipValue(b, i)
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
