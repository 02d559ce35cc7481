package subplugin

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-plugin"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"

	"github.com/metaclaw-go/metaclaw/host/subplugin/hashembed"
	"github.com/metaclaw-go/metaclaw/host/subplugin/sdk"
)

// refPlugin and refTrainer are the reference embedder and trainer plugins,
// built by TestMain.
var refPlugin, refTrainer string

// helperEnv makes the test binary itself act as a (misbehaving) plugin:
// the go-plugin helper-process pattern.
const helperEnv = "METACLAW_SUBPLUGIN_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		runHelper(mode)
		os.Exit(0)
	}
	dir, err := os.MkdirTemp("", "subplugin-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	refPlugin = filepath.Join(dir, ExecName("embedder", "ref"))
	refTrainer = filepath.Join(dir, ExecName("trainer", "ref"))
	for out, pkg := range map[string]string{refPlugin: "metaclaw-embedder-ref", refTrainer: "metaclaw-trainer-ref"} {
		if err := buildRef(out, pkg); err != nil {
			fmt.Fprintln(os.Stderr, "build reference plugin:", err)
			_ = os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	Shutdown()
	if kids := childProcesses(); len(kids) > 0 {
		fmt.Fprintf(os.Stderr, "FAIL: plugin processes left running: %v\n", kids)
		code = 1
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

func buildRef(out, pkg string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		goBin = filepath.Join(runtime.GOROOT(), "bin", "go")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "build", "-o", out, "github.com/metaclaw-go/metaclaw/cmd/"+pkg)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%v: %s", err, b)
	}
	return nil
}

// childProcesses lists live (non-zombie) children of this process, from /proc.
func childProcesses() []string {
	me := strconv.Itoa(os.Getpid())
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …; comm may contain spaces.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) >= 2 && f[1] == me && f[0] != "Z" {
			out = append(out, e.Name()+" "+s[:i+1])
		}
	}
	return out
}

// helperSpec launches the test binary as a plugin in the given mode.
func helperSpec(mode string) Spec {
	// GORACE: a -race binary otherwise sleeps 1 s before exiting.
	return Spec{Kind: "embedder", Name: "helper-" + mode, Path: os.Args[0], Env: []string{helperEnv + "=" + mode, "GORACE=atexit_sleep_ms=0"}}
}

// testLogger writes to the test log at debug level.
func testLogger(t testing.TB) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.DebugLevel)
}

// testOptions are fast policies for tests.
func testOptions(t testing.TB) Options {
	return Options{
		StartTimeout:   20 * time.Second,
		CallTimeout:    10 * time.Second,
		HealthInterval: -1,
		RestartBackoff: 20 * time.Millisecond,
		Logger:         testLogger(t),
	}
}

func newTestHost(t testing.TB, o Options) *Host {
	h := NewHost(o)
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// runHelper serves a plugin whose behaviour the mode picks.
func runHelper(mode string) {
	good := hashembed.New(16)
	switch mode {
	case "ok":
		sdk.ServeEmbedder(good)
	case "crash-on-embed":
		sdk.ServeEmbedder(funcEmbedder{name: "crasher", fn: func(context.Context, []string) ([][]float32, error) {
			os.Exit(3)
			return nil, nil
		}})
	case "hang-embed":
		sdk.ServeEmbedder(funcEmbedder{name: "hanger", fn: func(context.Context, []string) ([][]float32, error) {
			select {} // ignores its context, like a wedged backend
		}})
	case "error-embed":
		sdk.ServeEmbedder(funcEmbedder{name: "failer", fn: func(context.Context, []string) ([][]float32, error) {
			return nil, errors.New("backend quota exhausted")
		}})
	case "bad-count":
		sdk.ServeEmbedder(funcEmbedder{name: "short", fn: func(_ context.Context, t []string) ([][]float32, error) {
			return make([][]float32, len(t)+1), nil // the server adapter refuses this itself
		}})
	case "nan":
		sdk.ServeEmbedder(funcEmbedder{name: "nan", fn: func(_ context.Context, t []string) ([][]float32, error) {
			out := make([][]float32, len(t))
			for i := range out {
				out[i] = []float32{float32(math.NaN()), 1}
			}
			return out, nil
		}})
	case "empty-name":
		sdk.ServeEmbedder(funcEmbedder{name: "", fn: good.Embed})
	case "wrong-version":
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig: sdk.Handshake(sdk.EmbedderKind, 99),
			Plugins:         plugin.PluginSet{sdk.EmbedderKind: &sdk.EmbedderPlugin{Impl: good}},
			GRPCServer:      plugin.DefaultGRPCServer,
		})
	case "other-kind":
		// A plugin of another kind: it expects the trainer cookie.
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig: sdk.Handshake("trainer", 1),
			Plugins:         plugin.PluginSet{"trainer": &sdk.EmbedderPlugin{Impl: good}},
			GRPCServer:      plugin.DefaultGRPCServer,
		})
	case "no-service":
		// Right handshake, but no Embedder service behind it.
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig: sdk.EmbedderHandshake,
			Plugins:         plugin.PluginSet{sdk.EmbedderKind: emptyGRPCPlugin{}},
			GRPCServer:      plugin.DefaultGRPCServer,
		})
	case "no-mtls":
		// Ignores the host's certificate: serves without TLS.
		_ = os.Unsetenv("PLUGIN_CLIENT_CERT")
		sdk.ServeEmbedder(good)
	case "netrpc":
		plugin.Serve(&plugin.ServeConfig{
			HandshakeConfig: sdk.EmbedderHandshake,
			Plugins:         plugin.PluginSet{sdk.EmbedderKind: &sdk.EmbedderPlugin{Impl: good}},
		})
	case "slow-start":
		time.Sleep(time.Minute)
	case "judge":
		sdk.ServeJudge(lengthJudge{})
	case "judge-bad-score":
		sdk.ServeJudge(lengthJudge{bad: true})
	case "raw":
		serveRaw()
	case "host":
		runHostHelper()
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		os.Exit(2)
	}
}

type funcEmbedder struct {
	name string
	fn   func(context.Context, []string) ([][]float32, error)
}

func (f funcEmbedder) Name() string { return f.name }
func (f funcEmbedder) Embed(ctx context.Context, t []string) ([][]float32, error) {
	return f.fn(ctx, t)
}

type emptyGRPCPlugin struct{ plugin.NetRPCUnsupportedPlugin }

func (emptyGRPCPlugin) GRPCServer(*plugin.GRPCBroker, *grpc.Server) error { return nil }
func (emptyGRPCPlugin) GRPCClient(context.Context, *plugin.GRPCBroker, *grpc.ClientConn) (any, error) {
	return nil, nil
}
