package runtime_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/host/rl/prompt"
	rlruntime "github.com/metaclaw-go/metaclaw/host/rl/runtime"
	"github.com/metaclaw-go/metaclaw/host/rl/samples"
	"github.com/metaclaw-go/metaclaw/host/rl/score"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/faketinker"
	"github.com/metaclaw-go/metaclaw/internal/faketinker/toy"
	"github.com/metaclaw-go/metaclaw/internal/rltest"
	"github.com/metaclaw-go/metaclaw/internal/testhost"
)

// sampled is one asample call the fake Tinker answered: the prompt it got
// and the tokens and log-probs it returned.
type sampled struct {
	Prompt   []int32
	Tokens   []int32
	Logprobs []float32
	TopK     int
}

// tinkerTap runs the fake Tinker and records every sampling call's prompt
// and result from the HTTP traffic itself.
type tinkerTap struct {
	fake    *faketinker.Server
	srv     *httptest.Server
	mu      sync.Mutex
	prompts map[string][]int32 // by request id
	topK    map[string]int
	calls   []sampled
}

func newTinkerTap(t testing.TB, codec *prompt.Codec, models ...toy.Config) *tinkerTap {
	t.Helper()
	if len(models) == 0 {
		models = []toy.Config{rltest.ToyModel()}
	}
	tap := &tinkerTap{prompts: map[string][]int32{}, topK: map[string]int{}}
	tap.fake = faketinker.New(faketinker.Options{Models: models, Script: rltest.Script(codec), LongPoll: 20 * time.Millisecond})
	tap.srv = httptest.NewServer(http.HandlerFunc(tap.serve))
	t.Cleanup(func() {
		tap.srv.Close()
		tap.fake.Close()
	})
	return tap
}

func (tap *tinkerTap) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	tap.fake.ServeHTTP(rec, r)
	out := rec.Body.Bytes()
	switch r.URL.Path {
	case "/api/v1/asample":
		var req struct {
			Prompt struct {
				Chunks []struct {
					Tokens []int32 `json:"tokens"`
				} `json:"chunks"`
			} `json:"prompt"`
			SamplingParams struct {
				TopK int `json:"top_k"`
			} `json:"sampling_params"`
		}
		var ref struct {
			RequestID string `json:"request_id"`
		}
		if json.Unmarshal(body, &req) == nil && json.Unmarshal(out, &ref) == nil && ref.RequestID != "" {
			var p []int32
			for _, c := range req.Prompt.Chunks {
				p = append(p, c.Tokens...)
			}
			tap.mu.Lock()
			tap.prompts[ref.RequestID] = p
			tap.topK[ref.RequestID] = req.SamplingParams.TopK
			tap.mu.Unlock()
		}
	case "/api/v1/retrieve_future":
		var req struct {
			RequestID string `json:"request_id"`
		}
		var res struct {
			Type      string `json:"type"`
			Sequences []struct {
				Tokens   []int32   `json:"tokens"`
				Logprobs []float32 `json:"logprobs"`
			} `json:"sequences"`
		}
		if rec.Code == 200 && json.Unmarshal(body, &req) == nil && json.Unmarshal(out, &res) == nil && res.Type == "sample" && len(res.Sequences) > 0 {
			tap.mu.Lock()
			if p, ok := tap.prompts[req.RequestID]; ok {
				delete(tap.prompts, req.RequestID)
				tap.calls = append(tap.calls, sampled{Prompt: p, Tokens: res.Sequences[0].Tokens, Logprobs: res.Sequences[0].Logprobs, TopK: tap.topK[req.RequestID]})
			}
			tap.mu.Unlock()
		}
	}
	for k, v := range rec.Header() {
		w.Header()[k] = v
	}
	w.WriteHeader(rec.Code)
	w.Write(out)
}

func (tap *tinkerTap) sampled() []sampled {
	tap.mu.Lock()
	defer tap.mu.Unlock()
	return append([]sampled(nil), tap.calls...)
}

// rlHost is the real request path in rl mode: store, core, proxy with the
// RL runtime answering main turns from the fake Tinker, a fake judge, and
// the fake llm.* upstream (which must see no main turn).
type rlHost struct {
	*testhost.Host
	rt     *rlruntime.Runtime
	tinker *tinkerTap
	judge  *rltest.Judge
	codec  *prompt.Codec
	cfg    *config.Config
}

type hostOpts struct {
	upstream apiformat.API
	config   func(*config.Config)
	runtime  func(*rlruntime.Options)
	noWait   bool        // do not wait for the policy to serve
	model    *toy.Config // the fake's model; default rltest.ToyModel()
}

func startRL(t testing.TB, o hostOpts) *rlHost {
	t.Helper()
	h := &rlHost{codec: rltest.Codec(t), judge: rltest.NewJudge(t)}
	var models []toy.Config
	if o.model != nil {
		models = append(models, *o.model)
	}
	h.tinker = newTinkerTap(t, h.codec, models...)
	cfg := config.Default(t.TempDir())
	cfg.Mode = "rl"
	cfg.LLM.APIBase = "http://llm.invalid/v1" // the proxy's own upstream is the fake below
	cfg.RL.Backend, cfg.RL.BaseURL, cfg.RL.APIKey, cfg.RL.Model = "tinker", h.tinker.srv.URL, "tml-test-key", rltest.Model
	cfg.RL.TokenizerPath = rltest.TokenizerDir()
	cfg.RL.PRMURL, cfg.RL.PRMModel, cfg.RL.PRMAPIKey = h.judge.URL+"/v1", "judge-1", "judge-key"
	if o.config != nil {
		o.config(cfg)
	}
	h.cfg = cfg
	ro := rlruntime.Options{Config: cfg, Log: zerolog.Nop(), ConnectRetry: 20 * time.Millisecond,
		Scorer: score.Options{Backoff: func(int) time.Duration { return 20 * time.Millisecond }, Poll: 50 * time.Millisecond}}
	if o.runtime != nil {
		o.runtime(&ro)
	}
	h.Host = testhost.Start(t, testhost.Options{
		UpstreamAPI: o.upstream,
		Setup: func(c *core.Core, st *store.SQLite) []route.Route {
			ro.Store, ro.Core = st, c
			h.rt = rlruntime.Start(context.Background(), ro)
			return nil
		},
		Mutate: func(po *proxy.Options) { po.MainTurns = h.rt.Responder() },
	})
	t.Cleanup(func() {
		if err := h.rt.Close(); err != nil {
			t.Errorf("close runtime: %v", err)
		}
	})
	if !o.noWait {
		waitFor(t, 10*time.Second, "the policy serves", func() bool { return h.rt.Status(context.Background()).State == rlruntime.StateServing })
	}
	return h
}

// samples returns a session's samples.
func (h *rlHost) samples(t *testing.T, session string) []samples.Sample {
	t.Helper()
	out, err := h.rt.Samples().SessionSamples(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitFor polls cond until it holds (an event, not a fixed sleep), failing
// after timeout.
func waitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
