package memory

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// TestInjectionsCounted: a batch counts, per unit, the turns it was
// injected into and keeps the latest time — across statements of every
// size (units beyond one statement's rows, padded statements), and never
// moving last_injected_at backwards.
func TestInjectionsCounted(t *testing.T) {
	ctx := context.Background()
	s, st := openStore(t, Options{})
	now := time.Now().Truncate(time.Millisecond)
	const n = 45 // two statements: 32 rows and a padded 16
	var units []Unit
	for i := range n {
		units = append(units, Unit{Scope: "user:i", Type: Semantic, Content: fmt.Sprintf("Build box %d sits in rack %d.", i, 200+i),
			SaidAt: now, LastSeenAt: now, Origin: "test"})
	}
	if err := s.BulkInsert(ctx, units); err != nil {
		t.Fatal(err)
	}
	later := now.Add(time.Hour) // unit 1: already counted, injected later than this batch
	if _, err := st.Writer().ExecContext(ctx, `UPDATE memory_units SET injected_count = 7, last_injected_at = ? WHERE content = ?`, later.UnixMilli(), units[1].Content); err != nil {
		t.Fatal(err)
	}
	all, err := s.List(ctx, Filter{Scope: "user:i", Limit: 100})
	if err != nil || len(all) != n {
		t.Fatalf("listed %d units, %v", len(all), err)
	}
	uid := map[string]string{}
	for _, u := range all {
		uid[u.Content] = u.ID
	}
	id := func(i int) string { return "memory:" + uid[units[i].Content] }
	// Three turns: every unit in the first, units 0 and 1 in all three.
	var first []string
	for i := range n {
		first = append(first, id(i))
	}
	turns := []Turn{
		{Source: "h/1", User: "hello", Injected: first, At: now.Add(-3 * time.Minute)},
		{Source: "h/2", User: "hello again", Injected: []string{id(0), id(1), "skill:x"}, At: now.Add(-2 * time.Minute)},
		{Source: "h/3", User: "and again", Injected: []string{id(0), id(1)}, At: now.Add(-1 * time.Minute)},
	}
	if _, err := s.Ingest(ctx, Batch{SessionID: "s", Scope: "user:i", Turns: turns}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		u, err := s.Get(ctx, uid[units[i].Content])
		if err != nil {
			t.Fatal(err)
		}
		wantN, wantAt := 1, now.Add(-3*time.Minute)
		switch i {
		case 0:
			wantN, wantAt = 3, now.Add(-1*time.Minute)
		case 1:
			wantN, wantAt = 7+3, later
		}
		// (a turn's time maps onto the store's clock, to within a millisecond)
		if u.InjectedCount != wantN || u.LastInjectedAt == nil || u.LastInjectedAt.Sub(wantAt).Abs() > 50*time.Millisecond {
			t.Errorf("unit %d: injected %d at %v, want %d at %v", i, u.InjectedCount, u.LastInjectedAt, wantN, wantAt)
		}
	}
}
