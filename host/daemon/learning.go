package daemon

import (
	"context"
	"errors"
	"io"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/host/store"
)

// part wires one learning component (skills, memory, …) into the host: it
// registers providers, listeners and jobs on the core and may add routes.
// The closer, if any, runs at shutdown after the proxy has stopped.
type part func(ctx context.Context, cfg *config.Config, st *store.SQLite, c *core.Core, log zerolog.Logger) ([]proxy.Route, io.Closer, error)

// learningParts lists the components the host runs, in injection order.
var learningParts = []part{setupSkills, setupMemory}

// setupLearning runs every part; a part that fails to start is logged and
// skipped, so the proxy still serves (fail open).
func setupLearning(ctx context.Context, cfg *config.Config, st *store.SQLite, c *core.Core, log zerolog.Logger) ([]proxy.Route, io.Closer) {
	var routes []proxy.Route
	var closers multiCloser
	for _, p := range learningParts {
		r, cl, err := p(ctx, cfg, st, c, log)
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

type multiCloser []io.Closer

func (m multiCloser) Close() error {
	var errs []error
	for i := len(m) - 1; i >= 0; i-- {
		errs = append(errs, m[i].Close())
	}
	return errors.Join(errs...)
}
