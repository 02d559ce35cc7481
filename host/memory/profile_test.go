package memory

import (
	"strings"
	"testing"
)

// The profile case of issue 10: a user with seven memories (five
// preferences, a project fact, a personal fact). In a new session, a
// question about the database gets the database fact (the six slots used to
// go to the preferences and the timezone), and a turn no memory serves gets
// the standing rules only.
func TestProfileFactBeatsPreferences(t *testing.T) {
	clk := &fakeClock{}
	h := startHost(t, testCfg(t, nil), AssembleOptions{Now: clk.Now}, "")
	gina := chatOpts{user: "gina"}
	prefs := []string{"spaces", "Fridays", "brief", "Gigi", "tests first"}
	h.session("p1", gina,
		"I prefer spaces for indentation.",
		"Never deploy on Fridays.",
		"Keep answers brief.",
		"Please call me Gigi.",
		"I always write tests first.",
		"The team switched from Postgres to MySQL last month.",
		"My timezone is UTC+8.")
	h.settle()
	clk.Advance(2 * day)

	o := gina
	o.session, o.done = "p2", true
	block := memoryBlock(h.chat("Which database should the migrations target, and is it ok to ship on Friday afternoon?", o))
	h.settle()
	for _, want := range []string{"MySQL", "Fridays"} {
		if !strings.Contains(block, want) {
			t.Errorf("database question: %q missing from\n%s", want, block)
		}
	}
	if strings.Contains(block, "Postgres to MySQL") && strings.Contains(block, "uses Postgres") {
		t.Errorf("superseded database injected:\n%s", block)
	}

	clk.Advance(day)
	o.session = "p3"
	block = memoryBlock(h.chat("Draft a poem about autumn leaves.", o))
	h.settle()
	for _, want := range prefs {
		if !strings.Contains(block, want) {
			t.Errorf("unrelated turn: standing rule %q missing from\n%s", want, block)
		}
	}
	for _, not := range []string{"MySQL", "UTC+8"} {
		if strings.Contains(block, not) {
			t.Errorf("unrelated turn: %q injected (only standing rules belong here):\n%s", not, block)
		}
	}
	if n := len(bullets(block)); n != len(prefs) {
		t.Errorf("unrelated turn: %d memories injected, want the %d standing rules:\n%s", n, len(prefs), block)
	}
}

// memory search "database" finds the unit in the database slot.
func TestSearchFindsSlotCategory(t *testing.T) {
	s, _ := openStore(t, Options{})
	ctx := t.Context()
	if _, _, err := s.Add(ctx, NewUnit{Content: "We switched to MySQL last month.", Scope: "user:a"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Add(ctx, NewUnit{Content: "I prefer tabs for indentation.", Scope: "user:a"}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"database", "which database do we use", "数据库"} {
		hits, err := s.Search(ctx, SearchQuery{Scope: "user:a", Text: q})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || !strings.Contains(hits[0].Content, "MySQL") {
			t.Errorf("search %q: %+v", q, hits)
		}
	}
}
