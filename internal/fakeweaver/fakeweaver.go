// Package fakeweaver is a fake of Weaver's REST API (nex-agi/weaver, the
// nex-weaver SDK), written from the protocol notes and the SDK's request
// shapes: sessions with heartbeats, models created synchronously,
// long-running work as operations polled at GET /api/v1/operations/{id},
// importance_sampling that requires a loss_mask input, checkpoints under
// weaver:// paths, and errors as {"error", "message", "retryable"}. The model
// behind it is the same toy bigram model as faketinker's, so tests assert
// learning.
package fakeweaver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/metaclaw-go/metaclaw/internal/faketinker"
	"github.com/metaclaw-go/metaclaw/internal/faketinker/toy"
)

// Options configure the fake.
type Options struct {
	APIKey  string        // required X-WEAVER-API-KEY value; "" = any non-empty
	Latency time.Duration // per operation
	Models  []toy.Config  // default faketinker.DefaultModels()
}

// Server is the fake Weaver service (an http.Handler).
type Server struct {
	opts   Options
	models map[string]*toy.Model

	mu       sync.Mutex
	sessions map[string]*session
	trainers map[string]*model
	samplers map[string]*sampler
	ops      map[string]*operation
	ckpts    map[string]*checkpoint
	counts   map[string]int
	failNext map[string]string // route → error code for the next operation
	n        int
	wg       sync.WaitGroup
}

type session struct {
	id         string
	heartbeats int
}

type model struct {
	id, base string
	rank     int
	tr       *toy.Trainer
	lastSeq  int
	queue    chan func()
}

type sampler struct {
	id, base string
	m        *toy.Model
	w        *toy.Weights
	// calls numbers the sample requests: an unseeded request draws from
	// its own stream, as the real service samples afresh each time.
	calls atomic.Uint64
}

type checkpoint struct {
	id, name, kind, path, base string
	rank                       int
	at                         time.Time
	state                      *toy.State
}

type operation struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Response any    `json:"response,omitempty"`
	Code     string `json:"error_code,omitempty"`
	Message  string `json:"error_message,omitempty"`
}

// New returns a fake.
func New(o Options) *Server {
	if len(o.Models) == 0 {
		o.Models = faketinker.DefaultModels()
	}
	s := &Server{opts: o, models: map[string]*toy.Model{}, sessions: map[string]*session{}, trainers: map[string]*model{},
		samplers: map[string]*sampler{}, ops: map[string]*operation{}, ckpts: map[string]*checkpoint{}, counts: map[string]int{}, failNext: map[string]string{}}
	for _, c := range o.Models {
		s.models[c.Name] = toy.New(c)
	}
	return s
}

// Close stops the model workers.
func (s *Server) Close() {
	s.mu.Lock()
	for _, m := range s.trainers {
		close(m.queue)
	}
	s.trainers = map[string]*model{}
	s.mu.Unlock()
	s.wg.Wait()
}

// Count is how many requests hit a route kind ("forward-backward-passes",
// "operations", "heartbeat", …) or, with "op:", how many operations ran.
func (s *Server) Count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[name]
}

// FailNext makes the next operation of a route kind end with status
// "error" and error_code code.
func (s *Server) FailNext(route, code string) {
	s.mu.Lock()
	s.failNext[route] = code
	s.mu.Unlock()
}

// Heartbeats is how many heartbeats a session received.
func (s *Server) Heartbeats(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessions[id]; ss != nil {
		return ss.heartbeats
	}
	return 0
}

type apiErr struct {
	status    int
	code, msg string
	retryable bool
}

func bad(format string, a ...any) *apiErr {
	return &apiErr{status: 400, code: "invalid_argument", msg: fmt.Sprintf(format, a...)}
}

func notFound(what string) *apiErr {
	return &apiErr{status: 404, code: "not_found", msg: what + " not found"}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func decode(body []byte, v any) *apiErr {
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bad("invalid request body: %v", err)
	}
	return nil
}

func (s *Server) id(prefix string) string {
	s.n++
	return fmt.Sprintf("%s-%06d", prefix, s.n)
}

// ServeHTTP routes the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("X-WEAVER-API-KEY")
	if key == "" || (s.opts.APIKey != "" && key != s.opts.APIKey) {
		writeJSON(w, 401, map[string]any{"error": "unauthenticated", "message": "invalid or missing X-WEAVER-API-KEY", "retryable": false})
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, 256<<20))
	parts := strings.Split(strings.Trim(strings.TrimPrefix(r.URL.Path, "/api/v1/"), "/"), "/")
	v, status, aerr := s.route(r.Method, parts, body)
	if aerr != nil {
		writeJSON(w, aerr.status, map[string]any{"error": aerr.code, "message": aerr.msg, "retryable": aerr.retryable})
		return
	}
	writeJSON(w, status, v)
}

func (s *Server) count(k string) {
	s.mu.Lock()
	s.counts[k]++
	s.mu.Unlock()
}

func (s *Server) route(method string, p []string, body []byte) (any, int, *apiErr) {
	switch {
	case method == "GET" && len(p) == 1 && p[0] == "supported-models":
		var items []map[string]any
		for _, c := range s.opts.Models {
			items = append(items, map[string]any{"name": c.Name, "status": "healthy"})
		}
		return map[string]any{"items": items}, 200, nil
	case method == "POST" && len(p) == 1 && p[0] == "sessions":
		s.count("sessions")
		return s.createSession(body)
	case method == "POST" && len(p) == 3 && p[0] == "sessions" && p[2] == "heartbeat":
		s.count("heartbeat")
		s.mu.Lock()
		defer s.mu.Unlock()
		ss := s.sessions[p[1]]
		if ss == nil {
			return nil, 0, notFound("session")
		}
		ss.heartbeats++
		return map[string]any{}, 200, nil
	case method == "POST" && len(p) == 3 && p[0] == "sessions" && p[2] == "models":
		s.count("models")
		return s.createModel(p[1], body)
	case method == "POST" && len(p) == 3 && p[0] == "sessions" && p[2] == "sampling-sessions":
		s.count("sampling-sessions")
		return s.createSampler(p[1], body)
	case method == "POST" && len(p) == 3 && p[0] == "models":
		s.count(p[2])
		return s.modelOp(p[1], p[2], body)
	case method == "GET" && len(p) == 3 && p[0] == "models" && p[2] == "checkpoints":
		return s.listCheckpoints(p[1])
	case method == "POST" && len(p) == 3 && p[0] == "sampling-sessions" && p[2] == "samples":
		s.count("samples")
		return s.sample(p[1], body)
	case method == "GET" && len(p) == 2 && p[0] == "operations":
		s.count("operations")
		s.mu.Lock()
		defer s.mu.Unlock()
		op := s.ops[p[1]]
		if op == nil {
			return nil, 0, notFound("operation")
		}
		c := *op
		return &c, 200, nil
	}
	return nil, 0, &apiErr{status: 404, code: "not_found", msg: "no route " + method + " /api/v1/" + strings.Join(p, "/")}
}

func (s *Server) createSession(body []byte) (any, int, *apiErr) {
	var req struct {
		Tags         []string       `json:"tags"`
		UserMetadata map[string]any `json:"user_metadata"`
		SDKVersion   string         `json:"sdk_version"`
		ProjectID    *string        `json:"project_id"`
	}
	if e := decode(body, &req); e != nil {
		return nil, 0, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss := &session{id: s.id("sess")}
	s.sessions[ss.id] = ss
	return map[string]any{"id": ss.id, "tags": req.Tags}, 201, nil
}

type loraCfg struct {
	Rank         int    `json:"rank"`
	Seed         *int64 `json:"seed"`
	Alpha        *int   `json:"alpha"`
	TrainUnembed *bool  `json:"train_unembed"`
	TrainMLP     *bool  `json:"train_mlp"`
	TrainAttn    *bool  `json:"train_attn"`
}

func (s *Server) createModel(sid string, body []byte) (any, int, *apiErr) {
	var req struct {
		ModelSeqID      int            `json:"model_seq_id"`
		BaseModel       string         `json:"base_model"`
		TrainingMode    *string        `json:"training_mode"`
		LoraConfig      *loraCfg       `json:"lora_config"`
		UserMetadata    map[string]any `json:"user_metadata"`
		PerformanceTier *string        `json:"performance_tier"`
	}
	if e := decode(body, &req); e != nil {
		return nil, 0, e
	}
	base := s.models[req.BaseModel]
	if base == nil {
		return nil, 0, bad("base_model %q is not supported", req.BaseModel)
	}
	if req.LoraConfig == nil || req.LoraConfig.Rank <= 0 {
		return nil, 0, bad("lora_config.rank must be positive")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[sid] == nil {
		return nil, 0, notFound("session")
	}
	m := &model{id: s.id("model"), base: req.BaseModel, rank: req.LoraConfig.Rank, tr: toy.NewTrainer(base), queue: make(chan func(), 64)}
	s.trainers[m.id] = m
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for f := range m.queue {
			f()
		}
	}()
	return map[string]any{"id": m.id, "base_model": m.base, "tokenizer_path": m.base}, 201, nil
}

// enqueue creates an operation that runs f on the model's worker.
func (s *Server) enqueue(m *model, route string, f func() (any, *apiErr)) (any, int, *apiErr) {
	s.mu.Lock()
	op := &operation{ID: s.id("op"), Status: "pending"}
	s.ops[op.ID] = op
	answer := *op // copied before the worker can touch op
	fail := s.failNext[route]
	delete(s.failNext, route)
	s.mu.Unlock()
	run := func() {
		if s.opts.Latency > 0 {
			time.Sleep(s.opts.Latency)
		}
		var v any
		var e *apiErr
		if fail != "" {
			e = &apiErr{code: fail, msg: "injected failure"}
		} else {
			v, e = f()
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.counts["op:"+route]++
		if e != nil {
			op.Status, op.Code, op.Message = "error", e.code, e.msg
			return
		}
		op.Status, op.Response = "done", v
	}
	if m == nil {
		s.wg.Add(1)
		go func() { defer s.wg.Done(); run() }()
	} else {
		m.queue <- run
	}
	return &answer, 202, nil
}

func (s *Server) lookup(mid string) (*model, *apiErr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.trainers[mid]
	if m == nil {
		return nil, notFound("model")
	}
	return m, nil
}

// nextSeq checks a payload's seq_id continues the model's sequence.
func (s *Server) nextSeq(m *model, seq int) *apiErr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seq != m.lastSeq+1 {
		return &apiErr{status: 409, code: "sequence_conflict", msg: fmt.Sprintf("seq_id %d, expected %d", seq, m.lastSeq+1)}
	}
	m.lastSeq = seq
	return nil
}

func (s *Server) modelOp(mid, route string, body []byte) (any, int, *apiErr) {
	m, e := s.lookup(mid)
	if e != nil {
		return nil, 0, e
	}
	switch route {
	case "forward-backward-passes", "forward-passes":
		var req struct {
			Payload struct {
				ModelID string   `json:"model_id"`
				SeqID   int      `json:"seq_id"`
				Input   fwdInput `json:"forward_backward_input"`
			} `json:"payload"`
		}
		if e := decode(body, &req); e != nil {
			return nil, 0, e
		}
		data, e := decodeData(req.Payload.Input, m.tr.Model)
		if e != nil {
			return nil, 0, e
		}
		if e := s.nextSeq(m, req.Payload.SeqID); e != nil {
			return nil, 0, e
		}
		only := route == "forward-passes"
		return s.enqueue(m, route, func() (any, *apiErr) {
			lps, loss, err := m.tr.ForwardBackward(data, req.Payload.Input.LossFn, req.Payload.Input.LossFnConfig, only)
			if err != nil {
				return nil, bad("%v", err)
			}
			outs := make([]map[string]any, len(lps))
			for i, lp := range lps {
				outs[i] = map[string]any{"logprobs": map[string]any{"data": lp, "dtype": "float32", "shape": []int{len(lp)}}}
			}
			return map[string]any{"result": map[string]any{"loss_fn_outputs": outs, "metrics": map[string]float64{"loss:sum": loss}}}, nil
		})
	case "optimizer-steps":
		var req struct {
			Payload struct {
				ModelID string `json:"model_id"`
				SeqID   int    `json:"seq_id"`
				Adam    struct {
					LearningRate float64  `json:"learning_rate"`
					Beta1        *float64 `json:"beta1"`
					Beta2        *float64 `json:"beta2"`
					Eps          *float64 `json:"eps"`
					WeightDecay  *float64 `json:"weight_decay"`
					GradClipNorm *float64 `json:"grad_clip_norm"`
				} `json:"adam_params"`
			} `json:"payload"`
		}
		if e := decode(body, &req); e != nil {
			return nil, 0, e
		}
		a := req.Payload.Adam
		p := toy.Adam{LearningRate: a.LearningRate, Beta1: 0.9, Beta2: 0.95, Eps: 1e-12}
		for _, f := range []struct {
			d *float64
			v *float64
		}{{&p.Beta1, a.Beta1}, {&p.Beta2, a.Beta2}, {&p.Eps, a.Eps}, {&p.WeightDecay, a.WeightDecay}, {&p.GradClipNorm, a.GradClipNorm}} {
			if f.v != nil {
				*f.d = *f.v
			}
		}
		if e := s.nextSeq(m, req.Payload.SeqID); e != nil {
			return nil, 0, e
		}
		return s.enqueue(m, route, func() (any, *apiErr) { m.tr.OptimStep(p); return map[string]any{"metrics": map[string]float64{}}, nil })
	case "export-sampler":
		var req struct {
			SeqID      int     `json:"seq_id"`
			Path       *string `json:"path"`
			TTLSeconds *int    `json:"ttl_seconds"`
		}
		if e := decode(body, &req); e != nil {
			return nil, 0, e
		}
		if e := s.nextSeq(m, req.SeqID); e != nil {
			return nil, 0, e
		}
		return s.enqueue(m, route, func() (any, *apiErr) {
			s.mu.Lock()
			defer s.mu.Unlock()
			sp := &sampler{id: s.id("samp"), base: m.base, m: m.tr.Model, w: m.tr.W.Clone()}
			s.samplers[sp.id] = sp
			name := "export-" + sp.id
			if req.Path != nil {
				name = *req.Path
			}
			return map[string]any{"model_path": "weaver://" + m.id + "/sampler/" + name, "sampling_session_id": sp.id}, nil
		})
	case "checkpoints":
		var req struct {
			Type       string  `json:"type"`
			Name       *string `json:"name"`
			TTLSeconds *int    `json:"ttl_seconds"`
		}
		if e := decode(body, &req); e != nil {
			return nil, 0, e
		}
		if req.Type != "weight" && req.Type != "weight_and_optimizer" && req.Type != "sampling" {
			return nil, 0, bad("type must be weight, weight_and_optimizer or sampling")
		}
		name := ""
		if req.Name != nil {
			name = *req.Name
		}
		s.mu.Lock()
		for _, c := range s.ckpts {
			if c.name == name && name != "" && strings.HasPrefix(c.path, "weaver://"+m.id+"/") {
				s.mu.Unlock()
				return nil, 0, &apiErr{status: 409, code: "already_exists", msg: "checkpoint " + name + " exists"}
			}
		}
		s.mu.Unlock()
		return s.enqueue(m, route, func() (any, *apiErr) {
			s.mu.Lock()
			defer s.mu.Unlock()
			c := &checkpoint{id: s.id("ckpt"), name: name, kind: req.Type, base: m.base, rank: m.rank, at: time.Now(), state: m.tr.Save()}
			if name == "" {
				name = c.id
			}
			c.path = "weaver://" + m.id + "/checkpoints/" + name
			if req.Type != "weight_and_optimizer" {
				c.state = &toy.State{W: c.state.W}
			}
			s.ckpts[c.path] = c
			return ckptJSON(c), nil
		})
	case "load":
		var req struct {
			Path             string `json:"path"`
			IncludeOptimizer bool   `json:"include_optimizer"`
		}
		if e := decode(body, &req); e != nil {
			return nil, 0, e
		}
		s.mu.Lock()
		c := s.ckpts[req.Path]
		s.mu.Unlock()
		if c == nil {
			return nil, 0, notFound("checkpoint " + req.Path)
		}
		if c.base != m.base || c.rank != m.rank {
			return nil, 0, bad("checkpoint %s does not fit model %s", req.Path, m.id)
		}
		if req.IncludeOptimizer && c.kind != "weight_and_optimizer" {
			return nil, 0, bad("checkpoint %s has no optimizer state", req.Path)
		}
		return s.enqueue(m, route, func() (any, *apiErr) {
			m.tr.Load(c.state, req.IncludeOptimizer)
			return map[string]any{"path": req.Path}, nil
		})
	case "terminate":
		s.mu.Lock()
		delete(s.trainers, m.id)
		close(m.queue)
		s.mu.Unlock()
		return map[string]any{"trainer": "terminated"}, 200, nil
	}
	return nil, 0, notFound("route " + route)
}

func ckptJSON(c *checkpoint) map[string]any {
	return map[string]any{"id": c.id, "path": c.path, "name": c.name, "checkpoint_type": c.kind, "status": "completed",
		"created_at": c.at.UTC().Format(time.RFC3339)}
}

func (s *Server) listCheckpoints(mid string) (any, int, *apiErr) {
	s.mu.Lock()
	defer s.mu.Unlock()
	items := []map[string]any{}
	for _, c := range s.ckpts {
		if strings.HasPrefix(c.path, "weaver://"+mid+"/") {
			items = append(items, ckptJSON(c))
		}
	}
	return map[string]any{"items": items}, 200, nil
}

func (s *Server) createSampler(sid string, body []byte) (any, int, *apiErr) {
	var req struct {
		SamplingSessionSeqID int     `json:"sampling_session_seq_id"`
		BaseModel            *string `json:"base_model"`
		ModelPath            *string `json:"model_path"`
		ModelID              *string `json:"model_id"`
	}
	if e := decode(body, &req); e != nil {
		return nil, 0, e
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sessions[sid] == nil {
		return nil, 0, notFound("session")
	}
	sp := &sampler{id: s.id("samp")}
	switch {
	case req.ModelPath != nil && *req.ModelPath != "":
		c := s.ckpts[*req.ModelPath]
		if c == nil {
			return nil, 0, notFound("model_path " + *req.ModelPath)
		}
		sp.base, sp.m, sp.w = c.base, s.models[c.base], c.state.W
	case req.BaseModel != nil && s.models[*req.BaseModel] != nil:
		sp.base, sp.m, sp.w = *req.BaseModel, s.models[*req.BaseModel], toy.NewWeights()
	default:
		return nil, 0, bad("give a supported base_model or a model_path")
	}
	s.samplers[sp.id] = sp
	return map[string]any{"id": sp.id, "base_model": sp.base}, 201, nil
}

func (s *Server) sample(ssid string, body []byte) (any, int, *apiErr) {
	var req struct {
		Prompt struct {
			Chunks []struct {
				Type   string  `json:"type"`
				Tokens []int32 `json:"tokens"`
			} `json:"chunks"`
		} `json:"prompt"`
		SamplingParams struct {
			MaxTokens   int      `json:"max_tokens"`
			Temperature *float64 `json:"temperature"`
			TopK        *int     `json:"top_k"`
			TopP        *float64 `json:"top_p"`
			Seed        *int64   `json:"seed"`
			Stop        []int32  `json:"stop"`
		} `json:"sampling_params"`
		NumSamples         int  `json:"num_samples"`
		PromptLogprobs     bool `json:"prompt_logprobs"`
		TopkPromptLogprobs int  `json:"topk_prompt_logprobs"`
	}
	if e := decode(body, &req); e != nil {
		return nil, 0, e
	}
	s.mu.Lock()
	sp := s.samplers[ssid]
	s.mu.Unlock()
	if sp == nil {
		return nil, 0, notFound("sampling session")
	}
	var prompt []int32
	for _, c := range req.Prompt.Chunks {
		prompt = append(prompt, c.Tokens...)
	}
	if len(prompt) == 0 {
		return nil, 0, bad("prompt is empty")
	}
	p := toy.SampleParams{MaxTokens: req.SamplingParams.MaxTokens, Temperature: 1, TopK: -1, TopP: 1, StopTokens: req.SamplingParams.Stop}
	if v := req.SamplingParams.Temperature; v != nil {
		p.Temperature = *v
	}
	if v := req.SamplingParams.TopK; v != nil {
		p.TopK = *v
	}
	if v := req.SamplingParams.TopP; v != nil {
		p.TopP = *v
	}
	n := max(req.NumSamples, 1)
	return s.enqueue(nil, "samples", func() (any, *apiErr) {
		seqs := make([]map[string]any, n)
		// Seeded: the same samples every time. Unseeded: a stream of this
		// sampler's call (a seed from the prompt's length made every
		// "Question number NN?" answer alike, and a policy whose few
		// answers all missed the judged word never learned again).
		seed, stream := fnv64(sp.id), sp.calls.Add(1)<<16
		if req.SamplingParams.Seed != nil {
			seed, stream = uint64(*req.SamplingParams.Seed), 0
		}
		for i := range seqs {
			toks, lps, stop := sp.m.Sample(sp.w, prompt, p, rand.New(rand.NewPCG(seed, stream|uint64(i))))
			seqs[i] = map[string]any{"tokens": toks, "logprobs": lps, "stop_reason": stop}
		}
		res := map[string]any{"sequences": seqs}
		if req.PromptLogprobs {
			pl := sp.m.PromptLogprobs(sp.w, prompt)
			out := make([]any, len(pl))
			for i, v := range pl {
				if !math.IsNaN(float64(v)) {
					out[i] = v
				}
			}
			res["prompt_logprobs"] = out
		}
		return map[string]any{"result": res}, nil
	})
}

// fnv64 is FNV-1a of s.
func fnv64(s string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(s))
	return h.Sum64()
}
