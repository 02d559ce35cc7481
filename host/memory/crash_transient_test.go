package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/store"
)

const queuedCrashEnv = "METACLAW_MEMORY_QUEUED_CRASH_HELPER"

const queuedCrashTurns = 5

func queuedCrashTurn(i int) *store.Turn {
	text := fmt.Sprintf("Remember that the staging database %c lives on host db-%d.", 'a'+i, 40+i)
	body, _ := json.Marshal(map[string]any{"messages": []map[string]any{{"role": "user", "content": text}}})
	return &store.Turn{SessionID: "queued", Agent: "main", TurnType: core.TurnMain, ClientAPI: "openai", UpstreamAPI: "openai",
		RequestJSON: string(body), ResponseText: "ok", Status: 200, MemoryScope: "user:c"}
}

// TestQueuedCrashHelperProcess is not a test: it is the process
// TestCrashLosesNoQueuedIngestion starts and kills. It records a session's
// turns through the core until they make an ingest job (queued in memory),
// then holds that job inside its transaction for the parent's SIGKILL.
func TestQueuedCrashHelperProcess(t *testing.T) {
	st, ok := crashHelperStore(queuedCrashEnv)
	if !ok {
		return // only the helper process does something
	}
	c := core.New(core.Options{Store: st, Log: zerolog.Nop()})
	s := Open(st, Options{})
	in := NewIngester(st, s, IngesterOptions{Every: queuedCrashTurns})
	in.testHookInTx = func() {
		fmt.Println("in-tx")
		time.Sleep(time.Minute) // bounded, should the parent be gone
	}
	in.Register(c, true)
	for i := range queuedCrashTurns {
		c.Observe(queuedCrashTurn(i))
	}
	time.Sleep(time.Minute)
	fmt.Println("never ingested")
	os.Exit(2)
}

// TestCrashLosesNoQueuedIngestion: an ingest job lives in memory only, and
// a crash takes it; its turns do not go: they stay pending, and the
// session's end after the restart (the idle reaper, whose flush job is
// durable) ingests them, each once.
func TestCrashLosesNoQueuedIngestion(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a helper process")
	}
	ctx := context.Background()
	dir := t.TempDir()
	killHelperAt(t, "TestQueuedCrashHelperProcess", []string{queuedCrashEnv + "=" + dir}, func(line string) bool { return line == "in-tx" })

	st, err := store.OpenSQLite(ctx, filepath.Join(dir, store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var rows int
	if err := st.Reader().QueryRow(`SELECT COUNT(*) FROM jobs`).Scan(&rows); err != nil || rows != 0 {
		t.Fatalf("%d job rows after the crash (%v): the ingest job was to be in memory only", rows, err)
	}
	s := Open(st, Options{})
	in := NewIngester(st, s, IngesterOptions{Every: queuedCrashTurns})
	if n, _ := in.Pending(ctx); n != queuedCrashTurns {
		t.Fatalf("%d turns pending after the crash, want %d", n, queuedCrashTurns)
	}
	// Restart: the session went silent, so the reaper ends it.
	c := core.New(core.Options{Store: st, Log: zerolog.Nop(), SessionIdle: 50 * time.Millisecond})
	defer c.Close()
	in.Register(c, true)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if n, err := in.Pending(ctx); err == nil && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the crashed session's turns were never ingested after the restart")
		}
	}
	units, err := s.List(ctx, Filter{Status: "all", Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	for i := range queuedCrashTurns {
		want := fmt.Sprintf("db-%d", 40+i)
		found := 0
		for _, u := range units {
			if u.Type != WorkingSummary && strings.Contains(u.Content, want) {
				found++
			}
		}
		if found != 1 {
			t.Errorf("fact about %s stored %d times, want once", want, found)
		}
	}
}
