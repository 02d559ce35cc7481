package apiformat

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func fixtureBody(b *testing.B, prefix string) []byte {
	for _, f := range loadFixtures(b) {
		if f.name[:2] == prefix {
			return f.body
		}
	}
	b.Fatalf("fixture %s missing", prefix)
	return nil
}

// BenchmarkOpenAIToAnthropicRequest: fixture 01, a first turn with OpenClaw's
// 44 KB system prompt and 12 tools.
func BenchmarkOpenAIToAnthropicRequest(b *testing.B) {
	body := fixtureBody(b, "01")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := OpenAIToAnthropicRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAnthropicToOpenAIRequest(b *testing.B) {
	body := fixtureBody(b, "07")
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := AnthropicToOpenAIRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamTranslate reports the cost per upstream event.
func BenchmarkStreamTranslate(b *testing.B) {
	cases := []struct {
		file string
		newT func() StreamTranslator
	}{
		{"openai_parallel_tools.sse", func() StreamTranslator { return NewOpenAIToAnthropicStream("m") }},
		{"anthropic_tool_thinking.sse", NewAnthropicToOpenAIStream},
	}
	for _, tc := range cases {
		evs := readEvents(b, filepath.Join("testdata", tc.file))
		b.Run(tc.file, func(b *testing.B) {
			b.ReportAllocs()
			var tr StreamTranslator
			i := 0
			for b.Loop() {
				if i%len(evs) == 0 {
					tr = tc.newT()
				}
				if _, err := tr.Translate(evs[i%len(evs)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

func BenchmarkSSEReadWrite(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("testdata", "anthropic_tool_thinking.sse"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewSSEReader(bytes.NewReader(raw))
		for {
			ev, err := r.Next()
			if err == io.EOF {
				break
			}
			if err := WriteEvent(io.Discard, ev); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkSSELargeEvents relays 1 MiB events (the shape of a huge answer):
// read, summarise with the store's limit, write.
func BenchmarkSSELargeEvents(b *testing.B) {
	ev := `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"` + strings.Repeat("a", 1<<20) + `"},"finish_reason":null}]}` + "\n\n"
	raw := bytes.Repeat([]byte(ev), 16)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewSSEReader(bytes.NewReader(raw))
		acc := NewAccumulatorLimit(OpenAI, 1<<20)
		for {
			ev, err := r.Next()
			if err == io.EOF {
				break
			}
			acc.Add(ev)
			if err := WriteEvent(io.Discard, ev); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkSummarizeAnswer is the proxy's one decode of every
// non-streaming answer (summary for the turn, shape check).
func BenchmarkSummarizeAnswer(b *testing.B) {
	answer := []byte(`{"id":"chatcmpl-fake","object":"chat.completion","created":1764472580,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Here is the change you asked for, with a test."},"finish_reason":"stop"}],"usage":{"prompt_tokens":1500,"completion_tokens":12,"total_tokens":1512}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := SummarizeAnswer(OpenAI, answer); err != nil {
			b.Fatal(err)
		}
	}
}
