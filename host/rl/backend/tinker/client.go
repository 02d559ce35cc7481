package tinker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/rl/backend"
)

// Flavor picks the protocol generation.
type Flavor string

// Flavors.
const (
	Tinker Flavor = "tinker"
	MinT   Flavor = "mint"
)

// Default endpoints.
const (
	DefaultTinkerURL = "https://tinker.thinkingmachines.dev/services/tinker-prod"
	DefaultMinTURL   = "https://mint.macaron.im"
)

// Options configure a Client. Zero fields take the defaults of the flavor.
type Options struct {
	Flavor  Flavor
	BaseURL string
	APIKey  string
	// SDKVersion is reported in create_session and client/config; servers
	// gate features on it. Default "0.24.0" (Tinker) or "0.6.0" (MinT).
	SDKVersion string
	Tags       []string
	UserAgent  string
	HTTPClient *http.Client
	Logger     zerolog.Logger

	// HeartbeatInterval: default 10 s.
	HeartbeatInterval time.Duration
	// RequestTimeout bounds one HTTP call (default 60 s); PollTimeout one
	// retrieve_future poll (default 45 s).
	RequestTimeout, PollTimeout time.Duration
	// MaxRetries per HTTP call (default 10), with back-off from RetryBase
	// (500 ms) doubling up to RetryMax (10 s).
	MaxRetries          int
	RetryBase, RetryMax time.Duration
	// MaxResubmits after 410s for one request (default 5).
	MaxResubmits int
	// BillingPause after a 402 (default 5 s).
	BillingPause time.Duration
	// PollDelay is the pause after a 408 from retrieve_future, by queue
	// state. Tinker: none (the server long-polls). MinT: 0.3 s active, 1 s
	// paused_capacity, 2 s paused_rate_limit, 1 s otherwise.
	PollDelay func(queueState string) time.Duration
	// MaxChunkLen and MaxChunkBytes cut forward_backward; default what
	// client/config says, else 128 datums and 5 MB.
	MaxChunkLen, MaxChunkBytes int
	// MaxResponseBytes bounds a result (default 1 GiB).
	MaxResponseBytes int
	// RequireTinkerPaths refuses sampler paths that do not start with
	// tinker:// (Tinker's SDK check; MinT drops it). Default: on for Tinker.
	RequireTinkerPaths *bool
}

// MinTPollDelay is MinT's pause before polling again after a 408.
func MinTPollDelay(state string) time.Duration {
	switch state {
	case "active":
		return 300 * time.Millisecond
	case "paused_capacity":
		return time.Second
	case "paused_rate_limit":
		return 2 * time.Second
	}
	return time.Second
}

func (o Options) withDefaults() Options {
	if o.Flavor == "" {
		o.Flavor = Tinker
	}
	mint := o.Flavor == MinT
	if o.BaseURL == "" {
		o.BaseURL = DefaultTinkerURL
		if mint {
			o.BaseURL = DefaultMinTURL
		}
	}
	if o.SDKVersion == "" {
		o.SDKVersion = "0.24.0"
		if mint {
			o.SDKVersion = "0.6.0"
		}
	}
	if o.UserAgent == "" {
		o.UserAgent = "MetaClaw-Go (Tinker JSON protocol)"
		if mint {
			o.UserAgent = "Mint/Go (MetaClaw)"
		}
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, MaxIdleConnsPerHost: 32, IdleConnTimeout: 90 * time.Second}}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.HeartbeatInterval, 10*time.Second)
	def(&o.RequestTimeout, 60*time.Second)
	def(&o.PollTimeout, 45*time.Second)
	def(&o.RetryBase, 500*time.Millisecond)
	def(&o.RetryMax, 10*time.Second)
	def(&o.BillingPause, 5*time.Second)
	if o.MaxRetries <= 0 {
		o.MaxRetries = 10
	}
	if o.MaxResubmits <= 0 {
		o.MaxResubmits = 5
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = 1 << 30
	}
	if o.PollDelay == nil {
		o.PollDelay = func(string) time.Duration { return 0 }
		if mint {
			o.PollDelay = MinTPollDelay
		}
	}
	if o.RequireTinkerPaths == nil {
		v := !mint
		o.RequireTinkerPaths = &v
	}
	return o
}

// Client is a connected session; it implements backend.Backend.
type Client struct {
	opts Options
	name string
	base string
	http *http.Client
	log  zerolog.Logger

	sessionID string
	chunkLen  int
	chunkSize int

	mu         sync.Mutex
	modelSeq   int // next model_seq_id
	samplerSeq int // next sampling_session_seq_id (shared with ephemeral saves)

	lastBeat  atomic.Int64 // unix nanos of the last successful heartbeat
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

var _ backend.Backend = (*Client)(nil)

// Connect opens a session: client/config (tolerating 404), create_session,
// then a heartbeat every HeartbeatInterval until Close.
func Connect(ctx context.Context, o Options) (*Client, error) {
	o = o.withDefaults()
	if strings.TrimSpace(o.APIKey) == "" {
		return nil, fmt.Errorf("%s: no API key (set rl.api_key)", o.Flavor)
	}
	c := &Client{opts: o, name: string(o.Flavor), base: strings.TrimRight(o.BaseURL, "/"), http: o.HTTPClient,
		log: o.Logger, chunkLen: 128, chunkSize: 5_000_000, stop: make(chan struct{}), done: make(chan struct{})}
	c.readClientConfig(ctx)
	if o.MaxChunkLen > 0 {
		c.chunkLen = o.MaxChunkLen
	}
	if o.MaxChunkBytes > 0 {
		c.chunkSize = o.MaxChunkBytes
	}
	body := map[string]any{"tags": nonNil(o.Tags), "user_metadata": map[string]any{}, "sdk_version": o.SDKVersion, "type": "create_session"}
	var sess struct {
		SessionID      string  `json:"session_id"`
		WarningMessage *string `json:"warning_message"`
		ErrorMessage   *string `json:"error_message"`
	}
	if err := c.callJSON(ctx, "/api/v1/create_session", body, &sess, callOpts{}); err != nil {
		return nil, err
	}
	if sess.SessionID == "" {
		msg := "no session_id in the answer"
		if sess.ErrorMessage != nil {
			msg = *sess.ErrorMessage
		}
		return nil, fmt.Errorf("%s create_session: %s", c.name, msg)
	}
	if sess.WarningMessage != nil && *sess.WarningMessage != "" {
		c.log.Warn().Str("backend", c.name).Msg(*sess.WarningMessage)
	}
	c.sessionID = sess.SessionID
	c.lastBeat.Store(time.Now().UnixNano())
	go c.heartbeats()
	return c, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// readClientConfig reads the chunking limits; any failure (MinT answers 404)
// keeps the 0.6.0-era defaults.
func (c *Client) readClientConfig(ctx context.Context) {
	if c.opts.Flavor == MinT {
		return
	}
	b, _ := json.Marshal(map[string]string{"sdk_version": c.opts.SDKVersion})
	resp, err := c.send(ctx, http.MethodPost, "/api/v1/client/config", b, nil, c.opts.RequestTimeout)
	if err != nil || resp.status != http.StatusOK {
		return
	}
	var cfg struct {
		ChunkLen   int `json:"fwdbwd_max_chunk_len"`
		ChunkBytes int `json:"fwdbwd_max_chunk_bytes_count"`
	}
	if json.Unmarshal(resp.body, &cfg) == nil {
		if cfg.ChunkLen > 0 {
			c.chunkLen = cfg.ChunkLen
		}
		if cfg.ChunkBytes > 0 {
			c.chunkSize = cfg.ChunkBytes
		}
	}
}

// heartbeats keeps the session alive: one POST every interval, no retries,
// a warning after 120 s without success.
func (c *Client) heartbeats() {
	defer close(c.done)
	t := time.NewTicker(c.opts.HeartbeatInterval)
	defer t.Stop()
	body, _ := json.Marshal(map[string]string{"session_id": c.sessionID, "type": "session_heartbeat"})
	warned := false
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := c.send(ctx, http.MethodPost, "/api/v1/session_heartbeat", body, nil, 10*time.Second)
		cancel()
		if err == nil && resp.status == http.StatusOK {
			c.lastBeat.Store(time.Now().UnixNano())
			warned = false
			continue
		}
		if since := time.Since(time.Unix(0, c.lastBeat.Load())); since > 120*time.Second && !warned {
			warned = true
			c.log.Warn().Str("backend", c.name).Dur("since", since).Msg("no successful heartbeat for over 120 s; the service may end the session")
		}
	}
}

// LastHeartbeat is when the session last answered a heartbeat.
func (c *Client) LastHeartbeat() time.Time { return time.Unix(0, c.lastBeat.Load()) }

// SessionID is the service's session id.
func (c *Client) SessionID() string { return c.sessionID }

// Name implements backend.Backend.
func (c *Client) Name() string { return c.name }

// ChunkLimits are the forward_backward chunk limits in force.
func (c *Client) ChunkLimits() (datums, bytes int) { return c.chunkLen, c.chunkSize }

// Close stops the heartbeats. Models are not unloaded (Trainer.Close does).
func (c *Client) Close() error {
	c.closeOnce.Do(func() {
		close(c.stop)
		<-c.done
	})
	return nil
}

func (c *Client) closed() bool {
	select {
	case <-c.stop:
		return true
	default:
		return false
	}
}

// callJSON POSTs v and decodes the answer into out.
func (c *Client) callJSON(ctx context.Context, path string, v, out any, o callOpts) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	res, err := c.call(ctx, http.MethodPost, path, b, o)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(res, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", c.name, path, err)
	}
	return nil
}

// Models implements backend.Backend.
func (c *Client) Models(ctx context.Context) ([]backend.Model, error) {
	b, err := c.call(ctx, http.MethodGet, "/api/v1/get_server_capabilities", nil, callOpts{})
	if err != nil {
		return nil, err
	}
	var caps struct {
		Supported []struct {
			ModelName        string `json:"model_name"`
			MaxContextLength *int   `json:"max_context_length"`
		} `json:"supported_models"`
	}
	if err := json.Unmarshal(b, &caps); err != nil {
		return nil, fmt.Errorf("%s get_server_capabilities: %w", c.name, err)
	}
	out := make([]backend.Model, 0, len(caps.Supported))
	for _, m := range caps.Supported {
		e := backend.Model{Name: m.ModelName}
		if m.MaxContextLength != nil {
			e.MaxContextLength = *m.MaxContextLength
		}
		out = append(out, e)
	}
	return out, nil
}

// CreateModel implements backend.Backend.
func (c *Client) CreateModel(ctx context.Context, cfg backend.ModelConfig) (backend.Trainer, error) {
	return c.createModel(ctx, cfg)
}

func (c *Client) createModel(ctx context.Context, cfg backend.ModelConfig) (*Trainer, error) {
	if c.closed() {
		return nil, backend.ErrClosed
	}
	if cfg.BaseModel == "" {
		return nil, fmt.Errorf("%s: no base model (set rl.model)", c.name)
	}
	c.mu.Lock()
	seq := c.modelSeq
	c.modelSeq++
	c.mu.Unlock()
	lora := map[string]any{"rank": cfg.LoRA.Rank, "train_unembed": cfg.LoRA.TrainUnembed, "train_mlp": cfg.LoRA.TrainMLP, "train_attn": cfg.LoRA.TrainAttn}
	if cfg.LoRA.Seed != nil {
		lora["seed"] = *cfg.LoRA.Seed
	}
	body := map[string]any{"session_id": c.sessionID, "model_seq_id": seq, "base_model": cfg.BaseModel, "lora_config": lora, "type": "create_model"}
	if len(cfg.Metadata) > 0 {
		body["user_metadata"] = cfg.Metadata
	}
	b, _ := json.Marshal(body)
	p, err := c.submit(ctx, "/api/v1/create_model", b, "CreateModel", callOpts{})
	if err != nil {
		return nil, err
	}
	res, err := c.result(ctx, p)
	if err != nil {
		return nil, err
	}
	var out struct {
		ModelID string `json:"model_id"`
	}
	if err := json.Unmarshal(res, &out); err != nil || out.ModelID == "" {
		return nil, fmt.Errorf("%s create_model: no model_id in %.200s", c.name, res)
	}
	return &Trainer{c: c, id: out.ModelID, cfg: cfg}, nil
}

// Resume implements backend.Backend: weights_info to adopt the checkpoint's
// LoRA shape (as the SDK's create_training_client_from_state does), then
// create_model and load_weights with the optimizer state.
func (c *Client) Resume(ctx context.Context, cfg backend.ModelConfig, path string) (backend.Trainer, error) {
	var info struct {
		BaseModel    string `json:"base_model"`
		LoraRank     *int   `json:"lora_rank"`
		TrainUnembed *bool  `json:"train_unembed"`
		TrainMLP     *bool  `json:"train_mlp"`
		TrainAttn    *bool  `json:"train_attn"`
	}
	err := c.callJSON(ctx, "/api/v1/weights_info", map[string]string{"tinker_path": path}, &info, callOpts{})
	switch {
	case errors.Is(err, backend.ErrNotFound):
		return nil, fmt.Errorf("resume from %s: %w", path, err)
	case err == nil:
		if info.BaseModel != "" && cfg.BaseModel != "" && info.BaseModel != cfg.BaseModel {
			return nil, fmt.Errorf("resume from %s: the checkpoint is for %s, rl.model is %s", path, info.BaseModel, cfg.BaseModel)
		}
		if info.BaseModel != "" {
			cfg.BaseModel = info.BaseModel
		}
		if info.LoraRank != nil && *info.LoraRank != cfg.LoRA.Rank {
			c.log.Warn().Int("rl.lora_rank", cfg.LoRA.Rank).Int("checkpoint", *info.LoraRank).Msg("resuming with the checkpoint's LoRA rank")
			cfg.LoRA.Rank = *info.LoraRank
		}
		for _, f := range []struct {
			dst *bool
			src *bool
		}{{&cfg.LoRA.TrainUnembed, info.TrainUnembed}, {&cfg.LoRA.TrainMLP, info.TrainMLP}, {&cfg.LoRA.TrainAttn, info.TrainAttn}} {
			if f.src != nil {
				*f.dst = *f.src
			}
		}
	default:
		c.log.Debug().Err(err).Msg("weights_info failed; resuming with the configured LoRA")
	}
	t, err := c.createModel(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := t.LoadState(ctx, path, true); err != nil {
		_ = t.Close(ctx)
		return nil, fmt.Errorf("resume from %s: %w", path, err)
	}
	return t, nil
}

// nextSamplerSeq allocates a sampling_session_seq_id.
func (c *Client) nextSamplerSeq() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.samplerSeq
	c.samplerSeq++
	return k
}

// Sampler implements backend.Backend: create_sampling_session on a base
// model or a saved path.
func (c *Client) Sampler(ctx context.Context, spec backend.SamplerSpec) (backend.Sampler, error) {
	if c.closed() {
		return nil, backend.ErrClosed
	}
	body := map[string]any{"session_id": c.sessionID, "type": "create_sampling_session"}
	switch {
	case spec.Path != "":
		if *c.opts.RequireTinkerPaths && !strings.HasPrefix(spec.Path, "tinker://") {
			return nil, fmt.Errorf("%s: model path %q must start with tinker://", c.name, spec.Path)
		}
		body["model_path"] = spec.Path
	case spec.BaseModel != "":
		body["base_model"] = spec.BaseModel
	default:
		return nil, errors.New("sampler: give a base model or a path")
	}
	body["sampling_session_seq_id"] = c.nextSamplerSeq()
	var out struct {
		SamplingSessionID string `json:"sampling_session_id"`
	}
	if err := c.callJSON(ctx, "/api/v1/create_sampling_session", body, &out, callOpts{}); err != nil {
		return nil, err
	}
	if out.SamplingSessionID == "" {
		return nil, fmt.Errorf("%s create_sampling_session: no sampling_session_id", c.name)
	}
	return &Sampler{c: c, id: out.SamplingSessionID, path: spec.Path}, nil
}
