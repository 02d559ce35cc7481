package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/scheduler"
	"github.com/metaclaw-go/metaclaw/host/scheduler/assemble"
	"github.com/metaclaw-go/metaclaw/host/store"
)

// schedulerStopGrace bounds how long a stopping host waits for the trainer
// to reach a safe point.
const schedulerStopGrace = 30 * time.Second

// hostScheduler is the training scheduler as the host runs it (auto mode,
// or rl mode with scheduler.enabled); it drives the training loop
// (host/rl/train) through its windows.
type hostScheduler struct {
	s    *scheduler.Scheduler
	off  string // why it does not run, when s is nil
	stop func()
}

func startScheduler(ctx context.Context, cfg *config.Config, st store.Tables, log zerolog.Logger, trainer scheduler.Trainer) *hostScheduler {
	on, why := assemble.Active(cfg)
	if !on {
		return &hostScheduler{off: why, stop: func() {}}
	}
	log = log.With().Str("part", "scheduler").Logger()
	s, closer, err := assemble.Build(ctx, cfg, st, assemble.Options{Log: log, Trainer: trainer})
	if err != nil {
		log.Error().Err(err).Msg("scheduler could not start; no training window will open")
		return &hostScheduler{off: "scheduler failed to start: " + err.Error(), stop: func() {}}
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(runCtx, schedulerStopGrace)
	}()
	log.Info().Str("sources", assemble.Describe(cfg)).Msg("scheduler started")
	return &hostScheduler{s: s, stop: func() {
		cancel()
		<-done
		closer.Close()
	}}
}

// routes is the scheduler API (metaclaw scheduler … while the host runs).
func (h *hostScheduler) routes() []route.Route {
	if h.s == nil {
		off := scheduler.Off(h.off)
		return []route.Route{{Pattern: "GET /v1/scheduler", Handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			writeJSONTo(w, off)
		}}}
	}
	return h.s.Routes()
}

// wrap lets each request of the user close an open window (never blocking it).
func (h *hostScheduler) wrap(next http.Handler) http.Handler {
	if h.s == nil {
		return next
	}
	return scheduler.TouchOnRequests(h.s, next)
}

func (h *hostScheduler) touch() {
	if h.s != nil {
		h.s.Touch()
	}
}

func (h *hostScheduler) status(ctx context.Context) scheduler.Status {
	if h.s == nil {
		return scheduler.Off(h.off)
	}
	return h.s.Snapshot(ctx, 10)
}

func writeJSONTo(w http.ResponseWriter, v any) {
	_ = json.NewEncoder(w).Encode(v)
}
