package minheap

import (
	"math/rand"
	"slices"
	"testing"
	"unsafe"
)

type pair struct{ rank, pos int32 }

// drain pops everything, as (rank, pos) pairs, checking each Val rode with
// its item.
func drain(t *testing.T, h *Heap[int32]) []pair {
	t.Helper()
	var out []pair
	for len(*h) > 0 {
		it := h.Pop()
		if it.Val != it.Rank*1000+it.Pos {
			t.Fatalf("item (%d,%d) came out with val %d", it.Rank, it.Pos, it.Val)
		}
		out = append(out, pair{it.Rank, it.Pos})
	}
	return out
}

func item(rank, pos int32) Item[int32] {
	return Item[int32]{Val: rank*1000 + pos, Rank: rank, Pos: pos}
}

func sorted(ps []pair) []pair {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(a, b pair) int {
		if a.rank != b.rank {
			return int(a.rank - b.rank)
		}
		return int(a.pos - b.pos)
	})
	return ps
}

func TestOrder(t *testing.T) {
	tests := []struct {
		name string
		in   []pair
	}{
		{"empty", nil},
		{"one", []pair{{5, 0}}},
		{"ranks", []pair{{3, 0}, {1, 1}, {2, 2}}},
		{"ties go leftmost", []pair{{7, 9}, {7, 2}, {7, 5}, {7, 0}}},
		{"ranks then positions", []pair{{2, 4}, {1, 8}, {2, 1}, {1, 3}, {0, 9}, {2, 0}}},
		{"duplicates", []pair{{1, 1}, {1, 1}, {0, 0}, {1, 1}}},
		{"descending", []pair{{9, 0}, {8, 1}, {7, 2}, {6, 3}, {5, 4}, {4, 5}, {3, 6}, {2, 7}, {1, 8}, {0, 9}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := sorted(tt.in)
			var pushed Heap[int32]
			for _, p := range tt.in {
				pushed.Push(item(p.rank, p.pos))
			}
			if got := drain(t, &pushed); !slices.Equal(got, want) {
				t.Fatalf("pushed: %v, want %v", got, want)
			}
			var appended Heap[int32]
			for _, p := range tt.in {
				appended = append(appended, item(p.rank, p.pos))
			}
			appended.Init()
			if got := drain(t, &appended); !slices.Equal(got, want) {
				t.Fatalf("appended then Init: %v, want %v", got, want)
			}
		})
	}
}

// TestInterleaved: pushes and pops mixed at random always give the least
// item left, as a sorted slice does.
func TestInterleaved(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	for round := range 200 {
		var h Heap[int32]
		var ref []pair
		n := r.Intn(300)
		for i := range n {
			ranks := int32(1 + round%20) // few ranks: many ties
			h = append(h, item(r.Int31n(ranks), int32(i)))
			ref = append(ref, pair{h[len(h)-1].Rank, h[len(h)-1].Pos})
		}
		h.Init()
		for step := 0; len(h) > 0 || step < 100; step++ {
			if len(h) == 0 || r.Intn(3) == 0 {
				p := pair{r.Int31n(50), r.Int31n(500)}
				h.Push(item(p.rank, p.pos))
				ref = append(ref, p)
				continue
			}
			ref = sorted(ref)
			it := h.Pop()
			if (pair{it.Rank, it.Pos}) != ref[0] {
				t.Fatalf("round %d: popped (%d,%d), want %v", round, it.Rank, it.Pos, ref[0])
			}
			ref = ref[1:]
		}
	}
}

// TestEmptyValAddsNothing: an item without a value is two int32s, and
// the heap allocates only to grow.
func TestEmptyValAddsNothing(t *testing.T) {
	if n := unsafe.Sizeof(Item[struct{}]{}); n != 8 {
		t.Fatalf("Item[struct{}] is %d bytes", n)
	}
	h := make(Heap[struct{}], 0, 2)
	h.Push(Item[struct{}]{Rank: 1, Pos: 2})
	if n := testing.AllocsPerRun(100, func() {
		h.Push(Item[struct{}]{Rank: 3, Pos: 4})
		h.Pop()
	}); n != 0 {
		t.Fatalf("push and pop within capacity allocate %.0f times", n)
	}
}
