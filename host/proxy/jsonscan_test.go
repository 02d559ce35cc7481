package proxy

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/metaclaw-go/metaclaw/internal/jsonscan"
)

func TestObjectFieldsAndArrayItems(t *testing.T) {
	tests := []struct {
		in   string
		keys []string
	}{
		{`{}`, nil},
		{` { "a" : 1 , "b":"x\"y}" ,"c":[1,{"d":"]"}], "e\u0041":null,"f":true} `, []string{"a", "b", "c", "eA", "f"}},
		{`{"s":"\\\\","t":"\\\""}`, []string{"s", "t"}},
		{`{"n":-1.5e3,"m":{}}`, []string{"n", "m"}},
	}
	for _, tt := range tests {
		fs := objectFields([]byte(tt.in))
		var keys []string
		for _, f := range fs {
			keys = append(keys, f.key)
		}
		if !reflect.DeepEqual(keys, tt.keys) {
			t.Errorf("%s: keys %v, want %v", tt.in, keys, tt.keys)
		}
		var want map[string]json.RawMessage
		json.Unmarshal([]byte(tt.in), &want)
		for _, f := range fs {
			if !json.Valid(f.val) || !bytes.Equal(compact(f.val), compact(want[f.key])) {
				t.Errorf("%s: field %s = %s, want %s", tt.in, f.key, f.val, want[f.key])
			}
		}
	}
	items := arrayItems([]byte(` [ 1, "a,b", {"x":[2,3]}, [], null ] `))
	if len(items) != 5 || string(items[1]) != `"a,b"` || string(items[2]) != `{"x":[2,3]}` {
		t.Fatalf("items %q", items)
	}
}

func compact(b []byte) []byte {
	var buf bytes.Buffer
	json.Compact(&buf, b)
	return buf.Bytes()
}

func TestAppendToContent(t *testing.T) {
	tests := []struct{ in, want string }{
		{``, `"B"`},
		{`null`, `"B"`},
		{`""`, `"B"`},
		{`"sys <x> \"q\""`, `"sys <x> \"q\"\n\nB"`},
		{`[]`, `[{"text":"B","type":"text"}]`},
		{`[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]`, `[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}},{"text":"B","type":"text"}]`},
		{`42`, `42`},
	}
	for _, tt := range tests {
		got := string(appendToContent([]byte(tt.in), "B"))
		if got != tt.want {
			t.Errorf("appendToContent(%s) = %s, want %s", tt.in, got, tt.want)
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("invalid JSON %s", got)
		}
	}
}

// FuzzScanners checks the scanners against encoding/json on any valid object.
func FuzzScanners(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `{"a":"\\\"","b":[{"c":"}"}]}`, `{"messages":[{"role":"user","content":"hi"}]}`, `{}`, `{"":""}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := []byte(s)
		var want map[string]json.RawMessage
		if json.Unmarshal(b, &want) != nil {
			return
		}
		fs := objectFields(b)
		got := map[string]json.RawMessage{}
		for _, f := range fs {
			if !json.Valid(f.val) {
				t.Fatalf("field %q has invalid value %q", f.key, f.val)
			}
			got[f.key] = f.val // last wins, like encoding/json
		}
		if len(got) != len(want) {
			t.Fatalf("keys %d vs %d", len(got), len(want))
		}
		for k, v := range want {
			if !bytes.Equal(compact(got[k]), compact(v)) {
				t.Fatalf("key %q: %s vs %s", k, got[k], v)
			}
		}
		re := appendObject(nil, fs)
		if !json.Valid(re) {
			t.Fatalf("reassembled object invalid: %s", re)
		}
	})
}

func TestReadBody(t *testing.T) {
	body := strings.Repeat("x", 5000)
	for _, tt := range []struct {
		name          string
		contentLength int64
	}{
		{"announced", 5000}, {"unknown", -1}, {"understated", 100}, {"overstated", 9000}, {"over the limit", 1 << 30},
	} {
		got, err := readBody(strings.NewReader(body), tt.contentLength, 1<<20)
		if err != nil || string(got) != body {
			t.Errorf("%s: read %d bytes, err %v; want all 5000", tt.name, len(got), err)
		}
	}
	if _, err := readBody(iotest.ErrReader(io.ErrUnexpectedEOF), 10, 1<<20); err != io.ErrUnexpectedEOF {
		t.Errorf("a failing reader: err %v, want it passed on", err)
	}
}

// TestFastValidTakesAgentBodies: real agent bodies take jsonscan's fast
// path (else every request would pay for the slower checks too; the
// grammar's corners are internal/jsonscan's tests).
func TestFastValidTakesAgentBodies(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "openclaw-2026.9.6", "requests", "01-openai-completions.turn1.request.json"))
	if err != nil {
		t.Fatal(err)
	}
	var capt struct{ Body json.RawMessage }
	if err := json.Unmarshal(raw, &capt); err != nil {
		t.Fatal(err)
	}
	if !jsonscan.FastValid(capt.Body) || !jsonscan.FastValid(raw) {
		t.Error("the fast scanner refuses a captured OpenClaw request")
	}
}

// TestValidAgentID: the hand check accepts what the pattern it replaced
// accepted, and nothing else.
func TestValidAgentID(t *testing.T) {
	pattern := regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$`)
	ids := []string{"", "default", "a", "A9._:@-x", "-a", ".a", "_a", "a b", "a/b", "é", "a\n", "\na", "a$", strings.Repeat("a", 128), strings.Repeat("a", 129), "main@host:1.2-3_4", "a\x00"}
	for c := 0; c < 256; c++ {
		ids = append(ids, string([]byte{byte(c)}), "a"+string([]byte{byte(c)}))
	}
	for _, id := range ids {
		if got, want := validAgentID(id), pattern.MatchString(id); got != want {
			t.Errorf("validAgentID(%q) = %v, the pattern says %v", id, got, want)
		}
	}
}
