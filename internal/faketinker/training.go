package faketinker

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"time"

	"github.com/metaclaw-go/metaclaw/internal/faketinker/toy"
)

func bodyKey(b []byte) string {
	h := fnv.New64a()
	_, _ = h.Write(b)
	return fmt.Sprintf("%x", h.Sum64())
}

// inputDTypes is the accepted loss_fn_inputs key set.
var inputDTypes = map[string]string{
	"target_tokens": "int64", "weights": "float32", "logprobs": "float32",
	"advantages": "float32", "clip_low_threshold": "float32", "clip_high_threshold": "float32",
}

var lossInputs = map[string][]string{
	"cross_entropy":       {"target_tokens", "weights"},
	"importance_sampling": {"target_tokens", "logprobs", "advantages"},
	"ppo":                 {"target_tokens", "logprobs", "advantages"},
	"cispo":               {"target_tokens", "logprobs", "advantages"},
}

// decodeData validates datums as the server does and converts them.
func decodeData(in *fwdInput, base *toy.Model) ([]toy.Datum, *httpError) {
	if in == nil {
		return nil, errf(http.StatusBadRequest, "forward_backward_input is required")
	}
	need, ok := lossInputs[in.LossFn]
	if !ok {
		if in.LossFn == "dro" {
			return nil, errf(http.StatusBadRequest, "loss_fn dro is not supported by this server")
		}
		return nil, errf(http.StatusBadRequest, "unknown loss_fn %q (cross_entropy, importance_sampling, ppo, cispo, dro)", in.LossFn)
	}
	if len(in.Data) == 0 {
		return nil, errf(http.StatusBadRequest, "data is empty")
	}
	out := make([]toy.Datum, len(in.Data))
	for i, d := range in.Data {
		var ids []int32
		for j, c := range d.ModelInput.Chunks {
			if c.Type != nil && *c.Type != "encoded_text" {
				return nil, errf(http.StatusBadRequest, "data[%d].model_input.chunks[%d]: chunk type %q is not supported", i, j, *c.Type)
			}
			ids = append(ids, c.Tokens...)
		}
		n := len(ids)
		if n == 0 {
			return nil, errf(http.StatusBadRequest, "data[%d].model_input is empty", i)
		}
		if n > base.Config().MaxContext {
			return nil, errf(http.StatusBadRequest, "data[%d]: PromptTooLong: %d tokens > context window %d", i, n, base.Config().MaxContext)
		}
		if err := base.CheckTokens(ids); err != nil {
			return nil, errf(http.StatusBadRequest, "data[%d].model_input: %v", i, err)
		}
		td := toy.Datum{Input: ids}
		for name, t := range d.LossFnInputs {
			want, ok := inputDTypes[name]
			if !ok {
				return nil, errf(http.StatusBadRequest, "data[%d].loss_fn_inputs: unknown key %q", i, name)
			}
			if t.DType != want {
				return nil, errf(http.StatusBadRequest, "data[%d].loss_fn_inputs.%s: dtype must be %s, got %q", i, name, want, t.DType)
			}
			if len(t.Data) != n || (len(t.Shape) > 0 && (len(t.Shape) != 1 || t.Shape[0] != n)) {
				return nil, errf(http.StatusBadRequest, "data[%d].loss_fn_inputs.%s: length %d (shape %v) does not match model_input length %d", i, name, len(t.Data), t.Shape, n)
			}
			for j, v := range t.Data {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, errf(http.StatusBadRequest, "NonFiniteInTensor: data[%d].loss_fn_inputs.%s[%d]", i, name, j)
				}
			}
			switch name {
			case "target_tokens":
				td.Targets = make([]int64, n)
				for j, v := range t.Data {
					if v != math.Trunc(v) || v < 0 || v >= float64(base.Config().VocabSize) {
						return nil, errf(http.StatusBadRequest, "data[%d].loss_fn_inputs.target_tokens[%d] = %v is not a token id", i, j, v)
					}
					td.Targets[j] = int64(v)
				}
			case "weights":
				td.Weights = f32(t.Data)
			case "logprobs":
				td.Logprobs = f32(t.Data)
			case "advantages":
				td.Advantages = f32(t.Data)
			case "clip_low_threshold":
				td.ClipLow = f32(t.Data)
			case "clip_high_threshold":
				td.ClipHigh = f32(t.Data)
			}
		}
		for _, name := range need {
			if _, ok := d.LossFnInputs[name]; !ok {
				return nil, errf(http.StatusBadRequest, "data[%d]: loss_fn %s requires loss_fn_inputs.%s", i, in.LossFn, name)
			}
		}
		out[i] = td
	}
	return out, nil
}

func f32(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// fwdResult is a ForwardBackwardOutput.
func fwdResult(logprobs [][]float32, loss float64) any {
	outs := make([]map[string]any, len(logprobs))
	for i, lp := range logprobs {
		data := make([]float64, len(lp))
		for j, v := range lp {
			data[j] = float64(v)
		}
		outs[i] = map[string]any{"logprobs": map[string]any{"data": data, "dtype": "float32", "shape": []int{len(lp)}}}
	}
	return map[string]any{
		"loss_fn_output_type": "ArrayRecord",
		"loss_fn_outputs":     outs,
		"metrics":             map[string]float64{"loss:sum": loss},
	}
}

func (s *Server) fwd(r *http.Request, body []byte, in *fwdInput, modelID string, seq *int, kind string, forwardOnly bool) (any, *httpError) {
	return s.enqueue(r, modelID, seq, kind, bodyKey(body), func(m *model) (func() (any, *opError), *httpError) {
		data, herr := decodeData(in, m.tr.Model)
		if herr != nil {
			return nil, herr
		}
		return func() (any, *opError) {
			lps, loss, err := m.tr.ForwardBackward(data, in.LossFn, in.LossFnConfig, forwardOnly)
			if err != nil {
				return nil, &opError{category: "user", msg: err.Error()}
			}
			return fwdResult(lps, loss), nil
		}, nil
	})
}

func (s *Server) forwardBackward(r *http.Request, body []byte) (any, *httpError) {
	var req forwardBackwardReq
	if herr := decodeStrict(body, &req); herr != nil {
		return nil, herr
	}
	return s.fwd(r, body, req.ForwardBackwardInput, req.ModelID, req.SeqID, "forward_backward", false)
}

func (s *Server) forward(r *http.Request, body []byte) (any, *httpError) {
	var req forwardReq
	if herr := decodeStrict(body, &req); herr != nil {
		return nil, herr
	}
	return s.fwd(r, body, req.ForwardInput, req.ModelID, req.SeqID, "forward", true)
}

// decodeAdam applies AdamParams defaults; the MinT flavour does not know
// weight_decay and grad_clip_norm.
func (s *Server) decodeAdam(raw *json.RawMessage) (toy.Adam, *httpError) {
	p := toy.Adam{LearningRate: 1e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-12}
	if raw == nil {
		return p, errf(http.StatusBadRequest, "adam_params is required")
	}
	var a adamParams
	if herr := decodeStrict(*raw, &a); herr != nil {
		return p, herr
	}
	if s.opts.Flavor == MinT && (a.WeightDecay != nil || a.GradClipNorm != nil) {
		return p, errf(http.StatusBadRequest, "invalid request body: adam_params: unknown field (weight_decay/grad_clip_norm)")
	}
	set := func(dst *float64, v *float64) {
		if v != nil {
			*dst = *v
		}
	}
	set(&p.LearningRate, a.LearningRate)
	set(&p.Beta1, a.Beta1)
	set(&p.Beta2, a.Beta2)
	set(&p.Eps, a.Eps)
	set(&p.WeightDecay, a.WeightDecay)
	set(&p.GradClipNorm, a.GradClipNorm)
	for _, v := range []float64{p.LearningRate, p.Beta1, p.Beta2, p.Eps, p.WeightDecay, p.GradClipNorm} {
		if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
			return p, errf(http.StatusBadRequest, "adam_params must be finite and non-negative")
		}
	}
	if p.Beta1 >= 1 || p.Beta2 >= 1 {
		return p, errf(http.StatusBadRequest, "adam_params.beta1 and beta2 must be below 1")
	}
	return p, nil
}

func (s *Server) optimStep(r *http.Request, body []byte) (any, *httpError) {
	var req optimStepReq
	if herr := decodeStrict(body, &req); herr != nil {
		return nil, herr
	}
	if herr := checkType(req.Type, "optim_step"); herr != nil {
		return nil, herr
	}
	adam, herr := s.decodeAdam(req.AdamParams)
	if herr != nil {
		return nil, herr
	}
	return s.enqueue(r, req.ModelID, req.SeqID, "optim_step", bodyKey(body), func(m *model) (func() (any, *opError), *httpError) {
		return func() (any, *opError) {
			m.tr.OptimStep(adam)
			return map[string]any{"metrics": nil}, nil
		}, nil
	})
}

func (s *Server) saveWeights(r *http.Request, body []byte) (any, *httpError) {
	var req saveWeightsReq
	if herr := decodeStrict(body, &req); herr != nil {
		return nil, herr
	}
	if herr := checkType(req.Type, "save_weights"); herr != nil {
		return nil, herr
	}
	if req.Path == nil || !checkpointName.MatchString(*req.Path) {
		return nil, errf(http.StatusBadRequest, "path must be a checkpoint name of letters, digits, '_', '.', '-'")
	}
	name := *req.Path
	overwrite := req.Overwrite != nil && *req.Overwrite
	return s.enqueue(r, req.ModelID, req.SeqID, "save_weights", bodyKey(body), func(m *model) (func() (any, *opError), *httpError) {
		cid := "weights/" + name
		if herr := s.reserve(m, cid, overwrite); herr != nil {
			return nil, herr
		}
		return func() (any, *opError) {
			path := fmt.Sprintf("tinker://%s/%s", m.id, cid)
			c := &checkpoint{id: cid, kind: "training", path: path, model: m.id, base: m.base, lora: m.lora,
				at: time.Now(), expires: ttl(req.TTLSeconds), state: m.tr.Save()}
			s.mu.Lock()
			s.addCheckpoint(m, c)
			s.mu.Unlock()
			return map[string]string{"path": path, "type": "save_weights"}, nil
		}, nil
	})
}

func (s *Server) saveWeightsForSampler(r *http.Request, body []byte) (any, *httpError) {
	var req saveForSamplerReq
	if herr := decodeStrict(body, &req); herr != nil {
		return nil, herr
	}
	if herr := checkType(req.Type, "save_weights_for_sampler"); herr != nil {
		return nil, herr
	}
	named := req.Path != nil
	if named == (req.SamplingSessionSeqID != nil) {
		return nil, errf(http.StatusBadRequest, "give exactly one of path (a durable sampler checkpoint) and sampling_session_seq_id (ephemeral weights)")
	}
	if named && !checkpointName.MatchString(*req.Path) {
		return nil, errf(http.StatusBadRequest, "path must be a checkpoint name of letters, digits, '_', '.', '-'")
	}
	return s.enqueue(r, req.ModelID, req.SeqID, "save_weights_for_sampler", bodyKey(body), func(m *model) (func() (any, *opError), *httpError) {
		if named {
			cid := "sampler_weights/" + *req.Path
			if herr := s.reserve(m, cid, false); herr != nil {
				return nil, herr
			}
			return func() (any, *opError) {
				path := fmt.Sprintf("tinker://%s/%s", m.id, cid)
				c := &checkpoint{id: cid, kind: "sampler", path: path, model: m.id, base: m.base, lora: m.lora,
					at: time.Now(), expires: ttl(req.TTLSeconds), weights: m.tr.W.Clone()}
				s.mu.Lock()
				s.addCheckpoint(m, c)
				s.mu.Unlock()
				return map[string]any{"path": path, "type": "save_weights_for_sampler"}, nil
			}, nil
		}
		k := *req.SamplingSessionSeqID
		ss := s.sessions[m.session]
		if _, used := ss.samplers[k]; used {
			return nil, errf(http.StatusBadRequest, "sampling_session_seq_id %d of session %s is already used", k, ss.id)
		}
		sid := fmt.Sprintf("%s:sample:%d", ss.id, k)
		ss.samplers[k] = sid
		ss.createdBy[k] = "ephemeral:" + m.id
		return func() (any, *opError) {
			s.mu.Lock()
			s.samplers[sid] = &sampler{id: sid, base: m.base, model: m.tr.Model, w: m.tr.W.Clone(), seqs: map[int]*work{}}
			s.mu.Unlock()
			return map[string]any{"path": nil, "sampling_session_id": sid, "type": "save_weights_for_sampler"}, nil
		}, nil
	})
}

func (s *Server) loadWeights(r *http.Request, body []byte) (any, *httpError) {
	var req loadWeightsReq
	if herr := decodeStrict(body, &req); herr != nil {
		return nil, herr
	}
	if herr := checkType(req.Type, "load_weights"); herr != nil {
		return nil, herr
	}
	if req.ModelID == "" {
		return nil, errf(http.StatusBadRequest, "model_id is required")
	}
	optimizer := req.Optimizer != nil && *req.Optimizer
	return s.enqueue(r, req.ModelID, req.SeqID, "load_weights", bodyKey(body), func(m *model) (func() (any, *opError), *httpError) {
		c := s.paths[req.Path]
		if c == nil && !s.pendingPath(req.Path) {
			return nil, errf(http.StatusNotFound, "checkpoint %q not found", req.Path)
		}
		if c != nil {
			if herr := compatible(c, m); herr != nil {
				return nil, herr
			}
		}
		return func() (any, *opError) {
			s.mu.Lock()
			c := s.paths[req.Path]
			s.mu.Unlock()
			if c == nil {
				return nil, &opError{category: "user", msg: fmt.Sprintf("checkpoint %q not found", req.Path)}
			}
			if herr := compatible(c, m); herr != nil {
				return nil, &opError{category: "user", msg: herr.detail}
			}
			m.tr.Load(c.state, optimizer)
			return map[string]string{"path": req.Path, "model_id": m.id, "type": "load_weights"}, nil
		}, nil
	})
}

// compatible checks that training checkpoint c can be loaded into m.
func compatible(c *checkpoint, m *model) *httpError {
	switch {
	case c.kind != "training":
		return errf(http.StatusBadRequest, "%s is a sampler checkpoint; load_weights needs a training checkpoint (…/weights/<name>)", c.path)
	case c.base != m.base:
		return errf(http.StatusBadRequest, "checkpoint %s is for base model %s, model %s is %s", c.path, c.base, m.id, m.base)
	case c.lora.Rank != m.lora.Rank:
		return errf(http.StatusBadRequest, "checkpoint %s has LoRA rank %d, model %s has rank %d", c.path, c.lora.Rank, m.id, m.lora.Rank)
	}
	return nil
}

// pendingPath reports whether a queued save will create path; s.mu held.
func (s *Server) pendingPath(path string) bool {
	for _, m := range s.trainers {
		for cid := range m.reserved {
			if fmt.Sprintf("tinker://%s/%s", m.id, cid) == path {
				return true
			}
		}
	}
	return false
}
