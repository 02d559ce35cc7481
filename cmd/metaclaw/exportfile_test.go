package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportWritesPrivateFilesAndReportsFailures: `memory export -o` and
// `skills export -o` write a whole 0600 file; a path that cannot be written
// is an error naming it with a non-zero exit, and an earlier export there
// is left intact.
func TestExportWritesPrivateFilesAndReportsFailures(t *testing.T) {
	c := newCLI(t, "HOME="+t.TempDir())
	if out, code := c.run("memory", "add", "The user prefers tabs over spaces."); code != 0 {
		t.Fatalf("memory add: %d %s", code, out)
	}
	if out, code := c.run("skills", "install-bank"); code != 0 {
		t.Fatalf("install-bank: %d %s", code, out)
	}
	dir := t.TempDir()
	notADir := filepath.Join(dir, "plain-file")
	os.WriteFile(notADir, []byte("x"), 0o600)
	roDir := filepath.Join(dir, "ro")
	os.Mkdir(roDir, 0o500)

	for _, tc := range []struct {
		name, file, want string
		args             []string
	}{
		{"memory", "mem.jsonl", "tabs over spaces", []string{"memory", "export", "-o"}},
		{"skills", "skills.tar.gz", "\x1f\x8b", []string{"skills", "export", "--out"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, tc.file)
			// An earlier, larger file must be replaced whole, not overwritten in place.
			os.WriteFile(path, []byte(strings.Repeat("stale ", 100000)), 0o644)
			if out, code := c.run(append(tc.args, path)...); code != 0 || !strings.Contains(out, "exported") {
				t.Fatalf("export: %d %s", code, out)
			}
			raw, err := os.ReadFile(path)
			if err != nil || !strings.Contains(string(raw), tc.want) || strings.Contains(string(raw), "stale") {
				t.Fatalf("%s holds %.100q (%v)", path, raw, err)
			}
			if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
				t.Fatalf("%s mode %v, want 0600", path, fi.Mode().Perm())
			}

			bad := []string{filepath.Join(notADir, tc.file)}
			if os.Geteuid() != 0 { // root writes into a 0500 dir
				bad = append(bad, filepath.Join(roDir, tc.file))
			}
			for _, b := range bad {
				out, code := c.run(append(tc.args, b)...)
				if code == 0 || !strings.Contains(out, b) || strings.Contains(out, "exported") {
					t.Errorf("export to %s: exit %d, %s", b, code, out)
				}
			}
			if again, _ := os.ReadFile(path); string(again) != string(raw) {
				t.Errorf("a failed export elsewhere changed %s", path)
			}
		})
	}
}
