package faketinker

import (
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"

	"github.com/metaclaw-go/metaclaw/internal/faketinker/toy"
)

// sampler is a sampling session bound to frozen weights.
type sampler struct {
	id, base, path string
	model          *toy.Model
	w              *toy.Weights
	seqs           map[int]*work // per-sampling-client seq_id → its request
}

// DefaultMaxTokens is used when sampling_params.max_tokens is absent.
const DefaultMaxTokens = 64

func (s *Server) createSamplingSession(r *http.Request, body []byte) (any, *httpError) {
	var req createSamplingSessionReq
	if herr := decodeStrict(body, &req); herr != nil {
		return nil, herr
	}
	if herr := checkType(req.Type, "create_sampling_session"); herr != nil {
		return nil, herr
	}
	if req.SamplingSessionSeqID == nil || *req.SamplingSessionSeqID < 0 {
		return nil, errf(http.StatusBadRequest, "sampling_session_seq_id is required and must be >= 0")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, herr := s.liveSession(req.SessionID)
	if herr != nil {
		return nil, herr
	}
	sp, what, herr := s.resolveWeights(req.BaseModel, req.ModelPath)
	if herr != nil {
		return nil, herr
	}
	k := *req.SamplingSessionSeqID
	if id, used := ss.samplers[k]; used {
		if ss.createdBy[k] == what {
			return map[string]string{"sampling_session_id": id}, nil
		}
		return nil, errf(http.StatusBadRequest, "sampling_session_seq_id %d of session %s is already used", k, ss.id)
	}
	sp.id = fmt.Sprintf("%s:sample:%d", ss.id, k)
	ss.samplers[k], ss.createdBy[k] = sp.id, what
	s.samplers[sp.id] = sp
	return map[string]string{"sampling_session_id": sp.id}, nil
}

// resolveWeights builds an (unregistered) sampler on a base model or a
// checkpoint path; s.mu held.
func (s *Server) resolveWeights(base, path *string) (*sampler, string, *httpError) {
	switch {
	case path != nil && *path != "":
		c := s.paths[*path]
		if c == nil {
			return nil, "", errf(http.StatusNotFound, "model_path %q not found", *path)
		}
		w := c.weights
		if w == nil {
			w = c.state.W
		}
		return &sampler{base: c.base, path: c.path, model: s.models[c.base], w: w, seqs: map[int]*work{}}, "path:" + c.path, nil
	case base != nil && *base != "":
		m := s.models[*base]
		if m == nil {
			return nil, "", errf(http.StatusBadRequest, "base_model %q is not supported (supported: %v)", *base, s.order)
		}
		return &sampler{base: *base, model: m, w: toy.NewWeights(), seqs: map[int]*work{}}, "base:" + *base, nil
	}
	return nil, "", errf(http.StatusBadRequest, "give base_model or model_path")
}

func (s *Server) asample(r *http.Request, body []byte) (any, *httpError) {
	var req sampleReq
	if herr := decodeStrict(body, &req); herr != nil {
		return nil, herr
	}
	if herr := checkType(req.Type, "sample"); herr != nil {
		return nil, herr
	}
	if req.Prompt == nil {
		return nil, errf(http.StatusBadRequest, "prompt is required")
	}
	var prompt []int32
	for j, c := range req.Prompt.Chunks {
		if c.Type != nil && *c.Type != "encoded_text" {
			return nil, errf(http.StatusBadRequest, "prompt.chunks[%d]: chunk type %q is not supported", j, *c.Type)
		}
		prompt = append(prompt, c.Tokens...)
	}
	if len(prompt) == 0 {
		return nil, errf(http.StatusBadRequest, "prompt is empty")
	}
	n := 1
	if req.NumSamples != nil {
		n = *req.NumSamples
	}
	if n < 1 || n > 128 {
		return nil, errf(http.StatusBadRequest, "num_samples must be between 1 and 128")
	}
	sp := samplingParams{}
	if req.SamplingParams != nil {
		sp = *req.SamplingParams
	}
	p := toy.SampleParams{MaxTokens: DefaultMaxTokens, Temperature: 1, TopK: -1, TopP: 1, Decode: s.opts.Decode}
	if sp.MaxTokens != nil {
		p.MaxTokens = *sp.MaxTokens
	}
	if sp.Temperature != nil {
		p.Temperature = *sp.Temperature
	}
	if sp.TopK != nil {
		p.TopK = *sp.TopK
	}
	if sp.TopP != nil {
		p.TopP = *sp.TopP
	}
	if p.MaxTokens < 0 || p.Temperature < 0 || math.IsNaN(p.Temperature) || p.TopP < 0 || p.TopP > 1 {
		return nil, errf(http.StatusBadRequest, "sampling_params out of range (max_tokens >= 0, temperature >= 0, 0 <= top_p <= 1)")
	}
	var err error
	if p.StopStrings, p.StopTokens, err = stopSpec(sp.Stop); err != nil {
		return nil, errf(http.StatusBadRequest, "%v", err)
	}
	wantPrompt := req.PromptLogprobs != nil && *req.PromptLogprobs
	topk := 0
	if req.TopkPromptLogprobs != nil {
		topk = *req.TopkPromptLogprobs
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	var spl *sampler
	if req.SamplingSessionID != nil {
		spl = s.samplers[*req.SamplingSessionID]
		if spl == nil {
			return nil, errf(http.StatusNotFound, "sampling session %q not found", *req.SamplingSessionID)
		}
	} else {
		var herr *httpError
		if spl, _, herr = s.resolveWeights(req.BaseModel, req.ModelPath); herr != nil {
			return nil, herr
		}
		spl.id = "direct"
	}
	cfg := spl.model.Config()
	if len(prompt)+p.MaxTokens > cfg.MaxContext {
		return nil, errf(http.StatusBadRequest, "Prompt length plus max_tokens exceeds the model's context window: %d + %d > %d", len(prompt), p.MaxTokens, cfg.MaxContext)
	}
	if err := spl.model.CheckTokens(prompt); err != nil {
		return nil, errf(http.StatusBadRequest, "prompt: %v", err)
	}
	for _, t := range p.StopTokens {
		if t < 0 || int(t) >= cfg.VocabSize {
			return nil, errf(http.StatusBadRequest, "stop token %d is outside the vocabulary", t)
		}
	}
	seq := -1
	if req.SeqID != nil {
		seq = *req.SeqID
		if w := spl.seqs[seq]; w != nil && spl.id != "direct" {
			if w.key != bodyKey(body) {
				return nil, errf(http.StatusBadRequest, "seq_id %d of sampling session %s was already used by a different request", seq, spl.id)
			}
			return futureRef{RequestID: s.currentFuture(w).id}, nil
		}
	}
	w := &work{kind: "sample", seq: seq, key: bodyKey(body), fail: faultOf(r.Context())}
	w.run = func() (any, *opError) {
		seqs := make([]map[string]any, n)
		for i := range seqs {
			var rng *rand.Rand
			if sp.Seed != nil {
				rng = rand.New(rand.NewPCG(uint64(*sp.Seed), uint64(i)))
			} else {
				h := fnvString(spl.id)
				rng = rand.New(rand.NewPCG(h, uint64(seq+1)<<16|uint64(i)))
			}
			var toks []int32
			var lps []float32
			var stop string
			if script, ok := s.scripted(prompt); ok {
				toks, lps, stop = spl.model.Force(spl.w, prompt, script, p)
			} else {
				toks, lps, stop = spl.model.Sample(spl.w, prompt, p, rng)
			}
			if toks == nil {
				toks, lps = []int32{}, []float32{}
			}
			seqs[i] = map[string]any{"stop_reason": stop, "tokens": toks, "logprobs": lps}
		}
		res := map[string]any{"type": "sample", "sequences": seqs, "prompt_logprobs": nil, "topk_prompt_logprobs": nil}
		if wantPrompt {
			res["prompt_logprobs"] = nullable(spl.model.PromptLogprobs(spl.w, prompt))
		}
		if topk > 0 {
			res["topk_prompt_logprobs"] = topkPrompt(spl.model, spl.w, prompt, topk)
		}
		return res, nil
	}
	if seq >= 0 && spl.id != "direct" {
		spl.seqs[seq] = w
	}
	f := s.newFuture(w)
	s.runAsync(w)
	return futureRef{RequestID: f.id}, nil
}

// scripted asks Options.Script for a dictated completion.
func (s *Server) scripted(prompt []int32) ([]int32, bool) {
	if s.opts.Script == nil {
		return nil, false
	}
	return s.opts.Script(prompt)
}

func fnvString(s string) uint64 {
	h := uint64(1469598103934665603)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

// nullable turns NaN into JSON null.
func nullable(v []float32) []any {
	out := make([]any, len(v))
	for i, x := range v {
		if math.IsNaN(float64(x)) {
			out[i] = nil
		} else {
			out[i] = x
		}
	}
	return out
}

// topkPrompt lists, per prompt position, the k most likely tokens given the
// previous one as [[id, logprob], …]; position 0 is null.
func topkPrompt(m *toy.Model, w *toy.Weights, prompt []int32, k int) []any {
	vocab := m.Config().Vocab
	lp := make([]float64, len(vocab))
	out := make([]any, len(prompt))
	for i := 1; i < len(prompt); i++ {
		m.LogProbs(w, prompt[i-1], 1, lp)
		idx := make([]int, len(vocab))
		for j := range idx {
			idx[j] = j
		}
		sort.SliceStable(idx, func(a, b int) bool { return lp[idx[a]] > lp[idx[b]] })
		if k < len(idx) {
			idx = idx[:k]
		}
		row := make([][2]any, len(idx))
		for j, x := range idx {
			row[j] = [2]any{vocab[x], float32(lp[x])}
		}
		out[i] = row
	}
	return out
}

func (s *Server) weightsInfo(r *http.Request, body []byte) (any, *httpError) {
	var req weightsInfoReq
	if herr := decodeStrict(body, &req); herr != nil {
		return nil, herr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.paths[req.TinkerPath]
	if c == nil {
		return nil, errf(http.StatusNotFound, "weights %q not found", req.TinkerPath)
	}
	return map[string]any{"base_model": c.base, "is_lora": true, "lora_rank": c.lora.Rank,
		"train_unembed": *c.lora.TrainUnembed, "train_mlp": *c.lora.TrainMLP, "train_attn": *c.lora.TrainAttn}, nil
}

// serveREST answers the GET and DELETE endpoints.
func (s *Server) serveREST(method, path string) (any, *httpError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case method == http.MethodGet && path == "healthz":
		return map[string]string{"status": "ok"}, nil
	case method == http.MethodGet && path == "get_server_capabilities":
		var list []map[string]any
		for _, name := range s.order {
			e := map[string]any{"model_name": name}
			if s.opts.Flavor != MinT {
				e["max_context_length"] = s.models[name].Config().MaxContext
			}
			list = append(list, e)
		}
		return map[string]any{"supported_models": list}, nil
	case method == http.MethodGet && strings.HasPrefix(path, "samplers/"):
		sp := s.samplers[strings.TrimPrefix(path, "samplers/")]
		if sp == nil {
			return nil, errf(http.StatusNotFound, "sampler not found")
		}
		out := map[string]any{"sampler_id": sp.id, "base_model": sp.base}
		if sp.path != "" {
			out["model_path"] = sp.path
		}
		return out, nil
	case strings.HasPrefix(path, "training_runs/"):
		rest := strings.TrimPrefix(path, "training_runs/")
		modelID, cp, ok := strings.Cut(rest, "/checkpoints")
		m := s.trainers[modelID]
		if !ok || m == nil {
			return nil, errf(http.StatusNotFound, "training run %q not found", modelID)
		}
		if method == http.MethodGet && cp == "" {
			list := make([]map[string]any, 0, len(m.checkpoints))
			for _, c := range m.checkpoints {
				e := map[string]any{"checkpoint_id": c.id, "checkpoint_type": c.kind, "time": c.at.UTC().Format("2006-01-02T15:04:05.000000Z"),
					"tinker_path": c.path, "size_bytes": 4096 * (1 + len(c.snapshotRows())), "public": false, "expires_at": nil}
				if c.expires != nil {
					e["expires_at"] = c.expires.UTC().Format("2006-01-02T15:04:05Z")
				}
				list = append(list, e)
			}
			return map[string]any{"checkpoints": list, "cursor": nil}, nil
		}
		if method == http.MethodDelete && strings.HasPrefix(cp, "/") {
			cid := strings.TrimPrefix(cp, "/")
			for i, c := range m.checkpoints {
				if c.id == cid {
					m.checkpoints = append(m.checkpoints[:i], m.checkpoints[i+1:]...)
					delete(s.paths, c.path)
					delete(m.reserved, cid)
					return map[string]any{}, nil
				}
			}
			return nil, errf(http.StatusNotFound, "checkpoint %q not found", cid)
		}
	}
	return nil, errf(http.StatusNotFound, "Not Found")
}

func (c *checkpoint) snapshotRows() []int32 {
	if c.weights != nil {
		return c.weights.SortedRows()
	}
	return c.state.W.SortedRows()
}
