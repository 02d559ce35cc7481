package memory

import (
	"context"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/store"
)

// TestFloorFindsPendingTurnPastFirstPage: the floor moves to just below the
// oldest pending turn even when more than a page of already-ingested turns
// lies between the old floor and it.
func TestFloorFindsPendingTurnPastFirstPage(t *testing.T) {
	ctx := context.Background()
	mem, st := openStore(t, Options{})
	in := NewIngester(st, mem, IngesterOptions{})
	mk := func(session string) *store.Turn {
		return &store.Turn{SessionID: session, Agent: "a", TurnType: "main", Status: 200, RequestJSON: `{"messages":[{"role":"user","content":"hello"}]}`}
	}
	record := func(turns ...*store.Turn) {
		t.Helper()
		if err := st.RecordTurns(ctx, turns); err != nil {
			t.Fatal(err)
		}
	}
	record(mk("b")) // id 1, pending until b is ingested
	var many []*store.Turn
	for range 600 {
		many = append(many, mk("a"))
	}
	record(many...) // ids 2..601
	if _, err := in.IngestSession(ctx, "a", false); err != nil {
		t.Fatal(err)
	}
	if f, err := pendingFloor(ctx, st.Reader()); err != nil || f != 0 {
		t.Fatalf("floor with b pending: %d %v, want 0", f, err)
	}
	record(mk("c")) // id 602
	if _, err := in.IngestSession(ctx, "b", false); err != nil {
		t.Fatal(err)
	}
	if f, err := pendingFloor(ctx, st.Reader()); err != nil || f != 601 {
		t.Fatalf("floor with c pending: %d %v, want 601", f, err)
	}
	if n, err := in.Pending(ctx); err != nil || n != 1 {
		t.Fatalf("pending: %d %v, want 1", n, err)
	}
	if _, err := in.IngestSession(ctx, "c", false); err != nil {
		t.Fatal(err)
	}
	if f, err := pendingFloor(ctx, st.Reader()); err != nil || f != 602 {
		t.Fatalf("floor with nothing pending: %d %v, want 602", f, err)
	}
}
