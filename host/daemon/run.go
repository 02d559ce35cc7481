package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gofrs/flock"
	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/dashboard"
	"github.com/metaclaw-go/metaclaw/host/logging"
	"github.com/metaclaw-go/metaclaw/host/onoff"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	rlruntime "github.com/metaclaw-go/metaclaw/host/rl/runtime"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/rpc"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/host/subplugin"
	"github.com/metaclaw-go/metaclaw/host/tokens"
	"github.com/metaclaw-go/metaclaw/host/version"
)

// NotConfiguredMessage is what LLM requests get until an upstream is set.
const NotConfiguredMessage = "MetaClaw has no upstream LLM configured. Run `metaclaw setup`, or set one directly: " +
	"`metaclaw config set llm.api_base https://api.openai.com/v1` and `metaclaw config set llm.api_key <key>` " +
	"(or export OPENAI_API_KEY / ANTHROPIC_API_KEY before `metaclaw start`)."

// ShutdownGrace bounds how long in-flight requests may take to finish on stop.
const ShutdownGrace = 60 * time.Second

// RunOptions tune the foreground host.
type RunOptions struct {
	Detached bool // started by Start: stderr is a file, logs go to the log file only
	// Ready, if set, receives the host's info once it serves.
	Ready func(Info)
	// Hooks lets callers add providers or job handlers before serving.
	Hooks func(*core.Core)
}

// AlreadyRunningError says another host holds the state dir.
type AlreadyRunningError struct{ Info Info }

func (e *AlreadyRunningError) Error() string {
	if e.Info.PID == 0 {
		return "metaclaw is already running for this state dir (starting up)"
	}
	return fmt.Sprintf("metaclaw is already running (pid %d, listening on %s)", e.Info.PID, e.Info.Addr)
}

// Run serves in the foreground until ctx is cancelled or SIGTERM/SIGINT
// arrives, then shuts down gracefully: in-flight requests finish, queued
// turns are persisted, the pid file and lock are released.
func Run(ctx context.Context, cfg *config.Config, o RunOptions) error {
	// Caught from the first instant: a stop sent as soon as the host
	// answers (or while it starts) must shut down cleanly, not kill it with
	// the default action before the handler exists.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sig)
	p := PathsFor(cfg.Home)
	lock, err := lockStateDir(cfg.Home, p)
	if err != nil {
		return err
	}
	defer lock.Unlock()
	defer subplugin.Shutdown() // no sub-plugin process outlives the host

	log, logCloser, err := startLogging(cfg, p, o.Detached)
	if err != nil {
		return err
	}
	defer logCloser.Close()

	st, err := store.OpenSQLite(ctx, p.DB)
	if err != nil {
		return err
	}
	defer st.Close()

	SetProcs(cfg.Runtime.BackgroundNice, log)
	SetGC(cfg.Runtime.GCPercent, log)
	c := core.New(core.Options{
		Store:        st,
		Log:          log.With().Str("part", "core").Logger(),
		SessionIdle:  time.Duration(cfg.Memory.SessionIdleMinutes) * time.Minute,
		MaxBodyBytes: cfg.Store.MaxBodyKB << 10,
		SpoolDir:     p.TurnSpool,
		// Background jobs yield the CPUs to requests (docs/performance.md).
		BackgroundNice: cfg.Runtime.BackgroundNice,
	})
	routes, learning := setupLearning(ctx, cfg, st, c, log)
	defer learning.Close()
	training := newTraining(cfg, st, log)
	rlOpts := rlruntime.Options{Config: cfg, Store: st, Core: c, Log: log}
	training.runtimeOptions(&rlOpts)
	rl := rlruntime.Start(ctx, rlOpts)
	defer rl.Close() // after the core: scoring stops, the backend session ends
	training.start(ctx, rl)
	defer training.stop() // before the runtime closes the backend
	if o.Hooks != nil {
		o.Hooks(c)
	}

	sched := startScheduler(ctx, cfg, st, log, training.trainer())
	defer sched.stop()

	h := &host{cfg: cfg, st: st, c: c, log: log, rl: rl, training: training, sched: sched, rpcStop: make(chan struct{}, 1)}
	started := time.Now()
	popts, rpcSrv := h.proxyOptions(routes)
	px, err := proxy.New(popts)
	if err != nil {
		c.Close()
		return err
	}
	ln, err := h.listen()
	if err != nil {
		c.Close()
		return err
	}
	h.info = Info{PID: os.Getpid(), Addr: ln.Addr().String(), Mode: cfg.Mode, Version: version.Version, StartedAt: started}
	if err := writeInfo(p.Info, h.info); err != nil {
		ln.Close()
		c.Close()
		return err
	}
	defer os.Remove(p.Info)

	go tokens.Warm()
	srv, serveErr := h.serve(px, ln)
	closeRPC := listenRPC(cfg.Home, rpcSrv, log)
	defer closeRPC()
	stopMaintenance := maintain(cfg, st, log.With().Str("part", "store").Logger())
	defer stopMaintenance()
	h.announce()
	if o.Ready != nil {
		o.Ready(h.info)
	}

	runErr := h.waitForStop(ctx, sig, serveErr)
	h.shutdown(srv, closeRPC)
	return runErr
}

// host is what a running host is made of, as the steps of Run share it.
type host struct {
	cfg      *config.Config
	st       *store.SQLite
	c        *core.Core
	log      zerolog.Logger
	rl       *rlruntime.Runtime
	training *hostTraining
	sched    *hostScheduler
	rpcStop  chan struct{} // a shutdown asked over the rpc socket
	info     Info          // set once listening
}

// lockStateDir takes the state dir's lock: one host per state dir.
func lockStateDir(home string, p Paths) (*flock.Flock, error) {
	if err := os.MkdirAll(p.RunDir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", p.RunDir, err)
	}
	lock := flock.New(p.Lock)
	locked, err := lock.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", p.Lock, err)
	}
	if !locked {
		info, _ := ReadInfo(home)
		return nil, &AlreadyRunningError{Info: info}
	}
	return lock, nil
}

// startLogging opens the log, reports the config's warnings and makes sure
// the proxy has a key (saying so when it generated one).
func startLogging(cfg *config.Config, p Paths, detached bool) (zerolog.Logger, io.Closer, error) {
	log, logCloser, err := logging.New(logging.Options{
		Dir: p.LogDir, Level: cfg.Log.Level, MaxSizeMB: cfg.Log.MaxSizeMB, MaxBackups: cfg.Log.MaxBackups, Stderr: stderrFor(detached),
	})
	if err != nil {
		return log, nil, err
	}
	for _, w := range cfg.Warnings {
		log.Warn().Msg(w)
	}
	if created, err := config.EnsureProxyKey(cfg); err != nil {
		logCloser.Close()
		return log, nil, err
	} else if created {
		log.Warn().Str("file", cfg.Home+"/"+config.SecretsFile).Msg("generated a proxy key (proxy.api_key): every route but /healthz and /ui now needs it. " +
			"Clients wired before must be wired again (metaclaw wire <client> --yes); SDK users: eval \"$(metaclaw env)\"")
	}
	return log, logCloser, nil
}

// proxyOptions maps the config onto the proxy and wires it to the host's
// parts: status, routes, the rpc server (returned, to listen later), the
// RL runtime and the on/off switch.
func (h *host) proxyOptions(routes []route.Route) (proxy.Options, *rpc.Server) {
	popts := ProxyOptions(h.cfg, h.c, h.log.With().Str("part", "proxy").Logger())
	popts.Status = h.status
	popts.Routes = append(routes, dashboard.Routes(h.st, h.c)...)
	popts.Routes = append(popts.Routes, h.sched.routes()...)
	popts.Routes = append(popts.Routes, h.training.routes()...)
	popts.PublicRoutes = dashboard.Public()
	popts.LoopbackOnly = isLoopbackHost(h.cfg.Proxy.Host)
	rpcSrv := newRPCServer(h.cfg.Home, h.c, h.log, popts.Status, h.rpcStop, h.sched.touch)
	popts.ResolveTrace = rpcSrv.ResolveTrace
	popts.MainTurns = h.rl.Responder()
	popts.ResolveInjected = rpcSrv.Injected
	popts.PassThrough = onoff.NewWatcher(h.cfg.Home, 0).Disabled
	return popts, rpcSrv
}

// status is the host's status: the core's, the scheduler's and, when RL
// runs, the runtime's and training's.
func (h *host) status(ctx context.Context) any {
	s := BuildStatus(ctx, h.cfg, h.c, h.info)
	ss := h.sched.status(ctx)
	s.Scheduler = &ss
	if rlruntime.Active(h.cfg) {
		s.RL = h.rl.Status(ctx)
		s.Training = h.training.status(ctx, s.RL)
	}
	return s
}

// listen binds the proxy's address, refusing a non-loopback one without a
// proxy key.
func (h *host) listen() (net.Listener, error) {
	if !isLoopbackHost(h.cfg.Proxy.Host) && h.cfg.Proxy.APIKey == "" {
		return nil, fmt.Errorf("refusing to listen on %s without proxy.api_key: set one (`metaclaw config set proxy.api_key <secret>`) or bind 127.0.0.1", h.cfg.Proxy.Host)
	}
	ln, err := net.Listen("tcp", h.cfg.Addr())
	if err != nil {
		return nil, fmt.Errorf("listen on %s (proxy.host/proxy.port): %w", h.cfg.Addr(), err)
	}
	return ln, nil
}

// serve answers HTTP on ln in the background; the channel gets why it
// stopped.
func (h *host) serve(px *proxy.Server, ln net.Listener) (*http.Server, <-chan error) {
	srv := &http.Server{
		Handler:           h.sched.wrap(px.Handler()),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          nil,
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	return srv, serveErr
}

// announce logs that the host listens (and warns when it has no upstream).
func (h *host) announce() {
	h.log.Info().Str("addr", h.info.Addr).Str("mode", h.cfg.Mode).Str("version", version.Version).
		Str("upstream", upstreamLabel(h.cfg)).Int("pid", h.info.PID).Msg("metaclaw host listening")
	if !h.cfg.UpstreamConfigured() {
		h.log.Warn().Msg("no upstream LLM configured: requests will be answered with an error until one is set (metaclaw setup)")
	}
}

// waitForStop blocks until something asks the host to stop: ctx, a
// signal, the server failing, or the rpc socket.
func (h *host) waitForStop(ctx context.Context, sig <-chan os.Signal, serveErr <-chan error) error {
	select {
	case <-ctx.Done():
		h.log.Info().Msg("stopping")
	case s := <-sig:
		h.log.Info().Str("signal", s.String()).Msg("stopping")
	case err := <-serveErr:
		return fmt.Errorf("proxy stopped: %w", err)
	case <-h.rpcStop:
		h.log.Info().Msg("stopping (shutdown over the rpc socket)")
	}
	return nil
}

// shutdown lets in-flight requests finish (within ShutdownGrace), then
// closes the rpc socket and the core, which persists every queued turn.
func (h *host) shutdown(srv *http.Server, closeRPC func()) {
	shutCtx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		h.log.Warn().Err(err).Msg("in-flight requests did not finish in time")
	}
	closeRPC() // plugin calls finish before the core closes
	h.c.Close()
	h.log.Info().Msg("stopped")
}

// ProxyOptions maps the config onto the proxy.
func ProxyOptions(cfg *config.Config, c *core.Core, log zerolog.Logger) proxy.Options {
	o := proxy.Options{
		Core:             c,
		Log:              log,
		UpstreamAPI:      apiformat.API(cfg.LLM.API),
		UpstreamBase:     cfg.LLM.APIBase,
		UpstreamKey:      cfg.LLM.APIKey,
		Model:            cfg.LLM.ModelID,
		UpstreamTimeout:  time.Duration(cfg.LLM.TimeoutSeconds) * time.Second,
		APIKey:           proxyKey(cfg),
		MaxBodyBytes:     int64(cfg.Proxy.MaxBodyMB) << 20,
		MaxAnswerBytes:   int64(cfg.Proxy.MaxAnswerMB) << 20,
		MaxStoredBytes:   cfg.Store.MaxBodyKB << 10,
		MaxContextTokens: cfg.MaxContextTokens,
	}
	if !cfg.UpstreamConfigured() {
		o.NotConfigured = NotConfiguredMessage
	}
	return o
}

func upstreamLabel(cfg *config.Config) string {
	if !cfg.UpstreamConfigured() {
		return "none"
	}
	return cfg.LLM.API + " " + cfg.LLM.APIBase
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// stderrFor keeps the detached host from writing every log line twice: its
// stderr is logs/daemon.out (kept for crash output), the log file has the rest.
func stderrFor(detached bool) io.Writer {
	if detached {
		return io.Discard
	}
	return os.Stderr
}

// proxyKey is the key clients must present ("" with proxy.auth none).
func proxyKey(cfg *config.Config) string {
	if !cfg.ProxyAuthRequired() {
		return ""
	}
	return cfg.Proxy.APIKey
}
