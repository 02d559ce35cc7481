package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/store"
)

const (
	injectCrashEnv    = "METACLAW_INJECTLOG_CRASH_HELPER"
	injectCrashFoldAt = "METACLAW_INJECTLOG_CRASH_FOLD_AT"

	injectCrashSessions = 8
	injectCrashTurns    = 3
	injectCrashUnits    = 3 // injected into every turn: each batch logs this many rows
)

// TestInjectLogCrashHelperProcess is not a test: it is the process
// TestCrashWhileLoggingInjections starts (this test binary with an env
// flag) and kills with SIGKILL inside its 5th ingestion transaction.
func TestInjectLogCrashHelperProcess(t *testing.T) {
	st, ok := crashHelperStore(injectCrashEnv)
	if !ok {
		return // only the helper process does something
	}
	ctx := context.Background()
	s := Open(st, Options{})
	s.injectFoldAt, _ = strconv.Atoi(os.Getenv(injectCrashFoldAt))
	in := NewIngester(st, s, IngesterOptions{})
	in.testHookInTx = sayInTxAndHoldFifth() // after the batch logged (and maybe folded) its injections
	ingestAllAndExit(ctx, in)
}

// TestCrashWhileLoggingInjections: a process killed (SIGKILL) inside an
// ingest transaction leaves every injection its committed batches logged
// readable after a restart, none of the killed batch's, and each folded
// exactly once — when the kill hits a batch that only logs, and one that
// folds the log.
func TestCrashWhileLoggingInjections(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a helper process")
	}
	for _, tc := range []struct {
		name   string
		foldAt int
		// after the kill (4 batches committed): whether rows wait in the log
		logged bool
	}{
		// Batches log 3 rows: the 3rd folds, the 4th logs, the 5th is killed.
		{"killed while logging", 2*injectCrashUnits + 1, true},
		// Every batch folds: the 5th is killed after its fold ran.
		{"killed while folding", injectCrashUnits, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			st, err := store.OpenSQLite(ctx, filepath.Join(dir, store.DBFile))
			if err != nil {
				t.Fatal(err)
			}
			units := seedInjectable(t, Open(st, Options{}), "user:c", injectCrashUnits)
			var ids []string
			for _, u := range units {
				ids = append(ids, "memory:"+u.ID)
			}
			inj, _ := json.Marshal(ids)
			var turns []*store.Turn
			for s := range injectCrashSessions {
				for j := range injectCrashTurns {
					body, _ := json.Marshal(map[string]any{"messages": []map[string]any{{"role": "user", "content": fmt.Sprintf("Thanks, step %d of %d is done.", j, s)}}})
					turns = append(turns, &store.Turn{SessionID: fmt.Sprintf("inj-%02d", s), Agent: "main", TurnType: "main", ClientAPI: "openai",
						UpstreamAPI: "openai", RequestJSON: string(body), ResponseText: "ok", Status: 200, MemoryScope: "user:c", InjectedJSON: string(inj)})
				}
			}
			if err := st.RecordTurns(ctx, turns); err != nil {
				t.Fatal(err)
			}
			st.Close()

			killInFifthTx(t, "TestInjectLogCrashHelperProcess", injectCrashEnv+"="+dir, injectCrashFoldAt+"="+strconv.Itoa(tc.foldAt))

			st, err = store.OpenSQLite(ctx, filepath.Join(dir, store.DBFile))
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			s := Open(st, Options{})
			s.injectFoldAt = tc.foldAt
			in := NewIngester(st, s, IngesterOptions{})
			pending, err := in.Pending(ctx)
			if err != nil {
				t.Fatal(err)
			}
			committed := injectCrashSessions - pending/injectCrashTurns
			if pending%injectCrashTurns != 0 || committed != 4 {
				t.Fatalf("after the kill %d turns pending: want 4 whole sessions committed", pending)
			}
			checkCrashCounts(t, s, units, committed*injectCrashTurns, tc.logged)
			// Restart: ingest the rest, then fold what is left.
			if _, _, err := in.IngestAll(ctx, false); err != nil {
				t.Fatal(err)
			}
			if p, _ := in.Pending(ctx); p != 0 {
				t.Fatalf("pending %d after restart", p)
			}
			checkCrashCounts(t, s, units, injectCrashSessions*injectCrashTurns, tc.logged)
			fold(t, s)
			checkCrashCounts(t, s, units, injectCrashSessions*injectCrashTurns, false)
		})
	}
}

// killInFifthTx runs a helper process (this test binary running the test
// named helper, with env added) and SIGKILLs it inside its 5th ingest
// transaction (the 5th "in-tx" line it prints).
func killInFifthTx(t *testing.T, helper string, env ...string) {
	t.Helper()
	n := 0
	killHelperAt(t, helper, env, func(line string) bool {
		if strings.HasPrefix(line, "in-tx") {
			n++
		}
		return n == 5
	})
}

// checkCrashCounts: every unit reads want injections, split between the
// units' rows and the log with nothing counted twice, rows waiting in the
// log exactly when logged says so.
func checkCrashCounts(t *testing.T, s *Store, units []Unit, want int, logged bool) {
	t.Helper()
	ctx := context.Background()
	for _, u := range units {
		got, err := s.Get(ctx, u.ID)
		if err != nil {
			t.Fatal(err)
		}
		folded, waiting := foldedCount(t, s, u.ID), pendingFor(t, s, u.ID)
		if got.InjectedCount != want || folded+waiting != want || got.LastInjectedAt == nil {
			t.Errorf("unit %q: reads %d (%d folded + %d logged) at %v, want %d", u.Content, got.InjectedCount, folded, waiting, got.LastInjectedAt, want)
		}
		if (waiting > 0) != logged {
			t.Errorf("unit %q: %d injections in the log, want some: %v", u.Content, waiting, logged)
		}
	}
}
