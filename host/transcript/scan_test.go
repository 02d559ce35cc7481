package transcript

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/core"
)

// userTextReference is UserText as it was before the scan (scan.go): the
// whole body decoded by encoding/json, which is what the scan leaves its
// corners to (userTextDecoded). UserText must answer as it does for every
// input.
var userTextReference = userTextDecoded

// capturedBodies are the request bodies OpenClaw 2026.9.6 sent (as
// captured, and with a real MetaClaw block where the capture plugin put
// its markers).
func capturedBodies(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "testdata", "openclaw-2026.9.6", "requests", "*.request.json"))
	if err != nil || len(files) < 10 {
		t.Fatalf("captured requests missing: %d files, %v", len(files), err)
	}
	injected := core.Render([]core.Section{{Title: "Memories", Body: "- the user prefers tabs"}}).Block
	quoted, _ := json.Marshal(injected)
	inner := string(quoted[1 : len(quoted)-1])
	var out []string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var capture struct {
			Body json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(raw, &capture); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, string(capture.Body),
			strings.NewReplacer("MC-PREPEND", inner, "MC-APPEND-CTX", inner).Replace(string(capture.Body)))
	}
	return out
}

// generatedBodies are request bodies of every shape the decoder treats
// differently: both wire formats, histories, tool rounds, content as a
// string, parts, null or a wrong type, keys in other cases or escaped,
// fields named twice, nulls, wrong types, escapes and invalid UTF-8.
func generatedBodies(n int, seed int64) []string {
	r := rand.New(rand.NewSource(seed))
	pick := func(xs ...string) string { return xs[r.Intn(len(xs))] }
	text := func() string {
		return pick(`"I prefer tabs"`, `"use pnpm, not npm"`, `""`, `"line\nbreak \"quoted\" \\ back"`, `"caf\u00e9 \ud83c\udf89"`,
			`"bad `+"\xff\xfe"+` utf8"`, `"[Mon 2026-11-30 03:16 UTC] Hello\n\nRuntime: agent=main | host=vm"`,
			`"<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>> x <<<END_OPENCLAW_INTERNAL_CONTEXT>>>"`, `"lone \ud800 surrogate"`,
			`"`+strings.Repeat("You are a coding agent. ", 40)+`"`, `"\u003cmetaclaw_context\u003e"`, `"tab\there"`)
	}
	part := func() string {
		return pick(`{"type":"text","text":`+text()+`}`, `{"type":"input_text","text":`+text()+`}`, `{"type":"image_url","image_url":{"url":"x"}}`,
			`{"type":"tool_result","tool_use_id":"t","content":"out"}`, `{"type":"text"}`, `{"type":"text","text":null}`, `{"Type":"TEXT","Text":"x"}`,
			`{"type":"refusal","refusal":"no"}`, `1`, `null`, `"str"`, `{"type":"text","text":1}`)
	}
	content := func() string {
		switch r.Intn(8) {
		case 0, 1, 2:
			return text()
		case 3, 4:
			ps := make([]string, r.Intn(4))
			for i := range ps {
				ps[i] = part()
			}
			return "[" + strings.Join(ps, ",") + "]"
		default:
			return pick(`null`, `{"a":1}`, `42`, `true`, `[]`, `[ ]`)
		}
	}
	key := func(name string) string {
		switch r.Intn(14) {
		case 0:
			return `"` + strings.ToUpper(name) + `"`
		case 1:
			return `"` + strings.ToUpper(name[:1]) + name[1:] + `"`
		case 2:
			return `"\u00` + fmt.Sprintf("%x", name[0]) + name[1:] + `"` // escaped first letter
		case 3:
			return `"` + strings.ReplaceAll(name, "s", "ſ") + `"` // folds to s
		case 4:
			return `"` + name + `x"`
		default:
			return `"` + name + `"`
		}
	}
	ws := func() string { return pick("", "", "", " ", "\n  ", "\t") }
	message := func() string {
		switch r.Intn(60) {
		case 0:
			return "null"
		case 1:
			return pick(`1`, `"user"`, `[]`, `true`)
		}
		var fs []string
		role := pick(`"user"`, `"user"`, `"user"`, `"user"`, `"user"`, `"assistant"`, `"system"`, `"tool"`, `"us\u0065r"`, `"User"`, `null`, `"user `+"\xff"+`"`)
		if r.Intn(60) == 0 {
			role = pick(`1`, `{}`, `["user"]`, `false`)
		}
		fs = append(fs, key("role")+":"+ws()+role)
		if r.Intn(6) > 0 {
			fs = append(fs, key("content")+":"+ws()+content())
		}
		if r.Intn(5) == 0 {
			fs = append(fs, pick(`"name":"x"`, `"tool_call_id":"t1"`, `"tool_calls":[{"id":"1","function":{"name":"f","arguments":"{\"a\":[1,{\"b\":\"}\"}]}"}}]`))
		}
		if r.Intn(25) == 0 {
			fs = append(fs, key("role")+":"+pick(`"assistant"`, `"user"`, `null`))
		}
		if r.Intn(25) == 0 {
			fs = append(fs, key("content")+":"+content())
		}
		r.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
		return "{" + ws() + strings.Join(fs, ","+ws()) + ws() + "}"
	}
	var out []string
	for range n {
		var fs []string
		if r.Intn(3) > 0 {
			fs = append(fs, `"model":"m"`)
		}
		if r.Intn(3) == 0 {
			fs = append(fs, `"system":`+pick(text(), `[{"type":"text","text":"S"}]`))
		}
		switch r.Intn(20) {
		case 0:
			fs = append(fs, key("messages")+":"+pick(`null`, `{}`, `"x"`, `3`))
		default:
			ms := make([]string, r.Intn(6))
			for i := range ms {
				ms[i] = message()
			}
			if r.Intn(2) == 0 { // most requests end with what the user said
				ms = append(ms, `{"role":"user","content":`+text()+`}`)
			}
			fs = append(fs, key("messages")+":"+ws()+"["+ws()+strings.Join(ms, ","+ws())+ws()+"]")
		}
		if r.Intn(25) == 0 {
			fs = append(fs, key("messages")+`:[{"role":"user","content":"again"}]`)
		}
		if r.Intn(4) == 0 {
			fs = append(fs, `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"stream":true,"n":1.5e3`)
		}
		r.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
		body := ws() + "{" + strings.Join(fs, ",") + "}" + ws()
		switch r.Intn(16) {
		case 0:
			body = body[:r.Intn(len(body)+1)] // truncated
		case 1:
			b := []byte(body)
			b[r.Intn(len(b))] = pick(`"`, `}`, `]`, `,`, `\`, "\x00", "\xff", ` `)[0]
			body = string(b)
		case 2:
			body = pick(`null`, `[]`, `"x"`, `0`, ``, `  `, `{}`, `{"messages":[]}`) // other documents
		}
		out = append(out, body)
	}
	return out
}

// TestUserTextMatchesDecoder runs the scan and the decoder it replaced on
// the captured OpenClaw requests and on generated bodies of every shape.
func TestUserTextMatchesDecoder(t *testing.T) {
	bodies := append(capturedBodies(t), generatedBodies(20000, 1)...)
	nonEmpty := 0
	for _, b := range bodies {
		got, want := UserText(b), userTextReference(b)
		if got != want {
			t.Fatalf("UserText(%q) = %q, the decoder says %q", b, got, want)
		}
		if want != "" {
			nonEmpty++
		}
	}
	if nonEmpty < len(bodies)/5 {
		t.Fatalf("only %d of %d bodies have user text: the corpus does not exercise the scan", nonEmpty, len(bodies))
	}
}

// TestUserTextNesting: the validator and encoding/json agree at the
// nesting limit (10,000) and past it.
func TestUserTextNesting(t *testing.T) {
	for _, depth := range []int{9999, 10000, 10001} {
		b := `{"messages":[{"role":"user","content":"hi"}],"x":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
		if got, want := UserText(b), userTextReference(b); got != want {
			t.Errorf("depth %d: %q, the decoder says %q", depth, got, want)
		}
	}
}

func FuzzUserText(f *testing.F) {
	for _, b := range capturedBodies(f) {
		f.Add(b)
	}
	for _, b := range generatedBodies(200, 2) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if got, want := UserText(body), userTextReference(body); got != want {
			t.Fatalf("UserText(%q) = %q, the decoder says %q", body, got, want)
		}
	})
}

// BenchmarkUserText is the new user text of an agent turn as the loaded
// proxy records it: a 6 KB system prompt with the injected block appended,
// and a question.
func BenchmarkUserText(b *testing.B) {
	block := core.Render([]core.Section{{Title: "Memories", Body: strings.Repeat("- the user prefers tabs over spaces in Go code\n", 160)}}).Block
	sys, _ := json.Marshal(strings.Repeat("You are a coding agent working in the user's repository. Follow the workspace rules and keep answers short. ", 56)[:6000] + "\n\n" + block)
	body := `{"model":"m","messages":[{"role":"system","content":` + string(sys) + `},{"role":"user","content":"Can you help me rename the parser and make sure it handles errors?"}]}`
	for _, impl := range []struct {
		name string
		fn   func(string) string
	}{{"scan", UserText}, {"decoder", userTextReference}} {
		b.Run(impl.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for range b.N {
				if impl.fn(body) == "" {
					b.Fatal("no user text")
				}
			}
		})
	}
}
