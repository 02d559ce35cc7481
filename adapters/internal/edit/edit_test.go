package edit

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/internal/fixtures"
)

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestJSON5KeepsCommentsAndStyle(t *testing.T) {
	src := "{\n  // keep me\n  agents: { defaults: { workspace: \"~/w\" } }, // trailing\n  models: {\n    mode: 'merge', // merge | replace\n    providers: {},\n  },\n}\n"
	d, err := ParseJSON([]byte(src))
	mustOK(t, err)
	mustOK(t, d.Set(P("models", "providers", "metaclaw-main"), O("baseUrl", "http://x/v1", "models", []any{O("id", "m")})))
	mustOK(t, d.Set(P("agents", "defaults", "model"), O("primary", "metaclaw-main/m")))
	mustOK(t, d.Set(P("models", "mode"), "merge"))
	mustOK(t, d.Append(P("plugins", "allow"), "metaclaw"))
	mustOK(t, d.Verify())
	out := string(d.Bytes())
	for _, keep := range []string{"// keep me", "// trailing", "mode: 'merge', // merge | replace", `agents: { defaults: { workspace: "~/w", model: { primary: "metaclaw-main/m" } } }`} {
		if !strings.Contains(out, keep) {
			t.Fatalf("lost %q:\n%s", keep, out)
		}
	}
	if !strings.Contains(out, "\"metaclaw-main\": {\n        baseUrl: \"http://x/v1\",") {
		t.Fatalf("new member style:\n%s", out)
	}
}

func TestJSONStrictStaysStrict(t *testing.T) {
	src := "{\n  \"a\": 1,\n  \"list\": [\n    \"x\"\n  ]\n}"
	d, err := ParseJSON([]byte(src))
	mustOK(t, err)
	mustOK(t, d.Set(P("b", "c"), O("k", []any{"v"})))
	mustOK(t, d.Append(P("list"), "y"))
	mustOK(t, d.Verify())
	if !json.Valid(d.Bytes()) {
		t.Fatalf("not JSON:\n%s", d.Bytes())
	}
	want := "{\n  \"a\": 1,\n  \"list\": [\n    \"x\",\n    \"y\"\n  ],\n  \"b\": {\n    \"c\": {\n      \"k\": [\n        \"v\"\n      ]\n    }\n  }\n}"
	if string(d.Bytes()) != want {
		t.Fatalf("got\n%s\nwant\n%s", d.Bytes(), want)
	}
	if r, _ := d.Raw(P("list")); r != "[\n    \"x\",\n    \"y\"\n  ]" {
		t.Fatalf("Raw: %q", r)
	}
}

func TestJSONErrors(t *testing.T) {
	for _, bad := range []string{"", "{", "{a:}", `{"a":1}x`, "[1,,2]", "{/* open"} {
		if _, err := ParseJSON([]byte(bad)); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	d, _ := ParseJSON([]byte(`{"a": [1], "s": "x"}`))
	if err := d.Set(P("s", "k"), 1); err == nil {
		t.Error("set inside a string")
	}
	if err := d.Set(P("a", 3), 1); err == nil {
		t.Error("set past the end of an array")
	}
	if err := d.Append(P("s"), 1); err == nil {
		t.Error("append to a string")
	}
}

func TestTOMLEdits(t *testing.T) {
	src := "# head\nschema_version = 3\n\n[agents.main]   # the agent\nmodel_provider = \"ollama.default\"  # ref\n\n# about mcp\n[mcp]\nenabled = false\nservers = []\n"
	d, err := ParseTOML([]byte(src))
	mustOK(t, err)
	mustOK(t, d.Set([]string{"agents", "main"}, "model_provider", "custom.metaclaw-main"))
	mustOK(t, d.AppendToArray([]string{"agents", "main"}, "mcp_bundles", "metaclaw"))
	mustOK(t, d.AppendToArray([]string{"agents", "main"}, "mcp_bundles", "two"))
	mustOK(t, d.Set([]string{"providers", "models", "custom", "metaclaw-main"}, "uri", "http://x/v1"))
	mustOK(t, d.AppendArrayTable([]string{"mcp", "servers"}, O("name", "metaclaw", "args", []string{"mcp"})))
	mustOK(t, d.Set(nil, "top", true))
	mustOK(t, d.Verify())
	want := "# head\nschema_version = 3\ntop = true\n\n[agents.main]   # the agent\nmodel_provider = \"custom.metaclaw-main\"  # ref\nmcp_bundles = [\"metaclaw\", \"two\"]\n\n# about mcp\n[mcp]\nenabled = false\nservers = [{ name = \"metaclaw\", args = [\"mcp\"] }]\n\n[providers.models.custom.metaclaw-main]\nuri = \"http://x/v1\"\n"
	if string(d.Bytes()) != want {
		t.Fatalf("got\n%s\nwant\n%s", d.Bytes(), want)
	}
	// dotted keys and inline tables are refused, not rewritten
	d, _ = ParseTOML([]byte("[agents]\nmain.model_provider = \"x\"\n"))
	if err := d.Set([]string{"agents", "main"}, "risk_profile", "y"); err == nil || !strings.Contains(err.Error(), "by hand") {
		t.Fatalf("dotted: %v", err)
	}
	d, _ = ParseTOML([]byte("agents = { main = { a = 1 } }\n"))
	if err := d.Set([]string{"agents", "main"}, "b", 2); err == nil {
		t.Fatal("inline table edited")
	}
}

func TestYAMLEdits(t *testing.T) {
	src := "# cfg\nmodel:\n  default: \"x\"   # the model\n  provider: auto\ncustom_providers:\n  - name: a\n    base_url: http://a\n    # about a\n\nhooks: {}\n"
	d, err := ParseYAML([]byte(src))
	mustOK(t, err)
	mustOK(t, d.Set(P("model", "provider"), "custom:metaclaw"))
	mustOK(t, d.Set(P("model", "default"), "y"))
	mustOK(t, d.UpsertSeqItem(P("custom_providers"), "name", O("name", "metaclaw", "base_url", "http://m/v1")))
	mustOK(t, d.UpsertSeqItem(P("custom_providers"), "name", O("name", "metaclaw", "base_url", "http://m2/v1")))
	mustOK(t, d.UpsertSeqItem(P("hooks", "pre_llm_call"), "command", O("command", "mc hook", "timeout", 10)))
	mustOK(t, d.Verify())
	want := "# cfg\nmodel:\n  default: \"y\"   # the model\n  provider: custom:metaclaw\ncustom_providers:\n  - name: a\n    base_url: http://a\n    # about a\n  - name: metaclaw\n    base_url: http://m2/v1\n\nhooks:\n  pre_llm_call:\n    - command: mc hook\n      timeout: 10\n"
	if string(d.Bytes()) != want {
		t.Fatalf("got\n%s\nwant\n%s", d.Bytes(), want)
	}
	// A flow mapping on the path is written again from the data (verified).
	d, _ = ParseYAML([]byte("model: {default: x}  # c\n"))
	mustOK(t, d.Set(P("model", "provider"), "p"))
	if got := string(d.Bytes()); got != "model: {default: x, provider: p}  # c\n" {
		t.Fatalf("flow mapping edit: %q", got)
	}
}

func TestEnvEdits(t *testing.T) {
	src := "# c\nexport A=1  # keep\nB=\"two words\"\nA=2\nC=\n"
	e, err := ParseEnv([]byte(src))
	mustOK(t, err)
	mustOK(t, e.Set("A", "3"))
	mustOK(t, e.Set("B", "has space"))
	mustOK(t, e.Set("NEW", "http://x/a?b=c"))
	mustOK(t, e.Verify())
	want := "# c\nexport A=1  # keep\nB=\"has space\"\nA=3\nC=\nNEW=\"http://x/a?b=c\"\n"
	if string(e.Bytes()) != want {
		t.Fatalf("got\n%q\nwant\n%q", e.Bytes(), want)
	}
	e, _ = ParseEnv([]byte("X=1"))
	mustOK(t, e.Set("Y", "2"))
	if string(e.Bytes()) != "X=1\nY=2\n" {
		t.Fatalf("%q", e.Bytes())
	}
}

func TestDiff(t *testing.T) {
	a := "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n"
	b := "1\n2\n3\n4\nfive\n6\n7\n8\n9\n10\n11\n"
	got := Diff("f", "f (wired)", []byte(a), []byte(b))
	want := "--- f\n+++ f (wired)\n@@ -2,9 +2,10 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n 9\n 10\n+11\n"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if Diff("f", "f", []byte(a), []byte(a)) != "" {
		t.Fatal("equal files diff")
	}
	if got := Diff("f", "f", nil, []byte("x")); got != "--- /dev/null\n+++ f\n@@ -0,0 +1 @@\n+x\n\\ No newline at end of file\n" {
		t.Fatalf("%q", got)
	}
}

func TestFixturesRoundTripUnchanged(t *testing.T) {
	for _, f := range []string{
		"clients/openclaw/docs-current/custom-providers.openclaw.json5",
		"clients/picoclaw/v3/config.example.json",
	} {
		b := fixtures.Read(t, f)
		d, err := ParseJSON(b)
		mustOK(t, err)
		mustOK(t, d.Verify())
		if string(d.Bytes()) != string(b) {
			t.Fatal("parse changed bytes")
		}
	}
}

func TestDiffCases(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b []byte
		want string
	}{
		{"remove all", []byte("x\ny\n"), []byte(""), "--- a\n+++ b\n@@ -1,2 +0,0 @@\n-x\n-y\n"},
		{"delete file", []byte("x\n"), nil, "--- a\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n"},
		{"empty file created", nil, []byte{}, "--- /dev/null\n+++ b\n"},
		{"crlf", []byte("a\r\nb\r\n"), []byte("a\r\nc\r\n"), "--- a\n+++ b\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n"},
		{"two hunks", []byte("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n"), []byte("one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\ntwelve\n"),
			"--- a\n+++ b\n@@ -1,4 +1,4 @@\n-1\n+one\n 2\n 3\n 4\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+twelve\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Diff("a", "b", tc.a, tc.b); got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// A large file with a change in the middle: the old LCS table gave up above
// 4M cells and replaced the whole middle; go-udiff shows just the change.
func TestDiffLargeFile(t *testing.T) {
	var a, b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&a, "line %d\n", i)
		if i == 2500 {
			b.WriteString("changed\n")
			continue
		}
		fmt.Fprintf(&b, "line %d\n", i)
	}
	got := Diff("a", "b", []byte(a.String()), []byte(b.String()))
	if strings.Count(got, "\n-") != 1 || strings.Count(got, "\n+") != 2 || !strings.Contains(got, "-line 2500\n+changed\n") {
		t.Fatalf("diff of one changed line:\n%s", got)
	}
}
