package daemon

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/embed"
	"github.com/metaclaw-go/metaclaw/host/memory"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/skills"
	"github.com/metaclaw-go/metaclaw/host/subplugin"
)

// part assembles one learning component (skills, memory, …) into the host: it
// registers providers, listeners and jobs on the core and may add routes.
// The closer, if any, runs at shutdown after the proxy has stopped.
// emb is the embedder shared by skills and memory (plugins.embedder), or nil
// for each to use its own default.
type part func(ctx context.Context, cfg *config.Config, st learningStore, c *core.Core, emb embed.Embedder, log zerolog.Logger) ([]route.Route, io.Closer, error)

// learningStore is what the learning parts need of the store: each part's
// own narrow interface, which the SQLite store the daemon opens implements.
type learningStore interface {
	skills.Storage
	memory.Storage
}

// learningParts lists the components the host runs, in injection order.
// Each takes only its own part of learningStore.
var learningParts = []part{
	func(ctx context.Context, cfg *config.Config, st learningStore, c *core.Core, emb embed.Embedder, log zerolog.Logger) ([]route.Route, io.Closer, error) {
		return setupSkills(ctx, cfg, st, c, emb, log)
	},
	func(ctx context.Context, cfg *config.Config, st learningStore, c *core.Core, emb embed.Embedder, log zerolog.Logger) ([]route.Route, io.Closer, error) {
		return setupMemory(ctx, cfg, st, c, emb, log)
	},
}

// setupLearning runs every part; a part that fails to start is logged and
// skipped, so the proxy still serves (fail open).
func setupLearning(ctx context.Context, cfg *config.Config, st learningStore, c *core.Core, log zerolog.Logger) ([]route.Route, io.Closer) {
	var routes []route.Route
	var closers multiCloser
	emb, ec := sharedEmbedder(ctx, cfg, log)
	if ec != nil {
		closers = append(closers, ec) // first in, closed last
	}
	for _, p := range learningParts {
		r, cl, err := p(ctx, cfg, st, c, emb, log)
		if err != nil {
			log.Error().Err(err).Msg("a learning component failed to start; the proxy serves without it")
			continue
		}
		routes = append(routes, r...)
		if cl != nil {
			closers = append(closers, cl)
		}
	}
	return routes, closers
}

// sharedEmbedder opens plugins.embedder (a sub-plugin or the built-in
// hashing embedder) for skills and memory to share. A plugin that cannot be
// started is logged; skills and memory then use their own defaults.
func sharedEmbedder(ctx context.Context, cfg *config.Config, log zerolog.Logger) (embed.Embedder, io.Closer) {
	if cfg.Plugins.Embedder == "" {
		return nil, nil
	}
	maxRestarts := cfg.Plugins.MaxRestarts
	if maxRestarts == 0 {
		maxRestarts = -1 // config 0 means never relaunch; Options 0 means the default
	}
	e, cl, err := subplugin.OpenEmbedder(ctx, subplugin.EmbedderSpec{Use: cfg.Plugins.Embedder, Options: subplugin.Options{
		Dir: cfg.Plugins.Dir, CallTimeout: time.Duration(cfg.Plugins.CallTimeoutSeconds) * time.Second, MaxRestarts: maxRestarts,
	}}, log.With().Str("part", "embedder").Logger())
	if err != nil {
		log.Error().Err(err).Str("plugins.embedder", cfg.Plugins.Embedder).Msg("embedder unavailable; skills and memory use their default embedders")
		return nil, nil
	}
	return e, cl
}

type multiCloser []io.Closer

func (m multiCloser) Close() error {
	var errs []error
	for i := len(m) - 1; i >= 0; i-- {
		errs = append(errs, m[i].Close())
	}
	return errors.Join(errs...)
}
