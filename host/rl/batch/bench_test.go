package batch

import (
	"math/rand/v2"
	"runtime"
	"testing"
)

// benchSamples makes n samples of 8k tokens each (7k prompt, 1k completion),
// two per prompt group.
func benchSamples(n int) []Sample {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]Sample, n)
	for i := range out {
		s := Sample{Group: string(rune('a' + i/2)), Prompt: make([]int32, 7168), Completion: make([]int32, 1024), Logprobs: make([]float32, 1024), Reward: float64(i%3 - 1)}
		for j := range s.Prompt {
			s.Prompt[j] = rng.Int32N(151936)
		}
		for j := range s.Completion {
			s.Completion[j] = rng.Int32N(151936)
			s.Logprobs[j] = -rng.Float32() * 5
		}
		out[i] = s
	}
	return out
}

// BenchmarkBuild16x8k: advantages and datums for a batch of 16 samples of
// 8,192 tokens.
func BenchmarkBuild16x8k(b *testing.B) {
	samples := benchSamples(16)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Build(samples, Options{Advantage: GRPO}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPendingSampleMemory reports the heap held by one pending 8k-token
// sample (ids as int32, logprobs as float32).
func BenchmarkPendingSampleMemory(b *testing.B) {
	const n = 64
	var keep []Sample
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		keep = benchSamples(n)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "bytes/sample")
	}
	runtime.KeepAlive(keep)
}
