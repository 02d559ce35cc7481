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
		start, end int // the token, quotes included
		val        string
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
		tok := raw[i:j]
		if k := skipSpace(raw, j); k < len(raw) && raw[k] == ':' {
			i = j - 1 // an object key: names, not secrets
			continue
		}
		var v string
		if bytes.IndexByte(tok, '\\') < 0 {
			v = string(tok[1 : len(tok)-1])
		} else if json.Unmarshal(tok, &v) != nil {
			i = j - 1
			continue
		}
		red, f := redactCached(v)
		found = append(found, f...)
		strs = append(strs, str{i, j, red})
		i = j - 1
	}
	if len(found) == 0 {
		return raw, nil
	}
	out := make([]byte, 0, len(raw))
	last := 0
	for _, s := range strs {
		v := ScrubValues(s.val, found)
		if tok := raw[s.start:s.end]; len(v) == len(tok)-2 && string(tok[1:len(tok)-1]) == v {
			continue // untouched and unescaped: keep the original bytes
		}
		enc, err := json.Marshal(v)
		if err != nil {
			continue
		}
		orig := raw[s.start:s.end]
		var was string
		if json.Unmarshal(orig, &was) == nil && was == v {
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

func redactCached(v string) (string, []string) {
	if len(v) < cacheMinLen {
		return RedactCollect(v)
	}
	key := xxhash.Sum64String(v) ^ uint64(len(v))<<1
	cacheMu.Lock()
	c, ok := cache[key]
	cacheMu.Unlock()
	if ok {
		if c.redacted == "" {
			return v, nil
		}
		return c.redacted, c.found
	}
	red, found := RedactCollect(v)
	c = cached{found: found}
	if red != v {
		c.redacted = red
	}
	cacheMu.Lock()
	if len(cache) >= cacheEntries {
		clear(cache) // bounded; the next turns refill it
	}
	cache[key] = c
	cacheMu.Unlock()
	return red, found
}

// resetCache empties the cache (benchmarks of the cold path).
func resetCache() {
	cacheMu.Lock()
	clear(cache)
	cacheMu.Unlock()
}
