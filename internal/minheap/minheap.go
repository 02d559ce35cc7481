// Package minheap is the binary min-heap byte-pair encoders keep their
// merge candidates in: a candidate is a pair's rank and position, the
// lowest rank comes out first and the leftmost among equal ranks, as in
// the reference BPE implementations. host/tokens and host/rl/tokenizer
// both merge this way.
package minheap

// Item is a candidate: Rank and Pos order it, Val rides along (struct{}
// when nothing does; it comes first so that an empty Val adds no padding).
type Item[V any] struct {
	Val       V
	Rank, Pos int32
}

// Heap is a min-heap of items by (Rank, Pos). Items may be appended to it
// in any order and then ordered with Init; Push and Pop keep the order.
type Heap[V any] []Item[V]

func less[V any](a, b *Item[V]) bool {
	return a.Rank < b.Rank || a.Rank == b.Rank && a.Pos < b.Pos
}

// Init orders items appended with append.
func (h Heap[V]) Init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// Push adds it.
func (h *Heap[V]) Push(it Item[V]) {
	*h = append(*h, it)
	s := *h
	for i := len(s) - 1; i > 0; {
		up := (i - 1) / 2
		if !less(&s[i], &s[up]) {
			break
		}
		s[i], s[up] = s[up], s[i]
		i = up
	}
}

// Pop removes and returns the least item. The heap must not be empty.
func (h *Heap[V]) Pop() Item[V] {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	*h = s[:last]
	(*h).down(0)
	return top
}

func (h Heap[V]) down(i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && less(&h[c+1], &h[c]) {
			c++
		}
		if !less(&h[c], &h[i]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}
