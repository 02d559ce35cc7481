package tokens

import (
	"fmt"
	"sync"
	"unicode/utf8"
	_ "unsafe" // go:linkname

	"github.com/tiktoken-go/tokenizer/codec"

	"github.com/metaclaw-go/metaclaw/internal/minheap"
	"github.com/metaclaw-go/metaclaw/internal/strtab"
)

// o200k_base is counted with tiktoken-go's ranks and a pre-tokenizer that
// cuts the pieces its regexp cuts (split.go), but not through its Codec: the codec keeps the vocabulary in a Go map of
// ~200k string keys, one pointer per token for every GC cycle of the daemon
// to read (6.7 MB of scannable heap). The ranks are copied once into a
// strtab.Table (no pointer per token) and the package's map is released;
// TestCountMatchesCodec checks every count against the codec's.

// rankGap: ranks are read from the codec until this many in a row are
// missing (o200k_base's last ordinary token is 199997; its special tokens
// are not in the map).
const rankGap = 4096

// The codec package's vocabulary map and the Once that fills it, so that
// the map can be dropped once its ranks are copied. Resetting the Once
// keeps codec.NewO200kBase correct for any later caller (it rebuilds the
// map). Pinned to tiktoken-go/tokenizer v0.10.0: a renamed variable fails
// the link, and the tests build their reference codec after Warm.
//
//go:linkname codecVocab github.com/tiktoken-go/tokenizer/codec.o200kBaseVocab
var codecVocab map[string]uint

//go:linkname codecVocabOnce github.com/tiktoken-go/tokenizer/codec.o200kBaseVocabOnce
var codecVocabOnce sync.Once

// bpeTable is o200k_base: each token's rank (its number in ranks).
type bpeTable struct {
	ranks *strtab.Table
}

// loadO200k copies the codec's ranks into a table and releases its map.
// It runs once per process (under the package's once).
func loadO200k() (*bpeTable, error) {
	c := codec.NewO200kBase()
	b := strtab.NewBuilder(200000, 1<<21)
	found, missing := 0, 0
	id := make([]uint, 1)
	for r := 0; missing < rankGap; r++ {
		id[0] = uint(r)
		tok, err := c.Decode(id)
		if err != nil {
			missing++
			continue
		}
		for b.Len() < r {
			b.Add("") // no token of this rank: a placeholder
		}
		b.Add(tok)
		found++
		missing = 0
	}
	if found < 190000 {
		return nil, fmt.Errorf("o200k_base: %d tokens in the codec's vocabulary", found)
	}
	t := &bpeTable{ranks: b.Build()}
	codecVocab, codecVocabOnce = nil, sync.Once{}
	return t, nil
}

// rank is s's rank, or -1 when s is not a token.
func (t *bpeTable) rank(s string) int { return t.ranks.Index(s) }

// count is the number of o200k_base tokens of s.
func (t *bpeTable) count(s string) int {
	valid := utf8.ValidString(s)
	sp := splitter{s: s}
	n := 0
	for {
		p, ok := sp.next()
		if !ok {
			return n
		}
		if !valid && !utf8.ValidString(p) {
			p = runeText(p) // as the codec: the piece as the regexp read it
		}
		n += t.countPiece(p)
	}
}

// countPiece is the number of tokens byte-pair encoding makes of one
// pre-tokenized piece: starting from its bytes, the adjacent pair whose
// concatenation has the lowest rank (leftmost among equals) merges, until
// no adjacent pair is a token.
func (t *bpeTable) countPiece(p string) int {
	if len(p) <= 1 || t.rank(p) >= 0 {
		return 1
	}
	if len(p) <= maxScanPiece {
		var buf [maxScanPiece + 1]int32
		return t.mergeScan(p, buf[:len(p)+1])
	}
	return t.mergeHeap(p)
}

// maxScanPiece: up to this length a piece is merged by rescanning its
// pairs (quadratic, no allocation); longer ones with a heap.
const maxScanPiece = 64

const noRank = int32(1<<31 - 1)

// mergeScan merges p with bounds holding len(p)+1 slots: bounds[k] is
// where part k starts (the last one is len(p)). It returns the parts left.
func (t *bpeTable) mergeScan(p string, bounds []int32) int {
	var rk [maxScanPiece]int32 // rk[k]: rank of parts k and k+1 merged
	for k := range bounds {
		bounds[k] = int32(k)
	}
	pairRank := func(k int) int32 {
		if k+2 >= len(bounds) {
			return noRank
		}
		if r := t.rank(p[bounds[k]:bounds[k+2]]); r >= 0 {
			return int32(r)
		}
		return noRank
	}
	parts := len(p)
	for k := 0; k < parts-1; k++ {
		rk[k] = pairRank(k)
	}
	for parts > 1 {
		best := -1
		for k := 0; k < parts-1; k++ {
			if rk[k] != noRank && (best < 0 || rk[k] < rk[best]) {
				best = k
			}
		}
		if best < 0 {
			break
		}
		// Part best+1 joins part best.
		copy(bounds[best+1:], bounds[best+2:len(bounds)])
		bounds = bounds[:len(bounds)-1]
		copy(rk[best+1:parts-1], rk[best+2:parts])
		parts--
		if best < parts-1 {
			rk[best] = pairRank(best)
		} else {
			rk[best] = noRank
		}
		if best > 0 {
			rk[best-1] = pairRank(best - 1)
		}
	}
	return parts
}

// mergeHeap is mergeScan in O(n log n) for long pieces: the parts form a
// linked list and candidate merges wait in a min-heap by (rank, position);
// an entry whose part has changed since is skipped when it comes out.
func (t *bpeTable) mergeHeap(p string) int {
	n := len(p)
	next := make([]int32, n) // the start of the part after the one at i (n: none)
	prev := make([]int32, n)
	rk := make([]int32, n) // rank of the part at i merged with the next (noRank: none, or i is not a part start)
	// Candidates: the part at Pos merged with the next into a token of rank Rank.
	h := make(minheap.Heap[struct{}], 0, n)
	for i := range n {
		next[i], prev[i] = int32(i+1), int32(i-1)
	}
	pairRank := func(i int32) int32 {
		j := next[i]
		if int(j) >= n {
			return noRank
		}
		end := int32(n)
		if int(j) < n {
			end = next[j]
		}
		if r := t.rank(p[i:end]); r >= 0 {
			return int32(r)
		}
		return noRank
	}
	for i := range int32(n - 1) {
		rk[i] = pairRank(i)
		if rk[i] != noRank {
			h = append(h, minheap.Item[struct{}]{Rank: rk[i], Pos: i})
		}
	}
	h.Init()
	parts := n
	for len(h) > 0 {
		c := h.Pop()
		if rk[c.Pos] != c.Rank {
			continue // stale: the part changed after this was pushed
		}
		j := next[c.Pos]
		next[c.Pos] = next[j]
		if int(next[j]) < n {
			prev[next[j]] = c.Pos
		}
		rk[j] = noRank
		parts--
		for _, i := range [2]int32{c.Pos, prev[c.Pos]} {
			if i < 0 {
				continue
			}
			rk[i] = pairRank(i)
			if rk[i] != noRank {
				h.Push(minheap.Item[struct{}]{Rank: rk[i], Pos: i})
			}
		}
	}
	return parts
}
