package tinker

import (
	"context"
	"errors"
	"math"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/batch"
	"github.com/metaclaw-go/metaclaw/internal/faketinker"
)

const testModel = "toy"

type env struct {
	t    *testing.T
	fake *faketinker.Server
	url  string
}

func newEnv(t *testing.T, o faketinker.Options) *env {
	t.Helper()
	if o.APIKey == "" {
		o.APIKey = "tml-secret"
	}
	fake := faketinker.New(o)
	ts := httptest.NewServer(fake)
	t.Cleanup(func() { ts.Close(); fake.Close() })
	return &env{t: t, fake: fake, url: ts.URL}
}

func (e *env) opts(flavor Flavor) Options {
	return Options{Flavor: flavor, BaseURL: e.url, APIKey: "tml-secret", RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond,
		BillingPause: time.Millisecond, PollDelay: func(string) time.Duration { return time.Millisecond }}
}

func (e *env) connect(flavor Flavor) *Client {
	e.t.Helper()
	c, err := Connect(context.Background(), e.opts(flavor))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = c.Close() })
	return c
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// probe is log p(token | prev) under sampler s, read through asample's
// prompt_logprobs (the protocol, not the fake's insides).
func probe(t *testing.T, s backend.Sampler, prev, token int32) float32 {
	t.Helper()
	r, err := s.Sample(ctx(t), backend.SampleRequest{Prompt: []int32{prev, token}, Params: backend.DefaultSampling(1), PromptLogprobs: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.PromptLogprobs) != 2 || !math.IsNaN(float64(r.PromptLogprobs[0])) {
		t.Fatalf("prompt logprobs %v", r.PromptLogprobs)
	}
	return r.PromptLogprobs[1]
}

// TestStepLearnsAndHotSwaps drives the whole step through the protocol:
// sample, score, build datums, train, swap; the new sampler gives the
// rewarded answer a higher probability and the punished one a lower, while
// the old sampler (turns in flight) still answers with the old weights.
func TestStepLearnsAndHotSwaps(t *testing.T) {
	for _, flavor := range []Flavor{Tinker, MinT} {
		t.Run(string(flavor), func(t *testing.T) {
			e := newEnv(t, faketinker.Options{Flavor: faketinker.Flavor(flavor)})
			c := e.connect(flavor)
			tr, err := c.CreateModel(ctx(t), backend.ModelConfig{BaseModel: testModel, LoRA: backend.DefaultLoRA(8)})
			if err != nil {
				t.Fatal(err)
			}
			var cur backend.Current
			s0, err := tr.SaveForSampler(ctx(t), "")
			if err != nil {
				t.Fatal(err)
			}
			cur.Swap(s0, 0)
			prompt := []int32{151644, 872, 7}
			seed := int64(3)
			params := backend.DefaultSampling(4)
			params.Seed = &seed
			res, err := cur.Load().Sampler.Sample(ctx(t), backend.SampleRequest{Prompt: prompt, Params: params, NumSamples: 2})
			if err != nil {
				t.Fatal(err)
			}
			good, bad := res.Sequences[0], res.Sequences[1]
			if good.Tokens[0] == bad.Tokens[0] {
				t.Fatal("seed 3 no longer gives two samples that start differently (the fake's sampler changed): pick another seed")
			}
			samples := []batch.Sample{
				{Group: "p", Prompt: prompt, Completion: good.Tokens, Logprobs: good.Logprobs, Reward: 1},
				{Group: "p", Prompt: prompt, Completion: bad.Tokens, Logprobs: bad.Logprobs, Reward: -1},
			}
			b, err := batch.Build(samples, batch.Options{Advantage: batch.GRPO})
			if err != nil || len(b.Datums) != 2 {
				t.Fatalf("build: %v %+v", err, b)
			}
			goodBefore, badBefore := probe(t, s0, 7, good.Tokens[0]), probe(t, s0, 7, bad.Tokens[0])
			if goodBefore != good.Logprobs[0] {
				t.Errorf("sampled logprob %v, prompt logprob %v: the sampler is not self-consistent", good.Logprobs[0], goodBefore)
			}
			step, err := backend.RunStep(ctx(t), tr, backend.StepRequest{Data: b.Datums, Loss: backend.ImportanceSampling, Adam: backend.DefaultAdam(0.05)})
			if err != nil {
				t.Fatal(err)
			}
			if math.IsNaN(step.ForwardBackward.Loss()) || len(step.ForwardBackward.Outputs) != 2 {
				t.Errorf("forward_backward result %+v", step.ForwardBackward)
			}
			old := cur.Swap(step.Sampler, 1)
			if old.Sampler != s0 || cur.Load().Step != 1 {
				t.Fatal("swap did not install the new sampler")
			}
			if got := probe(t, step.Sampler, 7, good.Tokens[0]); !(got > goodBefore) {
				t.Errorf("rewarded token: logprob %v -> %v, want higher", goodBefore, got)
			}
			if got := probe(t, step.Sampler, 7, bad.Tokens[0]); !(got < badBefore) {
				t.Errorf("punished token: logprob %v -> %v, want lower", badBefore, got)
			}
			if got := probe(t, s0, 7, good.Tokens[0]); got != goodBefore {
				t.Errorf("the old sampler changed: %v -> %v", goodBefore, got)
			}
		})
	}
}

func TestLossesThroughTheProtocol(t *testing.T) {
	e := newEnv(t, faketinker.Options{})
	c := e.connect(Tinker)
	for _, loss := range []backend.LossFn{backend.ImportanceSampling, backend.PPO, backend.CISPO} {
		tr, err := c.CreateModel(ctx(t), backend.ModelConfig{BaseModel: testModel, LoRA: backend.DefaultLoRA(4)})
		if err != nil {
			t.Fatal(err)
		}
		s0, _ := tr.SaveForSampler(ctx(t), "")
		before := probe(t, s0, 3, 9)
		d, err := batch.BuildDatum(batch.Sample{Prompt: []int32{3}, Completion: []int32{9}, Logprobs: []float32{before}}, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		res, err := backend.RunStep(ctx(t), tr, backend.StepRequest{Data: []backend.Datum{d}, Loss: loss, Adam: backend.DefaultAdam(0.02)})
		if err != nil {
			t.Fatalf("%s: %v", loss, err)
		}
		if after := probe(t, res.Sampler, 3, 9); !(after > before) {
			t.Errorf("%s: %v -> %v", loss, before, after)
		}
	}
}

func TestChunking(t *testing.T) {
	e := newEnv(t, faketinker.Options{FwdBwdMaxChunkLen: 2})
	c := e.connect(Tinker)
	if n, _ := c.ChunkLimits(); n != 2 {
		t.Fatalf("chunk limit from client/config = %d", n)
	}
	tr, _ := c.CreateModel(ctx(t), backend.ModelConfig{BaseModel: testModel, LoRA: backend.DefaultLoRA(4)})
	var data []backend.Datum
	for i := 0; i < 5; i++ {
		d, _ := batch.BuildDatum(batch.Sample{Prompt: []int32{int32(i), 5}, Completion: []int32{6, 7}, Logprobs: []float32{-3, -3}}, 1, 0)
		data = append(data, d)
	}
	one, err := tr.ForwardBackward(ctx(t), data[:1], backend.ImportanceSampling, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := e.fake.Count("forward_backward")
	res, err := tr.ForwardBackward(ctx(t), data, backend.ImportanceSampling, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.fake.Count("forward_backward") - before; n != 3 {
		t.Errorf("5 datums went out in %d requests, want 3 chunks of ≤2", n)
	}
	if len(res.Outputs) != 5 || len(res.Outputs[4]["logprobs"].Floats) != 3 {
		t.Errorf("outputs %d", len(res.Outputs))
	}
	// Gradients are only applied by optim_step, so each datum's loss is the
	// same as alone: the summed loss is 5× the single one.
	if got, want := res.Loss(), 5*one.Loss(); math.Abs(got-want) > 1e-3*math.Abs(want) {
		t.Errorf("merged loss:sum = %v, want %v", got, want)
	}
}

func TestValidationBeforeSending(t *testing.T) {
	e := newEnv(t, faketinker.Options{})
	c := e.connect(Tinker)
	tr, _ := c.CreateModel(ctx(t), backend.ModelConfig{BaseModel: testModel, LoRA: backend.DefaultLoRA(4)})
	d, _ := batch.BuildDatum(batch.Sample{Prompt: []int32{1}, Completion: []int32{2}, Logprobs: []float32{-1}}, 1, 0)
	d.LossFnInputs["mask"] = backend.FloatTensor([]float32{1})
	_, err := tr.ForwardBackward(ctx(t), []backend.Datum{d}, backend.ImportanceSampling, nil)
	if !errors.Is(err, backend.ErrInvalid) || e.fake.Count("forward_backward") != 0 {
		t.Errorf("a datum with a mask key: err %v, %d requests sent", err, e.fake.Count("forward_backward"))
	}
}

func TestErrors(t *testing.T) {
	e := newEnv(t, faketinker.Options{})
	o := e.opts(Tinker)
	o.APIKey = "tml-wrong"
	if _, err := Connect(ctx(t), o); !errors.Is(err, backend.ErrUnauthorized) {
		t.Errorf("wrong key: %v", err)
	}
	o.APIKey = ""
	if _, err := Connect(ctx(t), o); err == nil {
		t.Error("no key accepted")
	}
	c := e.connect(Tinker)
	if _, err := c.CreateModel(ctx(t), backend.ModelConfig{BaseModel: "nope", LoRA: backend.DefaultLoRA(4)}); !errors.Is(err, backend.ErrInvalid) {
		t.Errorf("unknown base model: %v", err)
	}
	if _, err := c.CreateModel(ctx(t), backend.ModelConfig{BaseModel: testModel, LoRA: backend.DefaultLoRA(3)}); !errors.Is(err, backend.ErrInvalid) {
		t.Errorf("rank 3: %v", err)
	}
	if _, err := c.Sampler(ctx(t), backend.SamplerSpec{Path: "s3://x"}); err == nil {
		t.Error("a non-tinker path was accepted")
	}
	if _, err := c.Sampler(ctx(t), backend.SamplerSpec{Path: "tinker://none/sampler_weights/x"}); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("unknown path: %v", err)
	}
	ms, err := c.Models(ctx(t))
	if err != nil || len(ms) == 0 || ms[0].MaxContextLength == 0 {
		t.Errorf("models %v %v", ms, err)
	}
}
