package store

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// storeTables are the tables the store owns (access.go): only this package
// runs SQL on them.
var storeTableSQL = regexp.MustCompile(`\b(FROM|JOIN|INTO|UPDATE)\s+(sessions|turns|jobs|llm_usage)\b`)

// compositionRoots may hold the concrete SQLite store: they choose it (the
// daemon, the CLI, tools and test kits).
// Everything else takes Store or a narrow interface (access.go).
var compositionRoots = []string{"host/store/", "host/daemon/", "cmd/", "tools/", "internal/", "plugin/plugintest/"}

// TestStoreBoundary: no SQL on the store's own tables outside the store,
// and no *SQLite outside the composition roots, in the module's non-test
// Go files.
func TestStoreBoundary(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := filepath.ToSlash(strings.TrimPrefix(path, root+string(filepath.Separator)))
		if d.IsDir() {
			if name := d.Name(); name == "testdata" || name == "node_modules" || (strings.HasPrefix(name, ".") && path != root) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		src := string(b)
		if !strings.HasPrefix(rel, "host/store/") {
			if m := storeTableSQL.FindString(src); m != "" {
				t.Errorf("%s runs SQL on the store's own tables (%q): add a method to the store and a narrow interface (host/store/access.go)", rel, m)
			}
		}
		if !hasPrefix(rel, compositionRoots) && strings.Contains(src, "store.SQLite") {
			t.Errorf("%s uses the concrete *store.SQLite: take store.Store or a narrow interface (store.Tables, store.Upkeep)", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("walked only %d Go files from %s", files, root)
	}
}

func hasPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
