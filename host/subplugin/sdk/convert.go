package sdk

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	pb "github.com/metaclaw-go/metaclaw/host/subplugin/sdk/trainerpb"
)

// Conversions between the backend package's types and the Trainer
// service's messages, used by both sides.

func tensorToPB(t backend.TensorData) *pb.Tensor {
	out := &pb.Tensor{Dtype: string(t.DType), Ints: t.Ints, Floats: t.Floats}
	for _, d := range t.Shape {
		out.Shape = append(out.Shape, int64(d))
	}
	return out
}

func tensorFromPB(t *pb.Tensor) backend.TensorData {
	if t == nil {
		return backend.TensorData{}
	}
	out := backend.TensorData{DType: backend.DType(t.Dtype), Ints: t.Ints, Floats: t.Floats}
	for _, d := range t.Shape {
		out.Shape = append(out.Shape, int(d))
	}
	return out
}

func tensorsToPB(m map[string]backend.TensorData) map[string]*pb.Tensor {
	out := make(map[string]*pb.Tensor, len(m))
	for k, v := range m {
		out[k] = tensorToPB(v)
	}
	return out
}

func tensorsFromPB(m map[string]*pb.Tensor) map[string]backend.TensorData {
	out := make(map[string]backend.TensorData, len(m))
	for k, v := range m {
		out[k] = tensorFromPB(v)
	}
	return out
}

// DatumToPB converts a datum (its model input flattened to one chunk).
func DatumToPB(d backend.Datum) *pb.Datum {
	return &pb.Datum{Tokens: d.ModelInput.Flat(), LossFnInputs: tensorsToPB(d.LossFnInputs)}
}

// DatumFromPB converts a datum back.
func DatumFromPB(d *pb.Datum) backend.Datum {
	return backend.Datum{ModelInput: backend.Tokens(d.Tokens), LossFnInputs: tensorsFromPB(d.LossFnInputs)}
}

func adamToPB(a backend.AdamParams) *pb.AdamParams {
	return &pb.AdamParams{LearningRate: a.LearningRate, Beta1: a.Beta1, Beta2: a.Beta2, Eps: a.Eps, WeightDecay: a.WeightDecay, GradClipNorm: a.GradClipNorm}
}

func adamFromPB(a *pb.AdamParams) backend.AdamParams {
	if a == nil {
		return backend.AdamParams{}
	}
	return backend.AdamParams{LearningRate: a.LearningRate, Beta1: a.Beta1, Beta2: a.Beta2, Eps: a.Eps, WeightDecay: a.WeightDecay, GradClipNorm: a.GradClipNorm}
}

func checkpointToPB(c backend.Checkpoint) *pb.Checkpoint {
	out := &pb.Checkpoint{Id: c.ID, Kind: c.Kind, Path: c.Path, SizeBytes: c.SizeBytes}
	if !c.Time.IsZero() {
		out.TimeUnixMs = c.Time.UnixMilli()
	}
	return out
}

func checkpointFromPB(c *pb.Checkpoint) backend.Checkpoint {
	out := backend.Checkpoint{ID: c.GetId(), Kind: c.GetKind(), Path: c.GetPath(), SizeBytes: c.GetSizeBytes()}
	if c.GetTimeUnixMs() != 0 {
		out.Time = time.UnixMilli(c.GetTimeUnixMs())
	}
	return out
}

func samplingToPB(p backend.SamplingParams) *pb.SamplingParams {
	return &pb.SamplingParams{MaxTokens: int32(p.MaxTokens), Seed: p.Seed, Temperature: p.Temperature, TopK: int32(p.TopK), TopP: p.TopP, Stop: p.Stop, StopTokens: p.StopTokens}
}

func samplingFromPB(p *pb.SamplingParams) backend.SamplingParams {
	if p == nil {
		return backend.DefaultSampling(0)
	}
	return backend.SamplingParams{MaxTokens: int(p.MaxTokens), Seed: p.Seed, Temperature: p.Temperature, TopK: int(p.TopK), TopP: p.TopP, Stop: p.Stop, StopTokens: p.StopTokens}
}

// statusOf carries backend error kinds across gRPC: codes that the host
// maps back to the same sentinels (see errorFromStatus).
func statusOf(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	code := codes.Unknown
	switch {
	case errors.Is(err, backend.ErrNotFound):
		code = codes.NotFound
	case errors.Is(err, backend.ErrConflict):
		code = codes.AlreadyExists
	case errors.Is(err, backend.ErrInvalid):
		code = codes.InvalidArgument
	case errors.Is(err, backend.ErrUnauthorized):
		code = codes.PermissionDenied
	case errors.Is(err, backend.ErrUnavailable):
		// Not Unavailable: the host reads that as a broken connection.
		code = codes.Aborted
	default:
		return toStatus(err)
	}
	return status.Error(code, err.Error())
}

// ErrorFromStatus maps a Trainer plugin's gRPC error back to the backend
// sentinel errors (nil when err carries no such status).
func ErrorFromStatus(err error) error {
	st, ok := status.FromError(err)
	if !ok {
		return nil
	}
	var kind error
	switch st.Code() {
	case codes.NotFound:
		kind = backend.ErrNotFound
	case codes.AlreadyExists:
		kind = backend.ErrConflict
	case codes.InvalidArgument:
		kind = backend.ErrInvalid
	case codes.PermissionDenied, codes.Unauthenticated:
		kind = backend.ErrUnauthorized
	case codes.Aborted:
		kind = backend.ErrUnavailable
	default:
		return nil
	}
	return fmt.Errorf("%s (%w)", st.Message(), kind)
}
