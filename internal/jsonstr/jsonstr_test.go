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

// BenchmarkAppendPlain is a system prompt's or a block's long runs of
// plain text.
func BenchmarkAppendPlain(b *testing.B) {
	s := strings.Repeat("You are a personal assistant running inside an agent runtime. Follow the workspace rules.\n", 70)
	b.SetBytes(int64(len(s)))
	var dst []byte
	for b.Loop() {
		dst = Append(dst[:0], s)
	}
}

func BenchmarkAppend(b *testing.B) {
	s := "<metaclaw_context>\n" + strings.Repeat("- the user prefers tabs over spaces in \"Go\" files.\n", 60) + "</metaclaw_context>"
	b.ReportAllocs()
	var dst []byte
	for b.Loop() {
		dst = Append(dst[:0], s)
	}
}

// Every byte value at every position of an 8-byte word, among plain
// neighbours, so the word-at-a-time skip never passes over a byte that
// needs escaping or UTF-8 decoding.
// Pairs of them too: a borrow from one byte must not hide another.
func TestAppendEveryByteInAWord(t *testing.T) {
	check := func(s string) {
		t.Helper()
		if got, want := Append(nil, s), encodingJSONString(s); !bytes.Equal(got, want) {
			t.Fatalf("%q: got %s, want %s", s, got, want)
		}
	}
	plain := strings.Repeat("abcdefgh", 3)[:19]
	for c := 0; c < 256; c++ {
		for pos := 0; pos < len(plain); pos++ {
			b := []byte(plain)
			b[pos] = byte(c)
			check(string(b))
			for _, d := range []byte{0x00, 0x1f, '"', '\\', 0x7f, 0x80, 0xe2, 0xff} {
				for pos2 := pos + 1; pos2 < len(plain) && pos2 < pos+9; pos2++ {
					b2 := append([]byte(nil), b...)
					b2[pos2] = d
					check(string(b2))
				}
			}
		}
	}
}
