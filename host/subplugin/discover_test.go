package subplugin

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestDiscover(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("unix file modes")
	}
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil { // umask-proof
			t.Fatal(err)
		}
		return p
	}
	// The real reference plugin, linked in under its discovery name.
	if err := os.Symlink(refPlugin, filepath.Join(dir, "metaclaw-embedder-ref")); err != nil {
		t.Fatal(err)
	}
	write("metaclaw-embedder-other_1", 0o755)
	write("README.md", 0o644)
	write("metaclaw-embedder-noexec", 0o644)
	write("metaclaw-embedder-open", 0o777)
	write("metaclaw-painter-van_gogh", 0o755)
	write("metaclaw-embedder-Bad.Name", 0o755)
	write("metaclaw-embedder", 0o755)
	if err := os.Mkdir(filepath.Join(dir, "metaclaw-embedder-dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	specs, skipped, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range specs {
		if s.Kind != "embedder" {
			t.Errorf("kind %q", s.Kind)
		}
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "other_1,ref" {
		t.Errorf("found %v", names)
	}
	reasons := map[string]string{}
	for _, s := range skipped {
		reasons[filepath.Base(s.Path)] = s.Reason
	}
	want := map[string]string{
		"metaclaw-embedder-noexec":   "chmod +x",
		"metaclaw-embedder-open":     "writable by every user",
		"metaclaw-painter-van_gogh":  `unknown plugin kind "painter"`,
		"metaclaw-embedder-Bad.Name": "use only a-z",
		"metaclaw-embedder":          "metaclaw-<kind>-<name>",
		"metaclaw-embedder-dir":      "not a regular file",
	}
	for f, w := range want {
		if !strings.Contains(reasons[f], w) {
			t.Errorf("%s: reason %q, want %q", f, reasons[f], w)
		}
	}
	if len(skipped) != len(want) {
		t.Errorf("skipped: %+v", skipped)
	}

	// Missing dir: nothing, no error.
	if s, k, err := Discover(filepath.Join(dir, "absent")); s != nil || k != nil || err != nil {
		t.Errorf("missing dir: %v %v %v", s, k, err)
	}

	// Open the discovered plugin by name.
	o := testOptions(t)
	o.Dir = dir
	e, closer, err := OpenEmbedder(context.Background(), EmbedderSpec{Use: "ref", Options: o}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	if _, err := e.Embed(context.Background(), []string{"found by name"}); err != nil {
		t.Fatal(err)
	}
	st := closer.(*Host).Status()
	if len(st) != 1 || st[0].Name != "ref" || st[0].Path != filepath.Join(dir, "metaclaw-embedder-ref") {
		t.Errorf("status %+v", st)
	}
	// And by explicit path, with the name taken from the file name.
	sp, err := Resolve("embedder", refPlugin, "/nonexistent")
	if err != nil || sp.Name != "ref" || sp.Path != refPlugin {
		t.Errorf("Resolve by path: %+v, %v", sp, err)
	}
}
