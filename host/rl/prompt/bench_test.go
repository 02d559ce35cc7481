package prompt_test

import (
	"testing"

	"github.com/metaclaw-go/metaclaw/host/rl/prompt"
	"github.com/metaclaw-go/metaclaw/internal/rlgoldens"
)

func benchCase(b *testing.B, name string) (*prompt.Codec, rlgoldens.ChatCase) {
	b.Helper()
	codec, err := prompt.Load(rlgoldens.TokenizerDir(b))
	if err != nil {
		b.Fatal(err)
	}
	cases, err := rlgoldens.ChatCases()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range cases {
		if c.Name == name {
			return codec, c
		}
	}
	b.Fatalf("no case %s", name)
	return nil, rlgoldens.ChatCase{}
}

// BenchmarkRenderAgentTurn renders a real OpenClaw tool round (45 KB system
// prompt, 12 tools, a tool call and its result) with Qwen3's template.
func BenchmarkRenderAgentTurn(b *testing.B) {
	codec, c := benchCase(b, "openclaw-04-tool-round2")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := codec.Template.Render(c.Conv.Messages, c.Conv.Tools, c.Opts); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEncodeChatAgentTurn is the whole prompt path: render + encode.
func BenchmarkEncodeChatAgentTurn(b *testing.B) {
	codec, c := benchCase(b, "openclaw-04-tool-round2")
	p, err := codec.EncodeChat(c.Conv, c.Opts)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(p.Text)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := codec.EncodeChat(c.Conv, c.Opts); err != nil {
			b.Fatal(err)
		}
	}
}
