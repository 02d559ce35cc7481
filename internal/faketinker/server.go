package faketinker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/metaclaw-go/metaclaw/internal/faketinker/toy"
)

// Flavor selects which generation of the protocol the fake speaks.
type Flavor string

// Flavors.
const (
	// Tinker: the JSON protocol of SDK 0.16–0.24 (client config, long-polled
	// retrieve_future, weight_decay/grad_clip_norm, allow_metadata_only).
	Tinker Flavor = "tinker"
	// MinT: Tinker's 0.6.0 protocol as MindLab serves it: no client config
	// (404), retrieve_future answers 408 at once instead of holding, and the
	// newer fields above are unknown (400).
	MinT Flavor = "mint"
)

// Options configure a fake server. The zero value is a Tinker fake that
// accepts any non-empty key, with the default models and no latency.
type Options struct {
	Flavor Flavor
	// APIKey, when set, is the only X-API-Key accepted.
	APIKey string
	// Models offered; default DefaultModels().
	Models []toy.Config
	// Latency is how long each compute operation takes (0 for benchmarks).
	Latency time.Duration
	// LongPoll is how long retrieve_future holds an unfinished future before
	// answering 408; default 200 ms (MinT: not held).
	LongPoll time.Duration
	// SessionTTL ends sessions without a heartbeat for this long; 0 = never.
	SessionTTL time.Duration
	// Now is the clock sessions expire by (default time.Now); tests move
	// it instead of sleeping past the TTL on a loaded machine.
	Now func() time.Time
	// FwdBwdMaxChunkLen and FwdBwdMaxChunkBytes are what client/config
	// advertises (defaults 1024 datums and 5,000,000 bytes).
	FwdBwdMaxChunkLen   int
	FwdBwdMaxChunkBytes int
	// MaxBodyBytes bounds a request body; default 256 MiB.
	MaxBodyBytes int64
	// Decode turns sampled ids into text for stop strings (see toy).
	Decode func([]int32) string
	// Script, when set, may dictate a completion: for a prompt it returns
	// the tokens the sampler answers (ok), which are cut at max_tokens or a
	// stop token and carry the model's log-probs of them; otherwise the
	// model samples. Tests use it for answers a toy model cannot produce,
	// such as a well-formed tool call.
	Script func(prompt []int32) (tokens []int32, ok bool)
}

// DefaultModels are the base models a fake offers unless told otherwise.
func DefaultModels() []toy.Config {
	return []toy.Config{
		{Name: "Qwen/Qwen3-4B-Instruct-2507", EOS: 31, MaxContext: 32768},
		{Name: "Qwen/Qwen3-8B", EOS: 31, MaxContext: 32768},
		{Name: "toy", EOS: 31, MaxContext: 4096},
	}
}

// Server is the fake. It implements http.Handler; Close stops its workers.
type Server struct {
	opts   Options
	models map[string]*toy.Model
	order  []string

	mu        sync.Mutex
	sessions  map[string]*session
	trainers  map[string]*model
	samplers  map[string]*sampler
	futures   map[string]*future
	idem      map[string]*stored
	paths     map[string]*checkpoint // by tinker path
	faults    []*Fault
	counts    map[string]int
	nextID    int
	closed    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
}

// stored is a response kept for an idempotency key.
type stored struct {
	status int
	body   []byte
}

// New returns a fake server.
func New(o Options) *Server {
	if o.Flavor == "" {
		o.Flavor = Tinker
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.LongPoll == 0 && o.Flavor == Tinker {
		o.LongPoll = 200 * time.Millisecond
	}
	if o.FwdBwdMaxChunkLen <= 0 {
		o.FwdBwdMaxChunkLen = 1024
	}
	if o.FwdBwdMaxChunkBytes <= 0 {
		o.FwdBwdMaxChunkBytes = 5_000_000
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 256 << 20
	}
	if len(o.Models) == 0 {
		o.Models = DefaultModels()
	}
	s := &Server{
		opts: o, models: map[string]*toy.Model{},
		sessions: map[string]*session{}, trainers: map[string]*model{}, samplers: map[string]*sampler{},
		futures: map[string]*future{}, idem: map[string]*stored{}, paths: map[string]*checkpoint{},
		counts: map[string]int{}, closed: make(chan struct{}),
	}
	for _, c := range o.Models {
		s.models[c.Name] = toy.New(c)
		s.order = append(s.order, c.Name)
	}
	return s
}

// Close stops the model workers; pending futures stay pending.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closed) })
	s.wg.Wait()
}

// Count returns how many requests reached an endpoint ("asample",
// "session_heartbeat", …) or, with an "op:" prefix, how many operations of
// a kind were executed ("op:forward_backward").
func (s *Server) Count(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[name]
}

// httpError is an answer other than 200.
type httpError struct {
	status int
	detail string
	body   any // replaces {"detail": …} when set
}

func (e *httpError) Error() string { return fmt.Sprintf("%d %s", e.status, e.detail) }

func errf(status int, format string, a ...any) *httpError {
	return &httpError{status: status, detail: fmt.Sprintf(format, a...)}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = 500, []byte(`{"detail":"encode: `+err.Error()+`"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeErr(w http.ResponseWriter, e *httpError) {
	if e.body != nil {
		writeJSON(w, e.status, e.body)
		return
	}
	writeJSON(w, e.status, map[string]string{"detail": e.detail})
}

// decodeStrict decodes body into v, rejecting unknown fields and trailing
// data (the server's models are extra=forbid).
func decodeStrict(body []byte, v any) *httpError {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errf(http.StatusBadRequest, "invalid request body: %v", err)
	}
	if dec.More() {
		return errf(http.StatusBadRequest, "invalid request body: trailing data")
	}
	return nil
}

// checkType accepts a missing type (old SDKs omit it) or the expected one.
func checkType(t *string, want string) *httpError {
	if t != nil && *t != want {
		return errf(http.StatusBadRequest, "type must be %q, got %q", want, *t)
	}
	return nil
}

type handlerFunc func(r *http.Request, body []byte) (any, *httpError)

// ServeHTTP routes /api/v1/… requests.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("X-API-Key")
	if key == "" || (s.opts.APIKey != "" && key != s.opts.APIKey) {
		writeErr(w, errf(http.StatusUnauthorized, "Invalid or missing API key (send it in X-API-Key)"))
		return
	}
	path := strings.TrimPrefix(r.URL.Path, "/api/v1/")
	if path == r.URL.Path {
		writeErr(w, errf(http.StatusNotFound, "Not Found"))
		return
	}
	s.expireSessions()
	if r.Method == http.MethodGet || r.Method == http.MethodDelete {
		s.count(path)
		v, herr := s.serveREST(r.Method, path)
		if herr != nil {
			writeErr(w, herr)
			return
		}
		writeJSON(w, http.StatusOK, v)
		return
	}
	if r.Method != http.MethodPost {
		writeErr(w, errf(http.StatusMethodNotAllowed, "Method Not Allowed"))
		return
	}
	h := s.route(path)
	if h == nil && path != "retrieve_future" {
		writeErr(w, errf(http.StatusNotFound, "Not Found"))
		return
	}
	s.count(path)
	body, err := io.ReadAll(io.LimitReader(r.Body, s.opts.MaxBodyBytes+1))
	if err != nil {
		writeErr(w, errf(http.StatusBadRequest, "read body: %v", err))
		return
	}
	if int64(len(body)) > s.opts.MaxBodyBytes {
		writeErr(w, errf(http.StatusRequestEntityTooLarge, "request body too large"))
		return
	}
	if path == "retrieve_future" {
		s.retrieveFuture(w, r, body)
		return
	}
	idemKey := r.Header.Get("X-Idempotency-Key")
	if idemKey != "" {
		s.mu.Lock()
		st := s.idem[key+"\x00"+idemKey]
		s.mu.Unlock()
		if st != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(st.status)
			_, _ = w.Write(st.body)
			return
		}
	}
	f := s.takeFault(path, "", false)
	if f != nil && !f.AfterApply && f.Category == "" && !f.TryAgain {
		s.writeFault(w, f, "")
		return
	}
	if f != nil && f.Category != "" {
		r = r.WithContext(context.WithValue(r.Context(), faultKey{}, f))
	}
	v, herr := h(r, body)
	if herr != nil {
		writeErr(w, herr)
		return
	}
	b, _ := json.Marshal(v)
	if idemKey != "" {
		s.mu.Lock()
		s.idem[key+"\x00"+idemKey] = &stored{status: http.StatusOK, body: b}
		s.mu.Unlock()
	}
	if f != nil && f.AfterApply {
		// The work was accepted, but the answer is "lost": the client's
		// retry must come back with the same idempotency key or seq_id.
		s.writeFault(w, f, "")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

func (s *Server) count(name string) {
	s.mu.Lock()
	s.counts[name]++
	s.mu.Unlock()
}

func (s *Server) route(path string) handlerFunc {
	switch path {
	case "create_session":
		return s.createSession
	case "session_heartbeat":
		return s.heartbeat
	case "client/config":
		if s.opts.Flavor == MinT {
			return nil
		}
		return s.clientConfig
	case "client/dynamic_config":
		return nil // tolerated as 404 by every SDK
	case "create_model":
		return s.createModel
	case "get_info":
		return s.getInfo
	case "forward_backward":
		return s.forwardBackward
	case "forward":
		return s.forward
	case "optim_step":
		return s.optimStep
	case "save_weights":
		return s.saveWeights
	case "save_weights_for_sampler":
		return s.saveWeightsForSampler
	case "load_weights":
		return s.loadWeights
	case "unload_model":
		return s.unloadModel
	case "create_sampling_session":
		return s.createSamplingSession
	case "asample":
		return s.asample
	case "weights_info":
		return s.weightsInfo
	}
	return nil
}

// newID returns a fresh opaque id with prefix.
func (s *Server) newID(prefix string) string {
	s.nextID++
	return fmt.Sprintf("%s%08x", prefix, uint32(s.nextID)*2654435761)
}

var errClosed = errors.New("server closed")
