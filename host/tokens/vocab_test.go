package tokens

import (
	"encoding/base64"
	"io/fs"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tiktoken-go/tokenizer/codec"

	"github.com/metaclaw-go/metaclaw/internal/heapstat"
)

var (
	refOnce  sync.Once
	refCodec *codec.Codec
)

// reference is tiktoken-go's own o200k_base codec. Built after Warm, it
// also shows that the codec still works once our copy released its map.
func reference() *codec.Codec {
	Warm()
	refOnce.Do(func() { refCodec = codec.NewO200kBase() })
	return refCodec
}

// corpus is varied text: prose, code, JSON, non-ASCII scripts, emoji and
// combining marks, contractions in every case, digits, long runs of one
// character class, base64, invalid UTF-8, and random strings over a mix
// of rune classes.
func corpus(t *testing.T) []string {
	out := []string{
		"hello", "Hello, World!", "The quick brown fox jumps over the lazy dog.",
		"I'VE been there; you're right, they'd say it's John's and we'll see. DON'T SHOUT",
		"你好，世界！这是一个测试。", "日本語のテキストとカタカナ、ひらがな。", "Привет, мир! Ёжик в тумане.",
		"مرحبا بالعالم", "שלום עולם", "नमस्ते दुनिया", "한국어 텍스트입니다", "Ελληνικά κείμενα",
		"café naïve coöperate résumé", "e\u0301 a\u0308 n\u0303 combining marks", "emoji 😀👍🏽🚀 family 👨‍👩‍👧‍👦 flags 🇫🇷🇯🇵",
		"func main() {\n\tfmt.Println(\"hi\")\n\tfor i := 0; i < 10; i++ {\n\t\tx[i] += 3.14159\n\t}\n}\n",
		"def f(x):\n    return [y ** 2 for y in range(x) if y % 3 == 0]  # comment\r\n",
		`{"model":"gpt-4o","messages":[{"role":"user","content":"What's 12345678 + 9?"}],"temperature":0.7,"tools":[]}`,
		"CRLF\r\n\r\nlines\r\n  \n\t\n", "   leading and trailing spaces   ", "\n\n\n", " ", "\t",
		"1234567890 12 123 1234 3.14159e-10 0xFF 1_000_000", "$100.00 & 50% off!!! ??? ... --- ***",
		"https://example.com/path/to/page?query=1&x=y#frag", "/usr/local/bin:/usr/bin:/bin",
		"CamelCaseIdentifier snake_case_identifier SCREAMING_CASE kebab-case", "ALLCAPS WORDS HERE",
		strings.Repeat("a", 10000), strings.Repeat(" ", 5000), strings.Repeat("\n", 3000), strings.Repeat("ab", 4000),
		strings.Repeat("9", 1001), strings.Repeat("!", 777), strings.Repeat("é", 2000), strings.Repeat("😀", 500),
		strings.Repeat("token ", 1000), strings.Repeat("x ", 3000) + "y",
		"\xff\xfe invalid utf8", "a\xc3(b", "\xe2\x82", "ok\xf0\x9f\x98", string([]byte{0, 1, 2, 0x7f, 0x80, 0xff}),
		"a\x7fb", // U+007F: the codec's generated matcher leaves it out of every piece
	}
	r := rand.New(rand.NewSource(1))
	blob := make([]byte, 15000)
	r.Read(blob)
	out = append(out, base64.StdEncoding.EncodeToString(blob), base64.RawURLEncoding.EncodeToString(blob[:3000]))
	pools := []string{"abcXYZ", " \t\n\r", "0123456789", ".,;:!?'\"()[]{}<>/\\-_=+*&^%$#@~`|", "éüßñçÀ", "你好世界日本", "😀🚀👍🏽", "\u0301\u0308", "'s'T're'LL"}
	for range 300 {
		var b strings.Builder
		for n := r.Intn(200); n > 0; n-- {
			p := []rune(pools[r.Intn(len(pools))])
			b.WriteRune(p[r.Intn(len(p))])
		}
		out = append(out, b.String())
	}
	// Real text: the skill bank and this package's sources.
	root := filepath.Join("..", "skills", "bank")
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			if raw, err := os.ReadFile(path); err == nil {
				out = append(out, string(raw))
			}
		}
		return nil
	})
	for _, f := range []string{"tokens.go", "vocab.go", "tokens_test.go"} {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(raw))
	}
	return out
}

// TestCountMatchesCodec: every count is tiktoken-go's o200k_base count.
func TestCountMatchesCodec(t *testing.T) {
	ref := reference()
	texts := corpus(t)
	if len(texts) < 350 {
		t.Fatalf("corpus of %d texts: the skill bank was not read", len(texts))
	}
	for _, s := range texts {
		want, err := ref.Count(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := Count(s); got != want {
			t.Errorf("Count(%.40q) (%d bytes) = %d, codec %d", s, len(s), got, want)
		}
	}
}

// TestMergeScanMatchesHeap: the two merge strategies agree on every piece
// length around the switch from one to the other.
func TestMergeScanMatchesHeap(t *testing.T) {
	Warm()
	r := rand.New(rand.NewSource(2))
	letters := "abcdefghijklmnopqrstuvwxyzéü"
	for n := 2; n <= maxScanPiece; n++ {
		for range 20 {
			var b strings.Builder
			for b.Len() < n {
				b.WriteByte(letters[r.Intn(len(letters))])
			}
			p := b.String()[:n]
			var buf [maxScanPiece + 1]int32
			if s, h := bpe.mergeScan(p, buf[:n+1]), bpe.mergeHeap(p); s != h {
				t.Fatalf("%q: scan %d parts, heap %d", p, s, h)
			}
		}
	}
}

// FuzzCountMatchesCodec compares counts with the codec on any input.
func FuzzCountMatchesCodec(f *testing.F) {
	for _, s := range []string{"hello world", "I'LL", "你好", "\xff", "  \n\n x", "12345", "😀"} {
		f.Add(s)
	}
	ref := reference()
	f.Fuzz(func(t *testing.T, s string) {
		want, err := ref.Count(s)
		if err != nil {
			t.Skip()
		}
		if got := Count(s); got != want {
			t.Fatalf("Count(%q) = %d, codec %d", s, got, want)
		}
	})
}

// TestWarmHeap: once loaded, the tokenizer adds little for the GC to scan
// (the codec's own map: 6.7 MB scannable, 580 objects). It runs in a child
// process so that nothing else has loaded the vocabulary yet.
func TestWarmHeap(t *testing.T) {
	if os.Getenv("TOKENS_WARM_HEAP_CHILD") == "1" {
		h0 := heapstat.Now()
		start := time.Now()
		Warm()
		took := time.Since(start)
		d := heapstat.Now().Minus(h0)
		t.Logf("warm: %v; live %+.2f MB, scan %+.2f MB, objects %+d", took, float64(d.Live)/(1<<20), float64(d.Scan)/(1<<20), d.Objects)
		if d.Scan > 256<<10 || d.Objects > 200 {
			t.Fatalf("the loaded tokenizer adds %d scannable bytes and %d objects", d.Scan, d.Objects)
		}
		return
	}
	if testing.Short() {
		t.Skip("runs a child test process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestWarmHeap$", "-test.v")
	cmd.Env = append(os.Environ(), "TOKENS_WARM_HEAP_CHILD=1")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatal(err)
	}
}

// benchText is the skill bank as one text (~prose and code).
func benchText(b *testing.B) string {
	var sb strings.Builder
	filepath.WalkDir(filepath.Join("..", "skills", "bank"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			raw, _ := os.ReadFile(path)
			sb.Write(raw)
		}
		return nil
	})
	if sb.Len() == 0 {
		b.Fatal("no skill bank")
	}
	return sb.String()
}

// BenchmarkCount and BenchmarkCodecCount count the same text with this
// package and with tiktoken-go's codec.
func BenchmarkCount(b *testing.B) {
	s := benchText(b)
	Warm()
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		Count(s)
	}
}

func BenchmarkCodecCount(b *testing.B) {
	s := benchText(b)
	ref := reference()
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		ref.Count(s)
	}
}

// BenchmarkMergeHeap merges pieces too long for mergeScan: a long word,
// a run of one letter pair, and a run of letters from base64.
func BenchmarkMergeHeap(b *testing.B) {
	Warm()
	r := rand.New(rand.NewSource(3))
	word := make([]byte, 600)
	for i := range word {
		word[i] = "etaoinshrdlucmfwyp"[r.Intn(18)]
	}
	blob := make([]byte, 3000)
	r.Read(blob)
	letters := strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' {
			return c
		}
		return -1
	}, base64.StdEncoding.EncodeToString(blob))
	pieces := []string{string(word), strings.Repeat("ab", 300), letters}
	b.ReportAllocs()
	for b.Loop() {
		for _, p := range pieces {
			bpe.mergeHeap(p)
		}
	}
}
