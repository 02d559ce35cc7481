package tinker

import (
	"errors"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/batch"
	"github.com/metaclaw-go/metaclaw/internal/faketinker"
)

func oneDatum(t *testing.T) backend.Datum {
	d, err := batch.BuildDatum(batch.Sample{Prompt: []int32{1, 2}, Completion: []int32{3, 4}, Logprobs: []float32{-3, -3}}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestFaultsAreSurvived injects every documented failure and checks that a
// full step still completes with each operation executed exactly once.
func TestFaultsAreSurvived(t *testing.T) {
	faults := []struct {
		name string
		f    faketinker.Fault
	}{
		{"poll try_again", faketinker.Fault{Endpoint: "retrieve_future", TryAgain: true, Times: 3}},
		{"poll 408", faketinker.Fault{Endpoint: "retrieve_future", Status: 408, Times: 2}},
		{"poll 429", faketinker.Fault{Endpoint: "retrieve_future", Status: 429, Times: 2}},
		{"poll 500", faketinker.Fault{Endpoint: "retrieve_future", Status: 500, Times: 2}},
		{"poll 503", faketinker.Fault{Endpoint: "retrieve_future", Status: 503}},
		{"poll 402", faketinker.Fault{Endpoint: "retrieve_future", Status: 402}},
		{"poll 410 on forward_backward", faketinker.Fault{Endpoint: "retrieve_future", Op: "forward_backward", Status: 410}},
		{"poll 410 on optim_step", faketinker.Fault{Endpoint: "retrieve_future", Op: "optim_step", Status: 410, Times: 2}},
		{"poll 410 on sampler save", faketinker.Fault{Endpoint: "retrieve_future", Op: "save_weights_for_sampler", Status: 410}},
		{"submit 429", faketinker.Fault{Endpoint: "forward_backward", Status: 429, RetryAfter: 0}},
		{"submit 500", faketinker.Fault{Endpoint: "optim_step", Status: 500, Times: 2}},
		{"submit 502 after apply", faketinker.Fault{Endpoint: "forward_backward", Status: 502, AfterApply: true}},
		{"submit 503 after apply", faketinker.Fault{Endpoint: "optim_step", Status: 503, AfterApply: true}},
		{"submit 408 after apply", faketinker.Fault{Endpoint: "save_weights_for_sampler", Status: 408, AfterApply: true}},
		{"submit 409 lock", faketinker.Fault{Endpoint: "optim_step", Status: 409}},
	}
	for _, tc := range faults {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, faketinker.Options{})
			c := e.connect(Tinker)
			tr, err := c.CreateModel(ctx(t), backend.ModelConfig{BaseModel: testModel, LoRA: backend.DefaultLoRA(4)})
			if err != nil {
				t.Fatal(err)
			}
			e.fake.Inject(tc.f)
			res, err := backend.RunStep(ctx(t), tr, backend.StepRequest{Data: []backend.Datum{oneDatum(t)}, Loss: backend.ImportanceSampling, Adam: backend.DefaultAdam(0.01)})
			if err != nil {
				t.Fatal(err)
			}
			if e.fake.PendingFaults() != 0 {
				t.Errorf("the fault never fired")
			}
			for _, op := range []string{"forward_backward", "optim_step", "save_weights_for_sampler"} {
				if n := e.fake.Count("op:" + op); n != 1 {
					t.Errorf("%s executed %d times", op, n)
				}
			}
			if _, err := res.Sampler.Sample(ctx(t), backend.SampleRequest{Prompt: []int32{1}, Params: backend.DefaultSampling(2)}); err != nil {
				t.Errorf("sampling from the new weights: %v", err)
			}
		})
	}
}

func TestFailedOperations(t *testing.T) {
	e := newEnv(t, faketinker.Options{})
	c := e.connect(Tinker)
	tr, _ := c.CreateModel(ctx(t), backend.ModelConfig{BaseModel: testModel, LoRA: backend.DefaultLoRA(4)})

	// A failed forward_backward is reported at its stage; nothing after it ran.
	e.fake.Inject(faketinker.Fault{Endpoint: "forward_backward", Category: "server"})
	_, err := backend.RunStep(ctx(t), tr, backend.StepRequest{Data: []backend.Datum{oneDatum(t)}, Loss: backend.ImportanceSampling, Adam: backend.DefaultAdam(0.01)})
	var se *backend.StepError
	var ae *backend.APIError
	if !errors.As(err, &se) || se.Stage != backend.StageForwardBackward || !errors.As(err, &ae) || ae.Category != "server" || !errors.Is(err, backend.ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if e.fake.Count("optim_step") != 0 {
		t.Error("optim_step was sent after a failed forward_backward")
	}
	// A failed optim_step: retried from that stage, gradients are not
	// computed twice.
	e.fake.Inject(faketinker.Fault{Endpoint: "optim_step", Category: "user"})
	_, err = backend.RunStep(ctx(t), tr, backend.StepRequest{Data: []backend.Datum{oneDatum(t)}, Loss: backend.ImportanceSampling, Adam: backend.DefaultAdam(0.01)})
	if !errors.As(err, &se) || se.Stage != backend.StageOptim || !errors.Is(err, backend.ErrInvalid) {
		t.Fatalf("err = %v", err)
	}
	fb := e.fake.Count("forward_backward")
	res, err := backend.RunStep(ctx(t), tr, backend.StepRequest{Loss: backend.ImportanceSampling, Adam: backend.DefaultAdam(0.01), From: se.Stage})
	if err != nil || res.Sampler == nil || e.fake.Count("forward_backward") != fb {
		t.Fatalf("retry from optim_step: %v (forward_backward sent again: %v)", err, e.fake.Count("forward_backward") != fb)
	}
	// A definite rejection gives the seq_id back: the model keeps working.
	e.fake.Inject(faketinker.Fault{Endpoint: "optim_step", Status: 400})
	if _, err := tr.OptimStep(ctx(t), backend.DefaultAdam(0.01)); !errors.Is(err, backend.ErrInvalid) {
		t.Fatalf("400: %v", err)
	}
	if _, err := tr.OptimStep(ctx(t), backend.DefaultAdam(0.01)); err != nil {
		t.Fatalf("after a 400 the next request stalls or fails: %v", err)
	}
	// Persistent 5xx on submission: after the retries the model is marked
	// unusable instead of stalling on a missing seq_id.
	e.fake.Inject(faketinker.Fault{Endpoint: "optim_step", Status: 500, Times: 100})
	if _, err := tr.OptimStep(ctx(t), backend.DefaultAdam(0.01)); !errors.Is(err, backend.ErrUnavailable) {
		t.Fatalf("persistent 500: %v", err)
	}
	if _, err := tr.OptimStep(ctx(t), backend.DefaultAdam(0.01)); err == nil {
		t.Fatal("a model with a lost seq_id accepted more work")
	}
}

func TestCheckpointsAndResume(t *testing.T) {
	e := newEnv(t, faketinker.Options{})
	c := e.connect(Tinker)
	cfg := backend.ModelConfig{BaseModel: testModel, LoRA: backend.DefaultLoRA(8)}
	step := func(tr backend.Trainer) backend.Sampler {
		t.Helper()
		res, err := backend.RunStep(ctx(t), tr, backend.StepRequest{Data: []backend.Datum{oneDatum(t)}, Loss: backend.ImportanceSampling, Adam: backend.DefaultAdam(0.05)})
		if err != nil {
			t.Fatal(err)
		}
		return res.Sampler
	}
	a, _ := c.CreateModel(ctx(t), cfg)
	step(a)
	res, err := backend.RunStep(ctx(t), a, backend.StepRequest{Data: []backend.Datum{oneDatum(t)}, Loss: backend.ImportanceSampling, Adam: backend.DefaultAdam(0.05), CheckpointName: "step_0002", SamplerName: "step_0002"})
	if err != nil {
		t.Fatal(err)
	}
	ck := res.Checkpoint
	if ck == nil || ck.Path != "tinker://"+a.ModelID()+"/weights/step_0002" || res.Sampler.Path() != "tinker://"+a.ModelID()+"/sampler_weights/step_0002" {
		t.Fatalf("checkpoint %+v, sampler path %q", ck, res.Sampler.Path())
	}
	if _, err := a.SaveState(ctx(t), "step_0002"); !errors.Is(err, backend.ErrConflict) {
		t.Errorf("duplicate checkpoint name: %v", err)
	}
	list, err := a.Checkpoints(ctx(t))
	if err != nil || len(list) != 2 {
		t.Fatalf("checkpoints %+v %v", list, err)
	}
	// After a "restart" (a new session), resume with optimizer state: one
	// more identical step lands exactly where the uninterrupted run does.
	want := probe(t, step(a), 2, 3)
	c2 := e.connect(Tinker)
	b, err := c2.Resume(ctx(t), cfg, ck.Path)
	if err != nil {
		t.Fatal(err)
	}
	if got := probe(t, step(b), 2, 3); got != want {
		t.Errorf("resumed run: logprob %v, uninterrupted run %v", got, want)
	}
	// Without the optimizer state the next step differs (Adam restarts).
	nb, _ := c2.CreateModel(ctx(t), cfg)
	if err := nb.LoadState(ctx(t), ck.Path, false); err != nil {
		t.Fatal(err)
	}
	if got := probe(t, step(nb), 2, 3); got == want {
		t.Error("weights-only load behaved like a full resume")
	}
	if _, err := c2.Resume(ctx(t), cfg, "tinker://gone/weights/x"); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("resume from a missing path: %v", err)
	}
	if err := b.Close(ctx(t)); err != nil {
		t.Errorf("unload: %v", err)
	}
	if _, err := b.OptimStep(ctx(t), backend.DefaultAdam(0.01)); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("after unload: %v", err)
	}
}

func TestHeartbeats(t *testing.T) {
	e := newEnv(t, faketinker.Options{})
	o := e.opts(Tinker)
	o.HeartbeatInterval = 5 * time.Millisecond
	c, err := Connect(ctx(t), o)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := 0; i < 2000 && e.fake.Heartbeats(c.SessionID()) < 3; i++ {
		time.Sleep(5 * time.Millisecond)
	}
	if n := e.fake.Heartbeats(c.SessionID()); n < 3 {
		t.Fatalf("%d heartbeats", n)
	}
	_ = c.Close()
	n := e.fake.Heartbeats(c.SessionID())
	time.Sleep(30 * time.Millisecond)
	if e.fake.Heartbeats(c.SessionID()) != n {
		t.Error("heartbeats continue after Close")
	}
}
