package jsonscan

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/go-json-experiment/json/jsontext"
)

// corners are the grammar's edges where validators tend to differ.
var corners = []string{
	`{"a":1}`, `{"a":1,"a":2}`, "{\"a\":\"\xff\xfe\"}", `"\ud800"`, `"\udc00\ud800"`, `"\u00e9"`, `[]`, `{}`,
	` [ 1 , -0.5e+3 , 2E-2 , true , false , null ] `, `{"a":"\/\b\f\n\r\t\\\"\u00e9"}`, "\"\x7f é 😀\"", `0`, `-0`, `1.5`, `1e400`,
	`[1,2,]`, `{"a" 1}`, `01`, `1.`, `1e`, `-`, `+1`, `.5`, `"\u12"`, `"\x"`, "\"a\x00\"", "\ufeff{}", `{}x`, `{} {}`, ``, ` `,
	`{"a":1,}`, `{,}`, `[,1]`, `tru`, `nul`, `[` + strings.Repeat("[", 300) + strings.Repeat("]", 301),
	`[` + strings.Repeat("[", 10001) + `]`, ` {"messages":[{"role":"user","content":"hi"}]} `,
}

// TestValidMatchesEncodingJSON: Valid says what json.Valid says; the fast
// scanner never accepts more, and refuses only what is too deep for it.
func TestValidMatchesEncodingJSON(t *testing.T) {
	for _, s := range corners {
		want := json.Valid([]byte(s))
		if got := Valid([]byte(s)); got != want {
			t.Errorf("Valid(%q) = %v, json.Valid says %v", s, got, want)
		}
		fast := FastValid([]byte(s))
		if fast && !want {
			t.Errorf("FastValid accepts %q, json.Valid refuses it", s)
		}
		if !fast && want && !strings.HasPrefix(s, "[[[") {
			t.Errorf("FastValid refuses %q, json.Valid accepts it", s)
		}
	}
}

// TestSkipValue: on valid JSON each Skip function lands just past what it skips.
func TestSkipValue(t *testing.T) {
	tests := []struct {
		in   string
		at   int
		want string // what SkipValue(in, at) skips
	}{
		{`"a\"b" ,`, 0, `"a\"b"`},
		{`"a\\" ,`, 0, `"a\\"`},
		{`{"a":[1,"]}"],"b":{}} x`, 0, `{"a":[1,"]}"],"b":{}}`},
		{`[1, [2, 3]] ,`, 0, `[1, [2, 3]]`},
		{`  true,`, 0, `  true`},
		{`-1.5e3}`, 0, `-1.5e3`},
		{`null]`, 0, `null`},
		{`[1,"x"]`, 3, `"x"`},
	}
	for _, tt := range tests {
		end := SkipValue([]byte(tt.in), tt.at)
		if got := tt.in[tt.at:end]; got != tt.want {
			t.Errorf("SkipValue(%q, %d) skipped %q, want %q", tt.in, tt.at, got, tt.want)
		}
	}
	in := []byte(`{"k\"" :  [1, 2] , "x":1}`)
	if key, val, next := Member(in, 1); string(key) != `"k\""` || string(val) != `[1, 2]` || in[SkipWS(in, next)] != ',' {
		t.Errorf("Member read key %s, value %s, next %d", key, val, next)
	}
	if i := SkipWS([]byte(" \t\r\nx"), 0); i != 4 {
		t.Errorf("SkipWS stopped at %d, want 4", i)
	}
	if i := SkipString([]byte(`"abc`), 0); i != 4 {
		t.Errorf("SkipString of an unterminated string returned %d, want the end (4)", i)
	}
}

// FuzzValid: Valid says what json.Valid says, and neither the fast scanner
// nor jsontext (as configured) ever accepts what json.Valid refuses (each
// fallback only rescues what the faster one refused). On what it accepts,
// SkipValue spans the whole value.
func FuzzValid(f *testing.F) {
	for _, s := range corners {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want := json.Valid(b)
		if got := Valid(b); got != want {
			t.Fatalf("Valid(%q) = %v, json.Valid says %v", b, got, want)
		}
		if fast := jsontext.Value(b).IsValid(validOpts...); fast && !want {
			t.Fatalf("jsontext accepts %q, which json.Valid refuses", b)
		}
		if FastValid(b) {
			if !want {
				t.Fatalf("FastValid accepts %q, which json.Valid refuses", b)
			}
			if end := SkipWS(b, SkipValue(b, 0)); end != len(b) {
				t.Fatalf("SkipValue on valid %q stops at %d of %d", b, end, len(b))
			}
		}
	})
}
