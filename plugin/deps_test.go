package plugin

import (
	"go/build"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/metaclaw-go/metaclaw"

// stdioSide are the packages linked into the processes clients start
// (`metaclaw plugin serve|hook`, `metaclaw mcp`).
var stdioSide = []string{"plugin", "plugin/mcpserver"}

// allowedHost are the only packages of this module the stdio side may link:
// small ones that link no store, core, memory, skills, RL or SQLite. A new
// entry must be as light (check `go list -deps`); the host itself is
// started by exec (`metaclaw start`), never linked.
var allowedHost = map[string]bool{
	"plugin":              true,
	"plugin/mcpserver":    true,
	"host/rpc/protocol":   true,
	"host/onoff":          true,
	"host/block":          true,
	"host/usertext":       true,
	"host/version":        true,
	"host/config":         true,
	"host/msgcontent":     true, // stdlib only
	"internal/atomicfile": true, // stdlib only
	"internal/textclip":   true, // stdlib only (unicode/utf8)
	"internal/yamledit":   true, // the YAML library only; host/config links it
}

// forbiddenThirdParty must never be linked by the stdio side.
var forbiddenThirdParty = []string{"modernc.org/sqlite", "github.com/hashicorp/go-plugin", "github.com/pressly/goose"}

// TestStdioSideLinksNoHost walks the non-test imports of the stdio side
// within this module (go/build, no go command) and fails on any package
// outside allowedHost, naming the chain that pulled it in.
func TestStdioSideLinksNoHost(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	from := map[string]string{} // package → the package that imported it
	queue := append([]string(nil), stdioSide...)
	for _, p := range stdioSide {
		from[p] = ""
	}
	var bad []string
	for len(queue) > 0 {
		rel := queue[0]
		queue = queue[1:]
		pkg, err := build.ImportDir(filepath.Join(root, filepath.FromSlash(rel)), 0)
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		for _, imp := range pkg.Imports {
			for _, f := range forbiddenThirdParty {
				if imp == f || strings.HasPrefix(imp, f+"/") {
					bad = append(bad, imp+" ← "+chain(from, rel))
				}
			}
			dep, ok := strings.CutPrefix(imp, module+"/")
			if !ok {
				continue
			}
			if _, seen := from[dep]; seen {
				continue
			}
			from[dep] = rel
			if !allowedHost[dep] {
				bad = append(bad, dep+" ← "+chain(from, rel))
				continue
			}
			queue = append(queue, dep)
		}
	}
	if len(from) <= len(stdioSide) {
		t.Fatalf("walked only %v: the import walk found nothing", from)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Errorf("the stdio side links %s", b)
	}
}

func chain(from map[string]string, p string) string {
	parts := []string{p}
	for from[p] != "" && len(parts) < 20 {
		p = from[p]
		parts = append(parts, p)
	}
	return strings.Join(parts, " ← ")
}
