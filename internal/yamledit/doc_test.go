package yamledit

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func mapping(kv ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: kv}
}

func seq(items ...*yaml.Node) *yaml.Node {
	return &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: items}
}

func hook(cmd string) *yaml.Node {
	return mapping(str("command"), str(cmd), str("timeout"), intNode("10"))
}

func mustOpen(t *testing.T, src string) *Doc {
	t.Helper()
	d, err := Open([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// docEdit is one step of a TestDoc case.
type docEdit struct {
	path string
	key  string // set: upsert an item matched on this key
	val  *yaml.Node
}

func (e docEdit) apply(d *Doc) error {
	if e.key != "" {
		return d.UpsertItem(strings.Split(e.path, "."), e.key, e.val)
	}
	return d.Set(strings.Split(e.path, "."), e.val)
}

// TestDoc checks the exact bytes of checked edits: block values in the
// file's indentation and line ends, sequence upserts, non-ASCII text, and
// everything not edited (comments, blank lines, quoting) kept.
func TestDoc(t *testing.T) {
	tests := []struct {
		name, src string
		edits     []docEdit
		want      string
	}{
		{"providers and hooks (the Hermes shape)",
			"# cfg\nmodel:\n  default: \"x\"   # the model\n  provider: auto\ncustom_providers:\n  - name: a\n    base_url: http://a\n    # about a\n\nhooks: {}\n",
			[]docEdit{
				{path: "model.provider", val: str("custom:metaclaw")},
				{path: "model.default", val: str("y")},
				{path: "custom_providers", key: "name", val: mapping(str("name"), str("metaclaw"), str("base_url"), str("http://m/v1"))},
				{path: "custom_providers", key: "name", val: mapping(str("name"), str("metaclaw"), str("base_url"), str("http://m2/v1"))},
				{path: "hooks.pre_llm_call", key: "command", val: hook("mc hook")},
			},
			"# cfg\nmodel:\n  default: \"y\"   # the model\n  provider: custom:metaclaw\ncustom_providers:\n  - name: a\n    base_url: http://a\n    # about a\n  - name: metaclaw\n    base_url: http://m2/v1\n\nhooks:\n  pre_llm_call:\n    - command: mc hook\n      timeout: 10\n"},
		{"non-ASCII key, value and comment on the edited line",
			"名前: 古い値 # コメント\nx: 1\n",
			[]docEdit{{path: "名前", val: str("新しい")}},
			"名前: \"新しい\" # コメント\nx: 1\n"},
		{"quoted non-ASCII key, new block after it",
			"\"ключ\": \"значение\"\nm:\n    k: é # accent\n",
			[]docEdit{{path: "ключ", val: str("другое")}, {path: "m.list", val: seq(str("ü"), str("--agent"))}},
			"\"ключ\": \"другое\"\nm:\n    k: é # accent\n    list:\n        - \"ü\"\n        - \"--agent\"\n"},
		{"item keys after a non-ASCII value",
			"l:\n  - név: ő\n    x: 1\n",
			[]docEdit{{path: "l", key: "név", val: mapping(str("név"), str("ő"), str("x"), intNode("2"))}, {path: "l", key: "név", val: mapping(str("név"), str("ű"))}},
			"l:\n  - \"név\": \"ő\"\n    x: 2\n  - \"név\": \"ű\"\n"},
		{"CRLF stays CRLF",
			"a: b\r\nm:\r\n  k: v # c\r\n",
			[]docEdit{{path: "m.k", val: str("w")}, {path: "m.nested.deep", val: seq(str("x"))}, {path: "hooks.e", key: "command", val: hook("c")}},
			"a: b\r\nm:\r\n  k: w # c\r\n  nested:\r\n    deep:\r\n      - x\r\nhooks:\r\n  e:\r\n    - command: c\r\n      timeout: 10\r\n"},
		{"block mapping replaced, sibling comment kept",
			"mcp:\n  metaclaw:\n    command: old\n    args: [a]\n  # other servers below\n  other: {}\n",
			[]docEdit{{path: "mcp.metaclaw", val: mapping(str("command"), str("/bin/mc"), str("args"), seq(str("mcp")))}},
			"mcp:\n  metaclaw:\n    command: /bin/mc\n    args:\n      - mcp\n  # other servers below\n  other: {}\n"},
		{"block scalar replaced by a scalar",
			"k: |\n  text\n  more\nn: 2\n",
			[]docEdit{{path: "k", val: str("one line")}},
			"k: one line\nn: 2\n"},
		{"multi-line plain scalar replaced whole",
			"a: first\n  second\nb: 1\n",
			[]docEdit{{path: "a", val: str("x")}},
			"a: x\nb: 1\n"},
		{"null section filled, its comment kept",
			"hooks:   # ours\nx: 1\n",
			[]docEdit{{path: "hooks.ev", key: "command", val: hook("c")}},
			"hooks:   # ours\n  ev:\n    - command: c\n      timeout: 10\nx: 1\n"},
		{"empty and comment-only documents",
			"# only a comment",
			[]docEdit{{path: "a.b", val: str("c")}},
			"# only a comment\na:\n  b: c\n"},
		{"flow mapping on the path is written again",
			"model: {default: x, n: 1}  # c\n",
			[]docEdit{{path: "model.provider", val: str("--agent")}},
			"model: {default: x, n: 1, provider: \"--agent\"}  # c\n"},
		{"the same value keeps the file's spelling",
			"t: 0x0A\ns: 'x'\n",
			[]docEdit{{path: "t", val: intNode("10")}, {path: "s", val: str("x")}},
			"t: 0x0A\ns: 'x'\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mustOpen(t, tt.src)
			for _, e := range tt.edits {
				if err := e.apply(d); err != nil {
					t.Fatalf("%s: %v\n%s", e.path, err, d.Bytes())
				}
			}
			if err := d.Verify(); err != nil {
				t.Fatal(err)
			}
			if string(d.Bytes()) != tt.want {
				t.Fatalf("got\n%q\nwant\n%q", d.Bytes(), tt.want)
			}
		})
	}
}

// TestDocRefuses: what cannot be patched as meant is an error, and the
// document is left exactly as it was.
func TestDocRefuses(t *testing.T) {
	tests := []struct {
		name, src string
		edit      docEdit
		msg       string
	}{
		{"flow mapping at the top", "{default: x}\n", docEdit{path: "provider", val: str("p")}, "flow mapping"},
		{"flow sequence to upsert into", "l: [a]\n", docEdit{path: "l", key: "name", val: mapping(str("name"), str("n"))}, "not a block sequence"},
		{"anchor", "a: &x 1\nb: *x\n", docEdit{path: "a", val: str("2")}, "anchor"},
		{"scalar on the path", "a: 3\n", docEdit{path: "a.b", val: str("v")}, "not a section"},
		{"top level is a list", "- 1\n", docEdit{path: "a", val: str("v")}, "not a mapping"},
		{"item without the match key", "l:\n  - a: 1\n", docEdit{path: "l", key: "name", val: mapping(str("x"), str("y"))}, "no scalar"},
		{"value with an alias", "a: 1\n", docEdit{path: "a", val: &yaml.Node{Kind: yaml.AliasNode}}, "aliases"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := mustOpen(t, tt.src)
			err := tt.edit.apply(d)
			if err == nil || !strings.Contains(err.Error(), tt.msg) {
				t.Fatalf("got %v, want an error containing %q\n%s", err, tt.msg, d.Bytes())
			}
			if string(d.Bytes()) != tt.src || d.Verify() != nil {
				t.Fatalf("a refused edit changed the document: %q", d.Bytes())
			}
		})
	}
	for _, src := range []string{"a: [\n", "a: 1\na: 2\n"} {
		if _, err := Open([]byte(src)); err == nil {
			t.Errorf("Open(%q) accepted", src)
		}
	}
}

// TestDocCommitChecks drives the gate itself: text that parses to other
// data than intended (here a patch that lost a key) is refused.
func TestDocCommitChecks(t *testing.T) {
	d := mustOpen(t, "a: 1\nb: 2\n")
	want := cloneNode(d.want)
	if err := treeSet(want, []string{"a"}, intNode("3")); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"a: 3\n", "a: [3\n", "a: 3\nb: \"2\"\n"} {
		if err := d.commit([]byte(bad), want); err == nil {
			t.Errorf("commit accepted %q", bad)
		}
	}
	if string(d.Bytes()) != "a: 1\nb: 2\n" {
		t.Fatalf("refused commits changed the text: %q", d.Bytes())
	}
	if err := d.commit([]byte("a: 3 # new\nb: 2\n"), want); err != nil {
		t.Fatal(err)
	}
}

// TestSetBlockValue: block values replace a one-line value in the file's
// indentation; comments and blank lines stay.
func TestSetBlockValue(t *testing.T) {
	d := configDoc(t, "# top\nskills:\n  dirs: [a]   # where\n\n  other: 1\n")
	if err := d.Set([]string{"skills", "dirs"}, list("b", "c")); err != nil {
		t.Fatal(err)
	}
	want := "# top\nskills:\n  dirs:   # where\n    - b\n    - c\n\n  other: 1\n"
	if got := string(d.Bytes()); got != want {
		t.Fatalf("got\n%q\nwant\n%q", got, want)
	}
}
