package tinker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/metaclaw-go/metaclaw/host/rl/backend"
)

// Trainer is one LoRA on the service; it implements backend.Trainer and
// backend.Stepper.
type Trainer struct {
	c   *Client
	id  string
	cfg backend.ModelConfig

	mu     sync.Mutex // serialises submissions: seq ids reach the server in order
	seq    int        // last seq_id used (create_model is 0)
	broken error      // set when a submission's fate is unknown
}

var (
	_ backend.Trainer = (*Trainer)(nil)
	_ backend.Stepper = (*Trainer)(nil)
)

// ModelID implements backend.Trainer.
func (t *Trainer) ModelID() string { return t.id }

// submitLocked gives the next seq_id to build's body and submits it; t.mu
// must be held. A definite rejection (a 4xx other than 408/429) gives the
// seq_id back, since the server did not take it; any other failure leaves
// the model's queue in an unknown state (a missing seq_id would stall every
// later request), so the Trainer refuses further work and the caller resumes
// from a checkpoint on a new one.
func (t *Trainer) submitLocked(ctx context.Context, path, reqType string, o callOpts, build func(seq int) ([]byte, error)) (*pending, error) {
	if t.broken != nil {
		return nil, t.broken
	}
	seq := t.seq + 1
	body, err := build(seq)
	if err != nil {
		return nil, err
	}
	p, err := t.c.submit(ctx, path, body, reqType, o)
	if err != nil {
		var ae *backend.APIError
		if errors.As(err, &ae) && ae.Status >= 400 && ae.Status < 500 && ae.Status != http.StatusRequestTimeout && ae.Status != http.StatusTooManyRequests {
			return nil, err
		}
		t.broken = fmt.Errorf("%s model %s: %w: request seq_id %d may or may not have reached the service (%v); resume from the last checkpoint", t.c.name, t.id, backend.ErrUnusable, seq, err)
		return nil, err
	}
	t.seq = seq
	return p, nil
}

// submitOne submits a single request under the lock.
func (t *Trainer) submitOne(ctx context.Context, path, reqType string, o callOpts, build func(seq int) ([]byte, error)) (*pending, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.submitLocked(ctx, path, reqType, o, build)
}

// chunks cuts data by the server's datum and byte limits.
func (t *Trainer) chunks(data []backend.Datum) [][]backend.Datum {
	var out [][]backend.Datum
	start, size := 0, 0
	for i, d := range data {
		n := d.EstimateJSONBytes()
		if i > start && (i-start >= t.c.chunkLen || size+n > t.c.chunkSize) {
			out = append(out, data[start:i])
			start, size = i, 0
		}
		size += n
	}
	return append(out, data[start:])
}

// fwdBody is {"forward_backward_input":{"data":[…],"loss_fn":…,
// "loss_fn_config":…},"model_id":…,"seq_id":…}, written straight into one
// buffer (no "type": the documented body has none).
func (t *Trainer) fwdBody(data []backend.Datum, loss backend.LossFn, cfg map[string]float64, seq int) ([]byte, error) {
	size := 128
	for _, d := range data {
		size += d.EstimateJSONBytes()
	}
	b := make([]byte, 0, size)
	b = append(b, `{"forward_backward_input":{"data":[`...)
	var err error
	for i, d := range data {
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = d.AppendJSON(b); err != nil {
			return nil, fmt.Errorf("datum %d: %w", i, err)
		}
	}
	b = append(b, `],"loss_fn":`...)
	b = strconv.AppendQuote(b, string(loss))
	if len(cfg) > 0 {
		c, err := json.Marshal(cfg)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"loss_fn_config":`...)
		b = append(b, c...)
	}
	b = append(b, `},"model_id":`...)
	b = strconv.AppendQuote(b, t.id)
	b = append(b, `,"seq_id":`...)
	b = strconv.AppendInt(b, int64(seq), 10)
	return append(b, '}'), nil
}

// EncodeForwardBackward returns the request bodies a ForwardBackward over
// data would send (one per chunk), for benchmarks and inspection.
func (t *Trainer) EncodeForwardBackward(data []backend.Datum, loss backend.LossFn) ([][]byte, error) {
	var out [][]byte
	for i, ch := range t.chunks(data) {
		b, err := t.fwdBody(ch, loss, nil, t.seq+1+i)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

// submitForwardBackward validates data and submits its chunks; t.mu held.
func (t *Trainer) submitForwardBackward(ctx context.Context, data []backend.Datum, loss backend.LossFn, cfg map[string]float64) ([]*pending, []int, error) {
	if len(data) == 0 {
		return nil, nil, fmt.Errorf("forward_backward: no data: %w", backend.ErrInvalid)
	}
	for i, d := range data {
		if err := backend.ValidateDatum(d, loss); err != nil {
			return nil, nil, fmt.Errorf("forward_backward datum %d: %v: %w", i, err, backend.ErrInvalid)
		}
	}
	var ps []*pending
	var counts []int
	for _, ch := range t.chunks(data) {
		p, err := t.submitLocked(ctx, "/api/v1/forward_backward", "ForwardBackward", callOpts{}, func(seq int) ([]byte, error) {
			return t.fwdBody(ch, loss, cfg, seq)
		})
		if err != nil {
			if len(ps) > 0 {
				// Earlier chunks were accepted: their gradients are in.
				t.broken = fmt.Errorf("%s model %s: %w: forward_backward failed after %d of its chunks were accepted (%v); resume from the last checkpoint", t.c.name, t.id, backend.ErrUnusable, len(ps), err)
			}
			return nil, nil, err
		}
		ps = append(ps, p)
		counts = append(counts, len(ch))
	}
	return ps, counts, nil
}

// fwdOutput is a ForwardBackwardOutput.
type fwdOutput struct {
	LossFnOutputs []map[string]backend.TensorData `json:"loss_fn_outputs"`
	Metrics       map[string]float64              `json:"metrics"`
}

// awaitForwardBackward gathers the chunks' results.
func (t *Trainer) awaitForwardBackward(ctx context.Context, ps []*pending, counts []int) (*backend.ForwardBackwardResult, error) {
	res := &backend.ForwardBackwardResult{}
	var metrics []map[string]float64
	for i, p := range ps {
		raw, err := t.c.result(ctx, p)
		if err != nil {
			return nil, err
		}
		var out fwdOutput
		if err := json.Unmarshal(raw, &out); err != nil {
			return nil, fmt.Errorf("%s forward_backward: decode result: %w", t.c.name, err)
		}
		if len(out.LossFnOutputs) != counts[i] {
			return nil, fmt.Errorf("%s forward_backward: %d outputs for %d datums", t.c.name, len(out.LossFnOutputs), counts[i])
		}
		res.Outputs = append(res.Outputs, out.LossFnOutputs...)
		metrics = append(metrics, out.Metrics)
	}
	res.Metrics = backend.MergeMetrics(metrics, counts)
	return res, nil
}

// ForwardBackward implements backend.Trainer.
func (t *Trainer) ForwardBackward(ctx context.Context, data []backend.Datum, loss backend.LossFn, cfg map[string]float64) (*backend.ForwardBackwardResult, error) {
	t.mu.Lock()
	ps, counts, err := t.submitForwardBackward(ctx, data, loss, cfg)
	t.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return t.awaitForwardBackward(ctx, ps, counts)
}

func adamJSON(a backend.AdamParams) map[string]float64 {
	m := map[string]float64{"learning_rate": a.LearningRate, "beta1": a.Beta1, "beta2": a.Beta2, "eps": a.Eps}
	// Newer fields only when used: MinT-era servers reject them.
	if a.WeightDecay != 0 {
		m["weight_decay"] = a.WeightDecay
	}
	if a.GradClipNorm != 0 {
		m["grad_clip_norm"] = a.GradClipNorm
	}
	return m
}

func (t *Trainer) optimBody(a backend.AdamParams) func(int) ([]byte, error) {
	return func(seq int) ([]byte, error) {
		return json.Marshal(map[string]any{"adam_params": adamJSON(a), "model_id": t.id, "seq_id": seq, "type": "optim_step"})
	}
}

func decodeOptim(raw json.RawMessage) (*backend.OptimResult, error) {
	var out struct {
		Metrics map[string]float64 `json:"metrics"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("optim_step: decode result: %w", err)
	}
	return &backend.OptimResult{Metrics: out.Metrics}, nil
}

// OptimStep implements backend.Trainer.
func (t *Trainer) OptimStep(ctx context.Context, a backend.AdamParams) (*backend.OptimResult, error) {
	p, err := t.submitOne(ctx, "/api/v1/optim_step", "OptimStep", callOpts{}, t.optimBody(a))
	if err != nil {
		return nil, err
	}
	raw, err := t.c.result(ctx, p)
	if err != nil {
		return nil, err
	}
	return decodeOptim(raw)
}

// samplerSave is a submitted save_weights_for_sampler.
type samplerSave struct {
	p    *pending
	name string
}

func (t *Trainer) submitSamplerSave(ctx context.Context, name string) (*samplerSave, error) {
	o := callOpts{}
	body := map[string]any{"model_id": t.id, "type": "save_weights_for_sampler"}
	if name != "" {
		body["path"] = name
		o.noRetry409 = true
	} else {
		body["sampling_session_seq_id"] = t.c.nextSamplerSeq()
	}
	p, err := t.submitLocked(ctx, "/api/v1/save_weights_for_sampler", "SaveWeightsForSampler", o, func(seq int) ([]byte, error) {
		body["seq_id"] = seq
		return json.Marshal(body)
	})
	if err != nil {
		return nil, err
	}
	return &samplerSave{p: p, name: name}, nil
}

func (t *Trainer) awaitSamplerSave(ctx context.Context, s *samplerSave) (backend.Sampler, error) {
	raw, err := t.c.result(ctx, s.p)
	if err != nil {
		return nil, err
	}
	var out struct {
		Path              *string `json:"path"`
		SamplingSessionID *string `json:"sampling_session_id"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("%s save_weights_for_sampler: decode result: %w", t.c.name, err)
	}
	if out.SamplingSessionID != nil && *out.SamplingSessionID != "" {
		path := ""
		if out.Path != nil {
			path = *out.Path
		}
		return &Sampler{c: t.c, id: *out.SamplingSessionID, path: path}, nil
	}
	if out.Path == nil || *out.Path == "" {
		return nil, fmt.Errorf("%s save_weights_for_sampler: neither a path nor a sampling_session_id in %.200s", t.c.name, raw)
	}
	return t.c.Sampler(ctx, backend.SamplerSpec{Path: *out.Path})
}

// SaveForSampler implements backend.Trainer.
func (t *Trainer) SaveForSampler(ctx context.Context, name string) (backend.Sampler, error) {
	t.mu.Lock()
	s, err := t.submitSamplerSave(ctx, name)
	t.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return t.awaitSamplerSave(ctx, s)
}

func (t *Trainer) submitSaveState(ctx context.Context, name string) (*pending, error) {
	return t.submitLocked(ctx, "/api/v1/save_weights", "SaveWeights", callOpts{noRetry409: true}, func(seq int) ([]byte, error) {
		return json.Marshal(map[string]any{"model_id": t.id, "path": name, "seq_id": seq, "type": "save_weights"})
	})
}

func (t *Trainer) awaitSaveState(ctx context.Context, p *pending, name string) (backend.Checkpoint, error) {
	raw, err := t.c.result(ctx, p)
	if err != nil {
		return backend.Checkpoint{}, err
	}
	var out struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || out.Path == "" {
		return backend.Checkpoint{}, fmt.Errorf("%s save_weights: no path in %.200s", t.c.name, raw)
	}
	return backend.Checkpoint{ID: "weights/" + name, Kind: backend.CheckpointTraining, Path: out.Path, Time: time.Now()}, nil
}

// SaveState implements backend.Trainer (save_weights: weights and optimizer
// state under tinker://<model>/weights/<name>; an existing name is an error
// matching backend.ErrConflict).
func (t *Trainer) SaveState(ctx context.Context, name string) (backend.Checkpoint, error) {
	t.mu.Lock()
	p, err := t.submitSaveState(ctx, name)
	t.mu.Unlock()
	if err != nil {
		return backend.Checkpoint{}, err
	}
	return t.awaitSaveState(ctx, p, name)
}

// LoadState implements backend.Trainer.
func (t *Trainer) LoadState(ctx context.Context, path string, optimizer bool) error {
	p, err := t.submitOne(ctx, "/api/v1/load_weights", "LoadWeights", callOpts{}, func(seq int) ([]byte, error) {
		return json.Marshal(map[string]any{"model_id": t.id, "path": path, "optimizer": optimizer, "seq_id": seq, "type": "load_weights"})
	})
	if err != nil {
		return err
	}
	_, err = t.c.result(ctx, p)
	return err
}

// Checkpoints implements backend.Trainer.
func (t *Trainer) Checkpoints(ctx context.Context) ([]backend.Checkpoint, error) {
	b, err := t.c.call(ctx, http.MethodGet, "/api/v1/training_runs/"+url.PathEscape(t.id)+"/checkpoints", nil, callOpts{})
	if err != nil {
		return nil, err
	}
	var out struct {
		Checkpoints []struct {
			ID        string     `json:"checkpoint_id"`
			Type      string     `json:"checkpoint_type"`
			Time      time.Time  `json:"time"`
			Path      string     `json:"tinker_path"`
			SizeBytes *int64     `json:"size_bytes"`
			ExpiresAt *time.Time `json:"expires_at"`
		} `json:"checkpoints"`
	}
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("%s checkpoints: %w", t.c.name, err)
	}
	list := make([]backend.Checkpoint, 0, len(out.Checkpoints))
	for _, c := range out.Checkpoints {
		e := backend.Checkpoint{ID: c.ID, Kind: c.Type, Path: c.Path, Time: c.Time, ExpiresAt: c.ExpiresAt}
		if c.SizeBytes != nil {
			e.SizeBytes = *c.SizeBytes
		}
		list = append(list, e)
	}
	return list, nil
}

// Close implements backend.Trainer (unload_model).
func (t *Trainer) Close(ctx context.Context) error {
	b, _ := json.Marshal(map[string]string{"model_id": t.id, "type": "unload_model"})
	p, err := t.c.submit(ctx, "/api/v1/unload_model", b, "UnloadModel", callOpts{})
	if err != nil {
		return err
	}
	_, err = t.c.result(ctx, p)
	return err
}

// Step implements backend.Stepper. forward_backward is awaited first (so a
// failed one leaves the weights untouched); then optim_step, the sampler
// save and the optional checkpoint are submitted back to back — the server
// runs them in seq_id order — and awaited, every result checked.
func (t *Trainer) Step(ctx context.Context, req backend.StepRequest) (*backend.StepResult, error) {
	res := &backend.StepResult{}
	fail := func(s backend.Stage, err error) (*backend.StepResult, error) {
		return nil, &backend.StepError{Stage: s, Err: err, Partial: res}
	}
	if req.From <= backend.StageForwardBackward {
		fb, err := t.ForwardBackward(ctx, req.Data, req.Loss, req.LossConfig)
		if err != nil {
			return fail(backend.StageForwardBackward, err)
		}
		res.ForwardBackward = fb
	}
	var (
		optim   *pending
		sampler *samplerSave
		ckpt    *pending
		err     error
	)
	t.mu.Lock()
	stage := backend.StageOptim
	if req.From <= backend.StageOptim {
		optim, err = t.submitLocked(ctx, "/api/v1/optim_step", "OptimStep", callOpts{}, t.optimBody(req.Adam))
	}
	if err == nil && req.From <= backend.StageSampler {
		stage = backend.StageSampler
		sampler, err = t.submitSamplerSave(ctx, req.SamplerName)
	}
	if err == nil && req.CheckpointName != "" {
		stage = backend.StageCheckpoint
		ckpt, err = t.submitSaveState(ctx, req.CheckpointName)
	}
	t.mu.Unlock()
	// Results are read in order, so the earliest failure is the one reported.
	if optim != nil {
		raw, err := t.c.result(ctx, optim)
		if err == nil {
			res.Optim, err = decodeOptim(raw)
		}
		if err != nil {
			return fail(backend.StageOptim, err)
		}
	}
	if sampler != nil {
		s, err := t.awaitSamplerSave(ctx, sampler)
		if err != nil {
			return fail(backend.StageSampler, err)
		}
		res.Sampler = s
	}
	if ckpt != nil {
		c, err := t.awaitSaveState(ctx, ckpt, req.CheckpointName)
		if err != nil {
			return fail(backend.StageCheckpoint, err)
		}
		res.Checkpoint = &c
	}
	if err != nil {
		return fail(stage, err)
	}
	return res, nil
}
