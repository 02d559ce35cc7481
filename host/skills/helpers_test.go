package skills

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/skills/bank"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/host/tokens"
)

func openStore(t testing.TB, dir string) *store.SQLite {
	t.Helper()
	st, err := store.OpenSQLite(context.Background(), filepath.Join(dir, store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// newLib opens an empty library in a temp dir.
func newLib(t testing.TB) (*Library, *store.SQLite) {
	t.Helper()
	dir := t.TempDir()
	st := openStore(t, dir)
	lib, err := Open(context.Background(), Options{Dir: filepath.Join(dir, "skills"), Store: st, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lib.Close() })
	return lib, st
}

// bankLib opens a library with the built-in bank installed.
func bankLib(t testing.TB) (*Library, *store.SQLite) {
	t.Helper()
	lib, st := newLib(t)
	if _, err := InstallBank(context.Background(), lib, bank.FS()); err != nil {
		t.Fatal(err)
	}
	return lib, st
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}

func tokenCount(s string) int { return tokens.Count(s) }
