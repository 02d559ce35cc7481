package apiformat

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"unicode/utf8"

	"github.com/metaclaw-go/metaclaw/internal/jsonstr"
)

// marshal encodes v without HTML escaping: agent prompts are full of '<' and
// '&', and \u003c escapes would bloat every request and captures.
func marshal(v any, sizeHint int) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, sizeHint))
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return b[:len(b)-1], nil // Encode appends '\n'
}

// jsonKind returns the first non-space byte of a JSON value ('"', '[', '{',
// 'n', digits, 't'/'f'), or 0 when the value is absent.
func jsonKind(b []byte) byte {
	for _, c := range b {
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		default:
			return c
		}
	}
	return 0
}

func isNullOrEmpty(b []byte) bool {
	k := jsonKind(b)
	return k == 0 || k == 'n'
}

// compactJSON returns b as compact JSON text; "{}" for an absent/null object.
func compactJSON(b []byte) string {
	if isNullOrEmpty(b) {
		return "{}"
	}
	var buf bytes.Buffer
	buf.Grow(len(b))
	if err := json.Compact(&buf, b); err != nil {
		return string(b)
	}
	return buf.String()
}

// normArgs makes empty tool arguments "{}" so that summaries of a stream and
// of a body agree (both mean "no arguments").
func normArgs(s string) string {
	if strings.TrimSpace(s) == "" {
		return "{}"
	}
	return s
}

// appendString appends s as a JSON string as encoding/json writes it
// (invalid UTF-8 becomes U+FFFD, U+2028/2029 are escaped) but leaves <, >, &
// alone. Used on the streaming path where events are built by hand.
func appendString(dst []byte, s string) []byte { return jsonstr.Append(dst, s) }

const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// newID returns prefix + 24 random base62 characters. Not for secrets: ids
// only need to be unique within a conversation.
func newID(prefix string) string {
	b := make([]byte, len(prefix)+24)
	copy(b, prefix)
	for i := len(prefix); i < len(b); i++ {
		b[i] = idAlphabet[rand.IntN(len(idAlphabet))]
	}
	return string(b)
}

func isIDChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// anthropicToolID makes id acceptable to Anthropic, which requires
// ^[a-zA-Z0-9_-]+$ (OpenAI-compatible servers emit ids like "functions.read:0").
// The mapping is deterministic so a tool_use and its tool_result stay paired.
func anthropicToolID(id string) string {
	if id == "" {
		return newID("toolu_")
	}
	for i := 0; i < len(id); i++ {
		if !isIDChar(id[i]) {
			b := []byte(id)
			for j := i; j < len(b); j++ {
				if !isIDChar(b[j]) {
					b[j] = '_'
				}
			}
			return string(b)
		}
	}
	return id
}

func openAIToolID(id string) string {
	if id == "" {
		return newID("call_")
	}
	return id
}

// parseDataURL splits "data:<media>[;params];base64,<data>". Only base64 data
// URLs are accepted: that is all Anthropic's base64 source can carry.
func parseDataURL(u string) (mediaType, data string, ok bool) {
	if len(u) < 5 || !strings.EqualFold(u[:5], "data:") {
		return "", "", false
	}
	rest := u[5:]
	comma := strings.IndexByte(rest, ',')
	if comma < 0 {
		return "", "", false
	}
	meta := rest[:comma]
	if len(meta) < 7 || !strings.EqualFold(meta[len(meta)-7:], ";base64") {
		return "", "", false
	}
	mediaType = meta[:len(meta)-7]
	if i := strings.IndexByte(mediaType, ';'); i >= 0 {
		mediaType = mediaType[:i]
	}
	return mediaType, rest[comma+1:], true
}

// looseString decodes a JSON string and treats any other JSON value as "".
// Providers disagree on some fields (e.g. "reasoning" is a string on some and
// an object on others); one odd field must not fail a whole response.
type looseString string

func (s *looseString) UnmarshalJSON(b []byte) error {
	if jsonKind(b) != '"' {
		*s = ""
		return nil
	}
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*s = looseString(v)
	return nil
}

// argString decodes OpenAI function arguments, which the spec says is a JSON
// string; some servers send the object itself, which we keep as its JSON text.
type argString string

func (s *argString) UnmarshalJSON(b []byte) error {
	switch jsonKind(b) {
	case '"':
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = argString(v)
	case 'n', 0:
		*s = ""
	default:
		*s = argString(compactJSON(b))
	}
	return nil
}

// jsonString decodes a JSON string token taken from a RawMessage that the
// outer Unmarshal already validated; json.Unmarshal would validate it a
// second time, which on a 44 KB system prompt is a large share of a request's
// cost. Because the token is valid, quotes and control characters cannot
// appear unescaped, so the runs between escapes are copied whole. \u escapes
// and anything unexpected fall back to json.Unmarshal.
func jsonString(raw []byte) (string, error) {
	slow := func() (string, error) {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	raw = bytes.TrimSpace(raw)
	n := len(raw)
	if n < 2 || raw[0] != '"' || raw[n-1] != '"' {
		return slow()
	}
	body := raw[1 : n-1]
	if hasControl(body) {
		return slow()
	}
	esc := bytes.IndexByte(body, '\\')
	if esc < 0 {
		if !utf8.Valid(body) || bytes.IndexByte(body, '"') >= 0 {
			return slow()
		}
		return string(body), nil
	}
	out := make([]byte, 0, len(body))
	for esc >= 0 {
		out = append(out, body[:esc]...)
		if esc+1 >= len(body) {
			return slow()
		}
		switch body[esc+1] {
		case '"', '\\', '/':
			out = append(out, body[esc+1])
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		default:
			return slow()
		}
		body = body[esc+2:]
		esc = bytes.IndexByte(body, '\\')
	}
	out = append(out, body...)
	if !utf8.Valid(out) {
		return slow()
	}
	return string(out), nil
}

// hasControl reports a raw control byte, which valid JSON strings never hold.
func hasControl(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return true
		}
	}
	return false
}
