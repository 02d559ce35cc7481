// Package adaptertest runs the shared checks every client adapter must
// pass against real fixture files: golden output, idempotency, dry run,
// exact unwire, refusal after a user edit.
package adaptertest

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
	"github.com/metaclaw-go/metaclaw/internal/fixtures"
)

// Update rewrites golden files: go test ./adapters/... -update
var Update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// Fixture returns the path of a real client config in the repository's
// testdata/ (testdata/SOURCES.md); a missing one fails the test.
func Fixture(t testing.TB, rel string) string {
	t.Helper()
	return fixtures.Path(t, rel)
}

// World is a temp HOME with a fake PATH and a recording runner.
type World struct {
	T       testing.TB
	Home    string
	MCHome  string
	Env     *adapters.Env
	Runner  *Recorder
	Vars    map[string]string
	OnPath  map[string]bool
	Bin     string // a fake metaclaw binary
	Out     bytes.Buffer
	clockMu sync.Mutex
	clock   time.Time
}

// Recorder records commands and answers them from a table.
type Recorder struct {
	mu      sync.Mutex
	Calls   []string
	Answers map[string]string // command line prefix → stdout
	Fail    map[string]bool   // command line prefix → fail
}

// Run implements adapters.Runner.
func (r *Recorder) Run(_ context.Context, name string, args ...string) (string, string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	line := strings.Join(append([]string{name}, args...), " ")
	r.Calls = append(r.Calls, line)
	for p := range r.Fail {
		if strings.HasPrefix(line, p) {
			return "", "failed on purpose", errors.New("exit status 1")
		}
	}
	best := ""
	for p := range r.Answers {
		if strings.HasPrefix(line, p) && len(p) > len(best) {
			best = p
		}
	}
	if best != "" {
		return r.Answers[best], "", nil
	}
	return "", "", nil
}

// Reset clears the recorded calls.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.Calls = nil
	r.mu.Unlock()
}

// NewWorld makes a temp home.
func NewWorld(t testing.TB) *World {
	t.Helper()
	root := t.TempDir()
	w := &World{T: t, Home: filepath.Join(root, "home"), MCHome: filepath.Join(root, "home", ".metaclaw"),
		Runner: &Recorder{Answers: map[string]string{}, Fail: map[string]bool{}}, Vars: map[string]string{}, OnPath: map[string]bool{},
		clock: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	must(t, os.MkdirAll(w.Home, 0o755))
	w.Bin = filepath.Join(root, "bin", "metaclaw")
	must(t, os.MkdirAll(filepath.Dir(w.Bin), 0o755))
	must(t, os.WriteFile(w.Bin, []byte("#!/bin/sh\n"), 0o755))
	mt := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	must(t, os.Chtimes(w.Bin, mt, mt))
	w.Env = &adapters.Env{
		Home:   w.Home,
		Getenv: func(k string) string { return w.Vars[k] },
		LookPath: func(n string) (string, error) {
			if w.OnPath[n] {
				return "/usr/bin/" + n, nil
			}
			return "", fmt.Errorf("%s: not found", n)
		},
		Runner:       w.Runner,
		Now:          w.now,
		MetaclawHome: w.MCHome,
	}
	return w
}

func (w *World) now() time.Time {
	w.clockMu.Lock()
	defer w.clockMu.Unlock()
	w.clock = w.clock.Add(time.Second)
	return w.clock
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Copy copies a fixture file to a path under HOME (relative paths are
// relative to HOME) and returns the destination.
func (w *World) Copy(src, dst string) string {
	w.T.Helper()
	if !filepath.IsAbs(dst) {
		dst = filepath.Join(w.Home, dst)
	}
	b, err := os.ReadFile(src)
	must(w.T, err)
	must(w.T, os.MkdirAll(filepath.Dir(dst), 0o755))
	must(w.T, os.WriteFile(dst, b, 0o644))
	return dst
}

// Write writes a file under HOME.
func (w *World) Write(dst, content string) string {
	w.T.Helper()
	if !filepath.IsAbs(dst) {
		dst = filepath.Join(w.Home, dst)
	}
	must(w.T, os.MkdirAll(filepath.Dir(dst), 0o755))
	must(w.T, os.WriteFile(dst, []byte(content), 0o644))
	return dst
}

// Engine returns an engine writing to w.Out.
func (w *World) Engine() *adapters.Engine {
	return &adapters.Engine{Env: w.Env, Out: &w.Out, Version: "test"}
}

// Request is a default request for tests.
func (w *World) Request(agents ...string) *adapters.Request {
	return &adapters.Request{Agents: agents, Via: adapters.ViaProxy, ProxyHost: "127.0.0.1", ProxyPort: 30000, MetaclawBin: FakeBin}
}

// Snapshot reads every regular file and symlink under HOME except metaclaw's own state.
func (w *World) Snapshot() map[string]string {
	w.T.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(w.Home, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == w.MCHome {
			return filepath.SkipDir
		}
		rel, _ := filepath.Rel(w.Home, p)
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			t, _ := os.Readlink(p)
			out[rel] = "link:" + t
		case d.IsDir():
			out[rel+"/"] = fmt.Sprintf("dir %o", info.Mode().Perm())
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("%o\n%s", info.Mode().Perm(), b)
		}
		return nil
	})
	must(w.T, err)
	return out
}

// SameSnapshot fails when two snapshots differ.
func SameSnapshot(t testing.TB, what string, a, b map[string]string) {
	t.Helper()
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var diffs []string
	for k := range keys {
		if a[k] != b[k] {
			diffs = append(diffs, k)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Fatalf("%s: files differ: %v", what, diffs)
	}
}

// Golden compares got with testdata/<name>.golden (rewritten with -update).
func Golden(t testing.TB, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *Update {
		must(t, os.MkdirAll("testdata", 0o755))
		must(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(want, got) {
		t.Fatalf("%s differs from the golden file; diff (golden → got):\n%s", path, edit.Diff(path, "got", want, got))
	}
}

// Backups counts backup directories of a client.
func (w *World) Backups(client string) int {
	ents, _ := os.ReadDir(filepath.Join(w.MCHome, "backups", client))
	return len(ents)
}

// Roundtrip is the scenario every adapter runs on every fixture:
//   - dry run changes nothing;
//   - wire matches the golden files (one per changed file, named
//     <golden>.<basename>);
//   - wiring again changes nothing and makes no second backup;
//   - unwire restores every file byte for byte (and removes new ones);
//   - after a user edit, unwire refuses without --force.
type Roundtrip struct {
	Adapter  adapters.Adapter
	Request  *adapters.Request
	Golden   string   // golden name prefix
	Files    []string // files (under HOME) to compare with goldens after wiring
	Override string   // --config
	Edit     string   // a file to edit by hand for the refusal check ("" = Files[0])
	Commands []string // expected runner calls during wire (prefixes), nil = not checked
}

// Run executes the roundtrip.
func (rt Roundtrip) Run(w *World) {
	t := w.T
	t.Helper()
	ctx := context.Background()
	eng := w.Engine()
	before := w.Snapshot()

	// dry run
	must(t, eng.Wire(ctx, rt.Adapter, rt.Request, rt.Override, adapters.WireOptions{DryRun: true}))
	SameSnapshot(t, "after dry run", before, w.Snapshot())
	if w.Backups(rt.Adapter.Name()) != 0 {
		t.Fatal("dry run made a backup")
	}
	if !strings.Contains(w.Out.String(), "dry run: nothing was changed") {
		t.Fatalf("dry run output: %s", w.Out.String())
	}
	if len(w.Runner.Calls) != 0 {
		t.Fatalf("dry run ran commands: %v", w.Runner.Calls)
	}

	// wire
	w.Out.Reset()
	must(t, eng.Wire(ctx, rt.Adapter, rt.Request, rt.Override, adapters.WireOptions{Yes: true}))
	for _, f := range rt.Files {
		b, err := os.ReadFile(filepath.Join(w.Home, f))
		must(t, err)
		Golden(t, rt.Golden+"."+goldenName(f), b)
	}
	if rt.Commands != nil {
		checkCalls(t, w.Runner.Calls, rt.Commands)
	}
	wired := w.Snapshot()
	if w.Backups(rt.Adapter.Name()) != 1 {
		t.Fatalf("want one backup dir, have %d", w.Backups(rt.Adapter.Name()))
	}

	// idempotent
	w.Out.Reset()
	w.Runner.Reset()
	must(t, eng.Wire(ctx, rt.Adapter, rt.Request, rt.Override, adapters.WireOptions{Yes: true}))
	if !strings.Contains(w.Out.String(), "already wired") {
		t.Fatalf("second wire was not a no-op:\n%s", w.Out.String())
	}
	SameSnapshot(t, "after wiring twice", wired, w.Snapshot())
	if n := w.Backups(rt.Adapter.Name()); n != 1 {
		t.Fatalf("second wire made another backup (%d dirs)", n)
	}

	// user edit → refuse
	editFile := rt.Edit
	if editFile == "" && len(rt.Files) > 0 {
		editFile = rt.Files[0]
	}
	if editFile != "" {
		p := filepath.Join(w.Home, editFile)
		orig, err := os.ReadFile(p)
		must(t, err)
		must(t, os.WriteFile(p, append(append([]byte{}, orig...), '\n'), 0o644))
		err = eng.Unwire(ctx, rt.Adapter, adapters.UnwireOptions{})
		var ee *adapters.EditedError
		if !errors.As(err, &ee) {
			t.Fatalf("unwire after a user edit: want EditedError, got %v", err)
		}
		if !strings.Contains(err.Error(), "--force") {
			t.Fatalf("refusal does not explain --force: %v", err)
		}
		err = eng.Wire(ctx, rt.Adapter, rt.Request, rt.Override, adapters.WireOptions{Yes: true})
		if !errors.As(err, &ee) {
			t.Fatalf("re-wire after a user edit: want EditedError, got %v", err)
		}
		info, err := os.Stat(p)
		must(t, err)
		must(t, os.WriteFile(p, orig, info.Mode().Perm()))
	}

	// unwire → byte-identical
	w.Out.Reset()
	must(t, eng.Unwire(ctx, rt.Adapter, adapters.UnwireOptions{}))
	SameSnapshot(t, "after unwire", before, w.Snapshot())
	if _, err := eng.Active(rt.Adapter.Name()); err != nil {
		t.Fatal(err)
	}
	if m, _ := eng.Active(rt.Adapter.Name()); m != nil {
		t.Fatal("still wired after unwire")
	}
}

var tmpRe = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// goldenName turns a path under HOME into a file name:
// ".hermes/profiles/coder/config.yaml" → "hermes_profiles_coder_config.yaml".
func goldenName(f string) string {
	parts := strings.Split(filepath.ToSlash(f), "/")
	for i, p := range parts {
		parts[i] = strings.TrimLeft(p, ".")
	}
	return tmpRe.ReplaceAllString(strings.Join(parts, "_"), "_")
}

func checkCalls(t testing.TB, calls, want []string) {
	t.Helper()
	if len(calls) != len(want) {
		t.Fatalf("runner calls %q, want %q", calls, want)
	}
	for i := range want {
		if !strings.HasPrefix(calls[i], want[i]) {
			t.Fatalf("runner call %d = %q, want prefix %q (all: %q)", i, calls[i], want[i], calls)
		}
	}
}

// FakeBin is the metaclaw path written into hook commands in golden tests.
const FakeBin = "/opt/metaclaw/bin/metaclaw"
