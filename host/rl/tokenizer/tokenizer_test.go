package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// tinyJSON builds a byte-level BPE tokenizer.json: the 256 byte tokens, the
// given merges (as byte-level strings "a b"), the added tokens, and the
// pre-tokenizer and normalizer given.
func tinyJSON(t testing.TB, merges []string, added []map[string]any, pre, normalizer any, mergesAsPairs bool) []byte {
	t.Helper()
	vocab := map[string]int{}
	for b := 0; b < 256; b++ {
		vocab[string(byteToRune[b])] = b
	}
	var pairs [][2]string
	for _, m := range merges {
		a, b, _ := strings.Cut(m, " ")
		pairs = append(pairs, [2]string{a, b})
		if _, ok := vocab[a+b]; !ok {
			vocab[a+b] = len(vocab)
		}
	}
	var mergesJSON any = merges
	if mergesAsPairs {
		mergesJSON = pairs
	}
	if pre == nil {
		pre = map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": qwenPattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
		}}
	}
	data, err := json.Marshal(map[string]any{
		"added_tokens":  added,
		"normalizer":    normalizer,
		"pre_tokenizer": pre,
		"decoder":       map[string]any{"type": "ByteLevel"},
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": mergesJSON},
	})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func mustTiny(t testing.TB, merges []string, added []map[string]any, pre, normalizer any) *Tokenizer {
	t.Helper()
	tok, err := FromJSON(tinyJSON(t, merges, added, pre, normalizer, false))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func pieces(t *Tokenizer, ids []int) []string {
	var out []string
	for _, id := range ids {
		out = append(out, string(t.TokenBytes(id)))
	}
	return out
}

func TestBPEMergesByRank(t *testing.T) {
	// Ranks: "a b" before "b c" before "ab c"; "Ġ" is the byte-level space.
	merges := []string{"b c", "a b", "ab c", "Ġ a", "a a", "aa aa"}
	for _, pairs := range []bool{false, true} {
		tok, err := FromJSON(tinyJSON(t, merges, nil, nil, nil, pairs))
		if err != nil {
			t.Fatal(err)
		}
		for in, want := range map[string]string{
			"abc":    "a|bc",   // bc (rank 0) wins over ab (rank 1); then no "a bc"
			"ab":     "ab",     //
			"aaaaa":  "aaaa|a", // left to right: aa aa a → aaaa a
			" abc x": " a|bc| |x",
			"":       "",
		} {
			got := strings.Join(pieces(tok, tok.Encode(in)), "|")
			if got != want {
				t.Errorf("pairs=%v Encode(%q) = %q, want %q", pairs, in, got, want)
			}
		}
	}
}

func TestAddedTokens(t *testing.T) {
	added := []map[string]any{
		{"id": 300, "content": "<|im_start|>", "special": true},
		{"id": 301, "content": "<|im_end|>", "special": true},
		{"id": 302, "content": "<think>", "special": false},
		{"id": 303, "content": "<|im", "special": false}, // shorter, same start: longest wins
		{"id": 304, "content": "[L]", "special": true, "lstrip": true},
		{"id": 305, "content": "[R]", "special": true, "rstrip": true},
		{"id": 306, "content": "word", "special": false, "single_word": true},
	}
	tok := mustTiny(t, nil, added, nil, nil)
	for in, want := range map[string]string{
		"<|im_start|>user<|im_end|>": "<|im_start|>|u|s|e|r|<|im_end|>",
		"<|im x":                     "<|im| |x",
		"a<think>b":                  "a|<think>|b",
		"a  [L]b":                    "a|[L]|b",
		"a[R]  b":                    "a|[R]|b",
		"word swordfish word.":       "word| |s|w|o|r|d|f|i|s|h| |word|.",
	} {
		got := strings.Join(pieces(tok, tok.Encode(in)), "|")
		if got != want {
			t.Errorf("Encode(%q) = %q, want %q", in, got, want)
		}
	}
	ids := tok.Encode("<|im_start|>hi<think><|im_end|>")
	if got := tok.Decode(ids); got != "<|im_start|>hi<think><|im_end|>" {
		t.Errorf("Decode = %q", got)
	}
	if got := tok.DecodeSkipSpecial(ids); got != "hi<think>" {
		t.Errorf("DecodeSkipSpecial = %q", got)
	}
	plain := tok.EncodePlain("a<|im_end|>")
	if len(plain) != 11 || tok.Decode(plain) != "a<|im_end|>" {
		t.Errorf("EncodePlain = %v", plain)
	}
	if !tok.IsSpecial(301) || tok.IsSpecial(302) || tok.IsSpecial(-1) || tok.IsSpecial(99999) {
		t.Error("IsSpecial")
	}
	if got := len(tok.AddedTokens()); got != len(added) {
		t.Errorf("AddedTokens: %d", got)
	}
	if err := tok.readConfig([]byte(`{"eos_token": {"content": "<|im_end|>"}, "pad_token": null}`)); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(tok.StopTokenIDs()); got != "[301]" {
		t.Errorf("StopTokenIDs = %s", got)
	}
}

func TestNormalizedAddedTokensAndNFC(t *testing.T) {
	added := []map[string]any{{"id": 300, "content": "é!", "special": false, "normalized": true}}
	tok := mustTiny(t, nil, added, nil, map[string]any{"type": "Sequence", "normalizers": []any{map[string]any{"type": "NFC"}}})
	// "e" + combining acute is normalized to "é" first, then matched.
	x, _ := tok.ByteTokenID('x')
	if got := fmt.Sprint(tok.Encode("xe\u0301!")); got != fmt.Sprint([]int{x, 300}) {
		t.Errorf("got %s", got)
	}
	// Like the reference decoder, an added token whose runes are all in the
	// byte alphabet is spelled as those bytes: "é" is byte 0xE9 there.
	if got := tok.Decode([]int{300}); got != "\ufffd!" {
		t.Errorf("Decode = %q", got)
	}
}

func TestSplitBehaviors(t *testing.T) {
	for _, c := range []struct {
		behavior string
		invert   bool
		want     string
	}{
		{"Isolated", false, "a|-|b|-|-|c"},
		{"Removed", false, "a|b|c"},
		// As the Hugging Face docs show for "the-final--countdown".
		{"MergedWithPrevious", false, "a-|b-|-|c"},
		{"MergedWithNext", false, "a|-b|-|-c"},
		{"Contiguous", false, "a|-|b|--|c"},
		{"Isolated", true, "a|-|b|-|-|c"},
		{"Removed", true, "-|-|-"},
	} {
		pre := map[string]any{"type": "Split", "pattern": map[string]any{"String": "-"}, "behavior": c.behavior, "invert": c.invert}
		seq := map[string]any{"type": "Sequence", "pretokenizers": []any{pre, map[string]any{"type": "ByteLevel", "use_regex": false}}}
		tok, err := FromJSON(tinyJSON(t, nil, nil, seq, nil, false))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range tok.pre.appendPieces(nil, "a-b--c") {
			got = append(got, p)
		}
		if strings.Join(got, "|") != c.want {
			t.Errorf("%s invert=%v: %q, want %q", c.behavior, c.invert, strings.Join(got, "|"), c.want)
		}
	}
}

func TestGPT2ByteLevelRegex(t *testing.T) {
	tok := mustTiny(t, nil, nil, map[string]any{"type": "ByteLevel", "add_prefix_space": true, "use_regex": true}, nil)
	got := strings.Join(tok.pre.appendPieces(nil, "Hello world's 42!"), "|")
	if got != " Hello| world|'s| 42|!" {
		t.Errorf("got %q", got)
	}
}

func TestFromJSONRefuses(t *testing.T) {
	good := func() map[string]any {
		var m map[string]any
		_ = json.Unmarshal(tinyJSON(t, []string{"a b"}, nil, nil, nil, false), &m)
		return m
	}
	for _, c := range []struct {
		name   string
		change func(m map[string]any)
		want   string
	}{
		{"unigram", func(m map[string]any) { m["model"].(map[string]any)["type"] = "Unigram" }, `model type "Unigram" is not supported`},
		{"dropout", func(m map[string]any) { m["model"].(map[string]any)["dropout"] = 0.1 }, "dropout"},
		{"wordpiece prefix", func(m map[string]any) { m["model"].(map[string]any)["continuing_subword_prefix"] = "##" }, "continuing_subword_prefix"},
		{"metaspace", func(m map[string]any) { m["pre_tokenizer"] = map[string]any{"type": "Metaspace"} }, `pre-tokenizer "Metaspace" is not supported`},
		{"no byte level", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Split", "pattern": map[string]any{"String": " "}, "behavior": "Isolated"}
		}, "only byte-level BPE"},
		{"lowercase", func(m map[string]any) { m["normalizer"] = map[string]any{"type": "Lowercase"} }, `normalizer "Lowercase" is not supported`},
		{"decoder", func(m map[string]any) { m["decoder"] = map[string]any{"type": "WordPiece"} }, `decoder "WordPiece"`},
		{"bad merge", func(m map[string]any) { m["model"].(map[string]any)["merges"] = []string{"a"} }, "not two tokens"},
		{"merge not in vocab", func(m map[string]any) { m["model"].(map[string]any)["merges"] = []string{"q z"} }, "missing from the vocab"},
		{"missing byte", func(m map[string]any) { delete(m["model"].(map[string]any)["vocab"].(map[string]any), "a") }, "byte-level token for byte 0x61"},
		{"bad regex", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{
				map[string]any{"type": "Split", "pattern": map[string]any{"Regex": "(unclosed"}, "behavior": "Isolated"},
				map[string]any{"type": "ByteLevel", "use_regex": false}}}
		}, "pre-tokenizer regex"},
		{"behavior", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{
				map[string]any{"type": "Split", "pattern": map[string]any{"String": "x"}, "behavior": "Sideways"},
				map[string]any{"type": "ByteLevel", "use_regex": false}}}
		}, `Split behavior "Sideways"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := good()
			c.change(m)
			data, _ := json.Marshal(m)
			_, err := FromJSON(data)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
	if _, err := FromJSON([]byte("not json")); err == nil || !strings.Contains(err.Error(), "not a tokenizer.json") {
		t.Fatalf("err = %v", err)
	}
}

// TestLossyUTF8 follows Python's bytes.decode("utf-8", "replace"): one
// U+FFFD per maximal invalid subsequence.
func TestLossyUTF8(t *testing.T) {
	for in, want := range map[string]string{
		"abc":                   "abc",
		"\xff":                  "\ufffd",
		"\xe2\x82":              "\ufffd",
		"\xe2\x82A":             "\ufffdA",
		"\xe2\x82\xac":          "€",
		"\xc0\xaf":              "\ufffd\ufffd",
		"\xed\xa0\x80":          "\ufffd\ufffd\ufffd",
		"\xf0\x9f\x98":          "\ufffd",
		"\xf0\x9f\x98\x80":      "😀",
		"\xf4\x90\x80\x80":      "\ufffd\ufffd\ufffd\ufffd",
		"a\x80b":                "a\ufffdb",
		"\xe0\x80\x80":          "\ufffd\ufffd\ufffd",
		"\xf0\x9f\xe2\x82\xac!": "\ufffd€!",
	} {
		if got := lossyUTF8(nil, []byte(in)); got != want {
			t.Errorf("lossyUTF8(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzStreamDecoder(f *testing.F) {
	f.Add([]byte("h\xe2\x82\xacllo \xf0\x9f\x98\x80"), []byte{1, 2})
	f.Add([]byte("\xff\xe2\x82A\xc0"), []byte{3})
	tok := mustTiny(f, nil, []map[string]any{{"id": 300, "content": "<s>", "special": true}}, nil, nil)
	f.Fuzz(func(t *testing.T, raw []byte, cuts []byte) {
		// One byte token per input byte, with a special token after each
		// '!' so skipping is exercised too.
		var ids []int
		for _, b := range raw {
			id, _ := tok.ByteTokenID(b)
			ids = append(ids, id)
			if b == '!' {
				ids = append(ids, 300)
			}
		}
		for _, skip := range []bool{false, true} {
			want := tok.Decode(ids)
			if skip {
				want = tok.DecodeSkipSpecial(ids)
			}
			d := tok.NewStreamDecoder(skip)
			var b strings.Builder
			i := 0
			for k := 0; i < len(ids); k++ {
				n := 1
				if k < len(cuts) {
					n = int(cuts[k]%5) + 1
				}
				piece := d.Add(ids[i:min(i+n, len(ids))]...)
				if !utf8.ValidString(piece) {
					t.Fatalf("invalid UTF-8 piece %q", piece)
				}
				b.WriteString(piece)
				i = min(i+n, len(ids))
			}
			b.WriteString(d.Flush())
			if b.String() != want {
				t.Fatalf("skip=%v: streamed %q, want %q", skip, b.String(), want)
			}
		}
	})
}

func TestConcurrentEncode(t *testing.T) {
	tok := mustTiny(t, []string{"a b", "ab c"}, nil, nil, nil)
	want := fmt.Sprint(tok.Encode("abc abd xyz"))
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				tok.Encode(fmt.Sprintf("w%d_%d abc", g, i))
				if got := fmt.Sprint(tok.Encode("abc abd xyz")); got != want {
					t.Errorf("got %s", got)
					return
				}
			}
		}(g)
	}
	wg.Wait()
}

func TestUnknownIDsAndInvalidInput(t *testing.T) {
	tok := mustTiny(t, nil, nil, nil, nil)
	if got := tok.Decode([]int{-1, 104, 99999, 105}); got != "hi" {
		t.Errorf("Decode skips unknown ids: %q", got)
	}
	if _, ok := tok.Token(99999); ok {
		t.Error("Token(99999) ok")
	}
	// Invalid UTF-8 is encoded as U+FFFD.
	if got := tok.Decode(tok.Encode("a\xffb")); got != "a\ufffdb" {
		t.Errorf("got %q", got)
	}
}
