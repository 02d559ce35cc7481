package faketinker

import (
	"fmt"
	"net/http"
	"regexp"
	"time"

	"github.com/metaclaw-go/metaclaw/internal/faketinker/toy"
)

// model is one LoRA under training with its FIFO of operations.
type model struct {
	id, session, base string
	lora              loraConfig
	tr                *toy.Trainer // touched only by the model's worker
	ops               map[int]*work
	next              int
	wake              chan struct{}
	unloaded          bool
	checkpoints       []*checkpoint
	reserved          map[string]bool // checkpoint ids promised by queued saves
}

// checkpoint is saved weights under a tinker:// path.
type checkpoint struct {
	id, kind, path, model, base string
	lora                        loraConfig
	at                          time.Time
	expires                     *time.Time
	state                       *toy.State   // training checkpoints
	weights                     *toy.Weights // sampler checkpoints
}

func (s *Server) createModel(r *http.Request, body []byte) (any, *httpError) {
	var req createModelReq
	if herr := decodeStrict(body, &req); herr != nil {
		return nil, herr
	}
	if herr := checkType(req.Type, "create_model"); herr != nil {
		return nil, herr
	}
	if req.ModelSeqID == nil || *req.ModelSeqID < 0 {
		return nil, errf(http.StatusBadRequest, "model_seq_id is required and must be >= 0")
	}
	base := s.models[req.BaseModel]
	if base == nil {
		return nil, errf(http.StatusBadRequest, "base_model %q is not supported (supported: %v)", req.BaseModel, s.order)
	}
	if req.LoraConfig == nil {
		return nil, errf(http.StatusBadRequest, "lora_config is required")
	}
	lc := *req.LoraConfig
	if lc.Rank <= 0 || lc.Rank&(lc.Rank-1) != 0 {
		return nil, errf(http.StatusBadRequest, "lora_config.rank must be a positive power of two, got %d", lc.Rank)
	}
	t := true
	for _, p := range []**bool{&lc.TrainUnembed, &lc.TrainMLP, &lc.TrainAttn} {
		if *p == nil {
			*p = &t
		}
	}
	if !*lc.TrainUnembed && !*lc.TrainMLP && !*lc.TrainAttn {
		return nil, errf(http.StatusBadRequest, "lora_config: at least one of train_unembed, train_mlp, train_attn must be true")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, herr := s.liveSession(req.SessionID)
	if herr != nil {
		return nil, herr
	}
	id := fmt.Sprintf("%s:train:%d", ss.id, *req.ModelSeqID)
	if w := ss.models[*req.ModelSeqID]; w != nil {
		if w.key != req.BaseModel {
			return nil, errf(http.StatusBadRequest, "model_seq_id %d already used for %s", *req.ModelSeqID, w.key)
		}
		return futureRef{RequestID: s.currentFuture(w).id, ModelID: id}, nil
	}
	w := &work{kind: "create_model", key: req.BaseModel, fail: faultOf(r.Context())}
	w.run = func() (any, *opError) {
		m := &model{id: id, session: ss.id, base: req.BaseModel, lora: lc, tr: toy.NewTrainer(base),
			ops: map[int]*work{}, next: 1, wake: make(chan struct{}, 1), reserved: map[string]bool{}}
		s.mu.Lock()
		s.trainers[id] = m
		ss.modelIDs[*req.ModelSeqID] = id
		s.mu.Unlock()
		s.wg.Add(1)
		go s.runModel(m)
		return map[string]string{"model_id": id, "type": "create_model"}, nil
	}
	ss.models[*req.ModelSeqID] = w
	f := s.newFuture(w)
	s.runAsync(w)
	return futureRef{RequestID: f.id, ModelID: id}, nil
}

// runModel executes a model's operations strictly in seq_id order: op n runs
// only after op n−1, however they arrived.
func (s *Server) runModel(m *model) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		w := m.ops[m.next]
		if w != nil {
			w.started = true
			m.next++
		}
		s.mu.Unlock()
		if w == nil {
			select {
			case <-m.wake:
				continue
			case <-s.closed:
				return
			}
		}
		s.execute(w)
	}
}

// lookupModel returns a loaded model; called with s.mu held.
func (s *Server) lookupModel(id string) (*model, *httpError) {
	m := s.trainers[id]
	if m == nil || m.unloaded {
		return nil, errf(http.StatusNotFound, "model %q not found", id)
	}
	return m, nil
}

// enqueue adds a training operation at seq to m's FIFO, or returns the
// operation already there (a retry). kind and key must match a retry.
func (s *Server) enqueue(r *http.Request, modelID string, seq *int, kind, key string, prepare func(m *model) (func() (any, *opError), *httpError)) (any, *httpError) {
	if seq == nil || *seq < 1 {
		return nil, errf(http.StatusBadRequest, "seq_id is required and must be >= 1 (create_model is 0)")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, herr := s.lookupModel(modelID)
	if herr != nil {
		return nil, herr
	}
	if w := m.ops[*seq]; w != nil {
		if w.kind != kind || w.key != key {
			return nil, errf(http.StatusBadRequest, "seq_id %d of model %s was already used by a different %s request", *seq, m.id, w.kind)
		}
		return futureRef{RequestID: s.currentFuture(w).id, ModelID: m.id}, nil
	}
	if *seq < m.next {
		return nil, errf(http.StatusBadRequest, "seq_id %d of model %s is already past (next is %d)", *seq, m.id, m.next)
	}
	run, herr := prepare(m)
	if herr != nil {
		return nil, herr
	}
	w := &work{kind: kind, seq: *seq, key: key, run: run, fail: faultOf(r.Context())}
	m.ops[*seq] = w
	f := s.newFuture(w)
	select {
	case m.wake <- struct{}{}:
	default:
	}
	return futureRef{RequestID: f.id, ModelID: m.id}, nil
}

func (s *Server) getInfo(r *http.Request, body []byte) (any, *httpError) {
	var req modelIDReq
	if herr := decodeStrict(body, &req); herr != nil {
		return nil, herr
	}
	if herr := checkType(req.Type, "get_info"); herr != nil {
		return nil, herr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, herr := s.lookupModel(req.ModelID)
	if herr != nil {
		return nil, herr
	}
	return map[string]any{
		"model_id":   m.id,
		"model_data": map[string]any{"arch": "toy-bigram", "model_name": m.base, "tokenizer_id": m.base},
		"is_lora":    true, "lora_rank": m.lora.Rank, "model_name": m.base, "type": "get_info",
	}, nil
}

func (s *Server) unloadModel(r *http.Request, body []byte) (any, *httpError) {
	var req modelIDReq
	if herr := decodeStrict(body, &req); herr != nil {
		return nil, herr
	}
	if herr := checkType(req.Type, "unload_model"); herr != nil {
		return nil, herr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, herr := s.lookupModel(req.ModelID)
	if herr != nil {
		return nil, herr
	}
	w := &work{kind: "unload_model", fail: faultOf(r.Context())}
	w.run = func() (any, *opError) {
		s.mu.Lock()
		m.unloaded = true
		s.mu.Unlock()
		return map[string]string{"model_id": m.id, "type": "unload_model"}, nil
	}
	f := s.newFuture(w)
	s.runAsync(w)
	return futureRef{RequestID: f.id, ModelID: m.id}, nil
}

var checkpointName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$`)

// reserve claims checkpoint id (kind/name) on m for a queued save, or
// answers 409; called with s.mu held.
func (s *Server) reserve(m *model, cid string, overwrite bool) *httpError {
	if overwrite {
		return nil
	}
	if m.reserved[cid] {
		return &httpError{status: http.StatusConflict, detail: fmt.Sprintf("checkpoint %s of model %s already exists (ResourceAlreadyExists); pass overwrite=true or pick another name", cid, m.id)}
	}
	m.reserved[cid] = true
	return nil
}

// addCheckpoint registers c (replacing one of the same id); s.mu held.
func (s *Server) addCheckpoint(m *model, c *checkpoint) {
	for i, old := range m.checkpoints {
		if old.id == c.id {
			m.checkpoints = append(m.checkpoints[:i], m.checkpoints[i+1:]...)
			break
		}
	}
	m.checkpoints = append(m.checkpoints, c)
	m.reserved[c.id] = true
	s.paths[c.path] = c
}

func ttl(sec *int) *time.Time {
	if sec == nil || *sec <= 0 {
		return nil
	}
	t := time.Now().Add(time.Duration(*sec) * time.Second)
	return &t
}
