package memory

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// extractCorpus is a varied set of conversations for comparing extractors
// (the heuristic with and without its prefilters): the teaching scenarios'
// days (what the user said, with the client's boilerplate, and what the
// assistant answered), the labelled and held-out imperatives, every string
// literal of the package's tests (the labelled wordings of every rule, in
// English and Chinese) each alone and after the one before it as the
// assistant's answer, the loaded proxy benchmark's questions, and
// sentences recombined from all of these.
func extractCorpus(t testing.TB) [][]Turn {
	t.Helper()
	var convs [][]Turn
	var said []string
	files, err := filepath.Glob(filepath.Join("testdata", "teaching", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("teaching scenarios missing: %v", err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var fam teachingFamily
		if err := json.Unmarshal(raw, &fam); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, d := range fam.Days {
			var conv []Turn
			for _, tt := range d.Turns {
				user := tt.User
				if fam.Boilerplate != "" && (fam.BoilerplateOn == "every" || tt.Feedback) {
					user += "\n\n" + fam.Boilerplate
				}
				conv = append(conv, Turn{User: user, Assistant: tt.Assistant})
				said = append(said, tt.User, tt.Assistant)
			}
			convs = append(convs, conv)
		}
	}
	for _, set := range []string{"labelled.tsv", "heldout.tsv"} {
		raw, err := os.ReadFile(filepath.Join("testdata", "imperatives", set))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
			if _, text, ok := strings.Cut(line, "\t"); ok {
				convs = append(convs, []Turn{{User: text}})
				said = append(said, text)
			}
		}
	}
	lits := testLiterals(t)
	for i, s := range lits {
		convs = append(convs, []Turn{{User: s}})
		if i > 0 {
			convs = append(convs, []Turn{{User: lits[i-1], Assistant: lits[i-1]}, {User: s}})
		}
	}
	said = append(said, lits...)
	for _, q := range loadedQuestions(400, 3) {
		convs = append(convs, []Turn{{User: q}})
	}
	// Recombined: two to five sentences of what was said, joined by the
	// separators messages use.
	var sents []string
	for _, s := range said {
		sents = append(sents, sentences(s)...)
	}
	r := rand.New(rand.NewSource(4))
	seps := []string{" ", "\n", "\n\n", ", and ", "; ", ": ", "\n- ", "\n1. ", " (2) "}
	for range 3000 {
		var b strings.Builder
		for k := range 2 + r.Intn(4) {
			if k > 0 {
				b.WriteString(seps[r.Intn(len(seps))])
			}
			b.WriteString(sents[r.Intn(len(sents))])
		}
		convs = append(convs, []Turn{{Assistant: sents[r.Intn(len(sents))]}, {User: b.String()}})
	}
	return convs
}

// testLiterals are the distinct string literals of the package's tests
// that read as text (at least two words).
func testLiterals(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	seen := map[string]bool{}
	for _, f := range files {
		af, err := parser.ParseFile(fset, f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			if bl, ok := n.(*ast.BasicLit); ok && bl.Kind == token.STRING {
				if s, err := strconv.Unquote(bl.Value); err == nil && len(strings.Fields(s)) >= 2 {
					seen[s] = true
				}
			}
			return true
		})
	}
	out := make([]string, 0, len(seen))
	for s := range seen {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// loadedQuestions are user messages shaped as tools/proxybench's loaded
// run sends them: a question in new words every turn.
func loadedQuestions(n int, seed int64) []string {
	c := newCorpus(seed)
	out := make([]string, n)
	for i := range out {
		out[i] = "Can you help me " + c.phrase(3) + " the " + c.phrase(4) + " and make sure it handles " + c.phrase(2) + "?"
	}
	return out
}

// BenchmarkHeuristicExtract is the heuristic extractor on one turn: the
// loaded proxy benchmark's questions (nothing to learn), and the teaching
// scenarios' turns; ...-unguarded without the prefilters (prefilter.go).
func BenchmarkHeuristicExtract(b *testing.B) {
	var teaching [][]Turn
	for _, conv := range extractCorpus(b) {
		if len(conv) > 0 && len(teaching) < 200 {
			teaching = append(teaching, conv)
		}
	}
	var loaded [][]Turn
	for _, q := range loadedQuestions(200, 5) {
		loaded = append(loaded, []Turn{{User: q}})
	}
	for _, set := range []struct {
		name  string
		convs [][]Turn
	}{{"loaded", loaded}, {"teaching", teaching[:200]}} {
		for _, off := range []bool{false, true} {
			name := set.name
			if off {
				name += "-unguarded"
			}
			b.Run(name, func(b *testing.B) {
				guardsOff.Store(off)
				defer guardsOff.Store(false)
				b.ReportAllocs()
				for i := range b.N {
					if _, err := (Heuristic{}).Extract(b.Context(), set.convs[i%len(set.convs)]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
