package transcript

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"
	"unsafe"

	"github.com/metaclaw-go/metaclaw/internal/jsonscan"
)

// Learning reads the user's new text of every recorded turn, whose request
// body is mostly what it never reads: an agent's 6 KB system prompt (with
// MetaClaw's injected block, 14 KB) and the history. Decoding it with
// encoding/json copied and validated all of it twice per turn; the body is
// instead validated once (jsonscan.Valid) and walked with jsonscan's
// skips and the scanners below, which slice out only the contents of the trailing user messages.
//
// What encoding/json would have decoded is reproduced exactly: keys match
// their field's name case-insensitively (bytes.EqualFold, as encoding/json
// does), a value of the wrong type anywhere fails the whole decode (so the
// turn has no user text), null leaves a field as it was. The corners where
// reproducing it would take more than a scan (a field named twice in one
// object, which encoding/json decodes into the same slice elements) fall
// back to the decoder (errFallback).

// scanResult is what the scan of a request body found.
type scanResult int

const (
	scanOK       scanResult = iota
	scanFail                // encoding/json would fail: no user text
	scanFallback            // a corner left to encoding/json
)

// trailingUserContents returns the raw contents of the user messages after
// the last other message of a valid JSON body, in order, appended to dst.
// The slices alias b.
func trailingUserContents(b []byte, dst [][]byte) ([][]byte, scanResult) {
	i := jsonscan.SkipWS(b, 0)
	switch b[i] {
	case 'n':
		return dst, scanOK // null: no messages
	case '{':
	default:
		return dst, scanFail // not an object
	}
	var msgs []byte
	seen := false
	for i = i + 1; ; {
		i = jsonscan.SkipWS(b, i)
		switch b[i] {
		case '}':
			if !seen {
				return dst, scanOK
			}
			return messageContents(msgs, dst)
		case ',':
			i++
			continue
		}
		var key, val []byte
		key, val, i = jsonscan.Member(b, i)
		if keyIs(key, "messages") {
			if seen {
				return dst, scanFallback
			}
			seen, msgs = true, val
		}
	}
}

// messageContents walks the messages array.
func messageContents(b []byte, dst [][]byte) ([][]byte, scanResult) {
	switch b[0] {
	case 'n':
		return dst, scanOK
	case '[':
	default:
		return dst, scanFail
	}
	for i := 1; ; {
		i = jsonscan.SkipWS(b, i)
		switch b[i] {
		case ']':
			return dst, scanOK
		case ',':
			i++
			continue
		}
		vs := i
		i = jsonscan.SkipValue(b, i)
		user, content, r := readMessage(b[vs:i])
		if r != scanOK {
			return dst, r
		}
		if user {
			dst = append(dst, content)
		} else {
			dst = dst[:0]
		}
	}
}

// readMessage reads one element of messages: whether its role is "user",
// and its raw content (nil when absent).
func readMessage(b []byte) (user bool, content []byte, r scanResult) {
	switch b[0] {
	case 'n':
		return false, nil, scanOK // a null element stays a zero message
	case '{':
	default:
		return false, nil, scanFail
	}
	roles, contents := 0, 0
	for i := 1; ; {
		i = jsonscan.SkipWS(b, i)
		switch b[i] {
		case '}':
			return user, content, scanOK
		case ',':
			i++
			continue
		}
		var key, val []byte
		key, val, i = jsonscan.Member(b, i)
		switch {
		case keyIs(key, "role"):
			if roles++; roles > 1 {
				return false, nil, scanFallback
			}
			switch val[0] {
			case 'n': // null leaves the role empty
			case '"':
				user = stringIs(val, "user")
			default:
				return false, nil, scanFail
			}
		case keyIs(key, "content"):
			if contents++; contents > 1 {
				return false, nil, scanFallback
			}
			content = val
		}
	}
}

// keyIs reports whether the quoted key q names field as encoding/json
// matches names: exactly or case-insensitively (bytes.EqualFold).
func keyIs(q []byte, field string) bool {
	raw := q[1 : len(q)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return bytes.EqualFold(raw, unsafe.Slice(unsafe.StringData(field), len(field)))
	}
	var k string
	if json.Unmarshal(q, &k) != nil {
		return false
	}
	return bytes.EqualFold([]byte(k), []byte(field))
}

// stringIs reports whether the JSON string q decodes to s.
func stringIs(q []byte, s string) bool {
	raw := q[1 : len(q)-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		return string(raw) == s // invalid UTF-8 decodes to U+FFFD: never equal to s either
	}
	var v string
	return json.Unmarshal(q, &v) == nil && v == s
}

// plainString decodes a JSON string without escapes or invalid UTF-8 (then
// its bytes are its value); ok is false for any other value.
func plainString(q []byte) (string, bool) {
	if len(q) < 2 || q[0] != '"' {
		return "", false
	}
	raw := q[1 : len(q)-1]
	if bytes.IndexByte(raw, '\\') >= 0 || !utf8.Valid(raw) {
		return "", false
	}
	return string(raw), true
}
