package subplugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/rs/zerolog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/metaclaw-go/metaclaw/host/rl/judge"
	"github.com/metaclaw-go/metaclaw/host/subplugin/sdk"
	jpb "github.com/metaclaw-go/metaclaw/host/subplugin/sdk/judgepb"
)

func init() {
	RegisterKind(Kind{
		Name:      sdk.JudgeKind,
		Handshake: sdk.JudgeHandshake,
		Plugin:    &sdk.JudgePlugin{},
		Probe:     probeJudge,
	})
}

func probeJudge(ctx context.Context, raw any) (Identity, error) {
	c, ok := raw.(jpb.JudgeClient)
	if !ok {
		return Identity{}, fmt.Errorf("unexpected client type %T", raw)
	}
	info, err := c.Info(ctx, &jpb.InfoRequest{})
	if err != nil {
		st := status.Convert(err)
		if st.Code() == codes.Unimplemented {
			return Identity{}, fmt.Errorf("it does not serve %s (is it a judge plugin?): %s", sdk.JudgeService, st.Message())
		}
		return Identity{}, fmt.Errorf("Info: %s (%s)", st.Message(), st.Code())
	}
	if strings.TrimSpace(info.Name) == "" {
		return Identity{}, errors.New("Info returned an empty name")
	}
	return Identity{Name: info.Name, Version: info.Version}, nil
}

// PluginJudge is a judge plugin seen as a judge.Judge.
type PluginJudge struct {
	in   *Instance
	name string
}

var _ judge.Judge = (*PluginJudge)(nil)

// Name is the plugin's Info name.
func (j *PluginJudge) Name() string { return j.name }

// Score implements judge.Judge. The score must be −1, 0 or +1.
func (j *PluginJudge) Score(ctx context.Context, req judge.Request) (*judge.Verdict, error) {
	var out *jpb.ScoreResponse
	err := j.in.Call(ctx, true, func(ctx context.Context, c any) (err error) {
		out, err = c.(jpb.JudgeClient).Score(ctx, sdk.ScoreRequestToPB(req))
		return err
	})
	if err != nil {
		return nil, err
	}
	if s := out.Score; s != -1 && s != 0 && s != 1 {
		return nil, fmt.Errorf("%s: score %v is not -1, 0 or 1", j.in.label(), s)
	}
	return &judge.Verdict{Score: out.Score, Votes: out.Votes, Text: out.Text}, nil
}

// Judge launches spec (of kind judge) on h.
func (h *Host) Judge(ctx context.Context, spec Spec) (*PluginJudge, error) {
	spec.Kind = sdk.JudgeKind
	in, err := h.Launch(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &PluginJudge{in: in, name: in.Identity().Name}, nil
}

// JudgeSpec says which judge plugin OpenJudge opens.
type JudgeSpec struct {
	// Use is a plugin name (<Dir>/metaclaw-judge-<name>) or a path.
	Use  string
	Args []string
	Env  []string
	Options
}

// OpenJudge launches the judge plugin spec names, with a closer that stops it.
func OpenJudge(ctx context.Context, spec JudgeSpec, log zerolog.Logger) (judge.Judge, io.Closer, error) {
	opts := spec.Options
	opts.Logger = log
	h := NewHost(opts)
	ps, err := Resolve(sdk.JudgeKind, strings.TrimSpace(spec.Use), h.opts.Dir)
	if err != nil {
		_ = h.Close()
		return nil, nil, err
	}
	ps.Args, ps.Env = spec.Args, spec.Env
	j, err := h.Judge(ctx, ps)
	if err != nil {
		_ = h.Close()
		return nil, nil, err
	}
	return j, h, nil
}
