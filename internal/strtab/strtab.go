// Package strtab is a read-only set of strings numbered 0..n-1 that the
// garbage collector does not have to walk: the strings sit end to end in one
// arena and the hash table holds integers, so a table of any size is four
// allocations with one pointer between them. A Go map[string]T of the same
// keys holds a pointer per key, and every GC cycle reads them all; long-lived
// vocabularies (a tokenizer's 200k tokens, a search index's terms) are
// what this is for.
package strtab

import (
	"hash/maphash"
	"math/bits"
)

// Table maps each of its keys to its number (the order they were added).
type Table struct {
	arena string
	ends  []uint32 // key i is arena[ends[i-1]:ends[i]] (from 0 for i = 0)
	// slots is an open-addressed (linear probing) table, at most half full:
	// each used slot holds the key's hash in its high 32 bits and its
	// number + 1 in the low 32 (0: empty), so that a probe compares key
	// bytes only when the hashes agree.
	slots []uint64
	mask  uint64
	seed  maphash.Seed
}

// Builder collects a Table's keys.
type Builder struct {
	buf  []byte
	ends []uint32
}

// NewBuilder returns a builder with room for n keys of bytes bytes in all.
func NewBuilder(n, bytes int) *Builder {
	return &Builder{buf: make([]byte, 0, bytes), ends: make([]uint32, 0, n)}
}

// Add appends a key and returns its number. An empty key takes a number but
// is never found (a placeholder for a number with no key).
func (b *Builder) Add(key string) int {
	b.buf = append(b.buf, key...)
	b.ends = append(b.ends, uint32(len(b.buf)))
	return len(b.ends) - 1
}

// AddBytes is Add for a byte slice.
func (b *Builder) AddBytes(key []byte) int {
	b.buf = append(b.buf, key...)
	b.ends = append(b.ends, uint32(len(b.buf)))
	return len(b.ends) - 1
}

// Len is the number of keys added so far.
func (b *Builder) Len() int { return len(b.ends) }

// Build indexes the keys added. When a key was added twice, Index finds
// its first number. The builder must not be used afterwards.
func (b *Builder) Build() *Table {
	t := &Table{arena: string(b.buf), ends: b.ends, seed: maphash.MakeSeed()}
	if cap(t.ends) > len(t.ends) {
		t.ends = append([]uint32(nil), t.ends...) // exactly sized: it lives long
	}
	keys := 0
	for i := range t.ends {
		if t.Key(i) != "" {
			keys++
		}
	}
	size := 1 << bits.Len(uint(2*keys|1))
	t.slots = make([]uint64, size)
	t.mask = uint64(size - 1)
	for i := range t.ends {
		key := t.Key(i)
		if key == "" {
			continue
		}
		h := maphash.String(t.seed, key)
		if _, ok := t.find(h, key); ok {
			continue
		}
		j := h & t.mask
		for t.slots[j] != 0 {
			j = (j + 1) & t.mask
		}
		t.slots[j] = h&^0xffffffff | uint64(i+1)
	}
	b.buf, b.ends = nil, nil
	return t
}

// Len is the number of keys.
func (t *Table) Len() int { return len(t.ends) }

// Key is key number i.
func (t *Table) Key(i int) string {
	start := uint32(0)
	if i > 0 {
		start = t.ends[i-1]
	}
	return t.arena[start:t.ends[i]]
}

// Index is key's number, or -1.
func (t *Table) Index(key string) int {
	if len(t.slots) == 0 {
		return -1
	}
	i, _ := t.find(maphash.String(t.seed, key), key)
	return i
}

// IndexBytes is Index for a byte slice (it does not allocate).
func (t *Table) IndexBytes(key []byte) int {
	if len(t.slots) == 0 {
		return -1
	}
	h := maphash.Bytes(t.seed, key)
	for j := h & t.mask; ; j = (j + 1) & t.mask {
		s := t.slots[j]
		if s == 0 {
			return -1
		}
		if s&^0xffffffff == h&^0xffffffff {
			if i := int(uint32(s)) - 1; t.Key(i) == string(key) {
				return i
			}
		}
	}
}

func (t *Table) find(h uint64, key string) (int, bool) {
	for j := h & t.mask; ; j = (j + 1) & t.mask {
		s := t.slots[j]
		if s == 0 {
			return -1, false
		}
		if s&^0xffffffff == h&^0xffffffff {
			if i := int(uint32(s)) - 1; t.Key(i) == key {
				return i, true
			}
		}
	}
}
