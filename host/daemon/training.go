package daemon

import (
	"context"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/connect"
	rlruntime "github.com/metaclaw-go/metaclaw/host/rl/runtime"
	"github.com/metaclaw-go/metaclaw/host/rl/samples"
	"github.com/metaclaw-go/metaclaw/host/rl/train"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/scheduler"
	"github.com/metaclaw-go/metaclaw/host/scheduler/assemble"
	"github.com/metaclaw-go/metaclaw/host/skills"
	"github.com/metaclaw-go/metaclaw/host/store"
)

// trainStopGrace bounds how long a stopping host waits for a training step
// in flight (a step cut short is not lost: the next start resumes from the
// last checkpoint and trains its batch again).
const trainStopGrace = 30 * time.Second

// hostTraining is the training loop as the host runs it (modes rl and
// auto): the runtime's first sampler comes from it (a resume from the last
// checkpoint), and in auto mode (or with scheduler.enabled) it is the
// scheduler's trainer.
type hostTraining struct {
	loop *train.Loop // nil when RL is off or has no backend
	off  string      // why there is no loop
}

func newTraining(cfg *config.Config, st store.Tables, log zerolog.Logger) *hostTraining {
	if !rlruntime.Active(cfg) {
		return &hostTraining{off: "mode " + cfg.Mode + " does not train"}
	}
	// Without a backend RL stays inactive (the runtime says why): the
	// scheduler then has no trainer either.
	r := connect.Resolve(cfg.RL, os.Getenv)
	if (r.Kind == connect.Plugin && strings.TrimSpace(cfg.Plugins.Trainer) == "") || (r.Kind != connect.Plugin && r.APIKey == "") {
		return &hostTraining{off: "no training backend is configured (rl.api_key, or " + strings.ToUpper(r.Kind) + "_API_KEY; rl.backend plugin needs plugins.trainer)"}
	}
	windows, _ := assemble.Active(cfg)
	log = log.With().Str("part", "train").Logger()
	return &hostTraining{loop: train.New(train.Options{
		Config: cfg, Backend: r.Kind, Samples: samples.New(st.Writer(), st.Reader()), Steps: train.NewStore(st.Writer(), st.Reader()), Windows: windows,
		Generation: func(ctx context.Context) (int64, error) { return skills.LibraryGeneration(ctx, st.Reader()) },
		Connect: func(ctx context.Context) (backend.Backend, error) {
			return connect.Open(ctx, cfg, connect.Options{Logger: log})
		},
		Log: log,
	})}
}

// runtimeOptions lets the runtime start serving from the trainer's weights,
// and its scorer wake the loop when a sample is scored (else a full batch
// waits for the loop's next poll).
func (h *hostTraining) runtimeOptions(o *rlruntime.Options) {
	if h.loop != nil {
		o.InitialSampler = h.loop.Init
		o.Scorer.Scored = h.loop.Wake
	}
}

func (h *hostTraining) start(ctx context.Context, rt *rlruntime.Runtime) {
	if h.loop != nil {
		h.loop.Start(ctx, rt.Current())
	}
}

func (h *hostTraining) stop() {
	if h.loop != nil {
		h.loop.Stop(trainStopGrace)
	}
}

// trainer is what the scheduler drives (nil: scheduler.NoTrainer).
func (h *hostTraining) trainer() scheduler.Trainer {
	if h.loop == nil {
		return nil
	}
	return h.loop
}

func (h *hostTraining) routes() []route.Route {
	if h.loop == nil {
		off := train.Status{State: "off", Reason: h.off}
		return []route.Route{{Pattern: "GET /v1/rl/training", Handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			writeJSONTo(w, off)
		}}}
	}
	return train.Routes(h.loop)
}

// status is the "training" object of the host's status; while the runtime
// cannot serve (no backend configured, no tokenizer) it says so.
func (h *hostTraining) status(ctx context.Context, rl rlruntime.Status) *train.Status {
	if h.loop == nil {
		return nil
	}
	st := h.loop.Status(ctx)
	if st.State == train.StateWaitingBackend && rl.State != rlruntime.StateServing && rl.State != rlruntime.StateConnecting {
		st.Reason = "RL is " + rl.State + ": " + rl.Reason
	}
	return &st
}
