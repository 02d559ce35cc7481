package subplugin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"math"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health/grpc_health_v1"

	"github.com/metaclaw-go/metaclaw/host/embed"
	"github.com/metaclaw-go/metaclaw/host/subplugin/hashembed"
)

var (
	similarA  = "How do I deploy the web service to the staging cluster?"
	similarB  = "Deploying the web service on the staging cluster"
	unrelated = "My grandmother's apple pie recipe uses cinnamon and nutmeg."
)

func openRef(t testing.TB, o Options) (embed.Embedder, *Host) {
	t.Helper()
	h := newTestHost(t, o)
	e, err := h.Embedder(context.Background(), Spec{Name: "ref", Path: refPlugin})
	if err != nil {
		t.Fatal(err)
	}
	return e, h
}

// checkEmbedderContract is what every embedder, in process or not, must do.
func checkEmbedderContract(t *testing.T, e embed.Embedder, dims int) [][]float32 {
	t.Helper()
	ctx := context.Background()
	texts := []string{similarA, similarB, unrelated, "", "ünïcödé 東京 tokyo"}
	v1, err := e.Embed(ctx, texts)
	if err != nil {
		t.Fatalf("Embed: %v", err)
	}
	if len(v1) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(v1), len(texts))
	}
	for i, v := range v1 {
		if len(v) != dims {
			t.Fatalf("vector %d: %d dims, want %d", i, len(v), dims)
		}
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		if texts[i] == "" {
			if n != 0 {
				t.Errorf("empty text: norm² %v, want 0", n)
			}
			continue
		}
		if math.Abs(n-1) > 1e-5 {
			t.Errorf("vector %d: norm² %v, want 1", i, n)
		}
	}
	// Deterministic: same input, same bits; batch composition does not matter.
	v2, err := e.Embed(ctx, []string{unrelated, similarA})
	if err != nil {
		t.Fatal(err)
	}
	if !equalVec(v2[0], v1[2]) || !equalVec(v2[1], v1[0]) {
		t.Error("vectors differ between calls")
	}
	simAB, simAU := embed.Dot(v1[0], v1[1]), embed.Dot(v1[0], v1[2])
	if simAB <= simAU+0.2 {
		t.Errorf("similar texts %.3f, unrelated %.3f: want a clear gap", simAB, simAU)
	}
	if vs, err := e.Embed(ctx, nil); err != nil || len(vs) != 0 {
		t.Errorf("Embed(nil) = %v, %v", vs, err)
	}
	if e.Name() == "" {
		t.Error("empty Name")
	}
	return v1
}

func equalVec(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// TestEmbeddersSameInterface runs the same contract over the in-process
// built-in, the reference plugin over gRPC with AutoMTLS, and the host's HTTP
// embedder against a fake /embeddings endpoint.
func TestEmbeddersSameInterface(t *testing.T) {
	builtin, closer, err := OpenEmbedder(context.Background(), EmbedderSpec{Use: "hashing"}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	plug, _ := openRef(t, testOptions(t))

	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct{ Input []string }
		_ = json.NewDecoder(r.Body).Decode(&req)
		vecs, _ := hashembed.New(hashembed.DefaultDims).Embed(r.Context(), req.Input)
		type item struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		}
		var resp struct {
			Data []item `json:"data"`
		}
		for i, v := range vecs {
			resp.Data = append(resp.Data, item{i, v})
		}
		_ = json.NewEncoder(w).Encode(resp)
	}))
	defer fake.Close()

	cases := []struct {
		name string
		e    embed.Embedder
	}{
		{"builtin-hashing", builtin},
		{"plugin-ref-grpc", plug},
		{"http", &embed.HTTP{Base: fake.URL, Model: "fake"}},
	}
	results := map[string][][]float32{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			results[c.name] = checkEmbedderContract(t, c.e, hashembed.DefaultDims)
		})
	}
	// Same algorithm in process and over gRPC: identical vectors and name,
	// so stored vectors survive a switch between the two.
	a, b := results["builtin-hashing"], results["plugin-ref-grpc"]
	for i := range a {
		if !equalVec(a[i], b[i]) {
			t.Fatalf("vector %d differs between the built-in and the plugin", i)
		}
	}
	if builtin.Name() != plug.Name() {
		t.Errorf("names differ: %q vs %q", builtin.Name(), plug.Name())
	}
}

func TestReferencePluginStatusAndLargeBatch(t *testing.T) {
	e, h := openRef(t, testOptions(t))
	pe := e.(*PluginEmbedder)
	st := h.Status()
	if len(st) != 1 {
		t.Fatalf("status: %+v", st)
	}
	s := st[0]
	if s.Kind != "embedder" || s.Name != "ref" || s.Path != refPlugin || s.PID <= 0 || s.State != StateRunning || s.Restarts != 0 || s.Identity.Name != "hashing-ngram-v1-384" {
		t.Errorf("status: %+v", s)
	}
	if pe.Dimensions() != 384 {
		t.Errorf("Dimensions = %d", pe.Dimensions())
	}
	found := false
	for _, a := range AllStatus() {
		found = found || a.PID == s.PID
	}
	if !found {
		t.Error("AllStatus misses the plugin")
	}
	// 3 MiB of text: split into several calls, order kept.
	big := make([]string, 3000)
	for i := range big {
		big[i] = strings.Repeat("word"+string(rune('a'+i%26))+" ", 200)
	}
	vecs, err := e.Embed(context.Background(), big)
	if err != nil {
		t.Fatal(err)
	}
	want := hashembed.New(384).Vector(big[2999])
	if len(vecs) != 3000 || !equalVec(vecs[2999], want) {
		t.Error("large batch: wrong vectors")
	}
	pid := s.PID
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
	if len(h.Status()) != 0 {
		t.Error("status after Close")
	}
	if _, err := e.Embed(context.Background(), []string{"x"}); err == nil {
		t.Error("Embed after Close succeeded")
	}
}

// TestAutoMTLSEnforced: nothing but the host that launched the plugin can
// talk to its socket — not a plain-text client, not a TLS client with its own
// certificate.
func TestAutoMTLSEnforced(t *testing.T) {
	e, _ := openRef(t, testOptions(t))
	in := e.(*PluginEmbedder).Instance()
	in.mu.Lock()
	rc := in.client.ReattachConfig()
	in.mu.Unlock()
	if rc == nil || rc.Addr.Network() != "unix" {
		t.Fatalf("reattach config: %+v", rc)
	}
	dial := func(creds credentials.TransportCredentials) error {
		conn, err := grpc.NewClient("passthrough:///plugin", grpc.WithTransportCredentials(creds),
			grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", rc.Addr.String())
			}))
		if err != nil {
			return err
		}
		defer conn.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err = grpc_health_v1.NewHealthClient(conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: "plugin"})
		return err
	}
	if err := dial(insecure.NewCredentials()); err == nil {
		t.Error("a plain-text client reached the plugin")
	}
	if err := dial(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{selfSigned(t)}, InsecureSkipVerify: true})); err == nil {
		t.Error("a TLS client with a foreign certificate reached the plugin")
	}
	// The host's own connection still works.
	if _, err := e.Embed(context.Background(), []string{"still fine"}); err != nil {
		t.Fatal(err)
	}
}

func selfSigned(t *testing.T) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestOpenEmbedderBuiltinStatus(t *testing.T) {
	e, closer, err := OpenEmbedder(context.Background(), EmbedderSpec{}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if e.Name() != "hashing-ngram-v1-384" {
		t.Errorf("default embedder %q", e.Name())
	}
	found := false
	for _, s := range AllStatus() {
		if s.Builtin && s.Name == "hashing" && s.State == StateRunning && s.Path == "builtin" {
			found = true
		}
	}
	if !found {
		t.Errorf("builtin missing from AllStatus: %+v", AllStatus())
	}
	_ = closer.Close()
	for _, s := range AllStatus() {
		if s.Builtin && s.Name == "hashing" {
			t.Error("builtin still listed after Close")
		}
	}
}

func TestPluginErrorsAreClear(t *testing.T) {
	ctx := context.Background()
	h := newTestHost(t, testOptions(t))
	cases := map[string]string{
		"error-embed": `embedder plugin "helper-error-embed": backend quota exhausted (Unknown)`,
		"bad-count":   "returned 4 vectors for 3 texts",
		"nan":         "contains NaN or Inf",
	}
	for mode, want := range cases {
		t.Run(mode, func(t *testing.T) {
			e, err := h.Embedder(ctx, helperSpec(mode))
			if err != nil {
				t.Fatal(err)
			}
			_, err = e.Embed(ctx, []string{"a", "b", "c"})
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Fatalf("err = %v, want it to contain %q", err, want)
			}
			if s := e.Instance().Status(); s.State != StateRunning || s.Restarts != 0 {
				t.Errorf("a plugin error must not restart the plugin: %+v", s)
			}
		})
	}
}

func TestSplitBatches(t *testing.T) {
	in := []string{"aa", "bb", "cc", "dddddd", "e"}
	got := splitBatches(in, 2, 5)
	want := [][]string{{"aa", "bb"}, {"cc"}, {"dddddd"}, {"e"}}
	if len(got) != len(want) {
		t.Fatalf("%q", got)
	}
	for i := range got {
		if strings.Join(got[i], ",") != strings.Join(want[i], ",") {
			t.Fatalf("%q, want %q", got, want)
		}
	}
	if got := splitBatches(in, 0, 1<<20); len(got) != 1 || len(got[0]) != 5 {
		t.Fatalf("%q", got)
	}
}
