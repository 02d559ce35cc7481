package strtab

import (
	"fmt"
	"math/rand"
	"runtime"
	"testing"

	"github.com/metaclaw-go/metaclaw/internal/heapstat"
)

func build(keys ...string) *Table {
	b := NewBuilder(len(keys), 0)
	for _, k := range keys {
		b.Add(k)
	}
	return b.Build()
}

func TestTable(t *testing.T) {
	tab := build("alpha", "", "beta", "alpha", "gamma", "é", "a")
	tests := []struct {
		key  string
		want int
	}{
		{"alpha", 0}, // added twice: the first number
		{"beta", 2},
		{"gamma", 4},
		{"é", 5},
		{"a", 6},
		{"", -1}, // placeholders are never found
		{"alph", -1},
		{"alphaa", -1},
		{"delta", -1},
	}
	for _, tt := range tests {
		if got := tab.Index(tt.key); got != tt.want {
			t.Errorf("Index(%q) = %d, want %d", tt.key, got, tt.want)
		}
		if got := tab.IndexBytes([]byte(tt.key)); got != tt.want {
			t.Errorf("IndexBytes(%q) = %d, want %d", tt.key, got, tt.want)
		}
	}
	if tab.Len() != 7 || tab.Key(3) != "alpha" || tab.Key(1) != "" || tab.Key(5) != "é" {
		t.Fatalf("Len %d, keys %q %q %q", tab.Len(), tab.Key(3), tab.Key(1), tab.Key(5))
	}
	var zero Table
	if zero.Index("x") != -1 || zero.IndexBytes([]byte("x")) != -1 || zero.Len() != 0 {
		t.Fatal("the zero Table finds something")
	}
	if empty := build(); empty.Index("") != -1 || empty.Index("x") != -1 {
		t.Fatal("an empty Table finds something")
	}
}

// TestTableMatchesMap: on many random keys (short, shared prefixes, bytes
// that are not UTF-8), the table answers as a map does, for present and
// absent keys.
func TestTableMatchesMap(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	want := map[string]int{}
	b := NewBuilder(0, 0)
	randKey := func() string {
		k := make([]byte, 1+r.Intn(12))
		for i := range k {
			k[i] = "abc\x00\xff"[r.Intn(5)]
		}
		return string(k)
	}
	for range 50000 {
		k := randKey()
		i := b.AddBytes([]byte(k))
		if _, dup := want[k]; !dup {
			want[k] = i
		}
	}
	tab := b.Build()
	for k, i := range want {
		if got := tab.Index(k); got != i {
			t.Fatalf("Index(%q) = %d, want %d", k, got, i)
		}
	}
	for range 50000 {
		k := randKey() + "x"
		if got := tab.Index(k); got != -1 {
			t.Fatalf("Index(%q) = %d for an absent key", k, got)
		}
	}
}

// TestTableIsPointerFree: a table of 100k keys adds next to nothing to the
// heap the GC scans, and a handful of objects (a map[string]int32 of the
// same keys: ~2.4 MB to scan and 100k key objects). The bounds leave room
// for the test runtime's own allocations.
func TestTableIsPointerFree(t *testing.T) {
	b := NewBuilder(100000, 0)
	for i := range 100000 {
		b.Add(fmt.Sprintf("term-%d", i))
	}
	h0 := heapstat.Now()
	tab := b.Build()
	d := heapstat.Now().Minus(h0)
	runtime.KeepAlive(tab)
	if ds, do := d.Scan, d.Objects; ds > 64<<10 || do > 1000 {
		t.Fatalf("a 100k-key table adds %d scannable bytes and %d objects", ds, do)
	}
}

func BenchmarkIndex(b *testing.B) {
	bl := NewBuilder(200000, 0)
	for i := range 200000 {
		bl.Add(fmt.Sprintf("tok%d", i))
	}
	tab := bl.Build()
	keys := []string{"tok12345", "tok199999", "absent", "tok7"}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tab.Index(keys[i%len(keys)])
	}
}
