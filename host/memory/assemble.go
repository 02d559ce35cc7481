package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/asyncusage"
	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/embed"
	"github.com/metaclaw-go/metaclaw/host/llm"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/store"
)

// AssembleOptions adjust Assemble (tests, and the sidecar key).
type AssembleOptions struct {
	Now       func() time.Time
	Extractor Extractor      // overrides memory.extractor
	Embedder  embed.Embedder // overrides the HTTP embedder of memory.use_embeddings
	// SidecarKey authenticates to memory.sidecar_url (default proxy.api_key).
	SidecarKey string
	// FlushTimeout bounds the ingestion at shutdown (default 10 s).
	FlushTimeout time.Duration

	// embedUsage, when set, records the HTTP embedder's usage in place of
	// the store (Assemble's asyncusage.Recorder).
	embedUsage store.UsageRecorder
}

// Host is the memory layer assembled into a host.
type Host struct {
	Store    *Store
	Ingester *Ingester
	Remote   *Remote // set with memory.sidecar_url
	Routes   []route.Route
	manual   bool
	timeout  time.Duration
	log      zerolog.Logger
	usage    *asyncusage.Recorder // the embedder's usage, written off the request path
}

// Assemble builds the memory layer from the config and registers it on the core:
// the provider (local store, or the remote of memory.sidecar_url), the turn
// listener and jobs (unless memory.manual_trigger or auto_extract off), and
// the HTTP routes.
func Assemble(ctx context.Context, cfg *config.Config, st Storage, c *core.Core, log zerolog.Logger, o AssembleOptions) (h *Host, err error) {
	m := cfg.Memory
	if !m.Enabled {
		return &Host{Routes: []route.Route{{Pattern: "/v1/memory/", Handler: func(w http.ResponseWriter, _ *http.Request) {
			WriteError(w, http.StatusServiceUnavailable, "memory is disabled on this host (memory.enabled: false)")
		}}}}, nil
	}
	if m.UseEmbeddings && o.Embedder == nil {
		// Queries are embedded on the request path: their usage is
		// recorded from a background goroutine, never written there.
		usage := asyncusage.New(st)
		o.embedUsage = usage
		defer func() {
			if err != nil {
				usage.Close()
				return
			}
			h.usage = usage
		}()
	}
	opts := OptionsFromConfig(cfg, st, log, o)
	s := Open(st, opts)
	if _, err := s.HostID(ctx); err != nil {
		return nil, err
	}
	// Before the first turn: nothing stored under older rules reaches a prompt.
	if _, err := s.Recheck(ctx); err != nil {
		return nil, err
	}
	h = &Host{Store: s, manual: m.ManualTrigger || !m.AutoExtract, timeout: o.FlushTimeout, log: log}
	if m.SidecarURL == "" {
		// The request path ranks from memory, not SQLite.
		if err := s.StartIndex(ctx); err != nil {
			return nil, err
		}
	}
	var sink Sink = s
	if m.SidecarURL != "" {
		key := o.SidecarKey
		if key == "" {
			key = cfg.Proxy.APIKey
		}
		r, err := NewRemote(RemoteOptions{URL: m.SidecarURL, Key: key, TopK: m.TopK, StandingK: m.StandingTopK, MaxTokens: m.MaxTokens, Local: s, Log: log})
		if err != nil {
			return nil, err
		}
		h.Remote, sink = r, r
		c.AddProvider(r)
	} else {
		c.AddProvider(s)
	}
	h.Ingester = NewIngester(st, s, IngesterOptions{Sink: sink, Every: m.IngestEveryTurns, SideTurns: m.IgnoreTurnType, Log: log,
		StartWait: time.Duration(m.SessionStartWaitMS) * time.Millisecond})
	h.Ingester.Register(c, !h.manual)
	if h.Remote != nil {
		h.Routes = h.Remote.ForwardRoutes(h.Ingester, c)
		in := h.Ingester
		c.HandleJobs(JobAPIIngest, func(ctx context.Context, payload json.RawMessage) error {
			var j apiIngestJob
			if err := json.Unmarshal(payload, &j); err != nil {
				return fmt.Errorf("memory api ingest job: %w", err)
			}
			_, err := RemoteIngest(ctx, in, j.Request)
			return err
		})
		registerTools(c, remoteTools{r: h.Remote, in: h.Ingester})
	} else {
		api := &API{Store: s, Ingester: h.Ingester, Jobs: c, Every: m.IngestEveryTurns, Log: log}
		c.HandleJobs(JobAPIIngest, api.RunJob)
		h.Routes = api.Routes()
		registerTools(c, localTools{s: s, in: h.Ingester})
	}
	log.Info().Str("extractor", s.o.Extractor.Name()).Str("retrieval", s.o.Mode).Bool("embeddings", opts.Embedder != nil).
		Str("sidecar", m.SidecarURL).Bool("manual_trigger", h.manual).Msg("memory ready")
	return h, nil
}

// OptionsFromConfig maps memory.* onto store options (extractor, embedder).
func OptionsFromConfig(cfg *config.Config, st store.UsageRecorder, log zerolog.Logger, o AssembleOptions) Options {
	m := cfg.Memory
	if m.StandingTopK == 0 {
		m.StandingTopK = -1 // memory.standing_top_k: 0 turns the standing section off
	}
	opts := Options{
		DefaultScope: m.Scope, TopK: m.TopK, StandingK: m.StandingTopK, MaxTokens: m.MaxTokens, Mode: m.RetrievalMode,
		NoConsolidate: !m.AutoConsolidate, Now: o.Now, Log: log,
	}
	switch {
	case o.Extractor != nil:
		opts.Extractor = o.Extractor
	case m.Extractor == "llm" || m.Extractor == "hybrid":
		client := llm.New(cfg.Upstream(), "extractor", st, 2*time.Minute)
		if client.Configured() {
			opts.Extractor = &LLMExtractor{Client: client, Hybrid: m.Extractor == "hybrid", Log: log}
		} else {
			log.Warn().Str("extractor", m.Extractor).Msg("memory: no upstream LLM configured for the extractor; using the heuristic extractor")
		}
	}
	switch {
	case o.Embedder != nil:
		opts.Embedder = o.Embedder
	case m.UseEmbeddings && cfg.LLM.APIBase != "":
		var usage store.UsageRecorder = st
		if o.embedUsage != nil {
			usage = o.embedUsage
		}
		opts.Embedder = &embed.HTTP{Base: cfg.LLM.APIBase, Key: cfg.LLM.APIKey, Model: m.EmbeddingModel, Purpose: "embedder", Usage: usage}
	}
	if opts.Embedder != nil && opts.Mode == "keyword" {
		opts.Mode = "hybrid" // embeddings were asked for: use them
	}
	return opts
}

// NewLocalIngester is the ingester the CLI uses when no host runs: this
// store's turns into this store, or into memory.sidecar_url when set.
func NewLocalIngester(cfg *config.Config, st Storage, s *Store, o AssembleOptions) (*Ingester, error) {
	var sink Sink = s
	if cfg.Memory.SidecarURL != "" {
		key := o.SidecarKey
		if key == "" {
			key = cfg.Proxy.APIKey
		}
		r, err := NewRemote(RemoteOptions{URL: cfg.Memory.SidecarURL, Key: key, Local: s})
		if err != nil {
			return nil, err
		}
		sink = r
	}
	return NewIngester(st, s, IngesterOptions{Sink: sink, Every: cfg.Memory.IngestEveryTurns, SideTurns: cfg.Memory.IgnoreTurnType}), nil
}

// Close ingests what is still pending (shutdown is a session boundary for
// memory), bounded in time; what does not make it stays pending in the store
// and is ingested after the next start.
func (h *Host) Close() error {
	if h.Store != nil {
		defer h.Store.StopIndex()
	}
	if h.usage != nil {
		defer h.usage.Close() // after the last ingestion's embeddings
	}
	if h.Ingester == nil || h.manual {
		return nil
	}
	timeout := h.timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, sessions, err := h.Ingester.IngestAll(ctx, false)
	if err != nil {
		h.log.Warn().Err(err).Msg("memory: shutdown ingestion incomplete; the rest stays pending for the next start")
		return nil
	}
	if res.Turns > 0 {
		h.log.Info().Int("turns", res.Turns).Int("sessions", len(sessions)).Int("added", res.Added).Msg("memory: ingested pending turns at shutdown")
	}
	return nil
}
