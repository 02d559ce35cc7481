package serve_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/prompt"
	"github.com/metaclaw-go/metaclaw/host/rl/samples"
	"github.com/metaclaw-go/metaclaw/host/rl/serve"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/rlgoldens"
	"github.com/metaclaw-go/metaclaw/internal/rltest"
)

// instant answers at once with a fixed 64-token answer: what remains of a
// turn's time is ours alone.
type instant struct{ tokens []int32 }

func (instant) ID() string   { return "instant" }
func (instant) Path() string { return "" }
func (s instant) Sample(context.Context, backend.SampleRequest) (*backend.SampleResult, error) {
	lps := make([]float32, len(s.tokens))
	for i := range lps {
		lps[i] = -0.5
	}
	return &backend.SampleResult{Sequences: []backend.Sequence{{Tokens: s.tokens, Logprobs: lps, StopReason: "stop"}}}, nil
}

func benchResponder(b *testing.B, codec *prompt.Codec) *serve.Responder {
	b.Helper()
	st, err := store.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), store.DBFile))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	var toks []int32
	for len(toks) < 63 {
		for _, id := range rltest.Words {
			toks = append(toks, id)
		}
	}
	cur := &backend.Current{}
	cur.Swap(instant{tokens: append(toks[:63], rltest.EOS)}, 0)
	r, err := serve.New(serve.Options{Codec: codec, Current: cur, Samples: samples.New(st.Writer(), st.Reader()), BaseModel: rltest.Model, NeedJudge: true, Log: zerolog.Nop()})
	if err != nil {
		b.Fatal(err)
	}
	return r
}

func benchRespond(b *testing.B, codec *prompt.Codec, body []byte, stream bool) {
	r := benchResponder(b, codec)
	ctx := context.Background()
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := r.Respond(ctx, proxy.MainTurn{API: apiformat.OpenAI, Body: body, Stream: stream, Agent: "a", Session: "bench"})
		if err != nil || resp.StatusCode != 200 {
			b.Fatalf("respond: %v", err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
	}
}

// BenchmarkRespondAgentTurn: our side of serving one main turn of a real
// OpenClaw request (45 KB system prompt, 12 tools) with Qwen3's tokenizer:
// template, encoding, decoding and parsing a 64-token answer, the response
// body and the sample row. Needs the tokenizer files (make rl-tokenizer).
func BenchmarkRespondAgentTurn(b *testing.B) {
	codec, err := prompt.Load(rlgoldens.TokenizerDir(b))
	if err != nil {
		b.Fatal(err)
	}
	body, err := os.ReadFile(filepath.Join(rlgoldens.TestdataDir(), "openclaw", "01-openai-completions.turn1.body.json"))
	if err != nil {
		b.Fatal(err)
	}
	for _, stream := range []bool{false, true} {
		b.Run(map[bool]string{false: "whole", true: "stream"}[stream], func(b *testing.B) { benchRespond(b, codec, body, stream) })
	}
}

// BenchmarkRespondSmallTurn is a short chat turn (mini tokenizer).
func BenchmarkRespondSmallTurn(b *testing.B) {
	benchRespond(b, rltest.Codec(b), []byte(`{"model":"m","messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"Hello, how are you today?"}]}`), false)
}
