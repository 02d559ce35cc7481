package completion

import (
	"strings"
	"testing"
)

var benchCompletion = "<think>\n" + strings.Repeat("Let me consider the options carefully. ", 40) + "\n</think>\n\n" +
	strings.Repeat("Here is the answer with some detail. ", 40) +
	"\n<tool_call>\n{\"name\": \"exec\", \"arguments\": {\"command\": \"ls -la\"}}\n</tool_call>"

func BenchmarkParseCompletion(b *testing.B) {
	b.SetBytes(int64(len(benchCompletion)))
	for i := 0; i < b.N; i++ {
		Parse(benchCompletion, Options{})
	}
}

// BenchmarkStreamCompletion feeds ~4-byte pieces, as decoded tokens arrive.
func BenchmarkStreamCompletion(b *testing.B) {
	b.SetBytes(int64(len(benchCompletion)))
	for i := 0; i < b.N; i++ {
		p := NewStreamParser(Options{})
		for j := 0; j < len(benchCompletion); j += 4 {
			p.Feed(benchCompletion[j:min(j+4, len(benchCompletion))])
		}
		p.Finish()
	}
}
