package weaver

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/batch"
	"github.com/metaclaw-go/metaclaw/internal/fakeweaver"
)

func setup(t *testing.T) (*Client, *fakeweaver.Server) {
	t.Helper()
	fake := fakeweaver.New(fakeweaver.Options{APIKey: "sk-weaver"})
	ts := httptest.NewServer(fake)
	t.Cleanup(func() { ts.Close(); fake.Close() })
	c, err := Connect(context.Background(), Options{BaseURL: ts.URL, APIKey: "sk-weaver", PollBase: time.Millisecond, PollMax: 5 * time.Millisecond,
		RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond, HeartbeatInterval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c, fake
}

func tctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func logprob(t *testing.T, s backend.Sampler, prev, tok int32) float32 {
	t.Helper()
	r, err := s.Sample(tctx(t), backend.SampleRequest{Prompt: []int32{prev, tok}, Params: backend.DefaultSampling(1), PromptLogprobs: true})
	if err != nil {
		t.Fatal(err)
	}
	return r.PromptLogprobs[1]
}

func TestWeaverLearnsResumesAndHeartbeats(t *testing.T) {
	c, fake := setup(t)
	cfg := backend.ModelConfig{BaseModel: "toy", LoRA: backend.DefaultLoRA(8)}
	tr, err := c.CreateModel(tctx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s0, err := tr.SaveForSampler(tctx(t), "")
	if err != nil {
		t.Fatal(err)
	}
	before := logprob(t, s0, 4, 6)
	d, _ := batch.BuildDatum(batch.Sample{Prompt: []int32{9, 4}, Completion: []int32{6}, Logprobs: []float32{before}}, 1, 0)
	res, err := backend.RunStep(tctx(t), tr, backend.StepRequest{Data: []backend.Datum{d}, Loss: backend.ImportanceSampling, Adam: backend.DefaultAdam(0.05), CheckpointName: "step_0001"})
	if err != nil {
		t.Fatal(err)
	}
	after := logprob(t, res.Sampler, 4, 6)
	if !(after > before) {
		t.Errorf("logprob %v -> %v: the loss_mask-less datum did not train", before, after)
	}
	if logprob(t, s0, 4, 6) != before {
		t.Error("the old sampler changed")
	}
	if res.Checkpoint == nil || res.Checkpoint.Path != "weaver://"+tr.ModelID()+"/checkpoints/step_0001" {
		t.Fatalf("checkpoint %+v", res.Checkpoint)
	}
	if list, err := tr.Checkpoints(tctx(t)); err != nil || len(list) != 1 {
		t.Errorf("checkpoints %v %v", list, err)
	}
	r2, err := c.Resume(tctx(t), cfg, res.Checkpoint.Path)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := r2.SaveForSampler(tctx(t), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := logprob(t, s2, 4, 6); got != after {
		t.Errorf("resumed weights give %v, trained %v", got, after)
	}
	if _, err := c.Resume(tctx(t), cfg, "weaver://none"); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("missing checkpoint: %v", err)
	}
	// Losses Weaver lacks are refused before anything is sent.
	if _, err := tr.ForwardBackward(tctx(t), []backend.Datum{d}, backend.PPO, nil); !errors.Is(err, backend.ErrInvalid) {
		t.Errorf("ppo on weaver: %v", err)
	}
	// A failed operation is reported with its code.
	fake.FailNext("optimizer-steps", "trainer_crashed")
	_, err = tr.OptimStep(tctx(t), backend.DefaultAdam(0.01))
	var ae *backend.APIError
	if !errors.As(err, &ae) || ae.Category != "trainer_crashed" {
		t.Errorf("failed op: %v", err)
	}
	for i := 0; i < 2000 && fake.Heartbeats(c.SessionID()) < 2; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if fake.Heartbeats(c.SessionID()) < 2 {
		t.Error("no heartbeats")
	}
	if err := tr.Close(tctx(t)); err != nil {
		t.Error(err)
	}
}

// TestWeaverSamplesAfreshUnlessSeeded: at temperature 1 an unseeded call
// draws new samples each time, as the real service does (the fake once
// seeded by the prompt's length, so every "Question number NN?" got one
// answer and GRPO batches had nothing to tell apart); a seeded call repeats
// its samples.
func TestWeaverSamplesAfreshUnlessSeeded(t *testing.T) {
	c, _ := setup(t)
	tr, err := c.CreateModel(tctx(t), backend.ModelConfig{BaseModel: "toy", LoRA: backend.DefaultLoRA(8)})
	if err != nil {
		t.Fatal(err)
	}
	s, err := tr.SaveForSampler(tctx(t), "")
	if err != nil {
		t.Fatal(err)
	}
	sample := func(prompt []int32, seed *int64) string {
		t.Helper()
		p := backend.DefaultSampling(8)
		p.Seed = seed
		r, err := s.Sample(tctx(t), backend.SampleRequest{Prompt: prompt, Params: p})
		if err != nil || len(r.Sequences) != 1 {
			t.Fatalf("sample: %v %+v", err, r)
		}
		return fmt.Sprint(r.Sequences[0].Tokens)
	}
	seen := map[string]bool{}
	for range 8 {
		seen[sample([]int32{9, 4}, nil)] = true
	}
	if len(seen) < 2 {
		t.Errorf("8 unseeded samples of one prompt are all %v", seen)
	}
	seed := int64(42)
	if a, b := sample([]int32{9, 4}, &seed), sample([]int32{9, 4}, &seed); a != b {
		t.Errorf("seed 42 gave %s, then %s", a, b)
	}
}

func TestWeaverAuth(t *testing.T) {
	fake := fakeweaver.New(fakeweaver.Options{APIKey: "sk-right"})
	ts := httptest.NewServer(fake)
	defer ts.Close()
	defer fake.Close()
	if _, err := Connect(tctx(t), Options{BaseURL: ts.URL, APIKey: "sk-wrong"}); !errors.Is(err, backend.ErrUnauthorized) {
		t.Errorf("wrong key: %v", err)
	}
}
