package train

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/backend/tinker"
	"github.com/metaclaw-go/metaclaw/host/rl/samples"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/faketinker"
	"github.com/metaclaw-go/metaclaw/internal/faketinker/toy"
)

// instantTrainer answers every call at once: with it a benchmark measures
// only the loop's own share of a step (claiming the batch from SQLite,
// decoding the samples, building datums, recording the step and finishing
// the batch in one transaction, swapping the sampler).
type instantTrainer struct{ n int }

type instantSampler string

func (s instantSampler) ID() string   { return string(s) }
func (s instantSampler) Path() string { return "" }
func (s instantSampler) Sample(context.Context, backend.SampleRequest) (*backend.SampleResult, error) {
	return &backend.SampleResult{}, nil
}

func (t *instantTrainer) ModelID() string { return "bench:train:0" }
func (t *instantTrainer) ForwardBackward(_ context.Context, data []backend.Datum, _ backend.LossFn, _ map[string]float64) (*backend.ForwardBackwardResult, error) {
	return &backend.ForwardBackwardResult{Metrics: map[string]float64{"loss:sum": float64(len(data))}}, nil
}
func (t *instantTrainer) OptimStep(context.Context, backend.AdamParams) (*backend.OptimResult, error) {
	return &backend.OptimResult{}, nil
}
func (t *instantTrainer) SaveForSampler(context.Context, string) (backend.Sampler, error) {
	t.n++
	return instantSampler(fmt.Sprintf("bench:sample:%d", t.n)), nil
}
func (t *instantTrainer) SaveState(_ context.Context, name string) (backend.Checkpoint, error) {
	return backend.Checkpoint{Path: "bench://" + name}, nil
}
func (t *instantTrainer) LoadState(context.Context, string, bool) error             { return nil }
func (t *instantTrainer) Checkpoints(context.Context) ([]backend.Checkpoint, error) { return nil, nil }
func (t *instantTrainer) Close(context.Context) error                               { return nil }

// benchLoop is a loop over a fresh store whose trainer is tr.
func benchLoop(b *testing.B, tr backend.Trainer) (*Loop, *samples.Store) {
	st, err := store.OpenSQLite(context.Background(), filepath.Join(b.TempDir(), store.DBFile))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	cfg := config.Default(b.TempDir())
	cfg.RL.BatchSize, cfg.RL.CheckpointEvery = 16, 0
	ss := samples.New(st.Writer(), st.Reader())
	l := New(Options{Config: cfg, Samples: ss, Steps: NewStore(st.Writer(), st.Reader()), Log: zerolog.Nop(),
		Generation: func(context.Context) (int64, error) { return 0, nil }})
	l.tr, l.cur = tr, &backend.Current{}
	return l, ss
}

// addBatch16x8k stores 16 scored samples of 8,192 tokens (7,168 prompt ids,
// 1,024 completion ids from the toy vocabulary with their log-probs), pairs
// sharing a prompt, rewards alternating.
func addBatch16x8k(b *testing.B, ss *samples.Store, round int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(round), 4))
	for i := range 16 {
		prompt, completion, lps := make([]int32, 7168), make([]int32, 1024), make([]float32, 1024)
		for j := range prompt {
			prompt[j] = rng.Int32N(151936)
		}
		prompt[0] = int32(i / 2)
		for j := range completion {
			completion[j], lps[j] = rng.Int32N(32), -3.4
		}
		session := fmt.Sprintf("r%d-%d", round, i)
		id, err := ss.Add(ctx, samples.NewSample{SessionID: session, Agent: "main", BaseModel: "toy", Sampler: "s", Prompt: prompt,
			Completion: completion, Logprobs: lps, StopReason: "length", NeedJudge: true})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := ss.EndSession(ctx, session); err != nil {
			b.Fatal(err)
		}
		if _, err := ss.SetVerdict(ctx, id, "j", float64(i%2*2-1), []string{"1"}, ""); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoopStepOverhead16x8k is the loop's own share of a step over 16
// samples of 8k tokens: everything but the training service.
func BenchmarkLoopStepOverhead16x8k(b *testing.B) {
	benchSteps(b, &instantTrainer{})
}

// BenchmarkLoopStep16x8k is a whole step of the loop against the fake
// Tinker with zero latency over HTTP (forward_backward, optim_step, sampler
// save): the loop's share plus the client's and the fake's.
func BenchmarkLoopStep16x8k(b *testing.B) {
	fake := faketinker.New(faketinker.Options{APIKey: "tml-b", Models: []toy.Config{{Name: "toy", MaxContext: 16384}}})
	ts := httptest.NewServer(fake)
	b.Cleanup(func() { ts.Close(); fake.Close() })
	ctx := context.Background()
	c, err := tinker.Connect(ctx, tinker.Options{BaseURL: ts.URL, APIKey: "tml-b"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	tr, err := c.CreateModel(ctx, backend.ModelConfig{BaseModel: "toy", LoRA: backend.DefaultLoRA(8)})
	if err != nil {
		b.Fatal(err)
	}
	benchSteps(b, tr)
}

// benchSteps times one step of the loop per iteration on a new batch of 16
// samples of 8k tokens (adding the batch is not timed).
func benchSteps(b *testing.B, tr backend.Trainer) {
	l, ss := benchLoop(b, tr)
	ctx := context.Background()
	b.ReportAllocs()
	round := 0
	for b.Loop() {
		b.StopTimer()
		addBatch16x8k(b, ss, round)
		round++
		b.StartTimer()
		rec, err := l.trainOnce(ctx, false)
		if err != nil || rec.Datums != 16 {
			b.Fatalf("step: %+v %v", rec, err)
		}
	}
}
