package tokenizer

import (
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkMerge merges every piece of the 45 KB agent prompt with Qwen3's
// merges, past the piece cache: the heap's work. The files are where
// tokfetch.DefaultDir("qwen3") keeps them (tokfetch imports this package,
// so it cannot be asked here).
func BenchmarkMerge(b *testing.B) {
	dir := os.Getenv("METACLAW_TOKENIZER_CACHE")
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			b.Skip(err)
		}
		dir = filepath.Join(cache, "metaclaw", "tokenizers")
	}
	data, err := os.ReadFile(filepath.Join(dir, "qwen3", TokenizerFile))
	if err != nil {
		b.Skipf("Qwen3 tokenizer files not found (%v); run `make rl-tokenizer`", err)
	}
	tok, err := FromJSON(data)
	if err != nil {
		b.Fatal(err)
	}
	var pieces []string
	gptScanner{maxDigits: 1}.split(promptText(b), func(p string) {
		if len(p) > 1 {
			pieces = append(pieces, p)
		}
	})
	var dst []int
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, p := range pieces {
			dst = tok.model.merge(dst[:0], p)
		}
	}
}
