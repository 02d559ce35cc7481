package jsonstr

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// encodingJSONString is what Append must write: encoding/json's
// Encoder without HTML escaping.
func encodingJSONString(s string) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return bytes.TrimRight(buf.Bytes(), "\n")
}

func TestAppendMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		"", "plain", `quote " and \ backslash`, "\n\r\t\b\f\x00\x01\x1f\x7f",
		"<html> & 'x'", "héllo 世界 🎉", "line\u2028sep\u2029para", "bad \xff\xfe utf8 \xc3",
		"<metaclaw_context>\n## Memories\n\n- a\n</metaclaw_context>",
	} {
		got := Append([]byte("prefix"), s)
		want := append([]byte("prefix"), encodingJSONString(s)...)
		if !bytes.Equal(got, want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	}
}

func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "a\"b\\c\n", "\xff\u2028é\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := Append(nil, s), encodingJSONString(s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	})
}

func BenchmarkAppend(b *testing.B) {
	s := "<metaclaw_context>\n" + strings.Repeat("- the user prefers tabs over spaces in \"Go\" files.\n", 60) + "</metaclaw_context>"
	b.ReportAllocs()
	var dst []byte
	for b.Loop() {
		dst = Append(dst[:0], s)
	}
}
