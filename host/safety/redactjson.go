package safety

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/cespare/xxhash/v2"
)

// RedactJSON redacts the strings of a JSON document (a request body as a
// client sent it) and leaves every other byte alone, so the document stays
// valid and otherwise identical. A secret found in one string is scrubbed
// from all of them: the assistant's earlier messages in a conversation's
// history echo what the user said. Only string tokens are rewritten (each
// with a valid JSON string), so the document's validity is what it was.
// It returns the secrets it found, for scrubbing related text (the answer).
func RedactJSON(raw []byte) ([]byte, []string) {
	if len(raw) == 0 {
		return raw, nil
	}
	if c := raw[0]; c != '{' && c != '[' {
		out, found := RedactCollect(string(raw))
		return []byte(out), found
	}
	type str struct {
		start, end int    // the token, quotes included
		red        string // its redacted value, when changed
		changed    bool
	}
	var strs []str
	var found []string
	for i := 0; i < len(raw); i++ {
		if raw[i] != '"' {
			continue
		}
		j := stringEnd(raw, i)
		if j > len(raw) {
			break // unterminated: the rest is not a string token
		}
		if k := skipSpace(raw, j); k < len(raw) && raw[k] == ':' {
			i = j - 1 // an object key: names, not secrets
			continue
		}
		red, changed, f, ok := redactToken(raw[i:j])
		if ok {
			found = append(found, f...)
			strs = append(strs, str{i, j, red, changed})
		}
		i = j - 1
	}
	if len(found) == 0 {
		return raw, nil
	}
	out := make([]byte, 0, len(raw))
	last := 0
	for _, s := range strs {
		v := s.red
		if !s.changed {
			var ok bool
			if v, ok = decodeToken(raw[s.start:s.end]); !ok {
				continue
			}
		}
		scrubbed := ScrubValues(v, found)
		if !s.changed && scrubbed == v {
			continue // keep the original bytes
		}
		enc, err := json.Marshal(scrubbed)
		if err != nil {
			continue
		}
		out = append(out, raw[last:s.start]...)
		out = append(out, enc...)
		last = s.end
	}
	out = append(out, raw[last:]...)
	return out, found
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\t' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd returns the index just past the JSON string starting at b[i],
// or len(b)+1 when it is not terminated.
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b) + 1
}

// A conversation's request repeats its system prompt and history on every
// turn, so long strings are redacted once and remembered by content hash.
const (
	cacheMinLen  = 64
	cacheEntries = 8192
)

type cached struct {
	redacted string // "" when unchanged
	found    []string
}

var (
	cacheMu sync.Mutex
	cache   = map[uint64]cached{}
)

// decodeToken is the value of a JSON string token.
func decodeToken(tok []byte) (string, bool) {
	if bytes.IndexByte(tok, '\\') < 0 {
		return string(tok[1 : len(tok)-1]), true
	}
	var v string
	return v, json.Unmarshal(tok, &v) == nil
}

// redactToken redacts one string token; long ones are remembered by the
// hash of their bytes, so a repeated one is not even decoded again.
func redactToken(tok []byte) (red string, changed bool, found []string, ok bool) {
	var key uint64
	if len(tok) >= cacheMinLen {
		key = xxhash.Sum64(tok) ^ uint64(len(tok))<<1
		cacheMu.Lock()
		c, hit := cache[key]
		cacheMu.Unlock()
		if hit {
			return c.redacted, c.redacted != "", c.found, true
		}
	}
	v, ok := decodeToken(tok)
	if !ok {
		return "", false, nil, false
	}
	red, found = RedactCollect(v)
	changed = red != v
	if len(tok) >= cacheMinLen {
		c := cached{found: found}
		if changed {
			c.redacted = red
		}
		cacheMu.Lock()
		if len(cache) >= cacheEntries {
			clear(cache) // bounded; the next turns refill it
		}
		cache[key] = c
		cacheMu.Unlock()
	}
	return red, changed, found, true
}

// resetCache empties the cache (benchmarks of the cold path).
func resetCache() {
	cacheMu.Lock()
	clear(cache)
	cacheMu.Unlock()
}
