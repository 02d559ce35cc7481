package store

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// turnLogFixture records, in order (ids 1..7):
//
//	1 s1 main 200 a/x   2 s1 side 200 a/x   3 s1 main 500 a/x   4 s2 main 200 b/x
//	5 s1 main 201 a/x   6 s3 main 200 a/y   7 s2 side 204 b/x
func turnLogFixture(t *testing.T) *SQLite {
	t.Helper()
	s, _ := openTest(t)
	mk := func(session, agent, scope, typ string, status int) *Turn {
		return &Turn{SessionID: session, Agent: agent, MemoryScope: scope, TurnType: typ, ClientAPI: "openai", UpstreamAPI: "openai",
			RequestJSON: `{"n":"` + session + `"}`, ResponseText: "answer", Status: status}
	}
	turns := []*Turn{mk("s1", "a", "x", "main", 200), mk("s1", "a", "x", "side", 200), mk("s1", "a", "x", "main", 500),
		mk("s2", "b", "x", "main", 200), mk("s1", "a", "x", "main", 201), mk("s3", "a", "y", "main", 200), mk("s2", "b", "x", "side", 204)}
	if err := s.RecordTurns(context.Background(), turns); err != nil {
		t.Fatal(err)
	}
	for i, tr := range turns {
		if tr.ID != int64(i+1) {
			t.Fatalf("turn %d has id %d", i, tr.ID)
		}
	}
	return s
}

func TestLearnableTurns(t *testing.T) {
	s := turnLogFixture(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		f    TurnFilter
		want []int64
	}{
		{"main answered", TurnFilter{}, []int64{1, 4, 5, 6}},
		{"side too", TurnFilter{SideToo: true}, []int64{1, 2, 4, 5, 6, 7}},
		{"after", TurnFilter{After: 4}, []int64{5, 6}},
		{"of agent in scope", TurnFilter{OfAgent: true, Agent: "a", Scope: "x"}, []int64{1, 5}},
		{"of agent, empty names match only empty", TurnFilter{OfAgent: true}, nil},
		{"except a session", TurnFilter{SideToo: true, ExceptSession: "s1"}, []int64{4, 6, 7}},
		{"the oldest two", TurnFilter{After: 1, Limit: 2}, []int64{4, 5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			refs, err := s.LearnableTurns(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var got []int64
			for _, r := range refs {
				got = append(got, r.ID)
				if r.SessionID == "" || r.CreatedAt.IsZero() {
					t.Errorf("ref %+v lacks its session or time", r)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("ids %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSessionTurnsAfterAndBack(t *testing.T) {
	s := turnLogFixture(t)
	ctx := context.Background()
	turns, err := s.SessionTurnsAfter(ctx, "s1", 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 2 || turns[0].ID != 2 || turns[1].ID != 3 || turns[0].TurnType != "side" || turns[1].Status != 500 ||
		turns[0].RequestJSON != `{"n":"s1"}` || turns[0].ResponseText != "answer" || turns[0].MemoryScope != "x" || turns[0].Agent != "a" {
		t.Fatalf("turns after 1: %+v", turns)
	}
	if turns, err := s.SessionTurnsAfter(ctx, "s1", 5, 10); err != nil || len(turns) != 0 {
		t.Fatalf("after the last: %d %v", len(turns), err)
	}
	for _, tc := range []struct {
		upTo   int64
		back   int
		want   int64
		wantOK bool
	}{
		{5, 0, 5, true}, {4, 0, 3, true}, {5, 3, 1, true}, {5, 4, 0, false}, {0, 0, 0, false},
	} {
		id, ok, err := s.SessionTurnBack(ctx, "s1", tc.upTo, tc.back)
		if err != nil || id != tc.want || ok != tc.wantOK {
			t.Errorf("back %d from %d: %d %v %v, want %d %v", tc.back, tc.upTo, id, ok, err, tc.want, tc.wantOK)
		}
	}
	if last, err := s.LastTurnID(ctx); err != nil || last != 7 {
		t.Fatalf("last turn id: %d %v", last, err)
	}
	empty, _ := openTest(t)
	if last, err := empty.LastTurnID(ctx); err != nil || last != 0 {
		t.Fatalf("last turn id of an empty store: %d %v", last, err)
	}
}

func TestJobLookup(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	now := time.Now()
	id, err := s.EnqueueJob(ctx, "memory_api_ingest", `{"x":1}`, now)
	if err != nil {
		t.Fatal(err)
	}
	j, err := s.Job(ctx, id)
	if err != nil || j.ID != id || j.Kind != "memory_api_ingest" || j.State != "pending" || j.Payload != `{"x":1}` || j.Attempts != 0 {
		t.Fatalf("job: %+v %v", j, err)
	}
	if _, err := s.ClaimJob(ctx, []string{"memory_api_ingest"}, now); err != nil {
		t.Fatal(err)
	}
	if err := s.FailJob(ctx, id, "upstream down", time.Time{}); err != nil {
		t.Fatal(err)
	}
	if j, err = s.Job(ctx, id); err != nil || j.State != "failed" || j.Attempts != 1 || j.LastError != "upstream down" {
		t.Fatalf("failed job: %+v %v", j, err)
	}
	if _, err := s.Job(ctx, id+1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown job: %v", err)
	}
}

// TestSessionTurnsEachMatchesAfter: SessionTurnsEach hands over the turns
// SessionTurnsAfter returns, field for field, also bodies larger than a page
// (read from overflow pages), in order, up to the limit; fn's error stops
// the read and comes back.
func TestSessionTurnsEachMatchesAfter(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	var turns []*Turn
	for i := range 12 {
		session := []string{"a", "b"}[i%2]
		body := `{"messages":[{"role":"user","content":"` + strings.Repeat("x", i*3000) + `"}],"i":` + strconv.Itoa(i) + `}`
		turns = append(turns, &Turn{SessionID: session, Agent: "agent" + session, MemoryScope: "user:" + session, TurnType: []string{"main", "side"}[i%3/2],
			ClientAPI: "openai", UpstreamAPI: "openai", RequestJSON: body, ResponseText: "answer " + strconv.Itoa(i), Status: 200 + i%2,
			ToolCallsJSON: `[{"id":"` + strconv.Itoa(i) + `"}]`, InjectedJSON: `["memory:m` + strconv.Itoa(i) + `"]`})
	}
	if err := s.RecordTurns(ctx, turns); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		session string
		after   int64
		n       int
	}{{"a", 0, 100}, {"b", 0, 100}, {"a", 3, 2}, {"b", 4, 1}, {"a", 11, 5}, {"c", 0, 5}} {
		want, err := s.SessionTurnsAfter(ctx, tc.session, tc.after, tc.n)
		if err != nil {
			t.Fatal(err)
		}
		var got []Turn
		if err := s.SessionTurnsEach(ctx, tc.session, tc.after, tc.n, func(t *Turn) error {
			c := *t
			c.RequestJSON = strings.Clone(t.RequestJSON) // a view: kept only as a copy
			got = append(got, c)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%+v: SessionTurnsEach gave %d turns, SessionTurnsAfter %d, or their fields differ", tc, len(got), len(want))
		}
	}
	stop := errors.New("enough")
	calls := 0
	err := s.SessionTurnsEach(ctx, "a", 0, 100, func(*Turn) error {
		calls++
		if calls == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 2 {
		t.Fatalf("fn's error: %v after %d calls", err, calls)
	}
	if err := s.SessionTurnsEach(ctx, "a", 0, 100, func(*Turn) error { panic("boom") }); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("a panicking fn: %v", err)
	}
	// Concurrent reads on the pool each see their own turns.
	var wg sync.WaitGroup
	for _, session := range []string{"a", "b", "a", "b"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				if err := s.SessionTurnsEach(ctx, session, 0, 100, func(tr *Turn) error {
					if tr.SessionID != session || !strings.HasPrefix(tr.RequestJSON, `{"messages"`) {
						return fmt.Errorf("turn %d of %q in the read of %q", tr.ID, tr.SessionID, session)
					}
					return nil
				}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestPoisonTurnViews: with PoisonTurnViews on, what fn kept of a request
// body changes once fn returns (so a caller's tests catch a kept view), and
// a copy made inside fn does not; with it off, the body is SQLite's memory.
func TestPoisonTurnViews(t *testing.T) {
	s, _ := openTest(t)
	ctx := context.Background()
	body := `{"messages":[{"role":"user","content":"keep me"}]}`
	if err := s.RecordTurns(ctx, []*Turn{{SessionID: "p", Agent: "a", TurnType: "main", ClientAPI: "openai", UpstreamAPI: "openai", RequestJSON: body, Status: 200}}); err != nil {
		t.Fatal(err)
	}
	PoisonTurnViews(true)
	defer PoisonTurnViews(false)
	var kept, copied string
	if err := s.SessionTurnsEach(ctx, "p", 0, 10, func(tr *Turn) error {
		if tr.RequestJSON != body {
			return fmt.Errorf("fn got %q", tr.RequestJSON)
		}
		kept, copied = tr.RequestJSON[len(`{"messages":[{"role":"user","content":"`):][:7], strings.Clone(tr.RequestJSON)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if kept != "#######" || copied != body {
		t.Fatalf("after fn: the kept substring reads %q (want it poisoned), the copy %q", kept, copied)
	}
}

// TestSessionTurnsEachPlan: the view's order and limit rest on SQLite
// walking turns_session in order (no sorter, which would run the function
// on every row before sorting them).
func TestSessionTurnsEachPlan(t *testing.T) {
	s, _ := openTest(t)
	rows, err := s.r.Query(`EXPLAIN QUERY PLAN SELECT metaclaw_turn_view(?, id, session_id, agent, turn_index, turn_type, status, request_json,
    response_text, tool_calls, injected, memory_scope, created_at) FROM turns WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?`, 1, "s", 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if len(plan) != 1 || !strings.Contains(plan[0], "turns_session") || strings.Contains(strings.Join(plan, ";"), "TEMP B-TREE") {
		t.Fatalf("plan %q", plan)
	}
}
