package yamledit

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

var fuzzKey = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,15}$`)

// FuzzSetDelete edits arbitrary YAML. Never a panic; an edit it accepts
// leaves YAML that holds exactly the value asked for; deleting it again
// removes it; and where Set inserted a new key by a text patch, Delete
// gives back the original bytes.
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
	}
	for _, s := range seeds {
		f.Add([]byte(s.src), s.path, s.val)
	}
	f.Fuzz(func(t *testing.T, src []byte, key, value string) {
		path := strings.Split(key, ".")
		Has(src, path) // must not panic on anything
		out, err := Set(src, path, str(value))
		_, _, derr := Delete(src, path)
		if _, perr := Parse(src); perr != nil && (err == nil || derr == nil) {
			t.Fatalf("broken YAML edited: %v", perr)
		}
		if err != nil || len(path) > 4 || !checkable(src, path) {
			return
		}
		if got, ok := lookup(t, out, path); !ok || got != value {
			t.Fatalf("after Set %s = %#v (present %v), want %q\n%s", key, got, ok, value, out)
		}
		back, changed, err := Delete(out, path)
		if err != nil || !changed {
			t.Fatalf("Delete after Set: changed=%v err=%v\n%s", changed, err, out)
		}
		if _, ok := lookup(t, back, path); ok {
			t.Fatalf("%s still present after Delete\n%s", key, back)
		}
		if insertedByPatch(src, path, value, out) && !bytes.Equal(back, src) {
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

// insertedByPatch reports whether Set added path as new lines inside
// existing non-empty block sections (the case Delete exactly undoes).
func insertedByPatch(src []byte, path []string, value string, out []byte) bool {
	if len(src) > 0 && !bytes.HasSuffix(src, []byte("\n")) {
		return false
	}
	doc, err := Parse(src)
	if err != nil {
		return false
	}
	if doc != nil {
		m, missing := doc.Content[0], false
		for _, seg := range path {
			if m.Kind != yaml.MappingNode || m.Style&yaml.FlowStyle != 0 || len(m.Content) == 0 {
				return false
			}
			i := lastPair(m, seg)
			if i < 0 {
				missing = true
				break
			}
			m = m.Content[i+1]
		}
		if !missing {
			return false
		}
	}
	patched, ok := patchSet(src, doc, path, inlineText(str(value)), indentUnitOf(doc))
	return ok && bytes.Equal(patched, out)
}

func indentUnitOf(doc *yaml.Node) int {
	if doc == nil {
		return 2
	}
	return indentUnit(doc)
}
