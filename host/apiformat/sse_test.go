package apiformat

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(r io.Reader) ([]Event, error) {
	sr := NewSSEReader(r)
	var out []Event
	for {
		ev, err := sr.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, ev)
	}
}

func TestSSEReader(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want []Event
	}{
		{"openai style", "data: {\"a\":1}\n\ndata: [DONE]\n\n", []Event{{Data: []byte(`{"a":1}`)}, {Data: []byte("[DONE]")}}},
		{"named, CRLF", "event: ping\r\ndata: {}\r\n\r\n", []Event{{Name: "ping", Data: []byte("{}")}}},
		{"multi-line data and comments", ": hello\ndata: a\n: mid\ndata:b\ndata:  c\n\n", []Event{{Data: []byte("a\nb\n c")}}},
		{"no space after colon, id and retry ignored", "id: 7\nretry: 10\nevent:x\ndata:y\n\n", []Event{{Name: "x", Data: []byte("y")}}},
		{"event without data is not dispatched", "event: a\n\ndata: b\n\n", []Event{{Data: []byte("b")}}},
		{"name resets between events", "event: a\ndata: 1\n\ndata: 2\n\n", []Event{{Name: "a", Data: []byte("1")}, {Data: []byte("2")}}},
		{"empty data line", "data\n\ndata:\n\n", []Event{{Data: []byte{}}, {Data: []byte{}}}},
		{"final event without blank line", "data: 1\n\ndata: [DONE]\n", []Event{{Data: []byte("1")}, {Data: []byte("[DONE]")}}},
		{"final event without newline", "data: x", []Event{{Data: []byte("x")}}},
		{"final CR only", "data: x\r", []Event{{Data: []byte("x")}}},
		{"BOM", "\xef\xbb\xbfdata: x\n\n", []Event{{Data: []byte("x")}}},
		{"unknown field ignored", "foo: bar\ndata: x\n\n", []Event{{Data: []byte("x")}}},
		{"blank lines only", "\n\n\n", nil},
		{"empty", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, r := range []io.Reader{strings.NewReader(tc.in), iotest.OneByteReader(strings.NewReader(tc.in))} {
				got, err := readAll(r)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Errorf("got %q\nwant %q", got, tc.want)
				}
			}
		})
	}
}

func TestSSEReaderLongLines(t *testing.T) {
	big := strings.Repeat("x", 17<<20) // beyond the 16 MiB the proxy must accept
	in := "data: " + big + "\n\nevent: e\ndata: small\n\n"
	got, err := readAll(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || len(got[0].Data) != len(big) || string(got[1].Data) != "small" || got[1].Name != "e" {
		t.Fatalf("got %d events", len(got))
	}

	huge := strings.Repeat("y", maxLineSize+10)
	_, err = readAll(strings.NewReader("data: " + huge + "\n\n"))
	if !errors.Is(err, ErrTooLong) {
		t.Errorf("want ErrTooLong, got %v", err)
	}
	line := "data: " + strings.Repeat("z", 1<<20) + "\n"
	_, err = readAll(strings.NewReader(strings.Repeat(line, 65) + "\n"))
	if !errors.Is(err, ErrTooLong) {
		t.Errorf("event limit: want ErrTooLong, got %v", err)
	}
}

func TestSSEReaderReadError(t *testing.T) {
	boom := errors.New("boom")
	r := NewSSEReader(io.MultiReader(strings.NewReader("data: a\n\ndata: b"), iotest.ErrReader(boom)))
	if ev, err := r.Next(); err != nil || string(ev.Data) != "a" {
		t.Fatalf("first: %q %v", ev.Data, err)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("want boom, got %v", err)
	}
	if _, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("error must be sticky, got %v", err)
	}
}

func TestWriteEvent(t *testing.T) {
	cases := []struct {
		ev   Event
		want string
	}{
		{Event{Data: []byte(`{"a":1}`)}, "data: {\"a\":1}\n\n"},
		{Event{Name: "message_stop", Data: []byte(`{}`)}, "event: message_stop\ndata: {}\n\n"},
		{Event{Data: []byte("a\nb\r\nc\rd")}, "data: a\ndata: b\ndata: c\ndata: d\n\n"},
		{Event{Name: "x\ny", Data: nil}, "event: x y\ndata: \n\n"},
	}
	for _, tc := range cases {
		var buf bytes.Buffer
		if err := WriteEvent(&buf, tc.ev); err != nil {
			t.Fatal(err)
		}
		if buf.String() != tc.want {
			t.Errorf("WriteEvent(%q) = %q, want %q", tc.ev.Data, buf.String(), tc.want)
		}
	}
	// one Write per event
	var cw countingWriter
	_ = WriteEvent(&cw, Event{Name: "n", Data: []byte("a\nb")})
	if cw.n != 1 {
		t.Errorf("%d writes, want 1", cw.n)
	}
	if err := WriteEvent(iotest.TruncateWriter(errWriter{}, 0), Event{}); err != nil {
		t.Log(err)
	}
	if err := WriteEvent(errWriter{}, Event{}); err == nil {
		t.Error("write error not returned")
	}
}

type countingWriter struct{ n int }

func (c *countingWriter) Write(p []byte) (int, error) { c.n++; return len(p), nil }

type errWriter struct{}

func (errWriter) Write(p []byte) (int, error) { return 0, errors.New("closed") }

func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "\n\r\t\b\f\x00\x1f", "<&>", "é😀", "\u2028\u2029", "bad\xffutf8\xc3"} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		// encoding/json writes \b and \f as \u0008/\u000c; compare decoded values
		// and require our output to be valid.
		got := appendString(nil, s)
		var g, w string
		if json.Unmarshal(got, &g) != nil || json.Unmarshal(want, &w) != nil || g != w {
			t.Errorf("appendString(%q) = %s, encoding/json %s", s, got, want)
		}
		if bytes.Contains(got, []byte(`\u003c`)) {
			t.Errorf("HTML-escaped: %s", got)
		}
	}
}
