// Package runtime runs RL in the host (modes rl and auto, or rl.enabled):
// it connects the configured training backend in the background, puts the
// first sampler of the user's LoRA in place (backend.Current), answers main
// turns from it (host/rl/serve, through the proxy's MainTurnResponder),
// stores every answer as a sample (host/rl/samples) and scores the samples
// (host/rl/score: judge and teacher). The training loop (part 2) claims
// scored samples from Samples() and hot-swaps Current().
package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/llm"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/connect"
	"github.com/metaclaw-go/metaclaw/host/rl/judge"
	"github.com/metaclaw-go/metaclaw/host/rl/prm"
	"github.com/metaclaw-go/metaclaw/host/rl/prompt"
	"github.com/metaclaw-go/metaclaw/host/rl/samples"
	"github.com/metaclaw-go/metaclaw/host/rl/score"
	"github.com/metaclaw-go/metaclaw/host/rl/serve"
	"github.com/metaclaw-go/metaclaw/host/rl/teacher"
	"github.com/metaclaw-go/metaclaw/host/rl/tokfetch"
	"github.com/metaclaw-go/metaclaw/host/skills"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/host/subplugin"
)

// SessionEndJob is the durable job kind that closes a session's RL episode
// (its last turn becomes due for judging).
const SessionEndJob = "rl_session_end"

// States of RL in the host.
const (
	StateOff        = "off"        // mode skills_only
	StateInactive   = "inactive"   // no training backend configured
	StateConnecting = "connecting" // connecting to the backend; main turns go to llm.*
	StateServing    = "serving"    // the policy model answers main turns
	StateError      = "error"      // cannot serve (tokenizer, backend); Reason says why
)

// Storage is what RL needs from the store: its own tables (samples, steps;
// the skills generation) and usage records for the judge and teacher.
type Storage interface {
	store.Tables
	llm.UsageRecorder
}

// Options configure Start.
type Options struct {
	Config *config.Config
	Store  Storage
	Core   *core.Core
	Log    zerolog.Logger
	// Connect opens the backend; default connect.Open.
	Connect func(ctx context.Context, cfg *config.Config) (backend.Backend, error)
	// InitialSampler puts the first sampler in place once connected;
	// default a sampler of the base model (an untrained LoRA answers as its
	// base). The training loop replaces it to resume from its checkpoint.
	InitialSampler func(ctx context.Context, b backend.Backend, cfg *config.Config) (backend.Sampler, int, error)
	// ConnectRetry is the first wait after a failed connection (doubling up
	// to 5 min); default 5 s.
	ConnectRetry time.Duration
	// Scorer tunes the scoring loop (tests: short back-off).
	Scorer score.Options
	Getenv func(string) string
}

// Runtime is RL as the host runs it.
type Runtime struct {
	o       Options
	cfg     *config.Config
	log     zerolog.Logger
	current backend.Current
	samples *samples.Store
	resp    *serve.Responder
	scorer  *score.Scorer

	judgeName, teacherName, tokenizerDir, kind, model string
	fallback                                          bool

	mu      sync.Mutex
	state   string
	reason  string
	backend backend.Backend

	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closers []io.Closer
}

// Active reports whether the configuration runs RL at all.
func Active(cfg *config.Config) bool {
	return cfg.Mode == "rl" || cfg.Mode == "auto" || cfg.RL.Enabled
}

// Start runs RL for the host. It never fails: what cannot run is reported
// by Status, and main turns then go to llm.* as before.
func Start(ctx context.Context, o Options) *Runtime {
	cfg := o.Config
	rt := &Runtime{o: o, cfg: cfg, log: o.Log.With().Str("part", "rl").Logger(), state: StateOff,
		reason: "mode skills_only learns skills and memories only"}
	if !Active(cfg) {
		return rt
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
		rt.o.Getenv = os.Getenv
	}
	rt.samples = samples.New(o.Store.Writer(), o.Store.Reader())
	ctx, rt.cancel = context.WithCancel(context.WithoutCancel(ctx))
	rt.startScoring(ctx)
	res := connect.Resolve(cfg.RL, o.Getenv)
	rt.kind, rt.model = res.Kind, connect.ModelConfig(cfg).BaseModel
	if why := notConfigured(cfg, res); why != "" {
		rt.setState(StateInactive, why)
		return rt
	}
	if rt.model == "" {
		rt.setState(StateError, "no policy model: set rl.model (e.g. `metaclaw config set rl.model Qwen/Qwen3-4B-Instruct-2507`)")
		return rt
	}
	codec, err := rt.loadCodec()
	if err != nil {
		rt.setState(StateError, err.Error())
		return rt
	}
	rt.fallback = cfg.RL.FallbackToLLM && cfg.UpstreamConfigured()
	rt.resp, err = serve.New(serve.Options{
		Codec: codec, Current: &rt.current, Samples: rt.samples, BaseModel: rt.model,
		Defaults:   serve.Defaults{MaxTokens: cfg.RL.SampleMaxTokens, Temperature: cfg.RL.SampleTemperature, TopP: cfg.RL.SampleTopP, TopK: cfg.RL.SampleTopK},
		Generation: func(ctx context.Context) (int64, error) { return skills.LibraryGeneration(ctx, o.Store.Reader()) },
		NeedJudge:  rt.judgeName != "", NeedTeacher: rt.teacherName != "",
		Fallback: rt.fallback,
		Added:    rt.scorer.Wake, Log: rt.log,
		NotReady: func() string {
			rt.mu.Lock()
			defer rt.mu.Unlock()
			return "the policy model is not ready: " + rt.reason
		},
	})
	if err != nil {
		rt.setState(StateError, err.Error())
		return rt
	}
	rt.setState(StateConnecting, fmt.Sprintf("connecting to %s; %s", rt.kind, rt.meanwhile()))
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		rt.connect(ctx)
	}()
	return rt
}

// notConfigured says why RL cannot serve with this configuration ("" = it can).
func notConfigured(cfg *config.Config, r connect.Resolved) string {
	switch {
	case r.Kind == connect.Plugin && strings.TrimSpace(cfg.Plugins.Trainer) == "":
		return "rl.backend is plugin but plugins.trainer is empty"
	case r.Kind != connect.Plugin && r.APIKey == "":
		return fmt.Sprintf("mode %s: skills and memory run; RL stays inactive until a training backend is configured (rl.api_key, or %s_API_KEY)", cfg.Mode, strings.ToUpper(r.Kind))
	}
	return ""
}

func (rt *Runtime) loadCodec() (*prompt.Codec, error) {
	dir, err := tokfetch.ResolveDir(rt.cfg.RL.TokenizerPath)
	if err != nil {
		return nil, fmt.Errorf("RL serving needs the policy model's tokenizer: %w", err)
	}
	codec, err := prompt.Load(dir)
	if err != nil {
		return nil, fmt.Errorf("RL serving: load the tokenizer in %s: %w", dir, err)
	}
	rt.tokenizerDir = dir
	return codec, nil
}

// startScoring opens the judge and teacher and runs the scorer; the
// session-end job and the turn link are registered on the core.
func (rt *Runtime) startScoring(ctx context.Context) {
	cfg := rt.cfg
	var j judge.Judge
	switch {
	case strings.TrimSpace(cfg.Plugins.Judge) != "":
		pj, closer, err := subplugin.OpenJudge(ctx, subplugin.JudgeSpec{Use: cfg.Plugins.Judge, Options: subplugin.Options{
			Dir: cfg.Plugins.Dir, CallTimeout: time.Duration(cfg.Plugins.CallTimeoutSeconds) * time.Second, MaxRestarts: pluginRestarts(cfg),
		}}, rt.log.With().Str("part", "judge").Logger())
		if err != nil {
			rt.log.Error().Err(err).Str("plugins.judge", cfg.Plugins.Judge).Msg("judge plugin unavailable; samples wait for their verdict")
			rt.judgeName = "plugin " + cfg.Plugins.Judge + " (failed to start: " + err.Error() + ")"
			j = unavailableJudge{name: "plugin:" + cfg.Plugins.Judge, err: err}
		} else {
			rt.closers = append(rt.closers, closer)
			j, rt.judgeName = pj, "plugin:"+pj.Name()
		}
	default:
		if ep, ok := JudgeEndpoint(cfg); ok {
			j = prm.New(prm.Options{Endpoint: ep, Votes: cfg.RL.PRMM, Temperature: cfg.RL.PRMTemperature, MaxTokens: cfg.RL.PRMMaxNewTokens, Usage: rt.o.Store})
			rt.judgeName = j.Name() + " at " + ep.APIBase
		}
	}
	var t score.Teacher
	if cfg.OPD.Enabled && cfg.OPD.TeacherURL != "" {
		tc := teacher.New(config.Endpoint{APIBase: cfg.OPD.TeacherURL, APIKey: cfg.OPD.TeacherAPIKey, Model: cfg.OPD.TeacherModel}, rt.o.Store, 0)
		t, rt.teacherName = tc, tc.Name()+" at "+cfg.OPD.TeacherURL
	}
	so := rt.o.Scorer
	so.Samples, so.Judge, so.Teacher, so.Votes, so.Log = rt.samples, j, t, cfg.RL.PRMM, rt.log.With().Str("part", "scorer").Logger()
	rt.scorer = score.New(so)
	rt.o.Core.OnSessionEnd(SessionEndJob, rt.scorer.SessionEnded)
	rt.o.Core.OnTurn(func(ctx context.Context, t *store.Turn) {
		if t.SampleID > 0 {
			if err := rt.samples.LinkTurn(ctx, t.SampleID, t.ID, t.TurnIndex); err != nil {
				rt.log.Warn().Err(err).Msg("link sample to turn")
			}
		}
	})
	rt.wg.Add(1)
	go func() {
		defer rt.wg.Done()
		rt.scorer.Run(ctx)
	}()
}

// JudgeEndpoint is the reward judge rl.prm_* names, and whether it can be
// called: a key is needed unless the URL is not OpenAI's public API (a
// local judge). llm.api_key is reused only for the same base URL.
func JudgeEndpoint(cfg *config.Config) (config.Endpoint, bool) {
	ep := config.Endpoint{APIBase: strings.TrimSpace(cfg.RL.PRMURL), APIKey: cfg.RL.PRMAPIKey, Model: cfg.RL.PRMModel, API: "openai"}
	if ep.APIBase == "" || ep.Model == "" {
		return ep, false
	}
	if ep.APIKey == "" && strings.TrimRight(ep.APIBase, "/") == strings.TrimRight(cfg.LLM.APIBase, "/") {
		ep.APIKey = cfg.LLM.APIKey
	}
	if ep.APIKey == "" {
		if u, err := url.Parse(ep.APIBase); err != nil || strings.EqualFold(u.Hostname(), "api.openai.com") {
			return ep, false
		}
	}
	return ep, true
}

func pluginRestarts(cfg *config.Config) int {
	if cfg.Plugins.MaxRestarts == 0 {
		return -1
	}
	return cfg.Plugins.MaxRestarts
}

// unavailableJudge stands for a judge plugin that did not start: samples
// stay due and are retried with back-off, as for a judge that is down.
type unavailableJudge struct {
	name string
	err  error
}

func (u unavailableJudge) Name() string { return u.name }
func (u unavailableJudge) Score(context.Context, judge.Request) (*judge.Verdict, error) {
	return nil, u.err
}

// connect opens the backend (retrying with back-off) and installs the
// first sampler.
func (rt *Runtime) connect(ctx context.Context) {
	open := rt.o.Connect
	if open == nil {
		open = func(ctx context.Context, cfg *config.Config) (backend.Backend, error) {
			return connect.Open(ctx, cfg, connect.Options{Getenv: rt.o.Getenv, Logger: rt.log})
		}
	}
	first := rt.o.InitialSampler
	if first == nil {
		first = baseSampler
	}
	wait := rt.o.ConnectRetry
	if wait <= 0 {
		wait = 5 * time.Second
	}
	for attempt := 1; ; attempt++ {
		err := rt.connectOnce(ctx, open, first)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			return
		}
		rt.log.Warn().Err(err).Int("attempt", attempt).Dur("retry_in", wait).Msg("RL backend not ready")
		rt.setState(StateConnecting, fmt.Sprintf("%s not ready (attempt %d, next in %s): %v; %s", rt.kind, attempt, wait, err, rt.meanwhile()))
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Minute)
	}
}

func (rt *Runtime) connectOnce(ctx context.Context, open func(context.Context, *config.Config) (backend.Backend, error),
	first func(context.Context, backend.Backend, *config.Config) (backend.Sampler, int, error)) error {
	b, err := open(ctx, rt.cfg)
	if err != nil {
		return err
	}
	s, step, err := first(ctx, b, rt.cfg)
	if err != nil {
		_ = b.Close()
		return fmt.Errorf("first sampler: %w", err)
	}
	rt.mu.Lock()
	rt.backend = b
	rt.mu.Unlock()
	if models, err := b.Models(ctx); err == nil {
		for _, m := range models {
			if m.Name == rt.model && m.MaxContextLength > 0 {
				rt.resp.SetMaxContext(m.MaxContextLength)
			}
		}
	}
	rt.current.Swap(s, step)
	rt.setState(StateServing, fmt.Sprintf("the policy model (%s on %s) answers main turns", rt.model, b.Name()))
	rt.log.Info().Str("backend", b.Name()).Str("model", rt.model).Str("sampler", s.ID()).Msg("RL serving: main turns answered by the policy model")
	return nil
}

// meanwhile says what happens to main turns while the policy cannot answer.
func (rt *Runtime) meanwhile() string {
	if rt.fallback {
		return "main turns go to llm.* until the policy model is ready"
	}
	return "main turns are refused until the policy model is ready (rl.fallback_to_llm is false, or llm.* is not configured)"
}

// baseSampler samples the base model: an untrained LoRA answers as its base.
func baseSampler(ctx context.Context, b backend.Backend, cfg *config.Config) (backend.Sampler, int, error) {
	s, err := b.Sampler(ctx, backend.SamplerSpec{BaseModel: connect.ModelConfig(cfg).BaseModel})
	return s, 0, err
}

func (rt *Runtime) setState(state, reason string) {
	rt.mu.Lock()
	rt.state, rt.reason = state, reason
	rt.mu.Unlock()
}

// Responder answers main turns in the proxy; nil when RL does not serve
// (so the proxy forwards as before).
func (rt *Runtime) Responder() proxy.MainTurnResponder {
	if rt == nil || rt.resp == nil {
		return nil
	}
	return rt.resp
}

// Current is the sampler serving uses: the training loop swaps in the
// sampler of each new step.
func (rt *Runtime) Current() *backend.Current { return &rt.current }

// Samples is the sample store (nil when RL is off).
func (rt *Runtime) Samples() *samples.Store { return rt.samples }

// Backend is the connected backend (nil until connected).
func (rt *Runtime) Backend() backend.Backend {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.backend
}

// Close stops scoring and connecting and closes the backend and the judge.
func (rt *Runtime) Close() error {
	if rt.cancel == nil {
		return nil
	}
	rt.cancel()
	rt.wg.Wait()
	var errs []error
	if b := rt.Backend(); b != nil {
		errs = append(errs, b.Close())
	}
	for _, c := range rt.closers {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
