package tokenizer

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/dlclark/regexp2/v2"
)

func promptText(b *testing.B) string {
	data, err := os.ReadFile("../testdata/openclaw/01-openai-completions.turn1.body.json")
	if err != nil {
		b.Fatal(err)
	}
	var body struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	_ = json.Unmarshal(data, &body)
	return body.Messages[0].Content
}

// The hand-written scanner against regexp2 running the same pattern, on the
// 45 KB agent prompt: what the scanner buys.
func BenchmarkPretokenizeScanner(b *testing.B) {
	s := promptText(b)
	g := gptScanner{maxDigits: 1}
	b.SetBytes(int64(len(s)))
	for i := 0; i < b.N; i++ {
		g.split(s, func(string) {})
	}
}

func BenchmarkPretokenizeRegexp2(b *testing.B) {
	s := promptText(b)
	p := splitPre{m: regexMatcher{regexp2.MustCompile(qwenPattern, regexp2.None)}, behavior: behaviorIsolated}
	b.SetBytes(int64(len(s)))
	for i := 0; i < b.N; i++ {
		p.appendPieces(nil, s)
	}
}
