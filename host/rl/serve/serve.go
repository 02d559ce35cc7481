// Package serve answers main turns from the user's policy model (RL mode):
// the request, as the proxy would forward it (skills and memories already
// injected), is rendered with the model's chat template, encoded to exact
// prompt ids, sampled from the current sampler of the user's LoRA
// (backend.Current), decoded and parsed back into an OpenAI or Anthropic
// answer, streamed or not. Every answer is stored as an RL sample with the
// exact ids sent and sampled (host/rl/samples) before the client sees its
// end.
//
// The Responder implements proxy.MainTurnResponder, so the proxy keeps
// auth, injection, translation to the client's format, recording and
// durability; side turns never reach it.
package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/chattemplate"
	"github.com/metaclaw-go/metaclaw/host/rl/prompt"
	"github.com/metaclaw-go/metaclaw/host/rl/samples"
)

// Defaults apply when a request does not say (rl.sample_*).
type Defaults struct {
	MaxTokens   int
	Temperature float64
	TopP        float64
	TopK        int
}

// Options configure a Responder.
type Options struct {
	Codec   *prompt.Codec
	Current *backend.Current
	Samples *samples.Store
	// BaseModel names the policy in answers and samples.
	BaseModel string
	Defaults  Defaults
	// MaxContext is the model's context window (prompt + answer); 0 = unknown.
	MaxContext int
	// Generation returns the skill library's generation (samples are tagged
	// with it); nil = 0.
	Generation func(ctx context.Context) (int64, error)
	// NeedJudge and NeedTeacher say which scores new samples wait for.
	NeedJudge, NeedTeacher bool
	// Fallback sends turns the policy cannot answer (no sampler, a failed
	// sampling call, a prompt the template cannot render) to llm.* instead
	// of answering with an error. Only set it when llm.* is configured.
	Fallback bool
	// Added is called after each sample is stored (wakes the scorer).
	Added func()
	// NotReady says why there is no sampler yet (the backend's state).
	NotReady func() string
	Log      zerolog.Logger
}

// Responder answers main turns from the policy model.
type Responder struct {
	o Options

	served, fallbacks, failures, unrecorded atomic.Int64
	maxContext                              atomic.Int64
	mu                                      sync.Mutex
	lastErr                                 string
	lastErrAt                               time.Time
}

var _ proxy.MainTurnResponder = (*Responder)(nil)

// New returns a Responder.
func New(o Options) (*Responder, error) {
	if o.Codec == nil || o.Current == nil || o.Samples == nil {
		return nil, errors.New("serve: a codec, a current sampler and a sample store are required")
	}
	if o.Defaults.MaxTokens <= 0 {
		o.Defaults.MaxTokens = 2048
	}
	r := &Responder{o: o}
	r.maxContext.Store(int64(o.MaxContext))
	return r, nil
}

// SetMaxContext sets the policy model's context window (as the backend
// reports it once connected); 0 = unknown.
func (r *Responder) SetMaxContext(n int) { r.maxContext.Store(int64(n)) }

// Serving implements proxy.MainTurnResponder: true once a sampler is in place.
func (r *Responder) Serving() bool { return r.o.Current.Load() != nil }

// Stats says how serving went since start.
type Stats struct {
	// Served main turns answered by the policy model.
	Served int64 `json:"served"`
	// Fallbacks are main turns sent to llm.* because the policy could not
	// answer; Failures main turns answered with an error for that reason.
	Fallbacks int64 `json:"fallbacks"`
	Failures  int64 `json:"failures"`
	// Unrecorded answers whose sample could not be stored.
	Unrecorded int64      `json:"unrecorded"`
	LastError  string     `json:"last_error,omitempty"`
	LastErrAt  *time.Time `json:"last_error_at,omitempty"`
}

// Stats reports the counters.
func (r *Responder) Stats() Stats {
	s := Stats{Served: r.served.Load(), Fallbacks: r.fallbacks.Load(), Failures: r.failures.Load(), Unrecorded: r.unrecorded.Load()}
	r.mu.Lock()
	defer r.mu.Unlock()
	s.LastError = r.lastErr
	if !r.lastErrAt.IsZero() {
		t := r.lastErrAt
		s.LastErrAt = &t
	}
	return s
}

func (r *Responder) noteError(msg string) {
	r.mu.Lock()
	r.lastErr, r.lastErrAt = msg, time.Now()
	r.mu.Unlock()
}

// Respond implements proxy.MainTurnResponder.
func (r *Responder) Respond(ctx context.Context, mt proxy.MainTurn) (*http.Response, error) {
	v := r.o.Current.Load()
	if v == nil {
		why := "the policy model is not ready yet"
		if r.o.NotReady != nil {
			why = r.o.NotReady()
		}
		return r.fail(mt.API, http.StatusServiceUnavailable, errors.New(why))
	}
	t, status, err := r.prepare(ctx, mt)
	if err != nil {
		return r.fail(mt.API, status, err)
	}
	if ss, ok := v.Sampler.(backend.StreamSampler); ok && mt.Stream {
		return r.streamLive(ctx, mt, v, t, ss), nil
	}
	res, err := v.Sampler.Sample(ctx, t.req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return r.fail(mt.API, samplerStatus(err), fmt.Errorf("the policy model could not sample: %w", err))
	}
	if len(res.Sequences) == 0 {
		return r.fail(mt.API, http.StatusBadGateway, errors.New("the policy model returned no sequence"))
	}
	seq := res.Sequences[0]
	c := r.newCutter(t.p.stop)
	c.addAll(seq.Tokens)
	a := r.answer(t, seq, c)
	r.record(ctx, mt, v, t, a)
	if mt.Stream {
		return sseResponse(r.chunksAtOnce(mt.API, t, a))
	}
	body, err := r.body(mt.API, t, a)
	if err != nil {
		return r.fail(mt.API, http.StatusInternalServerError, err)
	}
	return jsonResponse(body), nil
}

// turn is a prepared main turn.
type turn struct {
	p       params
	conv    chattemplate.Conversation
	prompt  prompt.Prompt
	req     backend.SampleRequest
	id      string
	created int64
}

// prepare reads the request, renders and encodes the prompt and sets the
// sampling parameters. The status says how to answer a failure.
func (r *Responder) prepare(ctx context.Context, mt proxy.MainTurn) (*turn, int, error) {
	p, err := readParams(mt.API, mt.Body)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	oai, err := openAIBody(mt.API, mt.Body)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	conv, err := chattemplate.FromOpenAI(oai)
	if err != nil {
		return nil, http.StatusBadRequest, err
	}
	// Markers typed into system, user or tool text (a pasted page, a tool
	// result) stay characters: they cannot open a turn of their own.
	pr, err := r.o.Codec.EncodeChatLiteral(conv, chattemplate.Options{AddGenerationPrompt: true, EnableThinking: p.thinking})
	if err != nil {
		return nil, http.StatusBadRequest, fmt.Errorf("the policy model's chat template cannot render this conversation: %w", err)
	}
	ids := make([]int32, len(pr.IDs))
	for i, id := range pr.IDs {
		ids[i] = int32(id)
	}
	sp := backend.SamplingParams{MaxTokens: p.maxTokens, Seed: p.seed, Temperature: r.o.Defaults.Temperature, TopP: r.o.Defaults.TopP, TopK: r.o.Defaults.TopK}
	if sp.MaxTokens == 0 {
		sp.MaxTokens = r.o.Defaults.MaxTokens
	}
	if p.temperature != nil {
		sp.Temperature = *p.temperature
	}
	if p.topP != nil {
		sp.TopP = *p.topP
	}
	if p.topK != nil {
		sp.TopK = *p.topK
	}
	if window := int(r.maxContext.Load()); window > 0 {
		room := window - len(ids)
		if room <= 0 {
			return nil, http.StatusBadRequest, fmt.Errorf("the prompt is %d tokens, more than the policy model's context window of %d", len(ids), window)
		}
		sp.MaxTokens = min(sp.MaxTokens, room)
	}
	for _, id := range r.o.Codec.StopTokenIDs() {
		sp.StopTokens = append(sp.StopTokens, int32(id))
	}
	return &turn{
		p: p, conv: conv, prompt: pr, req: backend.SampleRequest{Prompt: ids, Params: sp, NumSamples: 1},
		id: newID(), created: time.Now().Unix(),
	}, 0, nil
}

// samplerStatus maps a sampling error to the status the client gets.
func samplerStatus(err error) int {
	switch {
	case errors.Is(err, backend.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, backend.ErrUnavailable):
		return http.StatusServiceUnavailable
	}
	return http.StatusBadGateway
}

// fail sends the turn to llm.* when falling back is allowed, else answers
// with the error in the upstream's format.
func (r *Responder) fail(api apiformat.API, status int, err error) (*http.Response, error) {
	r.noteError(err.Error())
	if r.o.Fallback {
		r.fallbacks.Add(1)
		r.o.Log.Warn().Err(err).Msg("the policy model could not answer a main turn; llm.* answers it (not sampled)")
		return nil, proxy.ErrForward
	}
	r.failures.Add(1)
	r.o.Log.Warn().Err(err).Int("status", status).Msg("the policy model could not answer a main turn")
	return errorResponse(api, status, "RL serving: "+err.Error()), nil
}

// record stores the sample before the answer's end can reach the client. A
// store failure is logged and counted: serving goes on.
func (r *Responder) record(ctx context.Context, mt proxy.MainTurn, v *backend.Version, t *turn, a *answer) {
	ctx = context.WithoutCancel(ctx) // the answer exists: its sample is kept even if the client leaves now
	r.served.Add(1)
	var gen int64
	if r.o.Generation != nil {
		g, err := r.o.Generation(ctx)
		if err != nil {
			r.o.Log.Warn().Err(err).Msg("skill generation unknown; sample tagged 0")
		}
		gen = g
	}
	sampler := v.Sampler.Path()
	if sampler == "" {
		sampler = v.Sampler.ID()
	}
	calls := make([]struct{ Name, Arguments string }, len(a.msg.ToolCalls))
	for i, c := range a.msg.ToolCalls {
		calls[i].Name, calls[i].Arguments = c.Name, c.Arguments
	}
	id, err := r.o.Samples.Add(ctx, samples.NewSample{
		SessionID: mt.Session, Agent: mt.Agent, BaseModel: r.o.BaseModel, Sampler: sampler, SamplerStep: v.Step, SkillGeneration: gen,
		Prompt: t.req.Prompt, Completion: a.tokens, Logprobs: a.logprobs, StopReason: a.stopReason,
		Instruction: instruction(t.conv), Response: judgeText(a.msg.Content, calls), LastMessage: lastMessage(t.conv),
		NeedJudge: r.o.NeedJudge, NeedTeacher: r.o.NeedTeacher,
	})
	if err != nil {
		r.unrecorded.Add(1)
		r.noteError(err.Error())
		r.o.Log.Error().Err(err).Str("session", mt.Session).Msg("RL sample not stored; the answer is served anyway")
		return
	}
	if mt.Sampled != nil {
		mt.Sampled(id)
	}
	if r.o.Added != nil {
		r.o.Added()
	}
}
