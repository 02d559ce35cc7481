package memory

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/store"
)

// The in-memory index ranks exactly as the SQL path: the same hits, in the
// same order, with the same scores, and the same rendered section — on a
// seeded store, after incremental updates (learning, reinforcement,
// supersession, edits, forgetting) and after another process wrote.
func TestIndexMatchesSQL(t *testing.T) {
	ctx := context.Background()
	t0 := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return t0 }
	path := filepath.Join(t.TempDir(), store.DBFile)
	st, err := store.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := Open(st, Options{Now: now})

	// A corpus in two scopes and two agents, plus learned statements.
	c := newCorpus(7)
	var units []Unit
	for i := 0; i < 1500; i++ {
		u := c.unit([]string{"user:a", "user:b"}[i%2], t0)
		if u.Type == WorkingSummary && i%4 == 0 {
			u.Agent = "coder"
		}
		units = append(units, u)
	}
	if err := s.BulkInsert(ctx, units); err != nil {
		t.Fatal(err)
	}
	learn := func(at time.Time, texts ...string) {
		var turns []Turn
		for _, x := range texts {
			turns = append(turns, Turn{User: x, At: at})
		}
		if _, err := s.Ingest(ctx, Batch{SessionID: fmt.Sprint(at.UnixNano()), Scope: "user:a", Agent: "coder", Turns: turns}); err != nil {
			t.Fatal(err)
		}
	}
	learn(time.Now().Add(-time.Hour), "Our reports need: (1) a file name of the form `YYYYMMDD_<desc>.md`, (2) a front-matter block with owner, state and reviewed_at.",
		"All timestamps must carry the +08:00 offset.", "We switched the main database to MySQL.", "My timezone is UTC+8.", "Today we shipped v2.0 of the billing service.")
	if err := s.StartIndex(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.StopIndex()
	ix := s.idx.cur.Load()
	if ix == nil || ix.nRows < 1500 {
		t.Fatalf("index not built: %+v", ix)
	}

	queries := [][]string{
		{"Which database should the migrations target?"},
		{"Draft the weekly CI build report", "with timestamps please"},
		{"数据库迁移怎么写？"},
		{"Draft a poem about autumn leaves."},
		{"let's continue where we left off last time"},
		{""},
	}
	cq := newCorpus(8)
	for i := 0; i < 40; i++ {
		queries = append(queries, cq.query())
	}
	check := func(stage string) {
		t.Helper()
		for _, scope := range []string{"user:a", "user:b"} {
			for _, agent := range []string{"default", "coder"} {
				for _, texts := range queries {
					q := Query{Scope: scope, Agent: agent, Texts: texts}
					got := s.retrieveBoth(t, q, true)
					want := s.retrieveBoth(t, q, false)
					if got.Section.Body != want.Section.Body || len(got.Hits) != len(want.Hits) {
						t.Fatalf("%s: %s/%s %q:\nindex:\n%s\nsql:\n%s", stage, scope, agent, texts, got.Section.Body, want.Section.Body)
					}
					for i := range got.Hits {
						g, w := got.Hits[i], want.Hits[i]
						if g.ID != w.ID || math.Abs(g.Score-w.Score) > 1e-9 || !reflect.DeepEqual(g.Matched, w.Matched) {
							t.Fatalf("%s: %q hit %d: index %s %.6f %v, sql %s %.6f %v", stage, texts, i, g.ID, g.Score, g.Matched, w.ID, w.Score, w.Matched)
						}
					}
				}
			}
		}
	}
	check("built")

	// Incremental updates: nothing is rebuilt.
	learn(time.Now().Add(-30*time.Minute), "Every time field in the output needs the date, the time and the +08:00 offset.",
		"Actually, we switched the main database to PostgreSQL.", "Never use SELECT * in views.")
	us, _ := s.List(ctx, Filter{Scope: "user:a"})
	if _, err := s.Edit(ctx, us[0].ID, Patch{Content: strPtr("Reports go to the finance channel every Monday.")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Forget(ctx, us[1].ID, "test"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Add(ctx, NewUnit{Content: "Always write tests first.", Scope: "user:b"}); err != nil {
		t.Fatal(err)
	}
	if s.idx.cur.Load() != ix {
		t.Fatal("the index was rebuilt instead of updated")
	}
	if g, _ := generation(ctx, s.r); ix.generation() != g {
		t.Fatalf("index generation %d, database %d", ix.generation(), g)
	}
	check("updated")

	// Another process (the CLI) writes: the index is rebuilt.
	st2, err := store.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	other := Open(st2, Options{Now: now})
	if _, _, err := other.Add(ctx, NewUnit{Content: "The staging port is 9090.", Scope: "user:a"}); err != nil {
		t.Fatal(err)
	}
	g, _ := generation(ctx, s.r)
	deadline := time.Now().Add(20 * time.Second)
	for s.idx.cur.Load().generation() != g {
		if time.Now().After(deadline) {
			t.Fatal("the index did not follow another process's write")
		}
		time.Sleep(20 * time.Millisecond)
	}
	check("rebuilt")

	// A rebuild does not hold commits up, and loses none of them.
	rebuilt := make(chan error, 1)
	go func() { rebuilt <- s.rebuildIndex(ctx) }()
	learn(time.Now().Add(-10*time.Minute), "Never deploy on Fridays.", "We use Terraform for the infrastructure.")
	if err := <-rebuilt; err != nil {
		t.Fatal(err)
	}
	g, _ = generation(ctx, s.r)
	deadline = time.Now().Add(20 * time.Second)
	for s.idx.cur.Load().generation() != g {
		if time.Now().After(deadline) {
			t.Fatal("the index did not catch up after a rebuild during commits")
		}
		time.Sleep(20 * time.Millisecond)
	}
	check("rebuilt while learning")
	if r := s.retrieveBoth(t, Query{Scope: "user:a", Agent: "default", Texts: []string{"staging port"}}, true); !contains(hitIDs(r.Hits), unitID(t, other, "user:a", "9090")) {
		t.Fatalf("the other process's memory is not retrieved:\n%s", r.Section.Body)
	}
}

func strPtr(s string) *string { return &s }

func hitIDs(hs []Hit) []string {
	var out []string
	for _, h := range hs {
		out = append(out, h.ID)
	}
	return out
}

func unitID(t *testing.T, s *Store, scope, text string) string {
	t.Helper()
	hits, err := s.Search(context.Background(), SearchQuery{Scope: scope, Text: text})
	if err != nil || len(hits) == 0 {
		t.Fatalf("search %q: %v %v", text, hits, err)
	}
	return hits[0].ID
}

// retrieveBoth retrieves through the index (true) or SQLite (false).
func (s *Store) retrieveBoth(t *testing.T, q Query, index bool) Result {
	t.Helper()
	ctx := context.Background()
	var src source
	if index {
		ix := s.idx.cur.Load()
		ix.mu.RLock()
		defer ix.mu.RUnlock()
		src = &indexView{ix: ix, now: s.now()}
	} else {
		sq, err := s.sqlSourceNow(ctx)
		if err != nil {
			t.Fatal(err)
		}
		src = sq
	}
	r, err := s.retrieveFrom(ctx, src, q, s.o.TopK, s.o.StandingK, s.o.MaxTokens, false)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
