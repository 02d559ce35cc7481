package weaver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/metaclaw-go/metaclaw/host/rl/backend"
)

// Trainer is a Weaver model; it implements backend.Trainer.
type Trainer struct {
	c  *Client
	id string

	mu     sync.Mutex
	seq    int // last seq_id (operations are numbered from 1 per model)
	broken error
}

var _ backend.Trainer = (*Trainer)(nil)

// ModelID implements backend.Trainer.
func (t *Trainer) ModelID() string { return t.id }

// seqOp runs a seq-numbered operation; a definite 4xx gives the number back.
func (t *Trainer) seqOp(ctx context.Context, route string, build func(seq int) any) (json.RawMessage, error) {
	t.mu.Lock()
	if t.broken != nil {
		t.mu.Unlock()
		return nil, t.broken
	}
	seq := t.seq + 1
	var op operation
	err := t.c.do(ctx, http.MethodPost, "/api/v1/models/"+t.id+"/"+route, build(seq), &op, false)
	if err != nil {
		var ae *backend.APIError
		if !(errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 && ae.Status != 429) {
			t.broken = fmt.Errorf("weaver model %s: %w: operation seq_id %d may or may not have been accepted (%v); resume from the last checkpoint", t.id, backend.ErrUnusable, seq, err)
		}
		t.mu.Unlock()
		return nil, err
	}
	t.seq = seq
	t.mu.Unlock()
	return t.c.wait(ctx, route, op)
}

// wait polls an already-submitted operation.
func (c *Client) wait(ctx context.Context, route string, op operation) (json.RawMessage, error) {
	delay := c.opts.PollBase
	for {
		switch strings.ToLower(op.Status) {
		case "done":
			return op.Response, nil
		case "error":
			code := op.Code
			if code == "" {
				code = "operation_failed"
			}
			return nil, &backend.APIError{Backend: "weaver", Op: route, Category: code, Message: op.Message}
		}
		if err := sleep(ctx, delay); err != nil {
			return nil, err
		}
		delay = min(2*delay, c.opts.PollMax)
		if err := c.do(ctx, http.MethodGet, "/api/v1/operations/"+op.ID, nil, &op, true); err != nil {
			return nil, err
		}
	}
}

// withLossMask adds Weaver's loss_mask (1 where the advantage is non-zero)
// to importance-sampling datums, leaving the caller's datums untouched.
func withLossMask(data []backend.Datum) []backend.Datum {
	out := make([]backend.Datum, len(data))
	for i, d := range data {
		in := make(map[string]backend.TensorData, len(d.LossFnInputs)+1)
		for k, v := range d.LossFnInputs {
			in[k] = v
		}
		if adv, ok := d.LossFnInputs[backend.InputAdvantages]; ok {
			mask := make([]float32, len(adv.Floats))
			for j, a := range adv.Floats {
				if a != 0 {
					mask[j] = 1
				}
			}
			in["loss_mask"] = backend.FloatTensor(mask)
		}
		out[i] = backend.Datum{ModelInput: d.ModelInput, LossFnInputs: in}
	}
	return out
}

// Losses Weaver trains with.
var supported = map[backend.LossFn]bool{backend.CrossEntropy: true, backend.ImportanceSampling: true, backend.TruncatedImportanceSampling: true}

// ForwardBackward implements backend.Trainer.
func (t *Trainer) ForwardBackward(ctx context.Context, data []backend.Datum, loss backend.LossFn, cfg map[string]float64) (*backend.ForwardBackwardResult, error) {
	if !supported[loss] {
		return nil, fmt.Errorf("weaver has no %s loss (use importance_sampling, truncated_importance_sampling or cross_entropy in rl.loss_fn): %w", loss, backend.ErrInvalid)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("forward_backward: no data: %w", backend.ErrInvalid)
	}
	for i, d := range data {
		check := loss
		if loss == backend.TruncatedImportanceSampling {
			check = backend.ImportanceSampling
		}
		if err := backend.ValidateDatum(d, check); err != nil {
			return nil, fmt.Errorf("forward_backward datum %d: %v: %w", i, err, backend.ErrInvalid)
		}
	}
	if loss != backend.CrossEntropy {
		data = withLossMask(data)
	}
	input := map[string]any{"loss_fn": loss, "data": data}
	if len(cfg) > 0 {
		input["loss_fn_config"] = cfg
	}
	raw, err := t.seqOp(ctx, "forward-backward-passes", func(seq int) any {
		return map[string]any{"payload": map[string]any{"model_id": t.id, "seq_id": seq, "forward_backward_input": input}}
	})
	if err != nil {
		return nil, err
	}
	var out struct {
		Result *struct {
			Outputs []map[string]backend.TensorData `json:"loss_fn_outputs"`
			Metrics map[string]float64              `json:"metrics"`
		} `json:"result"`
		Outputs []map[string]backend.TensorData `json:"loss_fn_outputs"`
		Metrics map[string]float64              `json:"metrics"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("weaver forward_backward: decode result: %w", err)
	}
	res := &backend.ForwardBackwardResult{Outputs: out.Outputs, Metrics: out.Metrics}
	if out.Result != nil {
		res.Outputs, res.Metrics = out.Result.Outputs, out.Result.Metrics
	}
	if len(res.Outputs) != len(data) {
		return nil, fmt.Errorf("weaver forward_backward: %d outputs for %d datums", len(res.Outputs), len(data))
	}
	return res, nil
}

// OptimStep implements backend.Trainer.
func (t *Trainer) OptimStep(ctx context.Context, a backend.AdamParams) (*backend.OptimResult, error) {
	adam := map[string]float64{"learning_rate": a.LearningRate, "beta1": a.Beta1, "beta2": a.Beta2, "eps": a.Eps}
	if a.WeightDecay != 0 {
		adam["weight_decay"] = a.WeightDecay
	}
	if a.GradClipNorm != 0 {
		adam["grad_clip_norm"] = a.GradClipNorm
	}
	raw, err := t.seqOp(ctx, "optimizer-steps", func(seq int) any {
		return map[string]any{"payload": map[string]any{"model_id": t.id, "seq_id": seq, "adam_params": adam}}
	})
	if err != nil {
		return nil, err
	}
	var out struct {
		Metrics map[string]float64 `json:"metrics"`
	}
	_ = json.Unmarshal(raw, &out)
	return &backend.OptimResult{Metrics: out.Metrics}, nil
}

// SaveForSampler implements backend.Trainer (export-sampler).
func (t *Trainer) SaveForSampler(ctx context.Context, name string) (backend.Sampler, error) {
	raw, err := t.seqOp(ctx, "export-sampler", func(seq int) any {
		b := map[string]any{"seq_id": seq, "ttl_seconds": int(t.c.opts.SamplerTTL / time.Second)}
		if name != "" {
			b["path"] = name
		}
		return b
	})
	if err != nil {
		return nil, err
	}
	var out struct {
		ModelPath         string `json:"model_path"`
		Path              string `json:"path"`
		SamplingSessionID string `json:"sampling_session_id"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("weaver export-sampler: decode result: %w", err)
	}
	path := out.ModelPath
	if path == "" {
		path = out.Path
	}
	if out.SamplingSessionID != "" {
		return &Sampler{c: t.c, id: out.SamplingSessionID, path: path}, nil
	}
	if path == "" {
		return nil, errors.New("weaver export-sampler: neither a sampling session nor a model path in the answer")
	}
	return t.c.Sampler(ctx, backend.SamplerSpec{Path: path})
}

type checkpointJSON struct {
	ID        string    `json:"id"`
	Path      string    `json:"path"`
	Name      string    `json:"name"`
	Type      string    `json:"checkpoint_type"`
	CreatedAt time.Time `json:"created_at"`
}

func (c checkpointJSON) checkpoint() backend.Checkpoint {
	kind := backend.CheckpointTraining
	if c.Type == "sampling" {
		kind = backend.CheckpointSampler
	}
	return backend.Checkpoint{ID: c.ID, Kind: kind, Path: c.Path, Time: c.CreatedAt}
}

// SaveState implements backend.Trainer (a weight_and_optimizer checkpoint).
func (t *Trainer) SaveState(ctx context.Context, name string) (backend.Checkpoint, error) {
	var op operation
	if err := t.c.do(ctx, http.MethodPost, "/api/v1/models/"+t.id+"/checkpoints", map[string]any{"type": "weight_and_optimizer", "name": name}, &op, false); err != nil {
		return backend.Checkpoint{}, err
	}
	raw, err := t.c.wait(ctx, "checkpoints", op)
	if err != nil {
		return backend.Checkpoint{}, err
	}
	var c checkpointJSON
	if err := json.Unmarshal(raw, &c); err != nil || c.Path == "" {
		return backend.Checkpoint{}, fmt.Errorf("weaver checkpoint: no path in %.200s", raw)
	}
	return c.checkpoint(), nil
}

// LoadState implements backend.Trainer.
func (t *Trainer) LoadState(ctx context.Context, path string, optimizer bool) error {
	var op operation
	if err := t.c.do(ctx, http.MethodPost, "/api/v1/models/"+t.id+"/load", map[string]any{"path": path, "include_optimizer": optimizer}, &op, false); err != nil {
		return err
	}
	_, err := t.c.wait(ctx, "load", op)
	return err
}

// Checkpoints implements backend.Trainer.
func (t *Trainer) Checkpoints(ctx context.Context) ([]backend.Checkpoint, error) {
	var out struct {
		Items []checkpointJSON `json:"items"`
	}
	if err := t.c.do(ctx, http.MethodGet, "/api/v1/models/"+t.id+"/checkpoints", nil, &out, true); err != nil {
		return nil, err
	}
	list := make([]backend.Checkpoint, len(out.Items))
	for i, c := range out.Items {
		list[i] = c.checkpoint()
	}
	return list, nil
}

// Close implements backend.Trainer (terminate).
func (t *Trainer) Close(ctx context.Context) error {
	return t.c.do(ctx, http.MethodPost, "/api/v1/models/"+t.id+"/terminate", nil, nil, false)
}

// Sampler is a Weaver sampling session; it implements backend.Sampler.
type Sampler struct {
	c        *Client
	id, path string
}

var _ backend.Sampler = (*Sampler)(nil)

// ID implements backend.Sampler.
func (s *Sampler) ID() string { return s.id }

// Path implements backend.Sampler.
func (s *Sampler) Path() string { return s.path }

// Sample implements backend.Sampler. Weaver may answer with text only
// ("choices"); that cannot be trained on exactly, so it is an error here.
func (s *Sampler) Sample(ctx context.Context, req backend.SampleRequest) (*backend.SampleResult, error) {
	if len(req.Prompt) == 0 {
		return nil, fmt.Errorf("sample: empty prompt: %w", backend.ErrInvalid)
	}
	p := req.Params
	sp := map[string]any{"max_tokens": p.MaxTokens, "temperature": p.Temperature, "top_k": p.TopK, "top_p": p.TopP}
	if p.TopK == 0 {
		sp["top_k"] = -1
	}
	if p.TopP == 0 {
		sp["top_p"] = 1.0
	}
	if p.Seed != nil {
		sp["seed"] = *p.Seed
	}
	if len(p.StopTokens) > 0 {
		sp["stop"] = p.StopTokens
	} else if len(p.Stop) > 0 {
		sp["stop"] = p.Stop
	}
	n := max(req.NumSamples, 1)
	raw, err := s.c.run(ctx, "/api/v1/sampling-sessions/"+s.id+"/samples", map[string]any{
		"prompt": backend.Tokens(req.Prompt), "sampling_params": sp, "num_samples": n,
		"prompt_logprobs": req.PromptLogprobs, "topk_prompt_logprobs": 0,
	})
	if err != nil {
		return nil, err
	}
	type seqJSON struct {
		Tokens     []int32    `json:"tokens"`
		Logprobs   []*float64 `json:"logprobs"`
		StopReason string     `json:"stop_reason"`
	}
	type body struct {
		Sequences      []seqJSON  `json:"sequences"`
		PromptLogprobs []*float64 `json:"prompt_logprobs"`
	}
	var out struct {
		body
		Result *body `json:"result"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("weaver sample: decode result: %w", err)
	}
	b := out.body
	if out.Result != nil && len(out.Result.Sequences) > 0 {
		b = *out.Result
	}
	if len(b.Sequences) != n {
		return nil, fmt.Errorf("weaver sample: %d sequences with token ids for num_samples %d (a text-only answer cannot be trained on)", len(b.Sequences), n)
	}
	res := &backend.SampleResult{}
	for i, q := range b.Sequences {
		if len(q.Logprobs) != len(q.Tokens) {
			return nil, fmt.Errorf("weaver sample: sequence %d has %d logprobs for %d tokens", i, len(q.Logprobs), len(q.Tokens))
		}
		res.Sequences = append(res.Sequences, backend.Sequence{Tokens: q.Tokens, Logprobs: backend.FloatsWithNulls(q.Logprobs), StopReason: q.StopReason})
	}
	res.PromptLogprobs = backend.FloatsWithNulls(b.PromptLogprobs)
	return res, nil
}
