package sdk

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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

// EmbedderService is the full gRPC service name (see embedder.proto).
const EmbedderService = "metaclaw.subplugin.embedder.v1.Embedder"

const (
	methodInfo  = "/" + EmbedderService + "/Info"
	methodEmbed = "/" + EmbedderService + "/Embed"
)

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
	RegisterEmbedderServer(s, &embedderServer{impl: p.Impl})
	return nil
}

// GRPCClient implements plugin.GRPCPlugin.
func (p *EmbedderPlugin) GRPCClient(_ context.Context, _ *plugin.GRPCBroker, c *grpc.ClientConn) (any, error) {
	return NewEmbedderClient(c), nil
}

// EmbedderServer is the gRPC server interface of the Embedder service, for
// plugins that want to answer the raw messages themselves.
type EmbedderServer interface {
	Info(context.Context, *InfoRequest) (*InfoResponse, error)
	Embed(context.Context, *EmbedRequest) (*EmbedResponse, error)
}

// RegisterEmbedderServer registers srv on s.
func RegisterEmbedderServer(s grpc.ServiceRegistrar, srv EmbedderServer) {
	s.RegisterService(&embedderServiceDesc, srv)
}

var embedderServiceDesc = grpc.ServiceDesc{
	ServiceName: EmbedderService,
	HandlerType: (*EmbedderServer)(nil),
	Methods: []grpc.MethodDesc{
		{MethodName: "Info", Handler: infoHandler},
		{MethodName: "Embed", Handler: embedHandler},
	},
	Streams:  []grpc.StreamDesc{},
	Metadata: "embedder.proto",
}

func infoHandler(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
	in := new(InfoRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if ic == nil {
		return srv.(EmbedderServer).Info(ctx, in)
	}
	return ic(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: methodInfo}, func(ctx context.Context, req any) (any, error) {
		return srv.(EmbedderServer).Info(ctx, req.(*InfoRequest))
	})
}

func embedHandler(srv any, ctx context.Context, dec func(any) error, ic grpc.UnaryServerInterceptor) (any, error) {
	in := new(EmbedRequest)
	if err := dec(in); err != nil {
		return nil, err
	}
	if ic == nil {
		return srv.(EmbedderServer).Embed(ctx, in)
	}
	return ic(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: methodEmbed}, func(ctx context.Context, req any) (any, error) {
		return srv.(EmbedderServer).Embed(ctx, req.(*EmbedRequest))
	})
}

// embedderServer adapts an Embedder to EmbedderServer.
type embedderServer struct{ impl Embedder }

func (s *embedderServer) Info(context.Context, *InfoRequest) (*InfoResponse, error) {
	r := &InfoResponse{Name: s.impl.Name()}
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

func (s *embedderServer) Embed(ctx context.Context, in *EmbedRequest) (*EmbedResponse, error) {
	vecs, err := s.impl.Embed(ctx, in.Texts)
	if err != nil {
		return nil, toStatus(err)
	}
	if len(vecs) != len(in.Texts) {
		return nil, status.Errorf(codes.Internal, "embedder %s returned %d vectors for %d texts", s.impl.Name(), len(vecs), len(in.Texts))
	}
	out := &EmbedResponse{Vectors: make([]*Vector, len(vecs))}
	for i, v := range vecs {
		out.Vectors[i] = &Vector{Values: v}
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
type EmbedderClient struct{ cc grpc.ClientConnInterface }

// NewEmbedderClient returns a client on cc.
func NewEmbedderClient(cc grpc.ClientConnInterface) *EmbedderClient { return &EmbedderClient{cc: cc} }

// Conn is the underlying connection.
func (c *EmbedderClient) Conn() grpc.ClientConnInterface { return c.cc }

// Info asks the plugin who it is.
func (c *EmbedderClient) Info(ctx context.Context) (*InfoResponse, error) {
	out := new(InfoResponse)
	if err := c.cc.Invoke(ctx, methodInfo, &InfoRequest{}, out); err != nil {
		return nil, err
	}
	return out, nil
}

// Embed sends one batch as is.
func (c *EmbedderClient) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := new(EmbedResponse)
	if err := c.cc.Invoke(ctx, methodEmbed, &EmbedRequest{Texts: texts}, out); err != nil {
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

// The messages of embedder.proto, in protobuf's struct-tag form (the
// encoding is derived from the tags; see the package comment).

// InfoRequest is empty.
type InfoRequest struct{}

// InfoResponse describes the embedder.
type InfoResponse struct {
	Name       string `protobuf:"bytes,1,opt,name=name,proto3"`
	Dimensions int32  `protobuf:"varint,2,opt,name=dimensions,proto3"`
	MaxBatch   int32  `protobuf:"varint,3,opt,name=max_batch,json=maxBatch,proto3"`
	Version    string `protobuf:"bytes,4,opt,name=version,proto3"`
}

// EmbedRequest is one batch of texts.
type EmbedRequest struct {
	Texts []string `protobuf:"bytes,1,rep,name=texts,proto3"`
}

// EmbedResponse carries one vector per text, in order.
type EmbedResponse struct {
	Vectors []*Vector `protobuf:"bytes,1,rep,name=vectors,proto3"`
}

// Vector is one embedding.
type Vector struct {
	Values []float32 `protobuf:"fixed32,1,rep,packed,name=values,proto3"`
}

func (m *InfoRequest) Reset()      { *m = InfoRequest{} }
func (*InfoRequest) ProtoMessage() {}
func (m *InfoRequest) String() string {
	return "InfoRequest{}"
}
func (m *InfoResponse) Reset()      { *m = InfoResponse{} }
func (*InfoResponse) ProtoMessage() {}
func (m *InfoResponse) String() string {
	return fmt.Sprintf("InfoResponse{name:%q dimensions:%d max_batch:%d version:%q}", m.Name, m.Dimensions, m.MaxBatch, m.Version)
}
func (m *EmbedRequest) Reset()      { *m = EmbedRequest{} }
func (*EmbedRequest) ProtoMessage() {}
func (m *EmbedRequest) String() string {
	return fmt.Sprintf("EmbedRequest{%d texts}", len(m.Texts))
}
func (m *EmbedResponse) Reset()      { *m = EmbedResponse{} }
func (*EmbedResponse) ProtoMessage() {}
func (m *EmbedResponse) String() string {
	return fmt.Sprintf("EmbedResponse{%d vectors}", len(m.Vectors))
}
func (m *Vector) Reset()      { *m = Vector{} }
func (*Vector) ProtoMessage() {}
func (m *Vector) String() string {
	return fmt.Sprintf("Vector{%d values}", len(m.Values))
}
