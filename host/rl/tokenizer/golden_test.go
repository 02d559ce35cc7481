package tokenizer_test

import (
	"strings"
	"sync"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/metaclaw-go/metaclaw/host/rl/tokenizer"
	"github.com/metaclaw-go/metaclaw/internal/rlgoldens"
)

var (
	qwenOnce sync.Once
	qwenTok  *tokenizer.Tokenizer
	qwenErr  error
)

// qwen loads the cached Qwen3 tokenizer once per test binary.
func qwen(t testing.TB) *tokenizer.Tokenizer {
	t.Helper()
	dir := rlgoldens.TokenizerDir(t)
	qwenOnce.Do(func() { qwenTok, qwenErr = tokenizer.Load(dir) })
	if qwenErr != nil {
		t.Fatal(qwenErr)
	}
	return qwenTok
}

func goldens(t testing.TB) rlgoldens.Goldens {
	t.Helper()
	g, err := rlgoldens.LoadGoldens()
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestGoldenTexts encodes and decodes the tricky strings of texts.json and
// compares with the reference tokenizer.
func TestGoldenTexts(t *testing.T) {
	tok := qwen(t)
	texts, _, err := rlgoldens.Texts()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]rlgoldens.TextGolden{}
	for _, g := range goldens(t).Texts {
		want[g.Name] = g
	}
	for _, tc := range texts {
		t.Run(tc.Name, func(t *testing.T) {
			w, ok := want[tc.Name]
			if !ok {
				t.Fatal("no golden: regenerate with tools/rlgoldens/run.sh")
			}
			ids := tok.Encode(tc.Text)
			if !equalInts(ids, w.IDs) {
				t.Fatalf("Encode(%q)\n got %v\nwant %v", clip(tc.Text), ids, w.IDs)
			}
			if got := tok.Decode(ids); got != w.Decoded {
				t.Errorf("Decode = %q, want %q", clip(got), clip(w.Decoded))
			}
			if got := tok.DecodeSkipSpecial(ids); got != w.DecodedSkipSpecial {
				t.Errorf("DecodeSkipSpecial = %q, want %q", clip(got), clip(w.DecodedSkipSpecial))
			}
		})
	}
}

// TestGoldenDecodes decodes id sequences that cut characters, hold invalid
// UTF-8 or special tokens, all at once and streamed id by id.
func TestGoldenDecodes(t *testing.T) {
	tok := qwen(t)
	_, decodes, err := rlgoldens.Texts()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]rlgoldens.DecodeGolden{}
	for _, g := range goldens(t).Decodes {
		want[g.Name] = g
	}
	for _, dc := range decodes {
		t.Run(dc.Name, func(t *testing.T) {
			w := want[dc.Name]
			ids, err := dc.IDs(tok)
			if err != nil {
				t.Fatal(err)
			}
			if !equalInts(ids, w.IDs) {
				t.Fatalf("ids %v, golden %v", ids, w.IDs)
			}
			for _, skip := range []bool{false, true} {
				wantText := w.Decoded
				got := tok.Decode(ids)
				if skip {
					wantText, got = w.DecodedSkipSpecial, tok.DecodeSkipSpecial(ids)
				}
				if got != wantText {
					t.Errorf("skip=%v: Decode = %q, want %q", skip, got, wantText)
				}
				d := tok.NewStreamDecoder(skip)
				var b strings.Builder
				for _, id := range ids {
					piece := d.Add(id)
					if strings.ContainsRune(piece, '\uFFFD') && !strings.ContainsRune(wantText, '\uFFFD') {
						t.Errorf("streamed piece %q has a replacement character", piece)
					}
					b.WriteString(piece)
				}
				b.WriteString(d.Flush())
				if b.String() != wantText {
					t.Errorf("skip=%v: streamed %q, want %q", skip, b.String(), wantText)
				}
			}
		})
	}
}

// TestGoldenRenderedPrompts encodes the reference's own rendered prompts
// (the small ones stored whole), so a tokenizer fault is told apart from a
// template fault.
func TestGoldenRenderedPrompts(t *testing.T) {
	tok := qwen(t)
	n := 0
	for _, g := range goldens(t).Chat {
		if g.Rendered == "" || g.IDs == nil {
			continue
		}
		n++
		if ids := tok.Encode(g.Rendered); !equalInts(ids, g.IDs) {
			t.Errorf("%s: ids differ from the reference", g.Name)
		}
		// Decoding gives the prompt back, after Qwen's NFC normalization.
		if got := tok.Decode(g.IDs); got != norm.NFC.String(g.Rendered) {
			t.Errorf("%s: Decode(ids) does not give the prompt back", g.Name)
		}
	}
	if n < 5 {
		t.Fatalf("only %d prompts stored whole", n)
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
