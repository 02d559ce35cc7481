package sdk

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	pb "github.com/metaclaw-go/metaclaw/host/subplugin/sdk/trainerpb"
)

// TrainerKind is the kind name of trainers (executables
// metaclaw-trainer-<name>).
const TrainerKind = "trainer"

// TrainerProtocolVersion changes only with an incompatible trainer.proto.
const TrainerProtocolVersion = 1

// TrainerHandshake is the handshake of trainer plugins.
var TrainerHandshake = Handshake(TrainerKind, TrainerProtocolVersion)

// TrainerService is the full gRPC service name.
const TrainerService = "metaclaw.subplugin.trainer.v1.Trainer"

// Lossed is optionally implemented by a served backend to list the losses
// it trains with (reported by Info).
type Lossed interface{ Losses() []string }

// ServeTrainer serves impl (any backend.Backend: a local GPU trainer, a
// proxy to a cloud service, …) as a trainer plugin. It does not return.
func ServeTrainer(impl backend.Backend) { ServeTrainerWith(impl, ServeOptions{}) }

// ServeTrainerWith is ServeTrainer with options.
func ServeTrainerWith(impl backend.Backend, o ServeOptions) {
	serve(TrainerKind, TrainerProtocolVersion, &TrainerPlugin{Impl: impl}, o)
}

// TrainerPlugin is the go-plugin Plugin of the trainer kind: on the plugin
// side it serves Impl, on the host side it dispenses a pb.TrainerClient.
type TrainerPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl backend.Backend // plugin side only
}

// GRPCServer implements plugin.GRPCPlugin.
func (p *TrainerPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return errors.New("sdk: TrainerPlugin.Impl is nil")
	}
	pb.RegisterTrainerServer(s, NewTrainerServer(p.Impl))
	return nil
}

// GRPCClient implements plugin.GRPCPlugin.
func (p *TrainerPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return pb.NewTrainerClient(c), nil
}

// trainerServer serves a backend.Backend, keeping its models and samplers by
// id for the host to address.
type trainerServer struct {
	pb.UnimplementedTrainerServer
	impl backend.Backend

	mu       sync.Mutex
	models   map[string]backend.Trainer
	samplers map[string]backend.Sampler
}

// NewTrainerServer adapts impl to the Trainer service (for plugins that
// register it on their own gRPC server).
func NewTrainerServer(impl backend.Backend) pb.TrainerServer {
	return &trainerServer{impl: impl, models: map[string]backend.Trainer{}, samplers: map[string]backend.Sampler{}}
}

func (s *trainerServer) model(id string) (backend.Trainer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.models[id]
	if t == nil {
		return nil, status.Errorf(codes.NotFound, "model %q not found (was the plugin restarted? resume from a checkpoint)", id)
	}
	return t, nil
}

func (s *trainerServer) keepSampler(sp backend.Sampler) *pb.SamplerHandle {
	s.mu.Lock()
	s.samplers[sp.ID()] = sp
	s.mu.Unlock()
	return &pb.SamplerHandle{SamplerId: sp.ID(), Path: sp.Path()}
}

func (s *trainerServer) Info(context.Context, *pb.InfoRequest) (*pb.InfoResponse, error) {
	r := &pb.InfoResponse{Name: s.impl.Name()}
	if v, ok := s.impl.(Versioned); ok {
		r.Version = v.Version()
	}
	if l, ok := s.impl.(Lossed); ok {
		r.Losses = l.Losses()
	}
	return r, nil
}

func (s *trainerServer) Models(ctx context.Context, _ *pb.ModelsRequest) (*pb.ModelsResponse, error) {
	ms, err := s.impl.Models(ctx)
	if err != nil {
		return nil, statusOf(err)
	}
	out := &pb.ModelsResponse{}
	for _, m := range ms {
		out.Models = append(out.Models, &pb.Model{Name: m.Name, MaxContextLength: int32(m.MaxContextLength)})
	}
	return out, nil
}

func (s *trainerServer) CreateModel(ctx context.Context, in *pb.CreateModelRequest) (*pb.CreateModelResponse, error) {
	l := in.GetLora()
	cfg := backend.ModelConfig{BaseModel: in.BaseModel, Metadata: in.Metadata,
		LoRA: backend.LoRAConfig{Rank: int(l.GetRank()), Seed: l.Seed, TrainUnembed: l.GetTrainUnembed(), TrainMLP: l.GetTrainMlp(), TrainAttn: l.GetTrainAttn()}}
	var t backend.Trainer
	var err error
	if in.ResumePath != "" {
		t, err = s.impl.Resume(ctx, cfg, in.ResumePath)
	} else {
		t, err = s.impl.CreateModel(ctx, cfg)
	}
	if err != nil {
		return nil, statusOf(err)
	}
	s.mu.Lock()
	s.models[t.ModelID()] = t
	s.mu.Unlock()
	return &pb.CreateModelResponse{ModelId: t.ModelID()}, nil
}

func (s *trainerServer) ForwardBackward(ctx context.Context, in *pb.ForwardBackwardRequest) (*pb.ForwardBackwardResponse, error) {
	t, err := s.model(in.ModelId)
	if err != nil {
		return nil, err
	}
	data := make([]backend.Datum, len(in.Data))
	for i, d := range in.Data {
		data[i] = DatumFromPB(d)
	}
	res, err := t.ForwardBackward(ctx, data, backend.LossFn(in.LossFn), in.LossFnConfig)
	if err != nil {
		return nil, statusOf(err)
	}
	out := &pb.ForwardBackwardResponse{Metrics: res.Metrics}
	for _, o := range res.Outputs {
		out.Outputs = append(out.Outputs, &pb.LossOutput{Values: tensorsToPB(o)})
	}
	return out, nil
}

func (s *trainerServer) OptimStep(ctx context.Context, in *pb.OptimStepRequest) (*pb.OptimStepResponse, error) {
	t, err := s.model(in.ModelId)
	if err != nil {
		return nil, err
	}
	res, err := t.OptimStep(ctx, adamFromPB(in.Adam))
	if err != nil {
		return nil, statusOf(err)
	}
	return &pb.OptimStepResponse{Metrics: res.Metrics}, nil
}

func (s *trainerServer) SaveForSampler(ctx context.Context, in *pb.SaveForSamplerRequest) (*pb.SamplerHandle, error) {
	t, err := s.model(in.ModelId)
	if err != nil {
		return nil, err
	}
	sp, err := t.SaveForSampler(ctx, in.Name)
	if err != nil {
		return nil, statusOf(err)
	}
	return s.keepSampler(sp), nil
}

func (s *trainerServer) SaveState(ctx context.Context, in *pb.SaveStateRequest) (*pb.Checkpoint, error) {
	t, err := s.model(in.ModelId)
	if err != nil {
		return nil, err
	}
	c, err := t.SaveState(ctx, in.Name)
	if err != nil {
		return nil, statusOf(err)
	}
	return checkpointToPB(c), nil
}

func (s *trainerServer) LoadState(ctx context.Context, in *pb.LoadStateRequest) (*pb.LoadStateResponse, error) {
	t, err := s.model(in.ModelId)
	if err != nil {
		return nil, err
	}
	if err := t.LoadState(ctx, in.Path, in.Optimizer); err != nil {
		return nil, statusOf(err)
	}
	return &pb.LoadStateResponse{}, nil
}

func (s *trainerServer) ListCheckpoints(ctx context.Context, in *pb.ListCheckpointsRequest) (*pb.ListCheckpointsResponse, error) {
	t, err := s.model(in.ModelId)
	if err != nil {
		return nil, err
	}
	list, err := t.Checkpoints(ctx)
	if err != nil {
		return nil, statusOf(err)
	}
	out := &pb.ListCheckpointsResponse{}
	for _, c := range list {
		out.Checkpoints = append(out.Checkpoints, checkpointToPB(c))
	}
	return out, nil
}

func (s *trainerServer) CloseModel(ctx context.Context, in *pb.CloseModelRequest) (*pb.CloseModelResponse, error) {
	t, err := s.model(in.ModelId)
	if err != nil {
		return nil, err
	}
	if err := t.Close(ctx); err != nil {
		return nil, statusOf(err)
	}
	s.mu.Lock()
	delete(s.models, in.ModelId)
	s.mu.Unlock()
	return &pb.CloseModelResponse{}, nil
}

func (s *trainerServer) OpenSampler(ctx context.Context, in *pb.OpenSamplerRequest) (*pb.SamplerHandle, error) {
	sp, err := s.impl.Sampler(ctx, backend.SamplerSpec{BaseModel: in.BaseModel, Path: in.Path})
	if err != nil {
		return nil, statusOf(err)
	}
	return s.keepSampler(sp), nil
}

func (s *trainerServer) Sample(ctx context.Context, in *pb.SampleRequest) (*pb.SampleResponse, error) {
	s.mu.Lock()
	sp := s.samplers[in.SamplerId]
	s.mu.Unlock()
	if sp == nil {
		return nil, status.Errorf(codes.NotFound, "sampler %q not found", in.SamplerId)
	}
	res, err := sp.Sample(ctx, backend.SampleRequest{Prompt: in.Prompt, Params: samplingFromPB(in.Params), NumSamples: int(in.NumSamples), PromptLogprobs: in.PromptLogprobs})
	if err != nil {
		return nil, statusOf(err)
	}
	out := &pb.SampleResponse{PromptLogprobs: res.PromptLogprobs}
	for _, q := range res.Sequences {
		out.Sequences = append(out.Sequences, &pb.Sequence{Tokens: q.Tokens, Logprobs: q.Logprobs, StopReason: q.StopReason})
	}
	return out, nil
}

// TrainerCaller runs one call on a Trainer client. The host passes its
// supervised Instance.Call; tests pass a direct call.
type TrainerCaller func(ctx context.Context, idempotent bool, fn func(ctx context.Context, c pb.TrainerClient) error) error

// RemoteBackend is a trainer plugin seen as a backend.Backend.
type RemoteBackend struct {
	name string
	call TrainerCaller
}

var _ backend.Backend = (*RemoteBackend)(nil)

// NewRemoteBackend wraps call; name is the plugin's Info name.
func NewRemoteBackend(name string, call TrainerCaller) *RemoteBackend {
	return &RemoteBackend{name: name, call: call}
}

// do runs fn and maps the plugin's status errors back to backend sentinels.
func (r *RemoteBackend) do(ctx context.Context, idempotent bool, fn func(ctx context.Context, c pb.TrainerClient) error) error {
	var raw error
	err := r.call(ctx, idempotent, func(ctx context.Context, c pb.TrainerClient) error {
		raw = fn(ctx, c)
		return raw
	})
	if err == nil {
		return nil
	}
	if mapped := ErrorFromStatus(raw); mapped != nil && raw != nil {
		return fmt.Errorf("trainer plugin %s: %w", r.name, mapped)
	}
	return err
}

// Name implements backend.Backend.
func (r *RemoteBackend) Name() string { return "plugin:" + r.name }

// Models implements backend.Backend.
func (r *RemoteBackend) Models(ctx context.Context) ([]backend.Model, error) {
	var out []backend.Model
	err := r.do(ctx, true, func(ctx context.Context, c pb.TrainerClient) error {
		res, err := c.Models(ctx, &pb.ModelsRequest{})
		if err != nil {
			return err
		}
		out = out[:0]
		for _, m := range res.Models {
			out = append(out, backend.Model{Name: m.Name, MaxContextLength: int(m.MaxContextLength)})
		}
		return nil
	})
	return out, err
}

func (r *RemoteBackend) create(ctx context.Context, cfg backend.ModelConfig, resume string) (backend.Trainer, error) {
	req := &pb.CreateModelRequest{BaseModel: cfg.BaseModel, Metadata: cfg.Metadata, ResumePath: resume,
		Lora: &pb.LoraConfig{Rank: int32(cfg.LoRA.Rank), Seed: cfg.LoRA.Seed, TrainUnembed: cfg.LoRA.TrainUnembed, TrainMlp: cfg.LoRA.TrainMLP, TrainAttn: cfg.LoRA.TrainAttn}}
	var id string
	err := r.do(ctx, false, func(ctx context.Context, c pb.TrainerClient) error {
		res, err := c.CreateModel(ctx, req)
		if err == nil {
			id = res.ModelId
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return &remoteTrainer{r: r, id: id}, nil
}

// CreateModel implements backend.Backend.
func (r *RemoteBackend) CreateModel(ctx context.Context, cfg backend.ModelConfig) (backend.Trainer, error) {
	return r.create(ctx, cfg, "")
}

// Resume implements backend.Backend.
func (r *RemoteBackend) Resume(ctx context.Context, cfg backend.ModelConfig, path string) (backend.Trainer, error) {
	if strings.TrimSpace(path) == "" {
		return nil, fmt.Errorf("resume: empty checkpoint path: %w", backend.ErrInvalid)
	}
	return r.create(ctx, cfg, path)
}

// Sampler implements backend.Backend.
func (r *RemoteBackend) Sampler(ctx context.Context, spec backend.SamplerSpec) (backend.Sampler, error) {
	var h *pb.SamplerHandle
	err := r.do(ctx, false, func(ctx context.Context, c pb.TrainerClient) (err error) {
		h, err = c.OpenSampler(ctx, &pb.OpenSamplerRequest{BaseModel: spec.BaseModel, Path: spec.Path})
		return err
	})
	if err != nil {
		return nil, err
	}
	return &remoteSampler{r: r, id: h.SamplerId, path: h.Path}, nil
}

// Close implements backend.Backend; the plugin process belongs to the host.
func (r *RemoteBackend) Close() error { return nil }

type remoteTrainer struct {
	r  *RemoteBackend
	id string
}

func (t *remoteTrainer) ModelID() string { return t.id }

func (t *remoteTrainer) ForwardBackward(ctx context.Context, data []backend.Datum, loss backend.LossFn, cfg map[string]float64) (*backend.ForwardBackwardResult, error) {
	req := &pb.ForwardBackwardRequest{ModelId: t.id, LossFn: string(loss), LossFnConfig: cfg}
	for _, d := range data {
		req.Data = append(req.Data, DatumToPB(d))
	}
	var res *backend.ForwardBackwardResult
	err := t.r.do(ctx, false, func(ctx context.Context, c pb.TrainerClient) error {
		out, err := c.ForwardBackward(ctx, req)
		if err != nil {
			return err
		}
		res = &backend.ForwardBackwardResult{Metrics: out.Metrics}
		for _, o := range out.Outputs {
			res.Outputs = append(res.Outputs, tensorsFromPB(o.Values))
		}
		return nil
	})
	if err == nil && len(res.Outputs) != len(data) {
		return nil, fmt.Errorf("trainer plugin %s: %d outputs for %d datums", t.r.name, len(res.Outputs), len(data))
	}
	return res, err
}

func (t *remoteTrainer) OptimStep(ctx context.Context, a backend.AdamParams) (*backend.OptimResult, error) {
	var res *backend.OptimResult
	err := t.r.do(ctx, false, func(ctx context.Context, c pb.TrainerClient) error {
		out, err := c.OptimStep(ctx, &pb.OptimStepRequest{ModelId: t.id, Adam: adamToPB(a)})
		if err == nil {
			res = &backend.OptimResult{Metrics: out.Metrics}
		}
		return err
	})
	return res, err
}

func (t *remoteTrainer) SaveForSampler(ctx context.Context, name string) (backend.Sampler, error) {
	var h *pb.SamplerHandle
	err := t.r.do(ctx, false, func(ctx context.Context, c pb.TrainerClient) (err error) {
		h, err = c.SaveForSampler(ctx, &pb.SaveForSamplerRequest{ModelId: t.id, Name: name})
		return err
	})
	if err != nil {
		return nil, err
	}
	return &remoteSampler{r: t.r, id: h.SamplerId, path: h.Path}, nil
}

func (t *remoteTrainer) SaveState(ctx context.Context, name string) (backend.Checkpoint, error) {
	var ck backend.Checkpoint
	err := t.r.do(ctx, false, func(ctx context.Context, c pb.TrainerClient) error {
		out, err := c.SaveState(ctx, &pb.SaveStateRequest{ModelId: t.id, Name: name})
		if err == nil {
			ck = checkpointFromPB(out)
		}
		return err
	})
	return ck, err
}

func (t *remoteTrainer) LoadState(ctx context.Context, path string, optimizer bool) error {
	return t.r.do(ctx, false, func(ctx context.Context, c pb.TrainerClient) error {
		_, err := c.LoadState(ctx, &pb.LoadStateRequest{ModelId: t.id, Path: path, Optimizer: optimizer})
		return err
	})
}

func (t *remoteTrainer) Checkpoints(ctx context.Context) ([]backend.Checkpoint, error) {
	var list []backend.Checkpoint
	err := t.r.do(ctx, true, func(ctx context.Context, c pb.TrainerClient) error {
		out, err := c.ListCheckpoints(ctx, &pb.ListCheckpointsRequest{ModelId: t.id})
		if err != nil {
			return err
		}
		list = list[:0]
		for _, ck := range out.Checkpoints {
			list = append(list, checkpointFromPB(ck))
		}
		return nil
	})
	return list, err
}

func (t *remoteTrainer) Close(ctx context.Context) error {
	return t.r.do(ctx, false, func(ctx context.Context, c pb.TrainerClient) error {
		_, err := c.CloseModel(ctx, &pb.CloseModelRequest{ModelId: t.id})
		return err
	})
}

type remoteSampler struct {
	r        *RemoteBackend
	id, path string
}

func (s *remoteSampler) ID() string   { return s.id }
func (s *remoteSampler) Path() string { return s.path }

func (s *remoteSampler) Sample(ctx context.Context, req backend.SampleRequest) (*backend.SampleResult, error) {
	var res *backend.SampleResult
	err := s.r.do(ctx, true, func(ctx context.Context, c pb.TrainerClient) error {
		out, err := c.Sample(ctx, &pb.SampleRequest{SamplerId: s.id, Prompt: req.Prompt, Params: samplingToPB(req.Params), NumSamples: int32(req.NumSamples), PromptLogprobs: req.PromptLogprobs})
		if err != nil {
			return err
		}
		res = &backend.SampleResult{PromptLogprobs: out.PromptLogprobs}
		for _, q := range out.Sequences {
			res.Sequences = append(res.Sequences, backend.Sequence{Tokens: q.Tokens, Logprobs: q.Logprobs, StopReason: q.StopReason})
		}
		return nil
	})
	return res, err
}
