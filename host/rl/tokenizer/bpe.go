package tokenizer

import (
	"sync"

	"github.com/metaclaw-go/metaclaw/internal/minheap"
)

// bpe is a byte-level BPE model: every piece starts as one symbol per byte
// and adjacent symbols are merged by rank until no ranked pair is left.
type bpe struct {
	byteID [256]int32
	merges map[uint64]mergeRule // key: left id << 32 | right id

	mu    sync.RWMutex
	cache map[string][]int
}

type mergeRule struct {
	rank  int32
	newID int32
}

// cacheLimit bounds the piece cache; past it, pieces are still encoded but no
// longer remembered. Agent prompts repeat most of their words turn after
// turn, so the cache is what makes the second encoding of a prompt cheap.
const (
	cacheLimit    = 200_000
	cacheMaxPiece = 256 // bytes; longer pieces are rare and not worth keeping
)

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// appendPiece appends the ids of one pre-tokenized piece (raw bytes).
func (m *bpe) appendPiece(dst []int, piece string) []int {
	if len(piece) == 1 {
		return append(dst, int(m.byteID[piece[0]]))
	}
	cacheable := len(piece) <= cacheMaxPiece
	if cacheable {
		m.mu.RLock()
		ids, ok := m.cache[piece]
		m.mu.RUnlock()
		if ok {
			return append(dst, ids...)
		}
	}
	start := len(dst)
	dst = m.merge(dst, piece)
	if cacheable {
		ids := append([]int(nil), dst[start:]...)
		m.mu.Lock()
		if len(m.cache) < cacheLimit {
			m.cache[piece] = ids
		}
		m.mu.Unlock()
	}
	return dst
}

// symbol is one node of the doubly linked list of a piece's symbols.
type symbol struct {
	id         int32
	prev, next int32 // -1 at the ends
	gone       bool
}

func (m *bpe) merge(dst []int, piece string) []int {
	n := len(piece)
	syms := make([]symbol, n)
	for i := 0; i < n; i++ {
		syms[i] = symbol{id: m.byteID[piece[i]], prev: int32(i - 1), next: int32(i + 1)}
	}
	syms[n-1].next = -1

	// Candidates: the ranked pair starting at symbol Pos, merging into Val;
	// by rank, then position, like the reference implementation.
	heap := make(minheap.Heap[int32], 0, n)
	pairAt := func(pos int32) {
		next := syms[pos].next
		if next < 0 {
			return
		}
		if r, ok := m.merges[pairKey(syms[pos].id, syms[next].id)]; ok {
			heap.Push(minheap.Item[int32]{Val: r.newID, Rank: r.rank, Pos: pos})
		}
	}
	for i := 0; i < n-1; i++ {
		pairAt(int32(i))
	}
	for len(heap) > 0 {
		c := heap.Pop()
		s := &syms[c.Pos]
		if s.gone || s.next < 0 {
			continue
		}
		right := s.next
		// The pair may have changed since this candidate was pushed.
		if r, ok := m.merges[pairKey(s.id, syms[right].id)]; !ok || r.newID != c.Val {
			continue
		}
		s.id = c.Val
		syms[right].gone = true
		s.next = syms[right].next
		if s.next >= 0 {
			syms[s.next].prev = c.Pos
		}
		if s.prev >= 0 {
			pairAt(s.prev)
		}
		pairAt(c.Pos)
	}
	for i := int32(0); i >= 0; i = syms[i].next {
		dst = append(dst, int(syms[i].id))
	}
	return dst
}
