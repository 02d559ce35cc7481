package yamledit

import (
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func str(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

func flow(n *yaml.Node) *yaml.Node { n.Style = yaml.FlowStyle; return n }

func intNode(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: s} }

func list(items ...string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
	for _, it := range items {
		n.Content = append(n.Content, str(it))
	}
	return n
}

// TestSet checks the exact bytes: the text patch keeps everything the edit
// does not touch; the shapes it cannot patch fall back to a re-encoded tree.
func TestSet(t *testing.T) {
	tests := []struct {
		name, src, path string
		val             *yaml.Node
		want            string
	}{
		{"replace keeps line comment", "# top\nllm:\n  model: a   # which\n\n  provider: p\n", "llm.model", str("b"),
			"# top\nllm:\n  model: b   # which\n\n  provider: p\n"},
		{"keeps double quotes", "s: \"22:00\"\n", "s", str("23:00"), "s: \"23:00\"\n"},
		{"keeps single quotes", "s: '6:00' # end\n", "s", str("6:45"), "s: '6:45' # end\n"},
		{"append to a 4-space section", "proxy:\n    port: 1\n# after\nmode: x\n", "proxy.host", str("h"),
			"proxy:\n    port: 1\n    host: h\n# after\nmode: x\n"},
		{"new nested section at the end", "mode: x\n", "a.b.c", intNode("3"), "mode: x\na:\n  b:\n    c: 3\n"},
		{"fills a null section, keeps its comment", "log: null  # later\n", "log.level", str("debug"),
			"log:   # later\n  level: debug\n"},
		{"empty value", "llm:\n  model:   # fill\n", "llm.model", str("m"), "llm:\n  model: m   # fill\n"},
		{"empty file", "", "mode", str("rl"), "mode: rl\n"},
		{"comment-only file", "# c", "mode", str("rl"), "# c\nmode: rl\n"},
		{"flow list value", "l: [a]\n", "l", flow(list("b", "c")), "l: [b, c]\n"},
		{"block list value is re-encoded", "l: [a]\n", "l", list("b", "c"), "l:\n  - b\n  - c\n"},
		{"block list falls back to the tree", "l:\n  - a\n", "l", list("b"), "l:\n  - b\n"},
		{"flow section falls back to the tree", "llm: {provider: k, model: a}\n", "llm.model", str("b"),
			"llm: {provider: k, model: b}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Set([]byte(tt.src), strings.Split(tt.path, "."), tt.val)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Fatalf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

func TestSetRefused(t *testing.T) {
	tests := []struct {
		name, src, path, msg string
		notSection           bool
	}{
		{"anchor", "a: &x 1\nb: *x\n", "a", "anchor", false},
		{"through a list", "a:\n  - 1\n", "a.b", "`a` is a list, not a section", true},
		{"through a scalar", "a: 3\n", "a.b", "`a` is integer 3, not a section", true},
		{"top level is a list", "- 1\n", "a", "the top level is not a mapping", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Set([]byte(tt.src), strings.Split(tt.path, "."), str("v"))
			var pe *PathError
			if !errors.As(err, &pe) || !strings.Contains(pe.Msg, tt.msg) {
				t.Fatalf("got %v, want a PathError containing %q", err, tt.msg)
			}
			if errors.Is(err, ErrNotSection) != tt.notSection {
				t.Fatalf("errors.Is(ErrNotSection) = %v", !tt.notSection)
			}
		})
	}
	if _, err := Set([]byte("a: [\n"), []string{"a"}, str("v")); err == nil {
		t.Fatal("broken YAML accepted")
	}
}

func TestDelete(t *testing.T) {
	tests := []struct{ name, src, path, want string }{
		{"one key, comments elsewhere kept", "# top\na:\n  x: 1 # one\n  y: 2\nb: 3\n", "a.x", "# top\na:\n  y: 2\nb: 3\n"},
		{"emptied section goes too", "a:\n  x:\n    deep: 1\nb: 3\n", "a.x.deep", "b: 3\n"},
		{"block value with its lines", "a:\n  - 1\n  - 2\nb: 3\n", "a", "b: 3\n"},
		{"the last key leaves an empty document", "# c\na: 1\n", "a", "# c\n"},
		{"flow section falls back", "a: {x: 1, y: 2}\n", "a.x", "a: {y: 2}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, changed, err := Delete([]byte(tt.src), strings.Split(tt.path, "."))
			if err != nil || !changed {
				t.Fatalf("changed=%v err=%v", changed, err)
			}
			if string(got) != tt.want {
				t.Fatalf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
	src := []byte("a: 1\n")
	if got, changed, err := Delete(src, []string{"b"}); err != nil || changed || string(got) != string(src) {
		t.Fatalf("absent key: %q %v %v", got, changed, err)
	}
}

func TestHas(t *testing.T) {
	src := []byte("a:\n  b: null\nc: 1\n")
	for path, want := range map[string]bool{"a": true, "a.b": true, "c": true, "a.x": false, "c.d": false, "z": false} {
		if got := Has(src, strings.Split(path, ".")); got != want {
			t.Errorf("Has(%s) = %v", path, got)
		}
	}
	if Has([]byte("a: [\n"), []string{"a"}) {
		t.Error("Has on broken YAML")
	}
}

// TestSetDeleteRoundTrip: a new key set by a text patch and deleted again
// leaves the original bytes (the property FuzzSetDelete checks at random).
func TestSetDeleteRoundTrip(t *testing.T) {
	tests := []struct{ src, path string }{
		{"", "mode"},
		{"# c\n", "a.b"},
		{"llm:\n  model: a   # which\n\n  provider: p\n# tail\n", "llm.api_key"},
		{"proxy:\n    port: 1\n# after\nmode: x\n", "proxy.host.name"},
		{"mode: auto\r\nllm:\r\n  provider: p\r\n", "llm.model"},
		{"a:\n  b: |\n    text\n  c: 1\n", "z"},
	}
	for _, tt := range tests {
		path := strings.Split(tt.path, ".")
		out, err := Set([]byte(tt.src), path, str("v"))
		if err != nil {
			t.Fatal(err)
		}
		if !insertedByPatch([]byte(tt.src), path, "v", out) {
			t.Fatalf("%q: not a text insertion: %q", tt.src, out)
		}
		back, _, err := Delete(out, path)
		if err != nil || string(back) != tt.src {
			t.Fatalf("%q: round trip gave %q (%v)", tt.src, back, err)
		}
	}
}
