package atomicfile

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	for _, tc := range []struct {
		name   string
		old    []byte // nil: no file before
		oldMod fs.FileMode
		perm   fs.FileMode
	}{
		{name: "new secret", perm: 0o600},
		{name: "new public", perm: 0o644},
		{name: "replace widens nothing", old: []byte("old"), oldMod: 0o644, perm: 0o600},
		{name: "replace keeps asked mode", old: []byte("old"), oldMod: 0o600, perm: 0o640},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f")
			if tc.old != nil {
				if err := os.WriteFile(path, tc.old, tc.oldMod); err != nil {
					t.Fatal(err)
				}
			}
			if err := Write(path, []byte("new\n"), tc.perm); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != "new\n" {
				t.Fatalf("contents %q, %v", got, err)
			}
			st, _ := os.Stat(path)
			if st.Mode().Perm() != tc.perm {
				t.Errorf("mode %v, want %v", st.Mode().Perm(), tc.perm)
			}
			assertNoTemp(t, dir, "f")
		})
	}
}

// A failed replace leaves the old file and no temp file behind.
func TestWriteFailureKeepsOld(t *testing.T) {
	dir := t.TempDir()
	// rename onto a non-empty directory fails after the data was written
	target := filepath.Join(dir, "busy")
	if err := os.MkdirAll(filepath.Join(target, "child"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := Write(target, []byte("x"), 0o600); err == nil || !strings.Contains(err.Error(), target) {
		t.Fatalf("want an error naming %s, got %v", target, err)
	}
	if st, err := os.Stat(target); err != nil || !st.IsDir() {
		t.Fatalf("target changed: %v %v", st, err)
	}
	assertNoTemp(t, dir, "busy")

	// a directory that does not exist: nothing is created
	missing := filepath.Join(dir, "nope", "f")
	if err := Write(missing, []byte("x"), 0o600); err == nil {
		t.Fatal("write into a missing directory succeeded")
	}
	if _, err := os.Stat(filepath.Dir(missing)); !os.IsNotExist(err) {
		t.Fatalf("directory was created: %v", err)
	}
}

// A symlink is replaced by a file unless the caller resolves it first.
func TestResolve(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	link := filepath.Join(dir, "link")
	if err := os.WriteFile(real, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if err := Write(Resolve(link), []byte("through"), 0o600); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(real); string(b) != "through" {
		t.Fatalf("real file %q", b)
	}
	if st, _ := os.Lstat(link); st.Mode()&fs.ModeSymlink == 0 {
		t.Fatal("link was replaced")
	}
	if got := Resolve(filepath.Join(dir, "absent")); got != filepath.Join(dir, "absent") {
		t.Fatalf("Resolve of a missing path = %s", got)
	}
}

const crashEnv = "ATOMICFILE_CRASH_CHILD"

// TestCrashLeavesWholeFile kills a writer process at an arbitrary moment and
// checks the file is one whole version, never a torn mix. The child (this
// test binary) rewrites the file in a loop and reports each write; the parent
// kills it with SIGKILL while it is writing the next one.
func TestCrashLeavesWholeFile(t *testing.T) {
	if path := os.Getenv(crashEnv); path != "" {
		crashChild(path)
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	const size = 4 << 20
	if err := os.WriteFile(path, bytes.Repeat([]byte{'0'}, size), 0o600); err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 3; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashLeavesWholeFile$")
		cmd.Env = append(os.Environ(), crashEnv+"="+path)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(out)
		for i := 0; i < 2+round && sc.Scan(); i++ { // kill during a later write each round
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != size || bytes.Count(got, got[:1]) != size {
			t.Fatalf("round %d: torn file: %d bytes, first %q", round, len(got), got[:1])
		}
	}
}

func crashChild(path string) {
	for i := 0; i < 10000; i++ {
		b := bytes.Repeat([]byte{byte('a' + i%26)}, 4<<20)
		if err := Write(path, b, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Println("wrote", i)
	}
	os.Exit(0)
}

func assertNoTemp(t *testing.T, dir, base string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "."+base+".tmp-") {
			t.Errorf("temp file left behind: %s", e.Name())
		}
	}
}
