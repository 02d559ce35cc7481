package sdk

import (
	"bytes"
	"context"
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // the codec gRPC uses
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	epb "github.com/metaclaw-go/metaclaw/host/subplugin/sdk/embedderpb"
)

func codec() encoding.CodecV2 { return encoding.GetCodecV2("proto") }

func marshal(t *testing.T, m any) []byte {
	t.Helper()
	b, err := codec().Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b.Materialize()
}

func unmarshal(t *testing.T, b []byte, m any) {
	t.Helper()
	if err := codec().Unmarshal(mem.BufferSlice{mem.SliceBuffer(b)}, m); err != nil {
		t.Fatal(err)
	}
}

// TestWireFormat pins the Embedder messages to the bytes any protobuf
// implementation of embedder.proto produces (a plugin in another language
// must interoperate byte for byte).
func TestWireFormat(t *testing.T) {
	var want []byte
	want = protowire.AppendTag(want, 1, protowire.BytesType)
	want = protowire.AppendString(want, "hello")
	want = protowire.AppendTag(want, 1, protowire.BytesType)
	want = protowire.AppendString(want, "wörld")
	if got := marshal(t, &epb.EmbedRequest{Texts: []string{"hello", "wörld"}}); !bytes.Equal(got, want) {
		t.Errorf("EmbedRequest: %x, want %x", got, want)
	}

	packed := func(vals ...float32) []byte {
		var p []byte
		for _, v := range vals {
			p = protowire.AppendFixed32(p, math.Float32bits(v))
		}
		var vec []byte
		vec = protowire.AppendTag(vec, 1, protowire.BytesType)
		return protowire.AppendBytes(vec, p)
	}
	want = nil
	want = protowire.AppendTag(want, 1, protowire.BytesType)
	want = protowire.AppendBytes(want, packed(0.6, -0.8))
	want = protowire.AppendTag(want, 1, protowire.BytesType)
	want = protowire.AppendBytes(want, nil)
	resp := &epb.EmbedResponse{Vectors: []*epb.Vector{{Values: []float32{0.6, -0.8}}, {}}}
	if got := marshal(t, resp); !bytes.Equal(got, want) {
		t.Errorf("EmbedResponse: %x, want %x", got, want)
	}
	back := &epb.EmbedResponse{}
	unmarshal(t, want, back)
	if len(back.Vectors) != 2 || !reflect.DeepEqual(back.Vectors[0].Values, []float32{0.6, -0.8}) || len(back.Vectors[1].Values) != 0 {
		t.Errorf("decoded %+v", back)
	}

	// A sender that does not pack repeated floats (allowed by protobuf)
	// is understood too.
	var unpacked []byte
	unpacked = protowire.AppendTag(unpacked, 1, protowire.Fixed32Type)
	unpacked = protowire.AppendFixed32(unpacked, math.Float32bits(1))
	unpacked = protowire.AppendTag(unpacked, 1, protowire.Fixed32Type)
	unpacked = protowire.AppendFixed32(unpacked, math.Float32bits(2))
	var msg []byte
	msg = protowire.AppendTag(msg, 1, protowire.BytesType)
	msg = protowire.AppendBytes(msg, unpacked)
	back = &epb.EmbedResponse{}
	unmarshal(t, msg, back)
	if len(back.Vectors) != 1 || !reflect.DeepEqual(back.Vectors[0].Values, []float32{1, 2}) {
		t.Errorf("unpacked: %+v", back)
	}

	want = nil
	want = protowire.AppendTag(want, 1, protowire.BytesType)
	want = protowire.AppendString(want, "x")
	want = protowire.AppendTag(want, 2, protowire.VarintType)
	want = protowire.AppendVarint(want, 384)
	want = protowire.AppendTag(want, 3, protowire.VarintType)
	want = protowire.AppendVarint(want, 64)
	want = protowire.AppendTag(want, 4, protowire.BytesType)
	want = protowire.AppendString(want, "1.0")
	if got := marshal(t, &epb.InfoResponse{Name: "x", Dimensions: 384, MaxBatch: 64, Version: "1.0"}); !bytes.Equal(got, want) {
		t.Errorf("InfoResponse: %x, want %x", got, want)
	}
	if got := marshal(t, &epb.InfoRequest{}); len(got) != 0 {
		t.Errorf("InfoRequest: %x", got)
	}
}

type fixed struct{}

func (fixed) Name() string    { return "fixed-2" }
func (fixed) Dimensions() int { return 2 }
func (fixed) MaxBatch() int   { return 8 }
func (fixed) Version() string { return "9.9" }
func (fixed) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		switch t {
		case "fail":
			return nil, errors.New("cannot embed fail")
		case "late":
			<-ctx.Done()
			return nil, ctx.Err()
		}
		out[i] = []float32{float32(len(t)), 1}
	}
	return out, nil
}

// TestInMemoryRoundTrip serves an Embedder through go-plugin's in-memory
// gRPC connection, the way plugin authors can unit-test theirs.
func TestInMemoryRoundTrip(t *testing.T) {
	client, server := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{EmbedderKind: &EmbedderPlugin{Impl: fixed{}}})
	defer client.Close()
	defer server.Stop()
	raw, err := client.Dispense(EmbedderKind)
	if err != nil {
		t.Fatal(err)
	}
	c := raw.(*EmbedderClient)
	ctx := context.Background()
	info, err := c.Info(ctx)
	if err != nil || info.Name != "fixed-2" || info.Dimensions != 2 || info.MaxBatch != 8 || info.Version != "9.9" {
		t.Fatalf("Info = %v, %v", info, err)
	}
	vecs, err := c.Embed(ctx, []string{"abc", ""})
	if err != nil || !reflect.DeepEqual(vecs, [][]float32{{3, 1}, {0, 1}}) {
		t.Fatalf("Embed = %v, %v", vecs, err)
	}
	_, err = c.Embed(ctx, []string{"fail"})
	if st := status.Convert(err); st.Code() != codes.Unknown || st.Message() != "cannot embed fail" {
		t.Errorf("error = %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.Embed(cctx, []string{"late"}); status.Code(err) != codes.Canceled {
		t.Errorf("cancelled: %v", err)
	}
}

func TestHandshakes(t *testing.T) {
	h := EmbedderHandshake
	if h.MagicCookieKey != CookieKey || h.MagicCookieValue != "metaclaw-subplugin-embedder" || h.ProtocolVersion != 1 {
		t.Errorf("%+v", h)
	}
	if Handshake("trainer", 1).MagicCookieValue == h.MagicCookieValue {
		t.Error("kinds must not share a cookie value")
	}
}
