package sdk

import (
	"context"
	"errors"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	epb "github.com/metaclaw-go/metaclaw/host/subplugin/sdk/embedderpb"
)

// EmbedderKind is the kind name of embedders: the go-plugin plugin-set key,
// the cookie suffix, and the middle of the executable name
// metaclaw-embedder-<name>.
const EmbedderKind = "embedder"

// EmbedderProtocolVersion is the application protocol version of the
// Embedder service (the second field of go-plugin's handshake line). It
// changes only with an incompatible change to embedder.proto.
const EmbedderProtocolVersion = 1

// EmbedderHandshake is the handshake of embedder plugins.
var EmbedderHandshake = Handshake(EmbedderKind, EmbedderProtocolVersion)

// EmbedderService is the full gRPC service name (see embedderpb/embedder.proto).
const EmbedderService = "metaclaw.subplugin.embedder.v1.Embedder"

// Embedder is what an embedder plugin implements. Its method set is the same
// as host/embed.Embedder, so any host embedder can be served as a plugin and
// any plugin can be used where the host wants an embed.Embedder.
//
// Embed returns one vector per text, all of the same length. Vectors should
// be unit length (the host normalises them anyway). Embed may be called
// concurrently.
type Embedder interface {
	Name() string
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Dimensioned is optionally implemented by an Embedder that knows its vector
// length; it is reported by Info and checked by the host.
type Dimensioned interface{ Dimensions() int }

// Batched is optionally implemented by an Embedder that accepts at most
// MaxBatch texts per call; the host splits larger batches.
type Batched interface{ MaxBatch() int }

// Versioned is optionally implemented to report the plugin's own version.
type Versioned interface{ Version() string }

// ServeEmbedder serves impl as an embedder plugin over gRPC and exits when
// the host ends it. Call it from main; it does not return.
func ServeEmbedder(impl Embedder) { ServeEmbedderWith(impl, ServeOptions{}) }

// ServeEmbedderWith is ServeEmbedder with options.
func ServeEmbedderWith(impl Embedder, o ServeOptions) {
	serve(EmbedderKind, EmbedderProtocolVersion, &EmbedderPlugin{Impl: impl}, o)
}

// EmbedderPlugin is the go-plugin Plugin of the embedder kind: on the plugin
// side it serves Impl, on the host side it dispenses an *EmbedderClient.
type EmbedderPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	Impl Embedder // plugin side only
}

// GRPCServer implements plugin.GRPCPlugin.
func (p *EmbedderPlugin) GRPCServer(_ *plugin.GRPCBroker, s *grpc.Server) error {
	if p.Impl == nil {
		return errors.New("sdk: EmbedderPlugin.Impl is nil")
	}
	epb.RegisterEmbedderServer(s, &embedderServer{impl: p.Impl})
	return nil
}

// GRPCClient implements plugin.GRPCPlugin.
func (p *EmbedderPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return NewEmbedderClient(c), nil
}

// embedderServer adapts an Embedder to EmbedderServer.
type embedderServer struct {
	epb.UnimplementedEmbedderServer
	impl Embedder
}

func (s *embedderServer) Info(context.Context, *epb.InfoRequest) (*epb.InfoResponse, error) {
	r := &epb.InfoResponse{Name: s.impl.Name()}
	if d, ok := s.impl.(Dimensioned); ok {
		r.Dimensions = int32(d.Dimensions())
	}
	if b, ok := s.impl.(Batched); ok {
		r.MaxBatch = int32(b.MaxBatch())
	}
	if v, ok := s.impl.(Versioned); ok {
		r.Version = v.Version()
	}
	return r, nil
}

func (s *embedderServer) Embed(ctx context.Context, in *epb.EmbedRequest) (*epb.EmbedResponse, error) {
	vecs, err := s.impl.Embed(ctx, in.Texts)
	if err != nil {
		return nil, toStatus(err)
	}
	if len(vecs) != len(in.Texts) {
		return nil, status.Errorf(codes.Internal, "embedder %s returned %d vectors for %d texts", s.impl.Name(), len(vecs), len(in.Texts))
	}
	out := &epb.EmbedResponse{Vectors: make([]*epb.Vector, len(vecs))}
	for i, v := range vecs {
		out.Vectors[i] = &epb.Vector{Values: v}
	}
	return out, nil
}

// toStatus keeps status errors and context errors recognisable across the wire.
func toStatus(err error) error {
	if _, ok := status.FromError(err); ok {
		return err
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return status.FromContextError(err).Err()
	}
	return status.Error(codes.Unknown, err.Error())
}

// EmbedderClient calls a plugin's Embedder service. The host wraps it with
// batching, validation, deadlines and restarts; use it directly only in tests.
type EmbedderClient struct {
	cc grpc.ClientConnInterface
	pb epb.EmbedderClient
}

// NewEmbedderClient returns a client on cc.
func NewEmbedderClient(cc grpc.ClientConnInterface) *EmbedderClient {
	return &EmbedderClient{cc: cc, pb: epb.NewEmbedderClient(cc)}
}

// Conn is the underlying connection.
func (c *EmbedderClient) Conn() grpc.ClientConnInterface { return c.cc }

// Info asks the plugin who it is.
func (c *EmbedderClient) Info(ctx context.Context) (*epb.InfoResponse, error) {
	return c.pb.Info(ctx, &epb.InfoRequest{})
}

// Embed sends one batch as is.
func (c *EmbedderClient) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out, err := c.pb.Embed(ctx, &epb.EmbedRequest{Texts: texts})
	if err != nil {
		return nil, err
	}
	vecs := make([][]float32, len(out.Vectors))
	for i, v := range out.Vectors {
		if v != nil {
			vecs[i] = v.Values
		}
	}
	return vecs, nil
}
