package memory

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/store"
)

// slowExtractor stands in for the LLM extractor: it proposes what cands
// returns for the turns it is given.
type slowExtractor struct {
	cands func(turns []Turn) []Candidate
}

func (slowExtractor) Name() string { return "llm" }
func (e slowExtractor) Extract(_ context.Context, turns []Turn) ([]Candidate, error) {
	return e.cands(turns), nil
}
func (slowExtractor) Summarize(context.Context, []Turn) (Candidate, bool, error) {
	return Candidate{}, false, nil
}

// recordTurns records user messages as main turns of a session.
func recordTurns(t *testing.T, st *store.SQLite, session string, texts ...string) {
	t.Helper()
	var turns []*store.Turn
	for _, text := range texts {
		body, _ := json.Marshal(map[string]any{"model": "m", "messages": []map[string]any{{"role": "user", "content": text}}})
		turns = append(turns, &store.Turn{SessionID: session, Agent: "default", TurnType: "main", Status: 200, RequestJSON: string(body),
			ResponseText: "OK", MemoryScope: "u"})
	}
	if err := st.RecordTurns(context.Background(), turns); err != nil {
		t.Fatal(err)
	}
}

func activeContents(t *testing.T, s *Store) []string {
	t.Helper()
	us, err := s.List(context.Background(), Filter{Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range us {
		out = append(out, u.Content)
	}
	return out
}

// TestProvisionalPassIsWithdrawn: the heuristic's provisional units serve
// until the LLM's extraction of the same turns commits; then the store is
// as if only the LLM had mined them: changes of mind the pass made are
// undone, mentions it added are taken back, its own units are superseded.
func TestProvisionalPassIsWithdrawn(t *testing.T) {
	ctx := context.Background()
	s, st := openStore(t, Options{})
	llmSays := map[string]Candidate{
		"Actually, I prefer spaces for indentation.":  {Type: Preference, Content: "LLM: spaces for indentation.", Subject: "pref:indentation", Value: "+space", Correction: true},
		"We use PostgreSQL 16 for the main database.": {Type: ProjectState, Content: "LLM: the main database is PostgreSQL 16."},
	}
	s.o.Extractor = slowExtractor{cands: func(turns []Turn) []Candidate {
		var out []Candidate
		for i, t := range turns {
			if c, ok := llmSays[t.User]; ok {
				c.Turn = i
				out = append(out, c)
			}
		}
		return out
	}}
	in := NewIngester(st, s, IngesterOptions{})
	// Known before: tabs (to be changed) and the timezone (to be repeated).
	for _, c := range []string{"I prefer tabs for indentation.", "My timezone is UTC+8."} {
		if _, _, err := s.Add(ctx, NewUnit{Content: c, Scope: "u"}); err != nil {
			t.Fatal(err)
		}
	}
	recordTurns(t, st, "a", "Actually, I prefer spaces for indentation.", "My timezone is UTC+8.", "We use PostgreSQL 16 for the main database.")

	if !in.quick() {
		t.Fatal("an LLM extractor should get a provisional pass")
	}
	res, err := in.provisional(ctx, "a")
	if err != nil || res.Added != 2 || res.Reinforced != 1 || res.Superseded != 1 {
		t.Fatalf("provisional pass %+v %v", res, err)
	}
	got := strings.Join(activeContents(t, s), "|")
	if !strings.Contains(got, "spaces") || strings.Contains(got, "tabs") || !strings.Contains(got, "PostgreSQL 16") {
		t.Fatalf("after the provisional pass: %s", got)
	}
	if n, _ := in.Pending(ctx); n != 3 {
		t.Fatalf("the pass must leave the turns pending: %d", n)
	}
	// A second pass over the same turns does nothing.
	if res, err := in.provisional(ctx, "a"); err != nil || res.Turns != 0 || res.Added+res.Reinforced != 0 {
		t.Fatalf("second pass %+v %v", res, err)
	}

	// The LLM's extraction lands.
	res, err = in.IngestSession(ctx, "a", false)
	if err != nil || res.Turns != 3 {
		t.Fatalf("llm ingestion %+v %v", res, err)
	}
	got = strings.Join(activeContents(t, s), "|")
	for _, want := range []string{"LLM: spaces for indentation.", "LLM: the main database is PostgreSQL 16.", "UTC+8"} {
		if !strings.Contains(got, want) {
			t.Fatalf("after the LLM: missing %q in %s", want, got)
		}
	}
	if strings.Contains(got, "The user prefers") || strings.Contains(got, "The team uses") {
		t.Fatalf("provisional units still active: %s", got)
	}
	all, _ := s.List(ctx, Filter{Status: "all", Limit: -1})
	var llmSpaces string
	for _, u := range all {
		if u.Content == "LLM: spaces for indentation." {
			llmSpaces = u.ID
		}
	}
	for _, u := range all {
		switch {
		case strings.Contains(u.Content, "timezone") && u.Mentions != 1:
			t.Fatalf("the pass's mention was not taken back: %+v", u)
		case u.Origin == OriginProvisional && u.Status != StatusSuperseded:
			t.Fatalf("provisional unit not withdrawn: %+v", u)
		case strings.Contains(u.Content, "tabs"):
			// Restored, then superseded again by the LLM's correction.
			evs, _ := s.Events(ctx, u.ID)
			var actions []string
			for _, e := range evs {
				actions = append(actions, e.Action)
			}
			if u.Status != StatusSuperseded || u.SupersededBy != llmSpaces || !strings.Contains(strings.Join(actions, ","), "superseded,restored,superseded") {
				t.Fatalf("tabs: %+v, events %v", u, actions)
			}
		}
	}
	if j, _ := readJournal(ctx, st.Reader(), "a"); len(j) != 0 {
		t.Fatalf("journal left behind: %+v", j)
	}
}

// hookedExtractor runs before ahead of each extraction.
type hookedExtractor struct {
	Extractor
	before func()
}

func (e hookedExtractor) Extract(ctx context.Context, turns []Turn) ([]Candidate, error) {
	e.before()
	return e.Extractor.Extract(ctx, turns)
}

// TestProvisionalPassOvertaken: when the real extraction commits while the
// pass runs, the pass writes nothing.
func TestProvisionalPassOvertaken(t *testing.T) {
	ctx := context.Background()
	s, st := openStore(t, Options{})
	s.o.Extractor = slowExtractor{cands: func([]Turn) []Candidate { return nil }}
	in := NewIngester(st, s, IngesterOptions{})
	recordTurns(t, st, "a", "I prefer tabs for indentation.")
	res, err := in.provisionalWith(ctx, "a", hookedExtractor{Heuristic{}, func() {
		if _, err := in.IngestSession(ctx, "a", false); err != nil {
			t.Error(err)
		}
	}})
	if err != nil || res.Added != 0 {
		t.Fatalf("overtaken pass %+v %v", res, err)
	}
	if got := activeContents(t, s); len(got) != 0 {
		t.Fatalf("overtaken pass wrote %q", got)
	}
	if j, _ := readJournal(ctx, st.Reader(), "a"); len(j) != 0 {
		t.Fatalf("journal %+v", j)
	}
}
