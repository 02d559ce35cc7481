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

// configDoc opens src the way `metaclaw config set` does.
func configDoc(t *testing.T, src string) *Doc {
	t.Helper()
	d := mustOpen(t, src)
	d.SetQuoting(QuoteMinimal)
	return d
}

// TestSetMinimal checks the exact bytes of one-line sets with the config's
// quoting: everything the edit does not touch is kept, and the shapes the
// one-line patch once left to a re-encoded tree (flow sections, block
// lists, null sections) are patched in place too.
func TestSetMinimal(t *testing.T) {
	tests := []struct {
		name, src, path string
		val             *yaml.Node
		want            string
	}{
		{"replace keeps line comment", "# top\nllm:\n  model: a   # which\n\n  provider: p\n", "llm.model", str("b"),
			"# top\nllm:\n  model: b   # which\n\n  provider: p\n"},
		{"keeps double quotes", "s: \"22:00\"\n", "s", str("23:00"), "s: \"23:00\"\n"},
		{"keeps single quotes", "s: '6:00' # end\n", "s", str("6:45"), "s: '6:45' # end\n"},
		{"single quotes double an apostrophe", "s: 'a'\n", "s", str("it's"), "s: 'it''s'\n"},
		{"plain where the library writes it plain", "s: a\n", "s", str("--agent ü"), "s: --agent ü\n"},
		{"quoted where the library must", "a: x\nb: x\nc: x\nd: x\ne: x\nf: x\n", "", nil,
			"a: yes\nb: \"01\"\nc: ': x'\nd: '#x'\ne: \"\"\nf: \"a\\nb\"\n"},
		{"the caller's quote style, same value", "s: a\n", "s", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "a", Style: yaml.DoubleQuotedStyle},
			"s: a\n"},
		{"the caller's quote style, new value", "s: a\n", "s", &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: "b", Style: yaml.DoubleQuotedStyle},
			"s: \"b\"\n"},
		{"append to a 4-space section", "proxy:\n    port: 1\n# after\nmode: x\n", "proxy.host", str("h"),
			"proxy:\n    port: 1\n    host: h\n# after\nmode: x\n"},
		{"new nested section at the end", "mode: x\n", "a.b.c", intNode("3"), "mode: x\na:\n  b:\n    c: 3\n"},
		{"fills a null section, keeps its comment", "log: null  # later\n", "log.level", str("debug"),
			"log:  # later\n  level: debug\n"},
		{"empty value", "llm:\n  model:   # fill\n", "llm.model", str("m"), "llm:\n  model: m   # fill\n"},
		{"empty file", "", "mode", str("rl"), "mode: rl\n"},
		{"comment-only file", "# c", "mode", str("rl"), "# c\nmode: rl\n"},
		{"CRLF new key", "a: 1\r\nm:\r\n  k: v\r\n", "m.n", str("w"), "a: 1\r\nm:\r\n  k: v\r\n  n: w\r\n"},
		{"flow list value", "l: [a]  # c\n", "l", flow(list("b", "c,d")), "l: [b, \"c,d\"]  # c\n"},
		{"block list replaced by a flow one", "l:\n  - a\n  # about a\nm: 1\n", "l", flow(list("b")), "l: [b]\n  # about a\nm: 1\n"},
		{"block list value", "l: [a]\n", "l", list("b", "c"), "l:\n  - b\n  - c\n"},
		{"inside a flow section", "llm: {provider: k, model: a}  # c\n", "llm.model", str("b"),
			"llm: {provider: k, model: b}  # c\n"},
		{"new key in a flow section", "llm: {provider: 'k'}\n", "llm.model", str("b: c"),
			"llm: {provider: 'k', model: 'b: c'}\n"},
		{"empty flow section", "a: {}\nb: 1\n", "a.c", str("d"), "a:\n  c: d\nb: 1\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := configDoc(t, tt.src)
			if tt.val == nil { // one key per value that needs quotes
				for i, v := range []string{"yes", "01", ": x", "#x", "", "a\nb"} {
					if err := d.Set([]string{string(rune('a' + i))}, str(v)); err != nil {
						t.Fatal(err)
					}
				}
			} else if err := d.Set(strings.Split(tt.path, "."), tt.val); err != nil {
				t.Fatal(err)
			}
			if got := string(d.Bytes()); got != tt.want {
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
			d := configDoc(t, tt.src)
			err := d.Set(strings.Split(tt.path, "."), str("v"))
			var pe *PathError
			if !errors.As(err, &pe) || !strings.Contains(pe.Msg, tt.msg) {
				t.Fatalf("got %v, want a PathError containing %q", err, tt.msg)
			}
			if errors.Is(err, ErrNotSection) != tt.notSection {
				t.Fatalf("errors.Is(ErrNotSection) = %v", !tt.notSection)
			}
			if string(d.Bytes()) != tt.src {
				t.Fatalf("text changed: %q", d.Bytes())
			}
		})
	}
}

func TestDelete(t *testing.T) {
	tests := []struct{ name, src, path, want string }{
		{"one key, comments elsewhere kept", "# top\na:\n  x: 1 # one\n  y: 2\nb: 3\n", "a.x", "# top\na:\n  y: 2\nb: 3\n"},
		{"its indented comments go with it", "a:\n  x:\n    - 1\n    # about the list\n  # about y\n  y: 2\n", "a.x", "a:\n  # about y\n  y: 2\n"},
		{"emptied section goes too", "a:\n  x:\n    deep: 1\nb: 3\n", "a.x.deep", "b: 3\n"},
		{"block value with its lines", "a:\n  - 1\n  - 2\nb: 3\n", "a", "b: 3\n"},
		{"the last key leaves an empty document", "# c\na: 1\n", "a", "# c\n"},
		{"CRLF", "a: 1\r\nb:\r\n  c: 2\r\n  d: 3\r\n", "b.c", "a: 1\r\nb:\r\n  d: 3\r\n"},
		{"inside a flow section", "a: {x: 1, y: 'z'}  # c\n", "a.x", "a: {y: 'z'}  # c\n"},
		{"a flow section emptied goes", "a: {x: 1}\nb: 2\n", "a.x", "b: 2\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := configDoc(t, tt.src)
			changed, err := d.Delete(strings.Split(tt.path, "."))
			if err != nil || !changed {
				t.Fatalf("changed=%v err=%v", changed, err)
			}
			if got := string(d.Bytes()); got != tt.want {
				t.Fatalf("got\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
	d := configDoc(t, "a: 1\n")
	if changed, err := d.Delete([]string{"b"}); err != nil || changed || string(d.Bytes()) != "a: 1\n" {
		t.Fatalf("absent key: %q %v %v", d.Bytes(), changed, err)
	}
	d = configDoc(t, "a: &x\n  k: 1\n  j: 2\nb: *x\n")
	if _, err := d.Delete([]string{"a", "k"}); err == nil || !strings.Contains(err.Error(), "anchor") {
		t.Fatalf("delete inside an anchored section: %v", err)
	}
}

func TestHas(t *testing.T) {
	d := configDoc(t, "a:\n  b: null\nc: 1\n")
	for path, want := range map[string]bool{"a": true, "a.b": true, "c": true, "a.x": false, "c.d": false, "z": false} {
		if got := d.Has(strings.Split(path, ".")); got != want {
			t.Errorf("Has(%s) = %v", path, got)
		}
	}
}

// TestSetDeleteRoundTrip: a new key set and deleted again leaves the
// original bytes (the property FuzzSetDelete checks at random).
func TestSetDeleteRoundTrip(t *testing.T) {
	tests := []struct{ src, path string }{
		{"", "mode"},
		{"# c\n", "a.b"},
		{"llm:\n  model: a   # which\n\n  provider: p\n# tail\n", "llm.api_key"},
		{"proxy:\n    port: 1\n# after\nmode: x\n", "proxy.host.name"},
		{"mode: auto\r\nllm:\r\n  provider: p\r\n", "llm.model"},
		{"a:\n  b: |\n    text\n  c: 1\n", "z"},
		{"a:\n  b: 1\n  # about b\n", "a.c"},
	}
	for _, tt := range tests {
		path := strings.Split(tt.path, ".")
		d := configDoc(t, tt.src)
		if !insertsLines([]byte(tt.src), path) {
			t.Fatalf("%q: test case is not an insertion", tt.src)
		}
		if err := d.Set(path, str("v")); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Delete(path); err != nil || string(d.Bytes()) != tt.src {
			t.Fatalf("%q: round trip gave %q (%v)", tt.src, d.Bytes(), err)
		}
	}
}
