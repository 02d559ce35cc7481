package memory

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/store"
)

// TestReadTurnsMatchesCopies: what ingestion reads through the store's
// views of the request bodies (readTurns, store.SessionTurnsEach) is what
// toTurn makes of fully copied turns (store.SessionTurnsAfter), for bodies
// whose user text is a slice of the body, a join of several messages, a
// decoded escape, clipped, redacted, absent or invalid; and it stays so
// after SQLite's buffers have held other bodies (nothing kept is a view).
func TestReadTurnsMatchesCopies(t *testing.T) {
	ctx := context.Background()
	s, st := openStore(t, Options{})
	in := NewIngester(st, s, IngesterOptions{})
	host, err := s.HostID(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sys := strings.Repeat("You are a careful assistant. ", 300)
	msgs := func(ms ...map[string]any) string {
		b, _ := json.Marshal(map[string]any{"model": "m", "messages": ms})
		return string(b)
	}
	m := func(role string, content any) map[string]any { return map[string]any{"role": role, "content": content} }
	bodies := []string{
		msgs(m("system", sys), m("user", "I prefer tabs over spaces for indentation.")),
		msgs(m("system", sys), m("user", "Remember: the staging host is build-7."), m("user", "Also, always run the linter first.")),
		msgs(m("system", sys), m("user", "Use \"double quotes\" and \u00e9 accents \\ please.")),
		msgs(m("system", sys), m("user", []map[string]any{{"type": "text", "text": "My deploy key is sk-abcdefghijklmnopqrstuvwxyz123456, never share it."}})),
		msgs(m("system", sys), m("user", strings.Repeat("Our project uses Go modules. ", 1000))),
		msgs(m("system", sys), m("assistant", "ok"), m("user", "")),
		msgs(m("system", sys), m("user", []map[string]any{{"type": "tool_result", "content": "output"}})),
		`{"model": "m", "messages": [{"role": "user", "content": "not closed"`,
		`{"model":"m","Messages":[{"ROLE":"user","content":"Case-insensitive keys: I work in UTC."}]}`,
	}
	record := func(session string, bodies []string) {
		var turns []*store.Turn
		for i, b := range bodies {
			turns = append(turns, &store.Turn{SessionID: session, Agent: "main", TurnType: core.TurnMain,
				ClientAPI: "openai", UpstreamAPI: "openai", RequestJSON: b, ResponseText: "Sure, noted: " + strings.Repeat("x", i*100),
				Status: 200, MemoryScope: "user:rt", InjectedJSON: `["memory:mem_a","skill:s@1","memory:mem_b"]`})
		}
		turns[len(turns)-1].TurnType = "side" // not learnable: read, not kept
		if err := st.RecordTurns(ctx, turns); err != nil {
			t.Fatal(err)
		}
	}
	record("rt", append(bodies, bodies[0]))
	var other []string
	for i := range 20 {
		other = append(other, msgs(m("system", strings.Repeat("z", 5000+i*700)), m("user", strings.Repeat("Other words entirely. ", 50+i))))
	}
	record("other", other)

	copied, err := st.SessionTurnsAfter(ctx, "rt", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var want []Turn
	for _, tr := range copied {
		if in.learnable(tr) {
			want = append(want, toTurn(host, tr))
		}
	}
	got, err := in.readTurns(ctx, host, "rt", 0, 100, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.read != len(copied) || got.last != copied[len(copied)-1].ID {
		t.Fatalf("read %d turns up to %d, want %d up to %d", got.read, got.last, len(copied), copied[len(copied)-1].ID)
	}
	if !reflect.DeepEqual(got.turns, want) {
		t.Fatalf("through views:\n%+v\ncopied:\n%+v", got.turns, want)
	}
	users := 0
	for _, tr := range want {
		if tr.User != "" {
			users++
		}
	}
	if users < 6 {
		t.Fatalf("only %d turns with user text: the bodies do not exercise the views", users)
	}
	// SQLite's buffers now hold other bodies; what was read must not change.
	for range 3 {
		if _, err := in.readTurns(ctx, host, "other", 0, 100, nil); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(got.turns, want) {
		t.Fatal("turns read through views changed after later reads: something kept a view")
	}
	// keep filters, the limit bounds what is read.
	some, err := in.readTurns(ctx, host, "rt", copied[1].ID, 3, func(t *store.Turn) bool { return t.ID != copied[3].ID })
	if err != nil {
		t.Fatal(err)
	}
	if some.read != 3 || some.last != copied[4].ID {
		t.Fatalf("read %d up to %d, want 3 up to %d", some.read, some.last, copied[4].ID)
	}
	for _, tr := range some.turns {
		if tr.TurnID == copied[3].ID || tr.TurnID <= copied[1].ID || tr.TurnID > copied[4].ID {
			t.Fatalf("turn %d read", tr.TurnID)
		}
	}
}

// TestDetach: a substring of the body is copied, any other string kept.
func TestDetach(t *testing.T) {
	body := strings.Repeat("0123456789", 3)
	for _, tc := range []struct {
		s    string
		copy bool
	}{{body[2:5], true}, {body, true}, {body[29:], true}, {strings.Clone(body[:4]), false}, {"", false}} {
		got := detach(tc.s, body)
		if got != tc.s {
			t.Fatalf("detach(%q) = %q", tc.s, got)
		}
		copied := len(got) > 0 && unsafe.StringData(got) != unsafe.StringData(tc.s)
		if copied != tc.copy {
			t.Errorf("detach(%q): copied %v, want %v", tc.s, copied, tc.copy)
		}
	}
}
