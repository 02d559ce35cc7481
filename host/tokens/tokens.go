// Package tokens counts tokens with a real BPE tokenizer (o200k_base), so
// budgets and truncation measure what the model will see rather than bytes.
package tokens

import (
	"hash/maphash"
	"sync"
)

var (
	once    sync.Once
	bpe     *bpeTable
	loadErr error
)

// Count returns the number of tokens in s.
func Count(s string) int {
	if s == "" {
		return 0
	}
	once.Do(func() { bpe, loadErr = loadO200k() })
	if loadErr != nil {
		return len(s)/3 + 1
	}
	return bpe.count(s)
}

// Warm loads the tokenizer ahead of the first request (~80 ms of CPU: the
// codec builds its map, and the ranks are copied out of it).
func Warm() { Count("warm") }

// Cache remembers counts of texts seen before. Agents resend the same system
// prompt and history every turn, and counting costs ~0.3 µs per token, so a
// 10k-token prompt would otherwise cost milliseconds on every request.
type Cache struct {
	mu    sync.Mutex
	seed  maphash.Seed
	m     map[uint64]int // by the text's hash (Count)
	keyed map[string]int // by the caller's key (CountKeyed)
	max   int
}

// NewCache returns a cache holding at most max entries of each kind
// (cleared when full).
func NewCache(max int) *Cache {
	return &Cache{seed: maphash.MakeSeed(), m: make(map[uint64]int), keyed: make(map[string]int), max: max}
}

// Count is Count(s), memoised.
func (c *Cache) Count(s string) int {
	if len(s) < 64 {
		return Count(s)
	}
	h := maphash.String(c.seed, s)
	c.mu.Lock()
	n, ok := c.m[h]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = Count(s)
	c.mu.Lock()
	if len(c.m) >= c.max {
		clear(c.m)
	}
	c.m[h] = n
	c.mu.Unlock()
	return n
}

// CountKeyed is Count(text()), memoised by key: text is called only when key
// is not remembered. It is for a text that is a function of a small key and
// costs more to build than to look up (the frame of an injected block depends
// only on its section titles). A hit allocates nothing: the map is indexed by
// string(key), which Go does not copy. Keys live apart from Count's texts, so
// a key that happens to equal some text never answers for it.
func (c *Cache) CountKeyed(key []byte, text func() string) int {
	c.mu.Lock()
	n, ok := c.keyed[string(key)]
	c.mu.Unlock()
	if ok {
		return n
	}
	n = Count(text())
	c.mu.Lock()
	if len(c.keyed) >= c.max {
		clear(c.keyed)
	}
	c.keyed[string(key)] = n
	c.mu.Unlock()
	return n
}
