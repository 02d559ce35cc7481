package proxy

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/msgcontent"
	"github.com/metaclaw-go/metaclaw/internal/jsonstr"
)

// TestInjectInPlaceMatchesAppend: the block written into the system
// prompt's string at encoding (msg.appendTo) gives the message the
// field-by-field path gives (appendToContent, then appendObject), as JSON
// values; other content shapes, and a message with two "content" keys, go
// the field-by-field way.
func TestInjectInPlaceMatchesAppend(t *testing.T) {
	block := "<metaclaw_context>\n## Memories\n\n- \"quoted\" \\ back <b> & \u2028 é\n</metaclaw_context>"
	for _, tt := range []struct {
		raw     string
		inPlace bool
	}{
		{`{"role":"system","content":"You are helpful."}`, true},
		{`{"role":"system","content":"line\nnext \"q\" \u00e9","name":"x"}`, true},
		{`{ "content" : "first" , "role" : "developer" }`, true},
		{`{"role":"system","content":"ends in a backslash \\"}`, true},
		{`{"role":"system","content":"a","content":"dup"}`, false},
		{`{"role":"system","content":""}`, false},
		{`{"role":"system","content":[{"type":"text","text":"x"}]}`, false},
		{`{"role":"system"}`, false},
	} {
		r, err := parseRequest(apiformat.OpenAI, []byte(`{"messages":[`+tt.raw+`,{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		r.inject(plainText(block))
		if got := r.messages[0].appended != nil; got != tt.inPlace {
			t.Errorf("%s: in place %v, want %v", tt.raw, got, tt.inPlace)
		}
		fields := objectFields([]byte(tt.raw))
		content, _ := lookup(fields, "content")
		updated := appendToContent(content, block)
		replaced := false
		for j := range fields {
			if fields[j].key == "content" {
				fields[j].val, replaced = updated, true
			}
		}
		if !replaced {
			fields = append(fields, field{key: "content", val: updated})
		}
		want := appendObject(nil, fields)
		out, err := r.encode()
		if err != nil {
			t.Fatal(err)
		}
		var body struct{ Messages []json.RawMessage }
		if err := json.Unmarshal(out, &body); err != nil {
			t.Fatalf("%s: encoded body is not JSON: %v\n%s", tt.raw, err, out)
		}
		if !sameJSON(t, body.Messages[0], want) {
			t.Errorf("%s:\n got %s\nwant %s", tt.raw, body.Messages[0], want)
		}
		if !sameJSON(t, r.messages[0].bytes(), want) || !strings.Contains(msgcontent.Text(r.messages[0].content()), block) {
			t.Errorf("%s: the message as read back lacks the block: %s", tt.raw, r.messages[0].bytes())
		}
	}
}

func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var va, vb any
	if err := json.Unmarshal(a, &va); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &vb); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(va, vb)
}

// TestInjectLazyBlockIsByteIdentical: the block the core renders lazily
// (written escaped into the body at encoding) gives the forwarded body its
// string gave, byte for byte, in every place a block goes.
func TestInjectLazyBlockIsByteIdentical(t *testing.T) {
	lazy := core.RenderLazy([]core.Section{
		{Title: "Skills", Body: "### debugging\nReproduce \"it\", then\tbisect <b>&</b>.", Tokens: 9},
		{Title: "Memories", Body: "- \xff bad byte, \u2028 separator, é, 😀\n- second", Tokens: 12},
	})
	for _, tt := range []struct {
		api  apiformat.API
		body string
	}{
		{apiformat.OpenAI, `{"model":"m","messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"hi"}]}`},
		{apiformat.OpenAI, `{"messages":[ { "role" : "developer" , "content" : "dev \u00e9" } , {"role":"user","content":"hi"}],"stream":true}`},
		{apiformat.OpenAI, `{"messages":[{"role":"system","content":[{"type":"text","text":"x"}]},{"role":"user","content":"hi"}]}`},
		{apiformat.OpenAI, `{"messages":[{"role":"user","content":"no system"}]}`},
		{apiformat.Anthropic, `{"model":"m","system":"Be brief.","messages":[{"role":"user","content":"hi"}]}`},
		{apiformat.Anthropic, `{"system":[{"type":"text","text":"cached"}],"messages":[{"role":"user","content":"hi"}]}`},
	} {
		a, err := parseRequest(tt.api, []byte(tt.body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := parseRequest(tt.api, []byte(tt.body))
		a.inject(lazy)
		b.inject(plainText(lazy.String()))
		outA, errA := a.encode()
		outB, errB := b.encode()
		if errA != nil || errB != nil || !bytes.Equal(outA, outB) {
			t.Errorf("%s:\nlazy   %s (%v)\nstring %s (%v)", tt.body, outA, errA, outB, errB)
		}
		if !json.Valid(outA) || !strings.Contains(string(outA), "Reproduce \\\"it\\\"") {
			t.Errorf("%s: forwarded body %s", tt.body, outA)
		}
	}
}

// The injected ids are stored as json.Marshal writes them.
func TestIDsJSONMatchesMarshal(t *testing.T) {
	for _, ids := range [][]string{
		{"skill:debug"},
		{"memory:01J9Z", "skill:go-tests", "memory:42"},
		{`quote"d`, `back\slash`, "tab\there", "é世"},
		{"a<b", "c&d"}, // encoding/json escapes these for HTML
		{"bad \xff utf8", "line\u2028sep"},
	} {
		want, _ := json.Marshal(ids)
		if got := idsJSON(ids); got != string(want) {
			t.Errorf("%q: got %s, want %s", ids, got, want)
		}
	}
}

// plainText is a string to inject, the block as it was before the core
// rendered it lazily: the two must encode byte for byte alike.
type plainText string

func (t plainText) Len() int                     { return len(t) }
func (t plainText) String() string               { return string(t) }
func (t plainText) AppendJSON(dst []byte) []byte { return jsonstr.AppendBody(dst, string(t)) }
