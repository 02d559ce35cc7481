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
		if !reflect.DeepEqual(*got, *want) {
			t.Fatalf("row %d:\ngot  %#v\nwant %#v", want.rowid, *got, *want)
		}
		var d derived
		ix.view(ix.drv.get(ix.slotOf[want.rowid]), &d)
		if ref := deriveUnit(want, termID); !sameDerived(&d, ref) {
			t.Fatalf("row %d derived:\ngot  %#v\nwant %#v", want.rowid, d, *ref)
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

// sameDerived compares two derived, an empty list equal to none (a record
// with no term ids views no arena).
func sameDerived(a, b *derived) bool {
	x, y := *a, *b
	for _, d := range []*derived{&x, &y} {
		for _, l := range []*[]int32{&d.ids, &d.sorted, &d.ents} {
			if len(*l) == 0 {
				*l = nil
			}
		}
	}
	return reflect.DeepEqual(x, y)
}

// The derived records hold no pointer: the chunks of them are not scanned
// by the garbage collector (the index's footprint, BenchmarkIndexGCFootprint).
func TestDerivedRecordHoldsNoPointer(t *testing.T) {
	for _, typ := range []reflect.Type{reflect.TypeFor[drec](), reflect.TypeFor[indexRow](), reflect.TypeFor[ipost](), reflect.TypeFor[rankedUnit]()} {
		if path := pointerIn(typ, typ.Name()); path != "" {
			t.Errorf("%s holds a pointer: %s", typ, path)
		}
	}
}

// pointerIn is the path to a field of typ that holds a pointer ("": none).
func pointerIn(typ reflect.Type, path string) string {
	switch typ.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8,
		reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr, reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128:
		return ""
	case reflect.Array:
		return pointerIn(typ.Elem(), path+"[]")
	case reflect.Struct:
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			if p := pointerIn(f.Type, path+"."+f.Name); p != "" {
				return p
			}
		}
		return ""
	default:
		return path + " (" + typ.String() + ")"
	}
}

// An instant reads back as the same time, in UTC: the zone is dropped, the
// instant kept (what ranking reads of a time).
func TestInstantRoundTrip(t *testing.T) {
	for _, tm := range []time.Time{{}, time.Unix(0, 0), time.Unix(-1, 999_999_999), time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC), time.Now(), time.UnixMilli(1_780_000_123_456).In(time.FixedZone("x", -7*3600))} {
		checkInstant(t, tm)
	}
}

func checkInstant(t *testing.T, tm time.Time) {
	t.Helper()
	got := instantOf(tm).time()
	if !got.Equal(tm) || got.Location() != time.UTC || !reflect.DeepEqual(got, tm.UTC()) {
		t.Fatalf("instant of %v reads back %v", tm, got)
	}
	later := tm.Add(1)
	if !instantOf(later).after(instantOf(tm)) || instantOf(tm).after(instantOf(later)) || instantOf(tm).after(instantOf(tm)) {
		t.Fatalf("after disagrees with time around %v", tm)
	}
}

func FuzzInstantRoundTrip(f *testing.F) {
	f.Add(int64(0), int64(0))
	f.Add(int64(-62135596800), int64(5))
	f.Add(int64(1_780_000_123), int64(999_999_999))
	f.Fuzz(func(t *testing.T, sec, nsec int64) {
		// The times a unit holds: years 1 to 9999 (the store's milliseconds).
		if sec < -62135596800 || sec > 253402300799 {
			t.Skip()
		}
		checkInstant(t, time.Unix(sec, nsec))
	})
}
