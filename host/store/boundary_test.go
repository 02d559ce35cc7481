package store

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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

// ownTables are the store's tables; every other table its migrations create
// belongs to a learning package (skills, memory, scheduler, RL).
var ownTables = map[string]bool{"sessions": true, "turns": true, "jobs": true, "llm_usage": true}

// TestStoreKnowsNoOtherTables is the other half of the rule: the store runs
// no SQL on the tables other packages own (a learner's cursors, say), so
// porting the store does not mean porting their logic. What the store needs
// of them (memory's read position for retention) is handed in.
func TestStoreKnowsNoOtherTables(t *testing.T) {
	foreign := foreignTables(t)
	for _, must := range []string{"memory_meta", "memory_cursors", "skills", "rl_samples"} {
		if !foreign[must] {
			t.Fatalf("migrations do not create %s: the table list is wrong (%v)", must, foreign)
		}
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		checked++
		for _, name := range tablesInStrings(t, f, foreign) {
			t.Errorf("host/store/%s names %s, a table another package owns: take what you need of it as a parameter that package's composition root provides", f, name)
		}
	}
	if checked < 5 {
		t.Fatalf("checked only %d files", checked)
	}
}

// TestForeignTableCheckCatches: the check above finds a foreign table in SQL
// text and leaves comments and column names alone.
func TestForeignTableCheckCatches(t *testing.T) {
	dir := t.TempDir()
	src := `package store

// memory_meta is only named in this comment.
const q = ` + "`SELECT value FROM memory_meta WHERE key = 'floor_turn_id'`" + `
const ok = "SELECT memory_scope FROM turns"
`
	path := filepath.Join(dir, "x.go")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	got := tablesInStrings(t, path, foreignTables(t))
	if len(got) != 1 || got[0] != "memory_meta" {
		t.Fatalf("found %v, want [memory_meta]", got)
	}
}

var createTable = regexp.MustCompile(`(?i)CREATE\s+(?:VIRTUAL\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)`)

// foreignTables lists the tables the migrations create for other packages.
func foreignTables(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations: %v", err)
	}
	out := map[string]bool{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range createTable.FindAllStringSubmatch(string(b), -1) {
			if name := strings.ToLower(m[1]); !ownTables[name] {
				out[name] = true
			}
		}
	}
	return out
}

// tablesInStrings lists the foreign tables named in a Go file's string
// literals (the SQL), not its comments.
func tablesInStrings(t *testing.T, path string, foreign map[string]bool) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	word := regexp.MustCompile(`\w+`)
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		lit, ok := n.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		s, err := strconv.Unquote(lit.Value)
		if err != nil {
			s = lit.Value
		}
		for _, w := range word.FindAllString(s, -1) {
			if foreign[strings.ToLower(w)] {
				out = append(out, w)
			}
		}
		return true
	})
	return out
}
