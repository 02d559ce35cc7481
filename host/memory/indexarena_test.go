package memory

import (
	"reflect"
	"testing"
	"time"
)

// A unit the index encodes decodes to the same Unit: strings, nil apart
// from empty lists, times with their instant and zone (local or UTC), unset
// optional times.
func TestUnitCodecRoundTrip(t *testing.T) {
	local := time.UnixMilli(1_780_000_123_456)
	utc := time.Date(2026, 3, 4, 5, 6, 7, 891, time.UTC)
	full := Unit{ID: "mem_1", Scope: "user:a", Agent: "default", Type: Preference, Content: "Always run gofmt.\n```\ncode ü\n```",
		Subject: "rule:gofmt", Value: "+", Entities: []string{"gofmt", ""}, Tags: []string{"rule"}, Importance: 0.7, Confidence: 0.1 + 0.2,
		Mentions: 3, Status: StatusActive, SupersededBy: "mem_0", Origin: "bench", SourceSession: "s1", SourceTurns: []int64{-1, 0, 1 << 40},
		SaidAt: local, LastSeenAt: utc, CreatedAt: time.Unix(-5, 7), UpdatedAt: local, ExpiresAt: &utc, InjectedCount: 9, LastInjectedAt: &local,
		rowid: 42, vis: visToken("user:a", "default"), tokens: 17, msg: "Always run gofmt"}
	cases := []struct {
		name string
		u    Unit
	}{
		{"every field", full},
		{"zero", Unit{}},
		{"empty lists", Unit{Entities: []string{}, Tags: []string{}, SourceTurns: []int64{}}},
		{"as read from the store", func() Unit {
			u := full
			u.SaidAt, u.LastSeenAt, u.CreatedAt, u.UpdatedAt = fromMS(ms(local)), fromMS(0), fromMS(1), fromMS(-1)
			u.ExpiresAt, u.LastInjectedAt = optTime(0), optTime(ms(local))
			return u
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := decodeUnit(encodeUnit([]byte("prefix"), &tc.u)[len("prefix"):])
			if !reflect.DeepEqual(got, tc.u) {
				t.Fatalf("round trip:\ngot  %#v\nwant %#v", got, tc.u)
			}
		})
	}
}

// The arena hands out slices that never move or overlap, and counts what
// removed rows leave behind.
func TestArena(t *testing.T) {
	var a arena[byte]
	var refs []aref
	var want []string
	for i := 0; i < 3*arenaChunk/100; i++ {
		s := string(rune('a'+i%26)) + string(make([]byte, 90+i%17))
		if i%997 == 0 {
			s = string(make([]byte, arenaChunk+i)) // larger than a chunk
		}
		b, r := a.alloc(len(s))
		copy(b, s)
		refs, want = append(refs, r), append(want, s)
	}
	for i, r := range refs {
		if string(a.at(r)) != want[i] {
			t.Fatalf("slice %d changed", i)
		}
	}
	if s := arenaStr(&a, "view"); s != "view" {
		t.Fatalf("arenaStr = %q", s)
	}
	if _, r := a.alloc(0); r != (aref{}) || a.at(r) != nil {
		t.Fatalf("empty alloc: %v", r)
	}
	live := a.live
	for _, r := range refs {
		a.drop(int(r.n))
	}
	if a.live != live-a.dead || !a.wasteful() {
		t.Fatalf("live %d dead %d after dropping all but one string", a.live, a.dead)
	}
}

// The index gives back what it holds of a unit: the unit it decodes is the
// one added, its derived data is the one deriveUnit makes, and removals
// leave the arenas dead, not live, until the index asks to be rebuilt.
func TestIndexKeepsNoUnit(t *testing.T) {
	ix, units := testIndex(t, 2000, 31)
	ix.gen = 7
	sqlIDs := map[string]int32{}
	termID := func(s string) int32 {
		if id, ok := ix.dict.lookup(s); ok {
			return id
		}
		id, ok := sqlIDs[s]
		if !ok {
			id = -int32(len(sqlIDs)) - 1
			sqlIDs[s] = id
		}
		return id
	}
	for _, want := range units {
		got, ok := ix.unit(want.rowid)
		if !ok {
			t.Fatalf("row %d not indexed", want.rowid)
		}
		d := got.d
		got.d, want.d = nil, nil
		if !reflect.DeepEqual(*got, *want) {
			t.Fatalf("row %d:\ngot  %#v\nwant %#v", want.rowid, *got, *want)
		}
		ref := deriveUnit(want, termID)
		if !reflect.DeepEqual(*d, *ref) {
			t.Fatalf("row %d derived:\ngot  %#v\nwant %#v", want.rowid, *d, *ref)
		}
	}
	if ix.generation() != 7 {
		t.Fatalf("generation %d before churn", ix.generation())
	}
	// Churn: every unit removed and added again, until the arenas hold more
	// dead than live.
	for round := 0; !ix.wasteful(); round++ {
		if round == 100 {
			t.Fatal("the arenas never became wasteful")
		}
		for _, u := range units {
			ix.remove(u.rowid)
			ix.add(u, ftsTokens(u.vis, indexTerms(u)))
		}
		if live := ix.units.live; live <= 0 || ix.units.dead != (round+1)*live {
			t.Fatalf("round %d: units arena live %d dead %d", round, live, ix.units.dead)
		}
	}
	if ix.generation() != -1 {
		t.Fatalf("wasteful index has generation %d: the poller would not rebuild it", ix.generation())
	}
	for _, u := range units {
		ix.remove(u.rowid)
	}
	if ix.units.live != 0 || ix.text.live != 0 || ix.ints.live != 0 || ix.keyArena.live != 0 {
		t.Fatalf("after removing every row: live %d %d %d %d", ix.units.live, ix.text.live, ix.ints.live, ix.keyArena.live)
	}
}
