package store

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBoundTurnKeepsJSONValidAndUserText(t *testing.T) {
	image := strings.Repeat("QUJD", 600_000) // 2.4 MB of base64
	req := `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,` + image + `"}}]},` +
		`{"role":"assistant","content":"` + strings.Repeat("long answer ", 50_000) + `"},{"role":"user","content":"what is in the picture? é"}]}`
	tr := &Turn{RequestJSON: req, ResponseText: strings.Repeat("é", 800_000), ToolCallsJSON: `[]`, Reasoning: "short"}
	if !BoundTurn(tr, 1<<20) {
		t.Fatal("nothing cut")
	}
	if !json.Valid([]byte(tr.RequestJSON)) || len(tr.RequestJSON) > 1<<20 {
		t.Fatalf("request: valid=%v len=%d", json.Valid([]byte(tr.RequestJSON)), len(tr.RequestJSON))
	}
	var body struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal([]byte(tr.RequestJSON), &body); err != nil || len(body.Messages) != 3 {
		t.Fatalf("structure lost: %v %d", err, len(body.Messages))
	}
	if string(body.Messages[2].Content) != `"what is in the picture? é"` {
		t.Errorf("short user text changed: %s", body.Messages[2].Content)
	}
	if !strings.Contains(tr.RequestJSON, "bytes not stored]") {
		t.Error("no marker in the shortened request")
	}
	if len(tr.ResponseText) > 1<<20+64 || !utf8.ValidString(tr.ResponseText) || !strings.HasSuffix(tr.ResponseText, "bytes not stored]") {
		t.Errorf("answer: len %d, valid utf8 %v", len(tr.ResponseText), utf8.ValidString(tr.ResponseText))
	}
	if tr.Reasoning != "short" || tr.ToolCallsJSON != "[]" {
		t.Error("small fields changed")
	}
}

func TestShrinkJSON(t *testing.T) {
	many := "[" + strings.Repeat(`"abcdefgh",`, 10000) + `"x"]`
	tests := []struct {
		name, doc string
		max       int
		wantHead  bool // fell back to the head object
	}{
		{"fits", `{"a":"b"}`, 100, false},
		{"escapes kept whole", `{"a":"` + strings.Repeat(`\u00e9\n\"`, 2000) + `"}`, 1000, false},
		{"many small strings", many, 1000, true},
		{"not json", strings.Repeat("{", 5000), 1000, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := ShrinkJSON(tc.doc, tc.max)
			if !json.Valid([]byte(out)) {
				t.Fatalf("invalid JSON: %.200s", out)
			}
			if len(out) > tc.max+200 {
				t.Errorf("len %d > max %d", len(out), tc.max)
			}
			if got := strings.Contains(out, "metaclaw_truncated"); got != tc.wantHead {
				t.Errorf("head fallback = %v, want %v: %.200s", got, tc.wantHead, out)
			}
		})
	}
}

func FuzzShrinkJSON(f *testing.F) {
	f.Add(`{"a":"`+strings.Repeat("é\\u0041\\\"", 100)+`","b":[1,2,"`+strings.Repeat("z", 300)+`"]}`, 200)
	f.Add(`"\\`, 10)
	f.Add(`["\ud800"]`, 70)
	f.Fuzz(func(t *testing.T, doc string, max int) {
		if max < 0 || max > 1<<16 {
			return
		}
		out := ShrinkJSON(doc, max)
		if len(doc) <= max {
			if out != doc {
				t.Fatal("a fitting document was changed")
			}
			return
		}
		if !json.Valid([]byte(out)) {
			t.Fatalf("invalid output for %q (max %d): %q", doc, max, out)
		}
	})
}
