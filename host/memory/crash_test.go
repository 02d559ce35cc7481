package memory

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/store"
)

const crashEnv = "METACLAW_MEMORY_CRASH_HELPER"

const (
	crashSessions = 12
	crashTurns    = 6
)

// crashFact is the unique fact of one turn.
func crashFact(sess, turn int) string {
	return fmt.Sprintf("Remember that build agent %c%c is in rack %d.", 'a'+sess, 'a'+turn, 100+sess*10+turn)
}

// TestCrashHelperProcess is not a test: it is the process TestCrashDuringIngestion
// starts (this test binary with an env flag) and kills with SIGKILL while it
// sits inside an ingestion transaction.
func TestCrashHelperProcess(t *testing.T) {
	st, ok := crashHelperStore(crashEnv)
	if !ok {
		return // only the helper process does something
	}
	ctx := context.Background()
	s := Open(st, Options{})
	in := NewIngester(st, s, IngesterOptions{})
	in.testHookInTx = sayInTxAndHoldFifth()
	ingestAllAndExit(ctx, in)
}

func TestCrashDuringIngestion(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a helper process")
	}
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.OpenSQLite(ctx, filepath.Join(dir, store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	var turns []*store.Turn
	for s := 0; s < crashSessions; s++ {
		for j := 0; j < crashTurns; j++ {
			text := crashFact(s, j)
			if j == 0 {
				text += " I prefer tabs for indentation."
			}
			body, _ := json.Marshal(map[string]any{"messages": []map[string]any{{"role": "user", "content": text}}})
			turns = append(turns, &store.Turn{SessionID: fmt.Sprintf("crash-%02d", s), Agent: "main", TurnType: "main", ClientAPI: "openai",
				UpstreamAPI: "openai", RequestJSON: string(body), ResponseText: "ok", Status: 200, MemoryScope: "user:c"})
		}
	}
	if err := st.RecordTurns(ctx, turns); err != nil {
		t.Fatal(err)
	}
	st.Close()

	// Ingest in a child process and SIGKILL it inside its 5th transaction.
	killInFifthTx(t, "TestCrashHelperProcess", crashEnv+"="+dir)

	// After the crash: some sessions committed, the rest pending, nothing half-written.
	st, err = store.OpenSQLite(ctx, filepath.Join(dir, store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := Open(st, Options{})
	in := NewIngester(st, s, IngesterOptions{})
	pending, _ := in.Pending(ctx)
	if pending == 0 || pending == crashSessions*crashTurns || pending%crashTurns != 0 {
		t.Fatalf("after the crash %d turns pending: want whole sessions of %d, some but not all", pending, crashTurns)
	}
	checkIndex(t, s)
	// Restart: ingest the rest.
	if _, _, err := in.IngestAll(ctx, false); err != nil {
		t.Fatal(err)
	}
	if p, _ := in.Pending(ctx); p != 0 {
		t.Fatalf("pending %d after restart", p)
	}
	// Nothing lost, nothing duplicated.
	units, _ := s.List(ctx, Filter{Status: "all", Limit: -1})
	count := map[string]int{}
	for _, u := range units {
		count[u.Content]++
	}
	for sess := 0; sess < crashSessions; sess++ {
		for j := 0; j < crashTurns; j++ {
			want := strings.TrimPrefix(crashFact(sess, j), "Remember that build ")
			found := 0
			for c, n := range count {
				if strings.HasSuffix(c, want) {
					found += n
				}
			}
			if found != 1 {
				t.Errorf("fact %q stored %d times", want, found)
			}
		}
	}
	var tabs []Unit
	for _, u := range units {
		if strings.Contains(u.Content, "tabs") {
			tabs = append(tabs, u)
		}
	}
	if len(tabs) != 1 || tabs[0].Mentions != crashSessions {
		t.Fatalf("the repeated preference: %+v (want one unit, %d mentions)", tabs, crashSessions)
	}
	if len(units) != crashSessions*crashTurns+1 {
		t.Fatalf("%d units, want %d", len(units), crashSessions*crashTurns+1)
	}
	checkIndex(t, s)
}

// sayInTxAndHoldFifth is a helper process's in-transaction hook: it says
// "in-tx" each time and, inside the 5th, waits for the parent's SIGKILL
// (killInFifthTx; bounded, should the parent be gone).
func sayInTxAndHoldFifth() func() {
	n := 0
	return func() {
		fmt.Println("in-tx")
		if n++; n == 5 {
			time.Sleep(time.Minute)
		}
	}
}

// ingestAllAndExit ingests everything pending and ends the helper process,
// saying "done" (or the error).
func ingestAllAndExit(ctx context.Context, in *Ingester) {
	if _, _, err := in.IngestAll(ctx, false); err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	fmt.Println("done")
	os.Exit(0)
}

// crashHelperStore opens the store of a crash test's helper process, in
// the directory the variable env names; ok is false in any other process.
func crashHelperStore(env string) (st *store.SQLite, ok bool) {
	dir := os.Getenv(env)
	if dir == "" {
		return nil, false
	}
	st, err := store.OpenSQLite(context.Background(), filepath.Join(dir, store.DBFile))
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	return st, true
}

// killHelperAt runs test, a helper test of this binary, with env set to
// dir, and SIGKILLs it (no cleanup: its open transaction stays open) at the
// first line of its output for which at says so. It fails when the helper
// ends first or has not got there within a minute.
func killHelperAt(t *testing.T, test string, env []string, at func(line string) bool) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	killed := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		last := ""
		for sc.Scan() {
			if last = sc.Text(); at(last) {
				cmd.Process.Kill()
				killed <- ""
				return
			}
		}
		killed <- "the helper ended without being killed; its last line: " + last
	}()
	select {
	case msg := <-killed:
		if msg != "" {
			t.Fatal(msg)
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the helper did not get where it is killed within a minute")
	}
}

// checkIndex verifies the FTS index and document frequencies against the units.
func checkIndex(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	var fts, active, total int
	s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM memory_fts`).Scan(&fts)
	s.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM memory_units WHERE status = 'active'`).Scan(&active)
	s.r.QueryRowContext(ctx, `SELECT COALESCE((SELECT df FROM memory_terms WHERE term = '#'), 0)`).Scan(&total)
	if fts != active || total != active {
		t.Fatalf("index: %d FTS rows, %d active units, df count %d", fts, active, total)
	}
	want := map[string]int{}
	rows, _ := s.r.QueryContext(ctx, `SELECT f.terms, f.vis, u.vis, u.status FROM memory_fts f LEFT JOIN memory_units u ON u.id = f.rowid`)
	for rows.Next() {
		var terms, vis string
		var uvis, status *string
		rows.Scan(&terms, &vis, &uvis, &status)
		if uvis == nil || *uvis != vis || *status != StatusActive {
			t.Fatalf("FTS row for a missing or inactive unit (vis %s)", vis)
		}
		for _, t := range distinct(strings.Fields(terms)) {
			want[t]++
		}
		want["#"+visKey(vis)]++
	}
	rows.Close()
	got := map[string]int{}
	rows, _ = s.r.QueryContext(ctx, `SELECT term, df FROM memory_terms WHERE term != '#'`)
	for rows.Next() {
		var term string
		var df int
		rows.Scan(&term, &df)
		got[term] = df
	}
	rows.Close()
	if len(got) != len(want) {
		t.Fatalf("document frequencies: %d terms, FTS has %d", len(got), len(want))
	}
	for term, n := range want {
		if got[term] != n {
			t.Fatalf("df(%q) = %d, FTS says %d", term, got[term], n)
		}
	}
}
