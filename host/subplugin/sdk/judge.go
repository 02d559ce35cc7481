package sdk

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/metaclaw-go/metaclaw/host/rl/judge"
	jpb "github.com/metaclaw-go/metaclaw/host/subplugin/sdk/judgepb"
)

// JudgeKind is the kind name of judges (executables metaclaw-judge-<name>).
const JudgeKind = "judge"

// JudgeProtocolVersion changes only with an incompatible judge.proto.
const JudgeProtocolVersion = 1

// JudgeHandshake is the handshake of judge plugins.
var JudgeHandshake = Handshake(JudgeKind, JudgeProtocolVersion)

// JudgeService is the full gRPC service name.
const JudgeService = "metaclaw.subplugin.judge.v1.Judge"

// ServeJudge serves impl as a judge plugin. It does not return.
func ServeJudge(impl judge.Judge) { ServeJudgeWith(impl, ServeOptions{}) }

// ServeJudgeWith is ServeJudge with options.
func ServeJudgeWith(impl judge.Judge, o ServeOptions) {
	serve(JudgeKind, JudgeProtocolVersion, &JudgePlugin{Impl: impl}, o)
}

// JudgePlugin is the go-plugin Plugin of the judge kind.
type JudgePlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl judge.Judge // plugin side only
}

// GRPCServer implements plugin.GRPCPlugin.
func (p *JudgePlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return errors.New("sdk: JudgePlugin.Impl is nil")
	}
	jpb.RegisterJudgeServer(s, &judgeServer{impl: p.Impl})
	return nil
}

// GRPCClient implements plugin.GRPCPlugin.
func (p *JudgePlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return jpb.NewJudgeClient(c), nil
}

type judgeServer struct {
	jpb.UnimplementedJudgeServer
	impl judge.Judge
}

func (s *judgeServer) Info(context.Context, *jpb.InfoRequest) (*jpb.InfoResponse, error) {
	r := &jpb.InfoResponse{Name: s.impl.Name()}
	if v, ok := s.impl.(Versioned); ok {
		r.Version = v.Version()
	}
	return r, nil
}

func (s *judgeServer) Score(ctx context.Context, in *jpb.ScoreRequest) (*jpb.ScoreResponse, error) {
	v, err := s.impl.Score(ctx, judge.Request{Instruction: in.Instruction, Response: in.Response, NextState: in.NextState,
		Votes: int(in.Votes), SessionID: in.SessionId, Turn: in.Turn})
	if err != nil {
		return nil, toStatus(err)
	}
	return &jpb.ScoreResponse{Score: v.Score, Votes: v.Votes, Text: v.Text}, nil
}

// ScoreRequestToPB converts a judge request.
func ScoreRequestToPB(r judge.Request) *jpb.ScoreRequest {
	return &jpb.ScoreRequest{Instruction: r.Instruction, Response: r.Response, NextState: r.NextState, Votes: int32(r.Votes), SessionId: r.SessionID, Turn: r.Turn}
}
