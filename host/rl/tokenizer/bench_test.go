package tokenizer_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/rl/tokenizer"
	"github.com/metaclaw-go/metaclaw/internal/rlgoldens"
)

// agentPrompt is the 45 KB system prompt OpenClaw 2026.9.6 sent.
func agentPrompt(b *testing.B) string {
	b.Helper()
	data, err := os.ReadFile(filepath.Join(rlgoldens.TestdataDir(), "openclaw", "01-openai-completions.turn1.body.json"))
	if err != nil {
		b.Fatal(err)
	}
	var body struct {
		Messages []struct{ Content json.RawMessage } `json:"messages"`
	}
	var s string
	if err := json.Unmarshal(data, &body); err != nil || json.Unmarshal(body.Messages[0].Content, &s) != nil {
		b.Fatal("no system prompt")
	}
	return s
}

// BenchmarkEncodeAgentPrompt: a repeated prompt (the piece cache is warm),
// as every turn after the first of a session.
func BenchmarkEncodeAgentPrompt(b *testing.B) {
	tok := qwen(b)
	s := agentPrompt(b)
	tok.Encode(s)
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tok.Encode(s)
	}
}

// BenchmarkEncodeAgentPromptCold: a fresh tokenizer, nothing cached.
func BenchmarkEncodeAgentPromptCold(b *testing.B) {
	data, err := os.ReadFile(filepath.Join(rlgoldens.TokenizerDir(b), tokenizer.TokenizerFile))
	if err != nil {
		b.Fatal(err)
	}
	s := agentPrompt(b)
	b.SetBytes(int64(len(s)))
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		tok, err := tokenizer.FromJSON(data)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		tok.Encode(s)
	}
}

func BenchmarkDecodeAgentPrompt(b *testing.B) {
	tok := qwen(b)
	s := agentPrompt(b)
	ids := tok.Encode(s)
	b.SetBytes(int64(len(s)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tok.Decode(ids)
	}
}

func BenchmarkLoadQwen3(b *testing.B) {
	dir := rlgoldens.TokenizerDir(b)
	for i := 0; i < b.N; i++ {
		if _, err := tokenizer.Load(dir); err != nil {
			b.Fatal(err)
		}
	}
}
