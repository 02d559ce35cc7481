package memory

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/sqlconn"
)

// injectCount is what a unit's counts should read.
type injectCount struct {
	n    int
	last time.Time
}

// logRows is how many rows the injection log holds.
func logRows(t *testing.T, s *Store) int {
	t.Helper()
	var n int
	if err := s.r.QueryRow(`SELECT COUNT(*) FROM memory_injections`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// foldedCount is a unit's count without the log: memory_units' own plus
// its memory_injection_counts row.
func foldedCount(t *testing.T, s *Store, uid string) int {
	t.Helper()
	var n int
	if err := s.r.QueryRow(`SELECT u.injected_count + IFNULL(c.n, 0) FROM memory_units u LEFT JOIN memory_injection_counts c ON c.unit = u.id WHERE u.uid = ?`, uid).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// fold folds the log now, as an ingest reaching the bound does.
func fold(t *testing.T, s *Store) {
	t.Helper()
	if err := s.writeTx(context.Background(), func(tx *sqlconn.Tx) error { return foldInjections(context.Background(), tx) }); err != nil {
		t.Fatal(err)
	}
}

// checkCounts compares every read of the counts (Get, List, Search) with want.
func checkCounts(t *testing.T, s *Store, scope string, units []Unit, want map[string]injectCount) {
	t.Helper()
	ctx := context.Background()
	listed, err := s.List(ctx, Filter{Scope: scope, Status: "all", Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]Unit{}
	for _, u := range listed {
		byID[u.ID] = u
	}
	for _, u := range units {
		got, err := s.Get(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		hits, err := s.Search(ctx, SearchQuery{Scope: scope, Text: u.Content, Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		var hit *Unit
		for i := range hits {
			if hits[i].ID == u.ID {
				hit = &hits[i].Unit
			}
		}
		l := byID[u.ID]
		reads := map[string]*Unit{"get": &got, "list": &l, "search": hit}
		if u.Status != StatusActive {
			delete(reads, "search") // searches find active units only
		}
		w := want[u.ID]
		for how, r := range reads {
			if r == nil {
				t.Errorf("%s: unit %q not found", how, u.Content)
				continue
			}
			if r.InjectedCount != w.n {
				t.Errorf("%s: unit %q injected %d times, want %d", how, u.Content, r.InjectedCount, w.n)
			}
			switch {
			case w.n == 0 && r.LastInjectedAt != nil:
				t.Errorf("%s: unit %q never injected, last at %v", how, u.Content, r.LastInjectedAt)
			case w.n > 0 && (r.LastInjectedAt == nil || r.LastInjectedAt.Sub(w.last).Abs() > 50*time.Millisecond):
				t.Errorf("%s: unit %q last injected %v, want %v", how, u.Content, r.LastInjectedAt, w.last)
			}
		}
	}
}

// seedInjectable adds n units to scope and returns them as stored.
func seedInjectable(t *testing.T, s *Store, scope string, n int) []Unit {
	t.Helper()
	ctx := context.Background()
	var units []Unit
	for i := range n {
		units = append(units, Unit{Scope: scope, Type: Semantic, Content: fmt.Sprintf("Build host %c runs the %c nightly suite.", 'a'+i, 'p'+i), Origin: "test"})
	}
	if err := s.BulkInsert(ctx, units); err != nil {
		t.Fatal(err)
	}
	out := make([]Unit, n)
	for i, u := range units {
		got, err := s.Get(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = got
	}
	return out
}

// TestInjectionLog: batches log their injections and the log folds at its
// bound; Get, List and Search read the same counts whether they are folded
// or not, and every fold empties the log (nothing counted twice).
func TestInjectionLog(t *testing.T) {
	for _, tc := range []struct {
		name   string
		foldAt int
	}{
		{"every batch folds", 1},
		{"folds every few batches", 5},
		{"never folds", 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, _ := openStore(t, Options{})
			s.injectFoldAt = tc.foldAt
			const scope = "user:log"
			units := seedInjectable(t, s, scope, 4)
			want := map[string]injectCount{}
			pending := 0
			folds := 0
			base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
			for b := range 8 {
				// Turn j of batch b injects units 0..j (unit 0 in every turn).
				var turns []Turn
				seen := map[string]bool{}
				for j := range 3 {
					at := base.Add(time.Duration(b*3+j) * time.Minute)
					var ids []string
					for k := 0; k <= j+b%2; k++ {
						u := units[k]
						ids = append(ids, "memory:"+u.ID)
						want[u.ID] = injectCount{want[u.ID].n + 1, at}
						seen[u.ID] = true
					}
					ids = append(ids, "skill:deploy@1", "memory:mem_gone") // not units: nothing logged
					turns = append(turns, Turn{Source: fmt.Sprintf("log/%d/%d", b, j), User: "ok", Injected: ids, At: at})
				}
				if _, err := s.Ingest(ctx, Batch{SessionID: fmt.Sprint("s", b), Scope: scope, Turns: turns}); err != nil {
					t.Fatal(err)
				}
				if pending += len(seen); pending >= tc.foldAt {
					pending = 0
					folds++
				}
				if got := logRows(t, s); got != pending {
					t.Fatalf("batch %d: the log holds %d rows, want %d", b, got, pending)
				}
				checkCounts(t, s, scope, units, want)
			}
			if tc.foldAt < 1000 && folds == 0 || tc.foldAt == 1000 && folds != 0 {
				t.Fatalf("%d folds", folds)
			}
			// Whatever is left folds exactly once.
			fold(t, s)
			if n := logRows(t, s); n != 0 {
				t.Fatalf("%d rows after the fold", n)
			}
			for _, u := range units {
				if n := foldedCount(t, s, u.ID); n != want[u.ID].n {
					t.Errorf("unit %q: %d folded, want %d", u.Content, n, want[u.ID].n)
				}
			}
			checkCounts(t, s, scope, units, want)
		})
	}
}

// TestInjectionLogRewrites: reinforcing, editing and superseding a unit
// between its injections and their fold neither loses nor recounts them.
func TestInjectionLogRewrites(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, Options{})
	s.injectFoldAt = 1000
	const scope = "user:rw"
	tabs, _, err := s.Add(ctx, NewUnit{Content: "I prefer tabs for indentation.", Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]injectCount{}
	inject := func(b int, ids ...string) {
		t.Helper()
		at := time.Now().Add(-time.Duration(10-b) * time.Minute).Truncate(time.Millisecond)
		var turns []Turn
		for j := range 2 {
			turns = append(turns, Turn{Source: fmt.Sprintf("rw/%d/%d", b, j), User: "fine", Injected: ids, At: at})
		}
		for _, id := range ids {
			want[id[len("memory:"):]] = injectCount{want[id[len("memory:"):]].n + 2, at}
		}
		if _, err := s.Ingest(ctx, Batch{SessionID: fmt.Sprint("rw", b), Scope: scope, Turns: turns}); err != nil {
			t.Fatal(err)
		}
	}
	read := func() Unit {
		t.Helper()
		u, err := s.Get(ctx, tabs.ID)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	inject(0, "memory:"+tabs.ID)
	// Reinforced: the same statement again.
	if _, out, err := s.Add(ctx, NewUnit{Content: "I prefer tabs for indentation.", Scope: scope}); err != nil || out != OutcomeReinforced {
		t.Fatalf("repeat: %s, %v", out, err)
	}
	checkCounts(t, s, scope, []Unit{read()}, want)
	inject(1, "memory:"+tabs.ID)
	// Edited.
	text := "I prefer tabs for indentation in every repository."
	if _, err := s.Edit(ctx, tabs.ID, Patch{Content: &text}); err != nil {
		t.Fatal(err)
	}
	checkCounts(t, s, scope, []Unit{read()}, want)
	inject(2, "memory:"+tabs.ID)
	// Superseded by a change of mind: the old unit keeps what it was injected.
	spaces, out, err := s.Add(ctx, NewUnit{Content: "I prefer spaces for indentation.", Scope: scope})
	if err != nil || out != OutcomeSuperseded {
		t.Fatalf("change of mind: %s, %v", out, err)
	}
	if u := read(); u.Status != StatusSuperseded {
		t.Fatalf("tabs is %s", u.Status)
	}
	inject(3, "memory:"+spaces.ID)
	all := []Unit{read(), spaces}
	all[1], _ = s.Get(ctx, spaces.ID)
	checkCounts(t, s, scope, all, want)
	checkExport(t, s, scope, want)
	if n := foldedCount(t, s, tabs.ID); n != 0 {
		t.Fatalf("folded %d before any fold", n)
	}
	fold(t, s)
	if n := foldedCount(t, s, tabs.ID); n != 6 {
		t.Fatalf("tabs: %d folded, want 6", n)
	}
	checkCounts(t, s, scope, all, want)
	checkExport(t, s, scope, want)
}

// checkExport: an export (what a later import restores) carries the counts.
func checkExport(t *testing.T, s *Store, scope string, want map[string]injectCount) {
	t.Helper()
	var buf bytes.Buffer
	n, err := s.Export(context.Background(), &buf, Filter{Scope: scope, Status: "all"})
	if err != nil || n != len(want) {
		t.Fatalf("exported %d units, %v", n, err)
	}
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var u Unit
		if err := dec.Decode(&u); err != nil {
			t.Fatal(err)
		}
		if u.InjectedCount != want[u.ID].n {
			t.Errorf("exported %q injected %d times, want %d", u.Content, u.InjectedCount, want[u.ID].n)
		}
	}
}

// TestInjectionLogForget: a forgotten unit takes its unfolded rows with it,
// so a later unit given its row id does not inherit them, and injections
// reported for it afterwards log nothing.
func TestInjectionLogForget(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, Options{})
	s.injectFoldAt = 1000
	const scope = "user:fg"
	units := seedInjectable(t, s, scope, 3)
	last := units[2] // the largest row id: the next insert reuses it
	var turns []Turn
	for j := range 3 {
		turns = append(turns, Turn{Source: fmt.Sprint("fg/", j), User: "fine", Injected: []string{"memory:" + units[0].ID, "memory:" + last.ID}})
	}
	if _, err := s.Ingest(ctx, Batch{SessionID: "fg", Scope: scope, Turns: turns}); err != nil {
		t.Fatal(err)
	}
	if n := logRows(t, s); n != 2 {
		t.Fatalf("%d log rows, want 2", n)
	}
	if err := s.Forget(ctx, last.ID, "test"); err != nil {
		t.Fatal(err)
	}
	if n := logRows(t, s); n != 1 {
		t.Fatalf("%d log rows after forgetting, want 1 (the other unit's)", n)
	}
	fresh := addInRowOf(t, s, scope, last)
	// Turns that still name the forgotten unit (ingested late).
	if _, err := s.Ingest(ctx, Batch{SessionID: "fg2", Scope: scope, Turns: []Turn{{Source: "fg2/0", User: "fine", Injected: []string{"memory:" + last.ID}}}}); err != nil {
		t.Fatal(err)
	}
	if n := logRows(t, s); n != 1 {
		t.Fatalf("%d log rows after a forgotten unit's injection, want 1", n)
	}
	fold(t, s)
	if got, _ := s.Get(ctx, fresh.ID); got.InjectedCount != 0 || got.LastInjectedAt != nil {
		t.Fatalf("the new unit inherited injections: %d at %v", got.InjectedCount, got.LastInjectedAt)
	}
	if got, _ := s.Get(ctx, units[0].ID); got.InjectedCount != 3 {
		t.Fatalf("unit 0 injected %d times, want 3", got.InjectedCount)
	}
}

// The statements that take a store back to before migrations 12 and 11.
const (
	rollBack12 = `DROP TRIGGER memory_units_ad_injection_counts; DROP TABLE memory_injection_counts; DELETE FROM goose_db_version WHERE version_id = 12`
	rollBack11 = `DROP TRIGGER memory_units_ad_injections; DROP TABLE memory_injections; DELETE FROM goose_db_version WHERE version_id = 11`
)

// reopenRolledBack takes the store at path back by the rollbacks (newest
// first), lets prepare write what an older version held, and reopens it,
// migrating it forward again; the reopened store is closed with the test.
func reopenRolledBack(t *testing.T, st *store.SQLite, path string, rollbacks []string, prepare func(w *sql.DB) error) *Store {
	t.Helper()
	for _, q := range rollbacks {
		if _, err := st.Writer().Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := prepare(st.Writer()); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st, err := store.OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	s := Open(st, Options{})
	s.injectFoldAt = 1000
	return s
}

// addInRowOf adds a unit that takes the row id of gone, a forgotten unit
// with the largest row id, and returns it as Get reads it.
func addInRowOf(t *testing.T, s *Store, scope string, gone Unit) Unit {
	t.Helper()
	ctx := context.Background()
	fresh, _, err := s.Add(ctx, NewUnit{Content: "The staging cluster lives in Frankfurt.", Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, fresh.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.rowid != gone.rowid {
		t.Fatalf("the new unit has row id %d, the forgotten one had %d: the test does not test reuse", got.rowid, gone.rowid)
	}
	return got
}

// openFileStore opens a store in a file of its own (the migration tests
// close and reopen it; reopenRolledBack closes the reopened one).
func openFileStore(t *testing.T) (string, *store.SQLite, *Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), store.DBFile)
	st, err := store.OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	return path, st, Open(st, Options{})
}

// TestInjectionLogMigration: a database from before the log (no
// memory_injections, counts in memory_units) gains it on open and keeps its counts.
func TestInjectionLogMigration(t *testing.T) {
	ctx := context.Background()
	path, st, s := openFileStore(t)
	units := seedInjectable(t, s, "user:mig", 2)
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	// Back to before the log, a count kept in the unit's row.
	s = reopenRolledBack(t, st, path, []string{rollBack12, rollBack11}, func(w *sql.DB) error {
		_, err := w.Exec(`UPDATE memory_units SET injected_count = 4, last_injected_at = ? WHERE uid = ?`, at.UnixMilli(), units[0].ID)
		return err
	})
	want := map[string]injectCount{units[0].ID: {4, at}}
	checkCounts(t, s, "user:mig", units, want)
	now := time.Now().Truncate(time.Millisecond)
	if _, err := s.Ingest(ctx, Batch{SessionID: "m", Scope: "user:mig", Turns: []Turn{{Source: "m/0", User: "fine", At: now, Injected: []string{"memory:" + units[0].ID, "memory:" + units[1].ID}}}}); err != nil {
		t.Fatal(err)
	}
	want = map[string]injectCount{units[0].ID: {5, now}, units[1].ID: {1, now}}
	checkCounts(t, s, "user:mig", units, want)
	fold(t, s)
	checkCounts(t, s, "user:mig", units, want)
}

// TestInjectionCountsMigration: a database from before
// memory_injection_counts (folded counts in memory_units, more in the log)
// gains it on open and keeps every count; folds then add to the new table
// only, and a forgotten unit's folded count does not pass to the next unit
// that reuses its row id.
func TestInjectionCountsMigration(t *testing.T) {
	ctx := context.Background()
	path, st, s := openFileStore(t)
	s.injectFoldAt = 1000
	const scope = "user:mig12"
	units := seedInjectable(t, s, scope, 3)
	folded := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	logged := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	s = reopenRolledBack(t, st, path, []string{rollBack12}, func(w *sql.DB) error {
		if _, err := w.Exec(`UPDATE memory_units SET injected_count = 4, last_injected_at = ? WHERE uid IN (?, ?)`, folded.UnixMilli(), units[0].ID, units[2].ID); err != nil {
			return err
		}
		_, err := w.Exec(`INSERT INTO memory_injections (unit, n, at) SELECT id, 2, ? FROM memory_units WHERE uid = ?`, logged.UnixMilli(), units[1].ID)
		return err
	})
	want := map[string]injectCount{units[0].ID: {4, folded}, units[1].ID: {2, logged}, units[2].ID: {4, folded}}
	checkCounts(t, s, scope, units, want)
	now := time.Now().Truncate(time.Millisecond)
	if _, err := s.Ingest(ctx, Batch{SessionID: "m12", Scope: scope, Turns: []Turn{{Source: "m12/0", User: "fine", At: now, Injected: []string{"memory:" + units[0].ID, "memory:" + units[1].ID, "memory:" + units[2].ID}}}}); err != nil {
		t.Fatal(err)
	}
	want[units[0].ID], want[units[1].ID], want[units[2].ID] = injectCount{5, now}, injectCount{3, now}, injectCount{5, now}
	checkCounts(t, s, scope, units, want)
	fold(t, s)
	checkCounts(t, s, scope, units, want)
	var base int
	if err := s.r.QueryRow(`SELECT injected_count FROM memory_units WHERE uid = ?`, units[0].ID).Scan(&base); err != nil {
		t.Fatal(err)
	}
	if base != 4 {
		t.Fatalf("the fold rewrote memory_units' count: %d, want the 4 it had", base)
	}
	var rows int
	if err := s.r.QueryRow(`SELECT COUNT(*) FROM memory_injection_counts`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 3 {
		t.Fatalf("%d rows in memory_injection_counts after the fold, want 3", rows)
	}
	// The largest row id, folded into the new table, forgotten and reused.
	if err := s.Forget(ctx, units[2].ID, "test"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Ingest(ctx, Batch{SessionID: "m12", Scope: scope, Turns: []Turn{{Source: "m12/1", User: "fine", At: now, Injected: []string{"memory:" + units[1].ID}}}}); err != nil {
		t.Fatal(err)
	}
	fold(t, s)
	var orphans int
	if err := s.r.QueryRow(`SELECT COUNT(*) FROM memory_injection_counts WHERE unit NOT IN (SELECT id FROM memory_units)`).Scan(&orphans); err != nil {
		t.Fatal(err)
	}
	if orphans != 0 {
		t.Fatalf("%d counts of forgotten units kept", orphans)
	}
	got := addInRowOf(t, s, scope, units[2])
	if got.InjectedCount != 0 || got.LastInjectedAt != nil {
		t.Fatalf("the new unit inherited injections: %d at %v", got.InjectedCount, got.LastInjectedAt)
	}
	if got, _ = s.Get(ctx, units[1].ID); got.InjectedCount != 4 {
		t.Fatalf("unit 1 injected %d times, want 4", got.InjectedCount)
	}
}

// TestInjectionCountsThroughSearch: through the real proxy, the HTTP
// search, GET /v1/memory/{id} and the memory_search tool report a unit
// injected exactly as many times as the recorded turns name it, while its
// injections wait in the log and after they are folded.
func TestInjectionCountsThroughSearch(t *testing.T) {
	h := startHost(t, testCfg(t, nil), AssembleOptions{}, "")
	h.mem.Store.injectFoldAt = 2 // the second batch folds
	ctx := context.Background()
	const scope = "team:inj"
	var stored struct {
		MemoryID string `json:"memory_id"`
	}
	if code := h.api("POST", "/v1/memory/store", map[string]any{"content": "I prefer tabs for indentation.", "scope_id": scope}, &stored); code != 200 || stored.MemoryID == "" {
		t.Fatalf("store %d %+v", code, stored)
	}
	id := stored.MemoryID
	// named counts the recorded turns whose injected ids name the unit.
	named := func() int {
		rows, err := h.Store.Reader().Query(`SELECT injected FROM turns`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		n := 0
		for rows.Next() {
			var raw string
			var ids []string
			if err := rows.Scan(&raw); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(raw), &ids); err != nil {
				t.Fatalf("turn's injected ids %q: %v", raw, err)
			}
			for _, x := range ids {
				if x == "memory:"+id {
					n++
				}
			}
		}
		return n
	}
	check := func(when string) {
		t.Helper()
		want := named()
		var found struct {
			Results []SearchResult `json:"results"`
		}
		if code := h.api("GET", "/v1/memory/search?q=indentation&scope="+scope, nil, &found); code != 200 || len(found.Results) != 1 || found.Results[0].AccessCount != want {
			t.Errorf("%s: HTTP search %d %+v, want access_count %d", when, code, found.Results, want)
		}
		var got struct {
			Memory Unit `json:"memory"`
		}
		if code := h.api("GET", "/v1/memory/"+id, nil, &got); code != 200 || got.Memory.InjectedCount != want || got.Memory.LastInjectedAt == nil {
			t.Errorf("%s: GET %d injected %d at %v, want %d", when, code, got.Memory.InjectedCount, got.Memory.LastInjectedAt, want)
		}
		res, err := h.Core.CallTool(ctx, "memory_search", core.Query{Agent: "main", Scope: core.Scope{Explicit: scope}}, []byte(`{"query":"indentation"}`))
		if err != nil {
			t.Fatal(err)
		}
		if hits := res.(map[string]any)["results"].([]SearchResult); len(hits) != 1 || hits[0].AccessCount != want {
			t.Errorf("%s: memory_search %+v, want access_count %d", when, hits, want)
		}
	}
	h.session("inj-1", chatOpts{scope: scope}, "What should we call the new service?", "Which port does it listen on?", "Thanks.")
	h.settle()
	if n := named(); n != 3 {
		t.Fatalf("the standing preference was injected into %d of 3 turns", n)
	}
	if n := foldedCount(t, h.mem.Store, id); n != 0 {
		t.Fatalf("folded %d after one batch", n)
	}
	check("logged")
	for i := 2; foldedCount(t, h.mem.Store, id) == 0; i++ {
		if i > 6 {
			t.Fatal("the log was never folded")
		}
		h.session(fmt.Sprint("inj-", i), chatOpts{scope: scope}, "How do we roll it back?", "Who owns it?")
		h.settle()
	}
	check("folded")
	if folded, want := foldedCount(t, h.mem.Store, id), named(); folded+pendingFor(t, h.mem.Store, id) != want || folded == 0 {
		t.Fatalf("%d folded + %d logged, want %d", folded, pendingFor(t, h.mem.Store, id), want)
	}
}

// pendingFor is a unit's injections in the log, not folded yet.
func pendingFor(t *testing.T, s *Store, uid string) int {
	t.Helper()
	var n int
	if err := s.r.QueryRow(`SELECT IFNULL(SUM(i.n), 0) FROM memory_injections i JOIN memory_units u ON u.id = i.unit WHERE u.uid = ?`, uid).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestInjectionLogSpreadFold: injections spread over many units; the batch
// that takes the log to its bound folds all of it, the counts read the same
// after every batch, and every injection is folded exactly once.
func TestInjectionLogSpreadFold(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, Options{})
	s.injectFoldAt = 100
	const scope = "user:spread"
	var seed []Unit
	for i := range 192 {
		seed = append(seed, Unit{Scope: scope, Type: Semantic, Content: fmt.Sprintf("Service number %d listens on port %d.", i, 9000+i), Origin: "test"})
	}
	if err := s.BulkInsert(ctx, seed); err != nil {
		t.Fatal(err)
	}
	want := map[string]injectCount{}
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	listCounts := func(b int) {
		t.Helper()
		listed, err := s.List(ctx, Filter{Scope: scope, Status: "all", Limit: -1})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range listed {
			w := want[u.ID]
			if u.InjectedCount != w.n || w.n > 0 && (u.LastInjectedAt == nil || u.LastInjectedAt.Sub(w.last).Abs() > 50*time.Millisecond) {
				t.Fatalf("batch %d: unit %q: %d injections, last %v; want %d, %v", b, u.Content, u.InjectedCount, u.LastInjectedAt, w.n, w.last)
			}
		}
	}
	var sizes []int
	folds := 0
	for b := range 40 {
		var turns []Turn
		for j := range 3 {
			at := base.Add(time.Duration(b*3+j) * time.Second)
			ids := []string{"memory:" + seed[0].ID} // one unit in every turn
			for k := range 8 {
				u := seed[(b*37+j*11+k*29)%len(seed)]
				ids = append(ids, "memory:"+u.ID)
			}
			for _, id := range ids {
				uid := id[len("memory:"):]
				want[uid] = injectCount{want[uid].n + 1, at}
			}
			turns = append(turns, Turn{Source: fmt.Sprintf("spread/%d/%d", b, j), User: "ok", Injected: ids, At: at})
		}
		before := logRows(t, s)
		if _, err := s.Ingest(ctx, Batch{SessionID: fmt.Sprint("s", b), Scope: scope, Turns: turns}); err != nil {
			t.Fatal(err)
		}
		after := logRows(t, s)
		switch {
		case after == 0:
			folds++
			if before < s.injectFoldAt-3*9 {
				t.Fatalf("batch %d folded a log of %d rows, short of the bound %d", b, before, s.injectFoldAt)
			}
		case after <= before:
			t.Fatalf("batch %d: the log went from %d to %d rows without a fold", b, before, after)
		case after > s.injectFoldAt+3*9:
			t.Fatalf("batch %d: the log holds %d rows, past its bound %d", b, after, s.injectFoldAt)
		}
		sizes = append(sizes, after)
		listCounts(b)
	}
	if folds < 2 {
		t.Fatalf("%d folds: the log's sizes were %v", folds, sizes)
	}
	fold(t, s)
	if n := logRows(t, s); n != 0 {
		t.Fatalf("%d rows after the fold", n)
	}
	listCounts(-1)
	for _, u := range seed {
		if n := foldedCount(t, s, u.ID); n != want[u.ID].n {
			t.Errorf("unit %q: %d folded, want %d", u.Content, n, want[u.ID].n)
		}
	}
}
