package skills

import (
	"context"
	"testing"
)

func TestLibraryGenerationMovesWithInjectableChanges(t *testing.T) {
	lib, st := newLib(t)
	ctx := context.Background()
	gen := func() int64 {
		t.Helper()
		g, err := LibraryGeneration(ctx, st.Reader())
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	if g := gen(); g != 0 {
		t.Fatalf("empty library generation %d", g)
	}
	if _, err := lib.Save(ctx, &Skill{Name: "tests-first", Description: "Use when writing code", Body: "1. Write the test.", Status: StatusActive}, Event{Action: "created", Source: "cli"}); err != nil {
		t.Fatal(err)
	}
	g1 := gen()
	if g1 == 0 {
		t.Fatal("a new skill did not change the generation")
	}
	// A proposal or a rejection changes nothing that is injected.
	next := &Skill{Name: "tests-first", Description: "Use when writing code", Body: "1. Write the test.\n2. Run it.", Status: StatusActive}
	if err := lib.SaveProposal(ctx, next, Event{Action: "proposed", Source: "evolver"}); err != nil {
		t.Fatal(err)
	}
	if err := lib.Record(ctx, "-", 0, Event{Action: "rejected", Source: "evolver"}, ""); err != nil {
		t.Fatal(err)
	}
	if g := gen(); g != g1 {
		t.Fatalf("proposal moved the generation %d -> %d", g1, g)
	}
	if _, err := lib.SetStatus(ctx, "tests-first", StatusDisabled, Event{}); err != nil {
		t.Fatal(err)
	}
	if g := gen(); g <= g1 {
		t.Fatalf("disabling a skill left the generation at %d (was %d)", g, g1)
	}
}
