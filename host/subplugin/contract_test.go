package subplugin

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"fmt"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	"google.golang.org/grpc/health/grpc_health_v1"

	"github.com/metaclaw-go/metaclaw/host/subplugin/hashembed"
	"github.com/metaclaw-go/metaclaw/host/subplugin/sdk"
	epb "github.com/metaclaw-go/metaclaw/host/subplugin/sdk/embedderpb"
)

// serveRaw is a plugin written only from docs/subplugins.md, without
// go-plugin's Serve: what a plugin in another language does. It proves the
// documented contract is enough.
func serveRaw() {
	// 1. The cookie.
	if os.Getenv(sdk.CookieKey) != sdk.CookieValue(sdk.EmbedderKind) {
		fmt.Fprintln(os.Stderr, "not launched by a MetaClaw host")
		os.Exit(1)
	}
	if !strings.Contains(","+os.Getenv("PLUGIN_PROTOCOL_VERSIONS")+",", ",1,") {
		fmt.Fprintln(os.Stderr, "host does not speak embedder protocol 1")
		os.Exit(1)
	}
	// 2. AutoMTLS: trust only the host's certificate; make our own.
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(os.Getenv("PLUGIN_CLIENT_CERT"))) {
		fmt.Fprintln(os.Stderr, "no PLUGIN_CLIENT_CERT")
		os.Exit(1)
	}
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "localhost"},
		DNSNames: []string{"localhost"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(24 * time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	creds := credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
		ClientAuth:   tls.RequireAndVerifyClientCert, ClientCAs: pool, MinVersion: tls.VersionTLS12,
	})
	// 3. A unix socket, the Embedder service, health "plugin" SERVING, and
	// go-plugin's controller for a prompt shutdown.
	dir, _ := os.MkdirTemp("", "raw-plugin-")
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "plugin.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		panic(err)
	}
	srv := grpc.NewServer(grpc.Creds(creds))
	epb.RegisterEmbedderServer(srv, rawEmbedder{e: hashembed.New(hashembed.DefaultDims)})
	hs := health.NewServer()
	hs.SetServingStatus("plugin", grpc_health_v1.HealthCheckResponse_SERVING)
	grpc_health_v1.RegisterHealthServer(srv, hs)
	srv.RegisterService(&controllerDesc, srv)
	// 4. The handshake line: the certificate in unpadded standard base64.
	fmt.Printf("1|1|unix|%s|grpc|%s\n", sock, base64.RawStdEncoding.EncodeToString(der))
	_ = srv.Serve(lis)
}

type rawEmbedder struct {
	epb.UnimplementedEmbedderServer
	e *hashembed.Embedder
}

func (r rawEmbedder) Info(context.Context, *epb.InfoRequest) (*epb.InfoResponse, error) {
	return &epb.InfoResponse{Name: r.e.Name(), Dimensions: int32(r.e.Dimensions()), MaxBatch: 100, Version: "raw"}, nil
}

func (r rawEmbedder) Embed(ctx context.Context, in *epb.EmbedRequest) (*epb.EmbedResponse, error) {
	vecs, err := r.e.Embed(ctx, in.Texts)
	if err != nil {
		return nil, err
	}
	out := &epb.EmbedResponse{}
	for _, v := range vecs {
		out.Vectors = append(out.Vectors, &epb.Vector{Values: v})
	}
	return out, nil
}

// The go-plugin controller service (package plugin; Shutdown(Empty) returns
// (Empty)), described by hand.
type emptyMsg struct{}

func (m *emptyMsg) Reset()       { *m = emptyMsg{} }
func (*emptyMsg) ProtoMessage()  {}
func (*emptyMsg) String() string { return "Empty{}" }

var controllerDesc = grpc.ServiceDesc{
	ServiceName: "plugin.GRPCController",
	HandlerType: (*any)(nil),
	Methods: []grpc.MethodDesc{{MethodName: "Shutdown", Handler: func(srv any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		if err := dec(new(emptyMsg)); err != nil {
			return nil, err
		}
		go srv.(*grpc.Server).Stop()
		return &emptyMsg{}, nil
	}}},
}

// TestContractWithoutGoPlugin launches serveRaw and uses it like any plugin.
func TestContractWithoutGoPlugin(t *testing.T) {
	h := newTestHost(t, testOptions(t))
	e, err := h.Embedder(context.Background(), helperSpec("raw"))
	if err != nil {
		t.Fatal(err)
	}
	checkEmbedderContract(t, e, hashembed.DefaultDims)
	big := make([]string, 250) // above its max_batch of 100
	for i := range big {
		big[i] = "text " + strconv.Itoa(i)
	}
	vecs, err := e.Embed(context.Background(), big)
	if err != nil || len(vecs) != 250 || !equalVec(vecs[249], hashembed.New(0).Vector(big[249])) {
		t.Fatalf("batched: %d vectors, %v", len(vecs), err)
	}
	pid := e.Instance().PID()
	start := time.Now()
	_ = h.Close()
	waitGone(t, pid)
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %s (controller Shutdown not honoured?)", d)
	}
}

// TestOrphanedPluginExits: when the host dies by SIGKILL (no cleanup at
// all), a plugin served by package sdk notices and exits by itself.
func TestOrphanedPluginExits(t *testing.T) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), helperEnv+"=host", "REF_PLUGIN="+refPlugin)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		s.Scan()
		line <- s.Text()
	}()
	var pid int
	select {
	case l := <-line:
		pid, err = strconv.Atoi(strings.TrimSpace(l))
		if err != nil {
			t.Fatalf("helper host said %q", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("helper host did not start its plugin")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	start := time.Now()
	waitGone(t, pid)
	t.Logf("orphaned plugin %d exited %s after its host was killed", pid, time.Since(start).Round(time.Millisecond))
}

// runHostHelper is a host process for TestOrphanedPluginExits.
func runHostHelper() {
	h := NewHost(Options{StartTimeout: 20 * time.Second})
	e, err := h.Embedder(context.Background(), Spec{Path: os.Getenv("REF_PLUGIN")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(e.Instance().PID())
	select {}
}
