package subplugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/subplugin/sdk"
	pb "github.com/metaclaw-go/metaclaw/host/subplugin/sdk/trainerpb"
)

func init() {
	RegisterKind(Kind{
		Name:      sdk.TrainerKind,
		Handshake: sdk.TrainerHandshake,
		Plugin:    &sdk.TrainerPlugin{},
		Probe:     probeTrainer,
	})
}

func probeTrainer(ctx context.Context, raw any) (Identity, error) {
	c, ok := raw.(pb.TrainerClient)
	if !ok {
		return Identity{}, fmt.Errorf("unexpected client type %T", raw)
	}
	info, err := c.Info(ctx, &pb.InfoRequest{})
	if err != nil {
		st := status.Convert(err)
		if st.Code() == codes.Unimplemented {
			return Identity{}, fmt.Errorf("it does not serve %s (is it a trainer plugin?): %s", sdk.TrainerService, st.Message())
		}
		return Identity{}, fmt.Errorf("Info: %s (%s)", st.Message(), st.Code())
	}
	if strings.TrimSpace(info.Name) == "" {
		return Identity{}, errors.New("Info returned an empty name")
	}
	return Identity{Name: info.Name, Version: info.Version, Detail: "losses=" + strings.Join(info.Losses, ",")}, nil
}

// DefaultTrainerCallTimeout bounds one call to a trainer plugin: a
// forward_backward on a local GPU can take minutes.
const DefaultTrainerCallTimeout = 15 * time.Minute

// Trainer launches spec (of kind trainer) on h and returns it as a
// backend.Backend. Models live in the plugin process: after a crash and
// relaunch their ids are unknown (backend.ErrNotFound), and the training
// loop resumes from its last checkpoint.
func (h *Host) Trainer(ctx context.Context, spec Spec) (*sdk.RemoteBackend, error) {
	spec.Kind = sdk.TrainerKind
	in, err := h.Launch(ctx, spec)
	if err != nil {
		return nil, err
	}
	return sdk.NewRemoteBackend(in.Identity().Name, func(ctx context.Context, idempotent bool, fn func(context.Context, pb.TrainerClient) error) error {
		return in.Call(ctx, idempotent, func(ctx context.Context, c any) error { return fn(ctx, c.(pb.TrainerClient)) })
	}), nil
}

// TrainerSpec says which trainer plugin OpenTrainer opens.
type TrainerSpec struct {
	// Use is a plugin name (<Dir>/metaclaw-trainer-<name>) or a path.
	Use  string
	Args []string
	Env  []string
	// Options: directory, timeouts (CallTimeout defaults to
	// DefaultTrainerCallTimeout), restart policy.
	Options
}

// OpenTrainer launches the trainer plugin spec names and returns it with a
// closer that stops it. Tinker, MinT and Weaver are not plugins (they are
// built in; see host/rl/backend); this is for anything else.
func OpenTrainer(ctx context.Context, spec TrainerSpec, log zerolog.Logger) (backend.Backend, io.Closer, error) {
	opts := spec.Options
	opts.Logger = log
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultTrainerCallTimeout
	}
	h := NewHost(opts)
	ps, err := Resolve(sdk.TrainerKind, strings.TrimSpace(spec.Use), h.opts.Dir)
	if err != nil {
		_ = h.Close()
		return nil, nil, err
	}
	ps.Args, ps.Env = spec.Args, spec.Env
	b, err := h.Trainer(ctx, ps)
	if err != nil {
		_ = h.Close()
		return nil, nil, err
	}
	return b, h, nil
}
