package runtime_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	rlruntime "github.com/metaclaw-go/metaclaw/host/rl/runtime"
	"github.com/metaclaw-go/metaclaw/internal/rlgoldens"
	"github.com/metaclaw-go/metaclaw/internal/rltest"
)

// timedSampler measures the time spent in the backend (the Tinker client
// and the fake behind it).
type timedSampler struct {
	backend.Sampler
	spent atomic.Int64
}

func (s *timedSampler) Sample(ctx context.Context, req backend.SampleRequest) (*backend.SampleResult, error) {
	start := time.Now()
	defer func() { s.spent.Add(int64(time.Since(start))) }()
	return s.Sampler.Sample(ctx, req)
}

// BenchmarkServeMainTurn: one main turn through the real proxy in rl mode,
// answered by the fake Tinker at zero latency (64 tokens), its sample
// stored. Reported: the whole turn, the part spent inside Sampler.Sample
// (our Tinker client and the fake), and the rest: our serving overhead
// (proxy, injection, template, tokenizer, parsing, sample row).
func BenchmarkServeMainTurn(b *testing.B) {
	small := []byte(`{"model":"m","max_tokens":64,"messages":[{"role":"system","content":"You are helpful."},{"role":"user","content":"Hello, how are you today?"}]}`)
	b.Run("small", func(b *testing.B) { benchServe(b, rltest.TokenizerDir(), small) })
	b.Run("agent-45KB", func(b *testing.B) {
		dir := rlgoldens.TokenizerDir(b)
		body, err := os.ReadFile(filepath.Join(rlgoldens.TestdataDir(), "openclaw", "01-openai-completions.turn1.body.json"))
		if err != nil {
			b.Fatal(err)
		}
		benchServe(b, dir, body)
	})
}

func benchServe(b *testing.B, tokenizerDir string, body []byte) {
	var timed *timedSampler
	big := rltest.ToyModel()
	big.MaxContext = 1 << 20 // the mini tokenizer encodes byte by byte
	h := startRL(b, hostOpts{model: &big, config: func(c *config.Config) {
		c.RL.TokenizerPath, c.RL.SampleMaxTokens = tokenizerDir, 64
		c.RL.PRMURL = "" // no judging in the background: serving alone is measured
	}, runtime: func(o *rlruntime.Options) {
		o.InitialSampler = func(ctx context.Context, be backend.Backend, cfg *config.Config) (backend.Sampler, int, error) {
			s, err := be.Sampler(ctx, backend.SamplerSpec{BaseModel: cfg.RL.Model})
			timed = &timedSampler{Sampler: s}
			return timed, 0, err
		}
	}})
	client := &http.Client{}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		req, _ := http.NewRequest(http.MethodPost, h.URL+"/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Session-Id", "bench")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("HTTP %d", resp.StatusCode)
		}
	}
	total := time.Since(start)
	b.StopTimer()
	if n := len(h.Upstream.Requests()); n != 0 {
		b.Fatalf("llm.* received %d requests", n)
	}
	per := float64(b.N)
	b.ReportMetric(float64(timed.spent.Load())/per/1e6, "backend-ms/op")
	b.ReportMetric((float64(total)-float64(timed.spent.Load()))/per/1e6, "ours-ms/op")
}
