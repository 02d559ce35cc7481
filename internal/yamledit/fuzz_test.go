package yamledit

import (
	"bytes"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/internal/fixtures"
	"go.yaml.in/yaml/v3"
)

var fuzzKey = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,15}$`)

// FuzzSetDelete makes `config set`/`config unset` edits (a one-line
// string, the config's quoting) on arbitrary YAML. Never a panic; an edit
// it accepts leaves YAML that holds exactly the value asked for; deleting
// it again removes it; and where Set inserted a new key, Delete gives back
// the original bytes.
func FuzzSetDelete(f *testing.F) {
	seeds := []struct{ src, path, val string }{
		{"", "mode", "rl"},
		{"# only a comment\n", "a.b", "x"},
		{"llm:\n  model: a   # which\n\n  provider: p\n", "llm.model", "b"},
		{"llm:\n  model: a\n", "llm.api_key", "sk-1"},
		{"proxy:\n    port: 1\n# after\nmode: x\n", "proxy.host.name", "h"},
		{"s: \"22:00\"\nt: '6:00' # end\n", "t", "it's"},
		{"log: null  # later\n", "log.level", "debug"},
		{"a: {x: 1}\nb:\n  - 1\n", "a.y", "2"},
		{"mode: auto\r\nllm:\r\n  provider: p\r\n", "llm.model", "m"},
		{"---\nmode: auto\n...\n", "x", "multi\nline"},
		{"a:\n  b: |\n    text\n  c: 1\n", "a.d", "#not a comment"},
		{"a: &x 1\nb: *x\n", "a", "2"},
		{"- 1\n", "a", "1"},
		{"a: [\n", "a", "1"},
		{"a: x\n", "a", ": x"},
		{"a: x\n", "a", "01"},
		{"a: 'x'\n", "a", "yes"},
		{"a: x\n", "a", ""},
	}
	for _, s := range seeds {
		f.Add([]byte(s.src), s.path, s.val)
	}
	f.Fuzz(func(t *testing.T, src []byte, key, value string) {
		path := strings.Split(key, ".")
		d, err := Open(src)
		if err != nil {
			return
		}
		d.SetQuoting(QuoteMinimal)
		d.Has(path) // must not panic on anything
		before := d.Bytes()
		if err := d.Set(path, str(value)); err != nil {
			if !bytes.Equal(d.Bytes(), before) {
				t.Fatalf("a failed Set (%v) changed the text", err)
			}
			return
		}
		out := d.Bytes()
		if err := d.Verify(); err != nil {
			t.Fatalf("%v\nsrc %q\nout %q", err, src, out)
		}
		if len(path) > 4 || !checkable(src, path) {
			return
		}
		if got, ok := lookup(t, out, path); !ok || got != value {
			t.Fatalf("after Set %s = %#v (present %v), want %q\n%s", key, got, ok, value, out)
		}
		changed, err := d.Delete(path)
		if err != nil || !changed {
			t.Fatalf("Delete after Set: changed=%v err=%v\n%q", changed, err, out)
		}
		back := d.Bytes()
		if _, ok := lookup(t, back, path); ok {
			t.Fatalf("%s still present after Delete\n%s", key, back)
		}
		if insertsLines(src, path) && !bytes.Equal(back, src) {
			t.Fatalf("Set then Delete of a new key changed the bytes\nsrc  %q\nset  %q\nback %q", src, out, back)
		}
	})
}

// checkable: plain keys and a document whose data has one meaning (no
// anchors or merge keys, no duplicate keys), so values can be compared.
func checkable(src []byte, path []string) bool {
	for _, seg := range path {
		if !fuzzKey.MatchString(seg) {
			return false
		}
	}
	if bytes.ContainsAny(src, "&*") || bytes.Contains(src, []byte("<<")) {
		return false
	}
	var v any
	return yaml.Unmarshal(src, &v) == nil
}

func lookup(t *testing.T, src []byte, path []string) (any, bool) {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(src, &v); err != nil {
		t.Fatalf("edit left invalid YAML: %v\n%s", err, src)
	}
	for _, seg := range path {
		var ok bool
		switch m := v.(type) {
		case map[string]any:
			v, ok = m[seg]
		case map[any]any: // some keys are not strings (`0:`)
			v, ok = m[seg]
		}
		if !ok {
			return nil, false
		}
	}
	return v, true
}

// insertsLines reports whether setting path adds it as new lines inside
// existing non-empty block sections (the case Delete exactly undoes).
func insertsLines(src []byte, path []string) bool {
	if len(src) > 0 && !bytes.HasSuffix(src, []byte("\n")) {
		return false
	}
	doc, err := Parse(src)
	if err != nil {
		return false
	}
	if doc == nil {
		return true
	}
	m := doc.Content[0]
	for _, seg := range path {
		if m.Kind != yaml.MappingNode || m.Style&yaml.FlowStyle != 0 || len(m.Content) == 0 {
			return false
		}
		i := lastPair(m, seg)
		if i < 0 {
			return true
		}
		m = m.Content[i+1]
	}
	return false
}

// FuzzDoc makes random checked edits on the real client configs
// (testdata/clients) and on odd shapes: the adapters' block edits with
// their quoting, and `config set`'s one-line strings and flow lists with
// the config's. Never a panic; an edit either
// fails and leaves the text as it was, or its output parses to exactly the
// intended data, holds the new value, keeps every other top-level key's
// data and every line before the edited key; an edit that adds a key keeps
// every line of the file (comments included).
func FuzzDoc(f *testing.F) {
	for _, s := range []string{"", "a: 1\n", "m:\n  k: v # c\n", "l:\n  - name: a\n    x: 1\n", "# only comments\n",
		"m: {a: 1}\n", "k: |\n  text\n  more\nn: 2\n", "名前: 値 # c\nl:\n  - name: ő\n", "a: b\r\nm:\r\n  k: v\r\n",
		"hooks:\n  e:\n    - command: x\n      timeout: 3\n    # after\n", "a: first\n  second\n",
		"m: {k: 'v', n: [1, \"x\"]}  # c\n", "m:\n  k: \"q\"\n  j: 'x' # c\r\n"} {
		f.Add([]byte(s), "k", "v", uint8(0))
	}
	for _, p := range fixtures.Glob(f, "clients/*/*/*.yaml*", 1) {
		if b, err := os.ReadFile(p); err == nil && len(b) < 64<<10 {
			for op := range uint8(fuzzOps) {
				f.Add(b, "model", "v", op)
			}
		}
	}
	f.Fuzz(func(t *testing.T, src []byte, key, val string, op uint8) {
		d, err := Open(src)
		if err != nil {
			return
		}
		path, node, match := fuzzOp(op, key, val)
		if op%fuzzOps >= 5 {
			d.SetQuoting(QuoteMinimal)
		}
		before, beforeData := d.Bytes(), d.Data()
		_, existed := walkValue(d.tree, path)
		if match != "" {
			err = d.UpsertItem(path, match, node)
		} else {
			err = d.Set(path, node)
		}
		if err != nil {
			if !bytes.Equal(d.Bytes(), before) {
				t.Fatalf("a failed edit (%v) changed the text\nsrc %q\nout %q", err, src, d.Bytes())
			}
			return
		}
		out := d.Bytes()
		if err := d.Verify(); err != nil {
			t.Fatalf("%v\nsrc %q\nout %q", err, src, out)
		}
		if _, err := Parse(out); err != nil {
			t.Fatalf("output does not parse: %v\n%q", err, out)
		}
		got, ok := walkValue(d.tree, path)
		if !ok {
			t.Fatalf("%v missing after the edit\n%q", path, out)
		}
		if match != "" {
			ok = got.Kind == yaml.SequenceNode && matchItem(got, match, val) >= 0
		} else {
			ok = sameNode(got, node)
		}
		if !ok {
			t.Fatalf("%v does not hold the value\nsrc %q\nout %q", path, src, out)
		}
		if m, isMap := beforeData.(map[string]any); isMap {
			after, _ := d.Data().(map[string]any)
			for k, v := range m {
				if k != path[0] && !reflect.DeepEqual(after[k], v) {
					t.Fatalf("unrelated key %q changed\nsrc %q\nout %q", k, src, out)
				}
			}
		}
		keepsLines(t, before, out, path, existed)
	})
}

const fuzzOps = 7

// fuzzOp picks one of the edits the adapters make (0-4) or `config set`
// makes (5-6).
func fuzzOp(op uint8, key, val string) (path []string, node *yaml.Node, match string) {
	switch op % fuzzOps {
	case 0:
		return []string{"model", "provider"}, str(val), ""
	case 1:
		return []string{"m", key}, str(val), ""
	case 2:
		return []string{key}, mapping(str("a"), str(val), str("list"), seq(str(val), intNode("1"))), ""
	case 3:
		return []string{"custom_providers"}, mapping(str("name"), str(val), str("base_url"), str("http://x/v1")), "name"
	case 5:
		return []string{"m", key}, str(val), ""
	case 6:
		return []string{"m", "k"}, flow(seq(str(val), str(key))), ""
	default:
		return []string{"hooks", key}, mapping(str("command"), str(val), str("timeout"), intNode("10")), "command"
	}
}

// keepsLines: the lines before the edited top-level key are untouched, and
// an edit that adds a new key keeps every line of the file.
func keepsLines(t *testing.T, before, out []byte, path []string, existed bool) {
	t.Helper()
	old, now := splitLines(before), splitLines(out)
	doc, _ := Parse(before)
	if !existed {
		from, to := rewrittenLines(doc, old, path)
		i := 0
		for _, l := range now {
			for i < len(old) && i+1 >= from && i+1 <= to {
				i++
			}
			if i < len(old) && strings.TrimRight(l, "\r\n") == strings.TrimRight(old[i], "\r\n") {
				i++
			}
		}
		if i < len(old) {
			t.Fatalf("adding %v lost line %q\nsrc %q\nout %q", path, old[i], before, out)
		}
		return
	}
	steps, ok := walkPath(doc, path[:1])
	if !ok {
		return
	}
	k := steps[0].m.Content[steps[0].idx]
	for i := 0; i < k.Line-1 && i < len(old); i++ {
		if i >= len(now) || now[i] != old[i] {
			t.Fatalf("line %d before the edited key changed\nsrc %q\nout %q", i+1, before, out)
		}
	}
}

// rewrittenLines is the range of lines an edit adding path may rewrite
// (1-based, inclusive; 0, 0 for none): the line of a null section being
// filled (`m: null` becomes `m:`), or the whole outermost flow collection
// on the path (written again with the new key).
func rewrittenLines(doc *yaml.Node, old lines, path []string) (int, int) {
	for i := 1; i < len(path); i++ {
		v, ok := walkValue(doc, path[:i])
		if !ok {
			return 0, 0
		}
		if v.Style&yaml.FlowStyle != 0 {
			end := lastLine(v)
			if end < len(old) {
				if b := strings.TrimSpace(old[end]); strings.HasPrefix(b, "}") || strings.HasPrefix(b, "]") {
					end++
				}
			}
			return v.Line, end
		}
		if IsNull(v) {
			return v.Line, v.Line
		}
	}
	return 0, 0
}

func lastLine(n *yaml.Node) int {
	l := n.Line
	for _, c := range n.Content {
		l = max(l, lastLine(c))
	}
	return l
}
