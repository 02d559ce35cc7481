// Package weaver is the client of Weaver's REST API (nex-agi/weaver): a
// different protocol with Tinker's concepts. Sessions heartbeat every 30 s;
// models and sampling sessions are created synchronously; forward/backward,
// optimizer steps, sampler exports, checkpoints, loads and samples are
// operations polled at GET /api/v1/operations/{id}; importance-sampling
// datums get the loss_mask Weaver requires (1 where the advantage is non-zero,
// as MetaClaw's Python adapter derives it). Weaver has no ppo or cispo loss.
package weaver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// DefaultURL is Weaver's public endpoint.
const DefaultURL = "https://weaver-console.nex-agi.cn"

// Options configure a Client; zero fields take defaults.
type Options struct {
	BaseURL    string
	APIKey     string
	SDKVersion string // default "0.4.0"
	Tags       []string
	HTTPClient *http.Client
	Logger     zerolog.Logger
	// HeartbeatInterval: default 30 s.
	HeartbeatInterval time.Duration
	// RequestTimeout: one HTTP call, default 60 s.
	RequestTimeout time.Duration
	// PollBase and PollMax bound the operation polling back-off (default
	// 100 ms doubling to 2 s).
	PollBase, PollMax time.Duration
	// MaxRetries for GETs and creation calls (default 10), back-off from
	// RetryBase (500 ms) to RetryMax (10 s). Operation submissions are
	// sent once, as the SDK does, so work is never duplicated.
	MaxRetries          int
	RetryBase, RetryMax time.Duration
	// SamplerTTL is the lifetime of exported sampler weights (default 1 h).
	SamplerTTL time.Duration
}

func (o Options) withDefaults() Options {
	if o.BaseURL == "" {
		o.BaseURL = DefaultURL
	}
	if o.SDKVersion == "" {
		o.SDKVersion = "0.4.0"
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{}
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.HeartbeatInterval, 30*time.Second)
	def(&o.RequestTimeout, 60*time.Second)
	def(&o.PollBase, 100*time.Millisecond)
	def(&o.PollMax, 2*time.Second)
	def(&o.RetryBase, 500*time.Millisecond)
	def(&o.RetryMax, 10*time.Second)
	def(&o.SamplerTTL, time.Hour)
	if o.MaxRetries <= 0 {
		o.MaxRetries = 10
	}
	return o
}

// Client is a Weaver session; it implements backend.Backend.
type Client struct {
	opts      Options
	base      string
	log       zerolog.Logger
	sessionID string

	mu         sync.Mutex
	modelSeq   int
	samplerSeq int

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

var _ backend.Backend = (*Client)(nil)

// Connect creates a session and starts its heartbeat.
func Connect(ctx context.Context, o Options) (*Client, error) {
	o = o.withDefaults()
	if strings.TrimSpace(o.APIKey) == "" {
		return nil, errors.New("weaver: no API key (set rl.api_key)")
	}
	c := &Client{opts: o, base: strings.TrimRight(o.BaseURL, "/"), log: o.Logger, modelSeq: 1, samplerSeq: 1,
		stop: make(chan struct{}), done: make(chan struct{})}
	tags := o.Tags
	if tags == nil {
		tags = []string{"metaclaw"}
	}
	var sess struct {
		ID string `json:"id"`
	}
	if err := c.do(ctx, http.MethodPost, "/api/v1/sessions", map[string]any{"tags": tags, "user_metadata": map[string]any{}, "sdk_version": o.SDKVersion}, &sess, true); err != nil {
		return nil, err
	}
	if sess.ID == "" {
		return nil, errors.New("weaver: create session: no id in the answer")
	}
	c.sessionID = sess.ID
	go c.heartbeats()
	return c, nil
}

func (c *Client) heartbeats() {
	defer close(c.done)
	t := time.NewTicker(c.opts.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := c.do(ctx, http.MethodPost, "/api/v1/sessions/"+c.sessionID+"/heartbeat", nil, nil, false); err != nil {
			c.log.Debug().Err(err).Msg("weaver: heartbeat failed")
		}
		cancel()
	}
}

// Name implements backend.Backend.
func (c *Client) Name() string { return "weaver" }

// SessionID is Weaver's session id.
func (c *Client) SessionID() string { return c.sessionID }

// Close stops the heartbeat.
func (c *Client) Close() error {
	c.closeOnce.Do(func() { close(c.stop); <-c.done })
	return nil
}

// do sends one request; retry allows retries on 429, 5xx and transport
// errors. Errors are {"error": code, "message", "retryable"}.
func (c *Client) do(ctx context.Context, method, path string, in, out any, retry bool) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	op := strings.TrimPrefix(path, "/api/v1/")
	for attempt := 0; ; attempt++ {
		status, b, hdrErr := c.send(ctx, method, path, body)
		var err error
		switch {
		case hdrErr != nil:
			err = fmt.Errorf("weaver %s: %w (%w)", op, hdrErr, backend.ErrUnavailable)
		case status >= 200 && status < 300:
			if out == nil || len(bytes.TrimSpace(b)) == 0 {
				return nil
			}
			if err := json.Unmarshal(b, out); err != nil {
				return fmt.Errorf("weaver %s: decode answer: %w", op, err)
			}
			return nil
		default:
			err = apiError(op, status, b)
		}
		var ae *backend.APIError
		transient := hdrErr != nil || (errors.As(err, &ae) && (ae.Status == 429 || ae.Status >= 500))
		if !retry || !transient || attempt >= c.opts.MaxRetries || ctx.Err() != nil {
			return err
		}
		d := math.Min(float64(c.opts.RetryBase)*math.Pow(2, float64(attempt)), float64(c.opts.RetryMax))
		if err := sleep(ctx, time.Duration(d*(0.75+0.25*mrand.Float64()))); err != nil {
			return err
		}
	}
}

func (c *Client) send(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.RequestTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("X-WEAVER-API-KEY", c.opts.APIKey)
	req.Header.Set("User-Agent", "weaver-sdk/"+c.opts.SDKVersion+" (MetaClaw-Go)")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.opts.HTTPClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<30))
	return resp.StatusCode, b, err
}

func apiError(op string, status int, b []byte) *backend.APIError {
	var e struct {
		Error   string `json:"error"`
		Message string `json:"message"`
	}
	_ = json.Unmarshal(b, &e)
	if e.Message == "" {
		e.Message = strings.TrimSpace(string(b))
		e.Message = textclip.Ellipsis(e.Message, 300)
	}
	return &backend.APIError{Backend: "weaver", Op: op, Status: status, Category: e.Error, Message: e.Message}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// operation is Weaver's long-running-work record.
type operation struct {
	ID       string          `json:"id"`
	Status   string          `json:"status"`
	Response json.RawMessage `json:"response"`
	Code     string          `json:"error_code"`
	Message  string          `json:"error_message"`
}

// run submits work once and polls its operation to the end.
func (c *Client) run(ctx context.Context, path string, in any) (json.RawMessage, error) {
	var op operation
	if err := c.do(ctx, http.MethodPost, path, in, &op, false); err != nil {
		return nil, err
	}
	if op.ID == "" && op.Status != "done" {
		return nil, fmt.Errorf("weaver %s: no operation id in the answer", path)
	}
	return c.wait(ctx, strings.TrimPrefix(path, "/api/v1/"), op)
}

// Models implements backend.Backend.
func (c *Client) Models(ctx context.Context) ([]backend.Model, error) {
	var out struct {
		Items []struct {
			Name   string `json:"name"`
			Status string `json:"status"`
		} `json:"items"`
	}
	if err := c.do(ctx, http.MethodGet, "/api/v1/supported-models", nil, &out, true); err != nil {
		return nil, err
	}
	var list []backend.Model
	for _, m := range out.Items {
		if m.Status == "" || strings.EqualFold(m.Status, "healthy") {
			list = append(list, backend.Model{Name: m.Name})
		}
	}
	return list, nil
}

// CreateModel implements backend.Backend.
func (c *Client) CreateModel(ctx context.Context, cfg backend.ModelConfig) (backend.Trainer, error) {
	return c.createModel(ctx, cfg)
}

func (c *Client) createModel(ctx context.Context, cfg backend.ModelConfig) (*Trainer, error) {
	c.mu.Lock()
	seq := c.modelSeq
	c.modelSeq++
	c.mu.Unlock()
	lora := map[string]any{"rank": cfg.LoRA.Rank, "train_unembed": cfg.LoRA.TrainUnembed, "train_mlp": cfg.LoRA.TrainMLP, "train_attn": cfg.LoRA.TrainAttn}
	if cfg.LoRA.Seed != nil {
		lora["seed"] = *cfg.LoRA.Seed
	}
	body := map[string]any{"model_seq_id": seq, "base_model": cfg.BaseModel, "lora_config": lora}
	if len(cfg.Metadata) > 0 {
		body["user_metadata"] = cfg.Metadata
	}
	var out struct {
		ID string `json:"id"`
	}
	if err := c.do(ctx, http.MethodPost, "/api/v1/sessions/"+c.sessionID+"/models", body, &out, true); err != nil {
		return nil, err
	}
	if out.ID == "" {
		return nil, errors.New("weaver create model: no id in the answer")
	}
	return &Trainer{c: c, id: out.ID}, nil
}

// Resume implements backend.Backend (create, then load with the optimizer).
func (c *Client) Resume(ctx context.Context, cfg backend.ModelConfig, path string) (backend.Trainer, error) {
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

// Sampler implements backend.Backend.
func (c *Client) Sampler(ctx context.Context, spec backend.SamplerSpec) (backend.Sampler, error) {
	c.mu.Lock()
	seq := c.samplerSeq
	c.samplerSeq++
	c.mu.Unlock()
	body := map[string]any{"sampling_session_seq_id": seq}
	if spec.BaseModel != "" {
		body["base_model"] = spec.BaseModel
	}
	if spec.Path != "" {
		body["model_path"] = spec.Path
	}
	var out struct {
		ID              string               `json:"id"`
		SamplingSession *struct{ ID string } `json:"sampling_session"`
		SyncOperation   *operation           `json:"sync_operation"`
	}
	if err := c.do(ctx, http.MethodPost, "/api/v1/sessions/"+c.sessionID+"/sampling-sessions", body, &out, true); err != nil {
		return nil, err
	}
	id := out.ID
	if out.SyncOperation != nil && out.SamplingSession != nil {
		// The weights are being synced in the background: wait for it.
		id = out.SamplingSession.ID
		op := *out.SyncOperation
		for op.Status != "done" {
			if op.Status == "error" {
				return nil, &backend.APIError{Backend: "weaver", Op: "sampling-sessions", Category: op.Code, Message: op.Message}
			}
			if err := sleep(ctx, c.opts.PollBase); err != nil {
				return nil, err
			}
			if err := c.do(ctx, http.MethodGet, "/api/v1/operations/"+op.ID, nil, &op, true); err != nil {
				return nil, err
			}
		}
	}
	if id == "" {
		return nil, errors.New("weaver create sampling session: no id in the answer")
	}
	return &Sampler{c: c, id: id, path: spec.Path}, nil
}
