//go:build unix

package subplugin

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/batch"
	"github.com/metaclaw-go/metaclaw/host/rl/judge"
)

func probeLogprob(t *testing.T, ctx context.Context, s backend.Sampler, prev, tok int32) float32 {
	t.Helper()
	r, err := s.Sample(ctx, backend.SampleRequest{Prompt: []int32{prev, tok}, Params: backend.DefaultSampling(1), PromptLogprobs: true})
	if err != nil {
		t.Fatal(err)
	}
	return r.PromptLogprobs[1]
}

// TestReferenceTrainerPlugin launches cmd/metaclaw-trainer-ref for real and
// trains through it: the sampler saved after a positive-advantage step gives
// the token a higher probability; checkpoints, conflicts and resume cross the
// gRPC boundary with their error kinds.
func TestReferenceTrainerPlugin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := newTestHost(t, testOptions(t))
	b, err := h.Trainer(ctx, Spec{Name: "ref", Path: refTrainer})
	if err != nil {
		t.Fatal(err)
	}
	if b.Name() != "plugin:toy" {
		t.Errorf("name %q", b.Name())
	}
	models, err := b.Models(ctx)
	if err != nil || len(models) == 0 {
		t.Fatalf("models %v %v", models, err)
	}
	cfg := backend.ModelConfig{BaseModel: "toy", LoRA: backend.DefaultLoRA(8)}
	tr, err := b.CreateModel(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	s0, err := tr.SaveForSampler(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	before := probeLogprob(t, ctx, s0, 11, 5)
	d, err := batch.BuildDatum(batch.Sample{Prompt: []int32{3, 11}, Completion: []int32{5}, Logprobs: []float32{before}}, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	res, err := backend.RunStep(ctx, tr, backend.StepRequest{Data: []backend.Datum{d}, Loss: backend.PPO, Adam: backend.DefaultAdam(0.05), CheckpointName: "step_0001"})
	if err != nil {
		t.Fatal(err)
	}
	after := probeLogprob(t, ctx, res.Sampler, 11, 5)
	if !(after > before) {
		t.Errorf("logprob %v -> %v through the plugin", before, after)
	}
	if res.ForwardBackward.Loss() >= 0 || len(res.ForwardBackward.Outputs[0]["logprobs"].Floats) != 2 {
		t.Errorf("forward_backward result %+v", res.ForwardBackward)
	}
	if _, err := tr.SaveState(ctx, "step_0001"); !errors.Is(err, backend.ErrConflict) {
		t.Errorf("duplicate checkpoint through the plugin: %v", err)
	}
	if _, err := b.Sampler(ctx, backend.SamplerSpec{Path: "tinker://nope/sampler_weights/x"}); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("unknown path through the plugin: %v", err)
	}
	if _, err := tr.ForwardBackward(ctx, []backend.Datum{{ModelInput: backend.Tokens([]int32{1})}}, backend.PPO, nil); !errors.Is(err, backend.ErrInvalid) {
		t.Errorf("invalid datum through the plugin: %v", err)
	}
	list, err := tr.Checkpoints(ctx)
	if err != nil || len(list) != 1 || !strings.HasSuffix(list[0].Path, "/weights/step_0001") {
		t.Fatalf("checkpoints %+v %v", list, err)
	}
	r2, err := b.Resume(ctx, cfg, list[0].Path)
	if err != nil {
		t.Fatal(err)
	}
	s2, err := r2.SaveForSampler(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := probeLogprob(t, ctx, s2, 11, 5); got != after {
		t.Errorf("resumed model gives %v, trained %v", got, after)
	}
	var st *Status
	for _, s := range h.Status() {
		if s.Kind == "trainer" {
			st = &s
		}
	}
	if st == nil || st.State != StateRunning || st.Identity.Name != "toy" || st.PID == 0 {
		t.Fatalf("status %+v", st)
	}
	// The plugin dies: the call in flight fails, the next one relaunches it,
	// and the old model is gone (the loop then resumes from a checkpoint).
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var lastErr error
	for i := 0; i < 3; i++ {
		if _, lastErr = tr.OptimStep(ctx, backend.DefaultAdam(0.01)); errors.Is(lastErr, backend.ErrNotFound) {
			break
		}
	}
	if !errors.Is(lastErr, backend.ErrNotFound) {
		t.Fatalf("after a crash: %v", lastErr)
	}
	if _, err := b.CreateModel(ctx, cfg); err != nil {
		t.Errorf("the relaunched plugin does not train: %v", err)
	}
}

// lengthJudge is a test judge: +1 for responses longer than the
// instruction, −1 otherwise (or an invalid score).
type lengthJudge struct{ bad bool }

func (lengthJudge) Name() string { return "length" }

func (j lengthJudge) Score(_ context.Context, r judge.Request) (*judge.Verdict, error) {
	if j.bad {
		return &judge.Verdict{Score: 5}, nil
	}
	v := "-1"
	if len(r.Response) > len(r.Instruction) {
		v = "1"
	}
	votes := make([]string, max(r.Votes, 1))
	for i := range votes {
		votes[i] = v
	}
	return &judge.Verdict{Score: judge.Majority(votes), Votes: votes, Text: "compared lengths of turn " + r.SessionID}, nil
}

func TestJudgePlugin(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h := newTestHost(t, testOptions(t))
	spec := helperSpec("judge")
	j, err := h.Judge(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	v, err := j.Score(ctx, judge.Request{Instruction: "hi", Response: "hello there", Votes: 3, SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if v.Score != 1 || len(v.Votes) != 3 || v.Text != "compared lengths of turn s1" || j.Name() != "length" {
		t.Errorf("verdict %+v from %s", v, j.Name())
	}
	bad, err := h.Judge(ctx, helperSpec("judge-bad-score"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Score(ctx, judge.Request{Instruction: "a", Response: "b"}); err == nil || !strings.Contains(err.Error(), "not -1, 0 or 1") {
		t.Errorf("score 5 accepted: %v", err)
	}
	// An embedder launched as a judge is refused at the handshake.
	if _, err := h.Judge(ctx, Spec{Name: "ref", Path: refPlugin}); err == nil {
		t.Error("an embedder plugin was accepted as a judge")
	}
}
