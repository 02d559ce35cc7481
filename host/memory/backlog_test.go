package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/store"
)

// seedBacklog records n turns over sessions, agents, scopes, turn types and
// statuses (created_at not in id order), sets cursors on some sessions (below,
// inside and past their turns) and the floor (baseline and floor_turn_id).
func seedBacklog(t testing.TB, st *store.SQLite, rng *rand.Rand, n, sessions int) {
	t.Helper()
	ctx := context.Background()
	base := time.Now().Add(-48 * time.Hour)
	statuses := []int{200, 200, 200, 201, 299, 300, 404, 500, 507}
	var turns []*store.Turn
	for i := range n {
		turns = append(turns, &store.Turn{
			SessionID:   fmt.Sprintf("s%d", rng.IntN(sessions)),
			Agent:       []string{"main", "coder", ""}[rng.IntN(3)],
			MemoryScope: []string{"", "work"}[rng.IntN(2)],
			TurnType:    []string{"main", "main", "main", "heartbeat", "cron"}[rng.IntN(5)],
			Status:      statuses[rng.IntN(len(statuses))],
			RequestJSON: `{}`, ClientAPI: "openai", UpstreamAPI: "openai",
			CreatedAt: base.Add(time.Duration(i)*time.Second - time.Duration(rng.IntN(3600))*time.Second),
		})
	}
	for start := 0; start < len(turns); start += 1000 {
		if err := st.RecordTurns(ctx, turns[start:min(start+1000, len(turns))]); err != nil {
			t.Fatal(err)
		}
	}
	w := st.Writer()
	for s := range sessions {
		if rng.IntN(3) == 0 {
			continue // never ingested: no cursor
		}
		if _, err := w.Exec(`INSERT INTO memory_cursors (session_id, last_turn_id, summarized_turn_id, updated_at) VALUES (?, ?, 0, 0)`,
			fmt.Sprintf("s%d", s), rng.Int64N(int64(n)+50)); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{"baseline_turn_id", "floor_turn_id"} {
		if rng.IntN(2) == 0 {
			if err := setMeta(ctx, w, key, fmt.Sprint(rng.Int64N(int64(n)/3+1))); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// refsBacklog is the count as it was made before CountUnread: every
// learnable turn after the floor listed, then filtered by cursor in Go.
func refsBacklog(ctx context.Context, q queryer, turns store.TurnLog, f store.TurnFilter) (store.Backlog, error) {
	refs, err := pendingRefs(ctx, q, turns, f)
	if err != nil || len(refs) == 0 {
		return store.Backlog{}, err
	}
	b := store.Backlog{Turns: len(refs), Oldest: refs[0].CreatedAt}
	for _, r := range refs {
		if r.CreatedAt.Before(b.Oldest) {
			b.Oldest = r.CreatedAt
		}
	}
	return b, nil
}

// TestBacklogMatchesListedCount: the one-query count (the store handed
// memory's cursors) gives what listing and filtering in Go gave, for every
// filter memory uses, over varied data.
func TestBacklogMatchesListedCount(t *testing.T) {
	ctx := context.Background()
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 15))
			_, st := openStore(t, Options{})
			seedBacklog(t, st, rng, 300+rng.IntN(900), 5+rng.IntN(60))
			filters := []store.TurnFilter{
				{},
				{SideToo: true},
				{OfAgent: true, Agent: "main", Scope: ""},
				{OfAgent: true, Agent: "coder", Scope: "work", SideToo: true},
				{ExceptSession: "s1"},
				{OfAgent: true, Agent: "", Scope: "work", ExceptSession: "s0"},
			}
			nonzero := 0
			for _, f := range filters {
				want, err := refsBacklog(ctx, st.Reader(), st, f)
				if err != nil {
					t.Fatal(err)
				}
				got, err := backlog(ctx, st.Reader(), st, f)
				if err != nil {
					t.Fatal(err)
				}
				if got.Turns != want.Turns || !got.Oldest.Equal(want.Oldest) {
					t.Errorf("filter %+v: one query %d (oldest %v), listed %d (oldest %v)", f, got.Turns, got.Oldest, want.Turns, want.Oldest)
				}
				if want.Turns > 0 {
					nonzero++
				}
			}
			if nonzero < 3 {
				t.Errorf("only %d filters found pending turns: the data set tests little", nonzero)
			}
		})
	}
}

// BenchmarkPendingCount20k: status's pending count (and oldest age) at
// 20,000 pending turns in 200 sessions, half of them with cursors, as one
// query against listing the turns and filtering in Go.
func BenchmarkPendingCount20k(b *testing.B) {
	ctx := context.Background()
	_, st := openStore(b, Options{})
	var turns []*store.Turn
	at := time.Now().Add(-time.Hour)
	for i := range 20_200 {
		turns = append(turns, &store.Turn{SessionID: fmt.Sprintf("s%d", i%200), Agent: "main", TurnType: "main", Status: 200,
			RequestJSON: `{}`, ClientAPI: "openai", UpstreamAPI: "openai", CreatedAt: at})
	}
	for start := 0; start < len(turns); start += 1000 {
		if err := st.RecordTurns(ctx, turns[start:min(start+1000, len(turns))]); err != nil {
			b.Fatal(err)
		}
	}
	// Sessions s0..s99 read up to their second turn: 20,000 pending.
	for s := range 100 {
		if _, err := st.Writer().Exec(`INSERT INTO memory_cursors (session_id, last_turn_id, summarized_turn_id, updated_at) VALUES (?, ?, 0, 0)`,
			fmt.Sprintf("s%d", s), turns[200+s].ID); err != nil {
			b.Fatal(err)
		}
	}
	for _, c := range []struct {
		name  string
		count func(context.Context, queryer, store.TurnLog, store.TurnFilter) (store.Backlog, error)
	}{{"one-query", backlog}, {"listed", refsBacklog}, {"old-join", joinedBacklog}} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				got, err := c.count(ctx, st.Reader(), st, store.TurnFilter{})
				if err != nil || got.Turns != 20_000 {
					b.Fatalf("pending %d %v, want 20000", got.Turns, err)
				}
			}
		})
	}
}

// joinedBacklog is the single SQL join memory ran before the store's tables
// were closed to it (memory_cursors read inside the store's query): the
// reference the one-query count is measured against.
func joinedBacklog(ctx context.Context, q queryer, _ store.TurnLog, _ store.TurnFilter) (store.Backlog, error) {
	floor, err := pendingFloor(ctx, q)
	if err != nil {
		return store.Backlog{}, err
	}
	var b store.Backlog
	var oldest int64
	err = q.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(MIN(t.created_at), 0) FROM turns t WHERE t.id > ? AND t.status BETWEEN 200 AND 299
AND t.turn_type = 'main' AND t.id > COALESCE((SELECT c.last_turn_id FROM memory_cursors c WHERE c.session_id = t.session_id), 0)`, floor).Scan(&b.Turns, &oldest)
	b.Oldest = time.UnixMilli(oldest)
	return b, err
}

// TestRetentionKeepsWhatMemoryHasNotRead: the store's retention, given
// memory's read position (as the daemon wires it), deletes the old turns
// ingestion has read and keeps those it has not, without reading memory's
// tables itself.
func TestRetentionKeepsWhatMemoryHasNotRead(t *testing.T) {
	ctx := context.Background()
	mem, st := openStore(t, Options{})
	in := NewIngester(st, mem, IngesterOptions{})
	old := time.Now().Add(-40 * 24 * time.Hour)
	for _, s := range []struct {
		id string
		n  int
	}{{"read", 3}, {"unread", 2}} {
		for i := range s.n {
			tr := &store.Turn{SessionID: s.id, Agent: "a", TurnType: "main", Status: 200, CreatedAt: old,
				RequestJSON: fmt.Sprintf(`{"messages":[{"role":"user","content":"I prefer tabs, note %d"}]}`, i), ResponseText: "ok"}
			if err := st.RecordTurns(ctx, []*store.Turn{tr}); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.EndSession(ctx, s.id, "test", time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := in.IngestSession(ctx, "read", false); err != nil {
		t.Fatal(err)
	}
	rep, err := st.Prune(ctx, store.PruneOptions{Before: time.Now().Add(-30 * 24 * time.Hour), KeepUnmined: ReadPosition(st)})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Turns != 3 || rep.KeptUnmined != 2 {
		t.Fatalf("pruned %d turns and kept %d unmined, want 3 and 2", rep.Turns, rep.KeptUnmined)
	}
	if n, err := in.Pending(ctx); err != nil || n != 2 {
		t.Fatalf("pending after the prune: %d %v, want the 2 unread turns", n, err)
	}
}
