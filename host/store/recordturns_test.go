package store

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// benchTurn is a turn shaped like proxybench's loaded scenario: a 6 KB
// system prompt and a question in one request, a short answer, the
// injected ids.
func benchTurn(session string, i int) *Turn {
	sys := strings.Repeat("You are a coding agent working in the user's repository. Follow the workspace rules and keep answers short. ", 56)[:6000]
	return &Turn{SessionID: session, Agent: "default", TurnType: "main", ClientAPI: "openai", UpstreamAPI: "openai", Model: "m",
		RequestJSON:  `{"model":"m","messages":[{"role":"system","content":"` + sys + `"},{"role":"user","content":"question ` + fmt.Sprint(i) + `"}]}`,
		ResponseText: "ok, here is the answer to question " + fmt.Sprint(i), InjectedJSON: `["s:a","m:1","m:2"]`, InjectedTokens: 900,
		Status: 200, LatencyMS: 3, TTFBMS: 2, InputTokens: 1500, OutputTokens: 20, UserID: "bench", MemoryScope: "user:bench"}
}

// BenchmarkRecordTurns measures recording turns of one session in
// batches of 1, 4 and 16 (the recorder commits the turns that queued up
// while the previous batch committed); ns/op is per turn.
func BenchmarkRecordTurns(b *testing.B) {
	for _, size := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			s, err := OpenSQLite(context.Background(), filepath.Join(b.TempDir(), DBFile))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			batch := make([]*Turn, 0, size)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				batch = append(batch, benchTurn("bench-session", i))
				if len(batch) == size || i == b.N-1 {
					if err := s.RecordTurns(ctx, batch); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
		})
	}
}

// TestRecordTurnsBatchMatchesOneByOne checks that a batch mixing
// sessions, turn types and out-of-order times (one session upsert per
// session) numbers the turns and updates the sessions as recording them
// one at a time does.
func TestRecordTurnsBatchMatchesOneByOne(t *testing.T) {
	ctx := context.Background()
	t0 := time.UnixMilli(1_700_000_000_000)
	mk := func() []*Turn {
		var out []*Turn
		for i, spec := range []struct {
			session, typ string
			at           int
		}{{"a", "main", 5}, {"b", "main", 1}, {"a", "side", 3}, {"a", "main", 9}, {"c", "side", 2}, {"b", "main", 7}, {"a", "side", 4}, {"c", "main", 8}} {
			tr := benchTurn(spec.session, i)
			tr.TurnType, tr.Agent, tr.MemoryScope, tr.CreatedAt = spec.typ, "agent-"+spec.session, "scope-"+spec.session, t0.Add(time.Duration(spec.at)*time.Second)
			out = append(out, tr)
		}
		return out
	}
	record := func(batches [][]*Turn) (*SQLite, []*Turn) {
		s, _ := openTest(t)
		// b already has turns and ended: the batch reopens it and continues its numbering.
		old := benchTurn("b", 99)
		old.CreatedAt = t0
		if err := s.RecordTurns(ctx, []*Turn{old}); err != nil {
			t.Fatal(err)
		}
		if err := s.EndSession(ctx, "b", "idle", t0); err != nil {
			t.Fatal(err)
		}
		var all []*Turn
		for _, b := range batches {
			if err := s.RecordTurns(ctx, b); err != nil {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		return s, all
	}
	one := mk()
	var singles [][]*Turn
	for _, tr := range one {
		singles = append(singles, []*Turn{tr})
	}
	s1, want := record(singles)
	s2, got := record([][]*Turn{mk()})
	for i := range want {
		if got[i].ID != want[i].ID || got[i].TurnIndex != want[i].TurnIndex {
			t.Errorf("turn %d: batch id %d index %d, one by one id %d index %d", i, got[i].ID, got[i].TurnIndex, want[i].ID, want[i].TurnIndex)
		}
	}
	for _, id := range []string{"a", "b", "c"} {
		w, err1 := s1.Session(ctx, id)
		g, err2 := s2.Session(ctx, id)
		if err1 != nil || err2 != nil || !reflect.DeepEqual(g, w) {
			t.Errorf("session %s: batch %+v (%v), one by one %+v (%v)", id, g, err2, w, err1)
		}
	}
}
