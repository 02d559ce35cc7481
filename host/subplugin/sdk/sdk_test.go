package sdk

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	_ "google.golang.org/grpc/encoding/proto" // the codec gRPC uses
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
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

// TestWireFormat pins the hand-written messages to the bytes any protobuf
// implementation of embedder.proto produces.
func TestWireFormat(t *testing.T) {
	var want []byte
	want = protowire.AppendTag(want, 1, protowire.BytesType)
	want = protowire.AppendString(want, "hello")
	want = protowire.AppendTag(want, 1, protowire.BytesType)
	want = protowire.AppendString(want, "wörld")
	if got := marshal(t, &EmbedRequest{Texts: []string{"hello", "wörld"}}); !bytes.Equal(got, want) {
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
	resp := &EmbedResponse{Vectors: []*Vector{{Values: []float32{0.6, -0.8}}, {}}}
	if got := marshal(t, resp); !bytes.Equal(got, want) {
		t.Errorf("EmbedResponse: %x, want %x", got, want)
	}
	var back EmbedResponse
	unmarshal(t, want, &back)
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
	back = EmbedResponse{}
	unmarshal(t, msg, &back)
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
	if got := marshal(t, &InfoResponse{Name: "x", Dimensions: 384, MaxBatch: 64, Version: "1.0"}); !bytes.Equal(got, want) {
		t.Errorf("InfoResponse: %x, want %x", got, want)
	}
	if got := marshal(t, &InfoRequest{}); len(got) != 0 {
		t.Errorf("InfoRequest: %x", got)
	}
}

// TestProtoFileMatches checks embedder.proto against the Go messages and
// the service description, field by field.
func TestProtoFileMatches(t *testing.T) {
	src, err := os.ReadFile("embedder.proto")
	if err != nil {
		t.Fatal(err)
	}
	text := regexp.MustCompile(`(?m)//.*$`).ReplaceAllString(string(src), "")
	pkg := regexp.MustCompile(`package ([\w.]+);`).FindStringSubmatch(text)
	svc := regexp.MustCompile(`service (\w+) \{([^}]*)\}`).FindStringSubmatch(text)
	if pkg == nil || svc == nil || pkg[1]+"."+svc[1] != EmbedderService {
		t.Fatalf("package/service in embedder.proto do not give %s", EmbedderService)
	}
	rpcs := regexp.MustCompile(`rpc (\w+)\((\w+)\) returns \((\w+)\);`).FindAllStringSubmatch(svc[2], -1)
	if len(rpcs) != len(embedderServiceDesc.Methods) {
		t.Fatalf("%d rpcs in the .proto, %d in Go", len(rpcs), len(embedderServiceDesc.Methods))
	}
	for i, r := range rpcs {
		if r[1] != embedderServiceDesc.Methods[i].MethodName || r[2] != r[1]+"Request" || r[3] != r[1]+"Response" {
			t.Errorf("rpc %v", r)
		}
	}
	messages := map[string]string{}
	for _, m := range regexp.MustCompile(`message (\w+) \{([^}]*)\}`).FindAllStringSubmatch(text, -1) {
		messages[m[1]] = m[2]
	}
	goMsgs := []any{InfoRequest{}, InfoResponse{}, EmbedRequest{}, EmbedResponse{}, Vector{}}
	if len(messages) != len(goMsgs) {
		t.Errorf("%d messages in the .proto, %d in Go", len(messages), len(goMsgs))
	}
	protoType := map[string]string{"string": "string", "int32": "int32", "[]string": "repeated string",
		"[]float32": "repeated float", "[]*sdk.Vector": "repeated Vector"}
	fieldRe := regexp.MustCompile(`((?:repeated )?\w+) (\w+) = (\d+);`)
	for _, m := range goMsgs {
		rt := reflect.TypeOf(m)
		body, ok := messages[rt.Name()]
		if !ok {
			t.Errorf("message %s missing from embedder.proto", rt.Name())
			continue
		}
		fields := fieldRe.FindAllStringSubmatch(body, -1)
		if len(fields) != rt.NumField() {
			t.Errorf("%s: %d fields in the .proto, %d in Go", rt.Name(), len(fields), rt.NumField())
			continue
		}
		for i, f := range fields {
			sf := rt.Field(i)
			tag := sf.Tag.Get("protobuf")
			parts := strings.Split(tag, ",")
			if parts[1] != f[3] || !strings.Contains(tag, "name="+f[2]+",") || protoType[sf.Type.String()] != f[1] {
				t.Errorf("%s.%s: Go %s %q, proto %q", rt.Name(), sf.Name, sf.Type, tag, f[0])
			}
		}
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
