package tinker

import (
	"context"
	"math/rand/v2"
	"net/http/httptest"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/batch"
	"github.com/metaclaw-go/metaclaw/internal/faketinker"
	"github.com/metaclaw-go/metaclaw/internal/faketinker/toy"
)

// batch16x8k is a built batch of 16 samples of 8,192 tokens; completion ids
// come from the toy vocabulary so the fake trains on them.
func batch16x8k(b *testing.B) []backend.Datum {
	rng := rand.New(rand.NewPCG(3, 4))
	var samples []batch.Sample
	for i := 0; i < 16; i++ {
		s := batch.Sample{Group: string(rune('a' + i/2)), Prompt: make([]int32, 7168), Completion: make([]int32, 1024), Logprobs: make([]float32, 1024), Reward: float64(i%2*2 - 1)}
		for j := range s.Prompt {
			s.Prompt[j] = rng.Int32N(151936)
		}
		for j := range s.Completion {
			s.Completion[j] = rng.Int32N(32)
			s.Logprobs[j] = -3.4
		}
		samples = append(samples, s)
	}
	built, err := batch.Build(samples, batch.Options{Advantage: batch.GRPO})
	if err != nil || len(built.Datums) != 16 {
		b.Fatalf("build: %v", err)
	}
	return built.Datums
}

// BenchmarkEncodeForwardBackward16x8k: JSON bodies of a forward_backward
// over 16 datums of 8k tokens, cut by the default chunk limits (5 MB).
func BenchmarkEncodeForwardBackward16x8k(b *testing.B) {
	data := batch16x8k(b)
	c := &Client{chunkLen: 1024, chunkSize: 5_000_000}
	tr := &Trainer{c: c, id: "sess:train:0"}
	b.ReportAllocs()
	var size, chunks int
	for b.Loop() {
		bodies, err := tr.EncodeForwardBackward(data, backend.ImportanceSampling)
		if err != nil {
			b.Fatal(err)
		}
		size, chunks = 0, len(bodies)
		for _, x := range bodies {
			size += len(x)
		}
	}
	b.ReportMetric(float64(size), "bytes")
	b.ReportMetric(float64(chunks), "chunks")
}

// BenchmarkStep16x8k: one whole training step (forward_backward, optim_step,
// ephemeral sampler save) through HTTP against the fake with zero latency.
// The time includes the fake's own JSON decoding and toy model.
func BenchmarkStep16x8k(b *testing.B) {
	data := batch16x8k(b)
	fake := faketinker.New(faketinker.Options{APIKey: "tml-b", Models: []toy.Config{{Name: "toy", MaxContext: 16384}}})
	ts := httptest.NewServer(fake)
	defer ts.Close()
	defer fake.Close()
	ctx := context.Background()
	c, err := Connect(ctx, Options{BaseURL: ts.URL, APIKey: "tml-b"})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	tr, err := c.CreateModel(ctx, backend.ModelConfig{BaseModel: "toy", LoRA: backend.DefaultLoRA(8)})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := backend.RunStep(ctx, tr, backend.StepRequest{Data: data, Loss: backend.ImportanceSampling, Adam: backend.DefaultAdam(1e-4)}); err != nil {
			b.Fatal(err)
		}
	}
}
