package skills

import (
	"context"
	"reflect"
	"runtime"
	"testing"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/tokens"
	"github.com/metaclaw-go/metaclaw/internal/heapstat"
)

// TestPackStringsKeepsValues: packing changes where the strings live, not
// what they are.
func TestPackStringsKeepsValues(t *testing.T) {
	tests := []*Skill{
		{Name: "deploy-check", Description: "Check a deploy.", Category: "ops", Tags: []string{"deploy", "ci"}, Agents: []string{"a", "*"},
			Status: StatusActive, Source: "user", Body: "# T\n\nstep one\nstep two", Path: "/x/deploy-check/SKILL.md", Hash: "abc", Warnings: []string{"w1"}},
		{Name: "n", Description: "d", Body: "b"},
		{},
	}
	for _, s := range tests {
		e := newEntry(s.Clone())
		if !reflect.DeepEqual(e.skill, s) {
			t.Fatalf("packed skill %+v, want %+v", e.skill, s)
		}
		if e.id != s.ID() || e.head != "### "+s.Name+"\n"+oneLine(s.Description)+"\n" || e.embedHash != hashOf([]byte(embedText(s))) {
			t.Fatalf("entry strings changed: %q %q %q", e.id, e.head, e.embedHash)
		}
	}
}

// TestLibraryHeapIsLean: an opened library holds a few heap objects per
// skill and nothing per indexed term or posting (BenchmarkLibraryHeap1000
// measures the same at 1,000 skills). Before the strings were packed and
// the term maps became tables: ~25 objects and ~1.2 KB to scan per skill.
func TestLibraryHeapIsLean(t *testing.T) {
	const n = 300
	dir, skillsDir := writeSyntheticLibrary(t, n)
	st := openStore(t, dir)
	tokens.Warm()
	h0 := heapstat.Now()
	lib, err := Open(context.Background(), Options{Dir: skillsDir, Store: st, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	d := heapstat.Now().Minus(h0)
	snap := lib.snap.Load()
	if snap.kw == nil || snap.df.len() == 0 {
		t.Fatal("no in-memory index")
	}
	runtime.KeepAlive(lib)
	lib.Close()
	t.Logf("%d skills: live %d KB, scan %d KB, %d objects", n, d.Live>>10, d.Scan>>10, d.Objects)
	if d.Objects > 12*n || d.Scan > 1024*n {
		t.Fatalf("%d skills hold %d heap objects and %d scannable bytes", n, d.Objects, d.Scan)
	}
}
