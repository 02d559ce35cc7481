package edit

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/internal/fixtures"
)

// seedFiles adds the real client configs matching testdata/pattern.
func seedFiles(f *testing.F, pattern string) {
	for _, p := range fixtures.Glob(f, pattern, 1) {
		if b, err := os.ReadFile(p); err == nil && len(b) < 64<<10 {
			f.Add(b, "k", "v")
		}
	}
}

// FuzzJSON5Edit: parsing never panics, and every edit that succeeds leaves
// text that re-parses to exactly the intended data (strict JSON stays strict).
func FuzzJSON5Edit(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":1}`, "{a:1,}", "{\n  // c\n  a: { b: [1, 2,], },\n}", `[1,2]`, `{"a":{"b":"c"}}`, "{'x': 'y' /* c */}", `{"s": "\u00e9"}`} {
		f.Add([]byte(s), "k", "v")
	}
	seedFiles(f, "clients/*/*/*.json*")
	f.Fuzz(func(t *testing.T, src []byte, key, val string) {
		d, err := ParseJSON(src)
		if err != nil {
			return
		}
		strict := d.Strict()
		ops := []func() error{
			func() error { return d.Set(P(key), val) },
			func() error { return d.Set(P("metaclaw", key, "x"), O("a", val, "b", []any{val, 1, true})) },
			func() error { return d.Append(P("list-"+key), val) },
			func() error { return d.Append(P(key), O("k", val)) },
		}
		for _, op := range ops {
			if op() != nil {
				continue
			}
			if err := d.Verify(); err != nil {
				t.Fatalf("edit verified badly: %v\nsrc: %q\nout: %q", err, src, d.Bytes())
			}
			if strict && !json.Valid(d.Bytes()) {
				t.Fatalf("strict JSON became invalid: %q", d.Bytes())
			}
			if _, err := ParseJSON(d.Bytes()); err != nil {
				t.Fatalf("result does not re-parse: %v\n%q", err, d.Bytes())
			}
		}
	})
}

// FuzzEnvEdit: Set never panics and the result re-parses with exactly the
// intended values.
func FuzzEnvEdit(f *testing.F) {
	for _, s := range []string{"", "A=1\n", "export A=\"x y\"  # c\n", "# only\n", "A='q'\nB=\n", "A=1"} {
		f.Add([]byte(s), "A", "v")
	}
	seedFiles(f, "clients/*/*/.env*")
	f.Fuzz(func(t *testing.T, src []byte, key, val string) {
		e, err := ParseEnv(src)
		if err != nil {
			return
		}
		if strings.ContainsRune(val, 0) {
			return
		}
		if e.Set(key, val) != nil {
			return
		}
		if err := e.Verify(); err != nil {
			t.Fatalf("%v\nsrc %q key %q val %q\nout %q", err, src, key, val, e.Bytes())
		}
		got, _ := e.Get(key)
		if got != val {
			t.Fatalf("Get after Set: %q want %q", got, val)
		}
	})
}

// FuzzTOMLEdit: edits that succeed re-parse to the intended data.
func FuzzTOMLEdit(f *testing.F) {
	for _, s := range []string{"", "a = 1\n", "[t]\nk = \"v\" # c\n", "[[a.b]]\nx = 1\n[a.b.c]\ny = 2\n", "[mcp]\nservers = []\n", "t.k = 1\n", "x = { y = 1 }\n"} {
		f.Add([]byte(s), "k", "v")
	}
	seedFiles(f, "clients/*/*/*.toml")
	f.Fuzz(func(t *testing.T, src []byte, key, val string) {
		d, err := ParseTOML(src)
		if err != nil {
			return
		}
		ops := []func() error{
			func() error { return d.Set([]string{"t", key}, "k", val) },
			func() error { return d.Set(nil, key, val) },
			func() error { return d.AppendToArray([]string{"t"}, key, val) },
			func() error { return d.AppendArrayTable([]string{"mcp", "servers"}, O("name", val)) },
			func() error { return d.Remove([]string{"t", key}, "k") },
		}
		for _, op := range ops {
			if op() != nil {
				continue
			}
			if err := d.Verify(); err != nil {
				t.Fatalf("%v\nsrc %q\nout %q", err, src, d.Bytes())
			}
		}
	})
}

// FuzzYAMLEdit: edits that succeed re-parse to the intended data.
func FuzzYAMLEdit(f *testing.F) {
	for _, s := range []string{"", "a: 1\n", "m:\n  k: v # c\n", "l:\n  - name: a\n    x: 1\n", "# only comments\n", "m: {a: 1}\n", "k: |\n  text\n  more\nn: 2\n"} {
		f.Add([]byte(s), "k", "v")
	}
	f.Fuzz(func(t *testing.T, src []byte, key, val string) {
		d, err := ParseYAML(src)
		if err != nil {
			return
		}
		ops := []func() error{
			func() error { return d.Set(P("m", key), val) },
			func() error { return d.Set(P(key), O("a", val)) },
			func() error { return d.UpsertSeqItem(P("l"), "name", O("name", val, "b", 1)) },
		}
		for _, op := range ops {
			if op() != nil {
				continue
			}
			if err := d.Verify(); err != nil {
				t.Fatalf("%v\nsrc %q\nout %q", err, src, d.Bytes())
			}
		}
	})
}
