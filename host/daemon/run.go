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
	if err := os.MkdirAll(p.RunDir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", p.RunDir, err)
	}
	lock := flock.New(p.Lock)
	locked, err := lock.TryLock()
	if err != nil {
		return fmt.Errorf("lock %s: %w", p.Lock, err)
	}
	if !locked {
		info, _ := ReadInfo(cfg.Home)
		return &AlreadyRunningError{Info: info}
	}
	defer lock.Unlock()
	defer subplugin.Shutdown() // no sub-plugin process outlives the host

	log, logCloser, err := logging.New(logging.Options{
		Dir: p.LogDir, Level: cfg.Log.Level, MaxSizeMB: cfg.Log.MaxSizeMB, MaxBackups: cfg.Log.MaxBackups, Stderr: stderrFor(o.Detached),
	})
	if err != nil {
		return err
	}
	defer logCloser.Close()
	for _, w := range cfg.Warnings {
		log.Warn().Msg(w)
	}
	if created, err := config.EnsureProxyKey(cfg); err != nil {
		return err
	} else if created {
		log.Warn().Str("file", cfg.Home+"/"+config.SecretsFile).Msg("generated a proxy key (proxy.api_key): every route but /healthz and /ui now needs it. " +
			"Clients wired before must be wired again (metaclaw wire <client> --yes); SDK users: eval \"$(metaclaw env)\"")
	}

	st, err := store.OpenSQLite(ctx, p.DB)
	if err != nil {
		return err
	}
	defer st.Close()

	c := core.New(core.Options{
		Store:        st,
		Log:          log.With().Str("part", "core").Logger(),
		SessionIdle:  time.Duration(cfg.Memory.SessionIdleMinutes) * time.Minute,
		MaxBodyBytes: cfg.Store.MaxBodyKB << 10,
		SpoolDir:     p.TurnSpool,
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

	started := time.Now()
	var info Info
	popts := ProxyOptions(cfg, c, log.With().Str("part", "proxy").Logger())
	popts.Status = func(ctx context.Context) any {
		s := BuildStatus(ctx, cfg, c, info)
		ss := sched.status(ctx)
		s.Scheduler = &ss
		if rlruntime.Active(cfg) {
			s.RL = rl.Status(ctx)
			s.Training = training.status(ctx, s.RL)
		}
		return s
	}
	popts.Routes = append(routes, dashboard.Routes(st, c)...)
	popts.Routes = append(popts.Routes, sched.routes()...)
	popts.Routes = append(popts.Routes, training.routes()...)
	popts.PublicRoutes = dashboard.Public()
	popts.LoopbackOnly = isLoopbackHost(cfg.Proxy.Host)
	rpcStop := make(chan struct{}, 1)
	rpcSrv := newRPCServer(cfg.Home, c, log, popts.Status, rpcStop, sched.touch)
	popts.ResolveTrace = rpcSrv.ResolveTrace
	popts.MainTurns = rl.Responder()
	popts.ResolveInjected = rpcSrv.Injected
	popts.PassThrough = onoff.NewWatcher(cfg.Home, 0).Disabled
	px, err := proxy.New(popts)
	if err != nil {
		c.Close()
		return err
	}
	if !isLoopbackHost(cfg.Proxy.Host) && cfg.Proxy.APIKey == "" {
		c.Close()
		return fmt.Errorf("refusing to listen on %s without proxy.api_key: set one (`metaclaw config set proxy.api_key <secret>`) or bind 127.0.0.1", cfg.Proxy.Host)
	}
	ln, err := net.Listen("tcp", cfg.Addr())
	if err != nil {
		c.Close()
		return fmt.Errorf("listen on %s (proxy.host/proxy.port): %w", cfg.Addr(), err)
	}
	info = Info{PID: os.Getpid(), Addr: ln.Addr().String(), Mode: cfg.Mode, Version: version.Version, StartedAt: started}
	if err := writeInfo(p.Info, info); err != nil {
		ln.Close()
		c.Close()
		return err
	}
	defer os.Remove(p.Info)

	go tokens.Warm()
	srv := &http.Server{
		Handler:           sched.wrap(px.Handler()),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       5 * time.Minute,
		ErrorLog:          nil,
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	closeRPC := listenRPC(cfg.Home, rpcSrv, log)
	defer closeRPC()
	stopMaintenance := maintain(cfg, st, log.With().Str("part", "store").Logger())
	defer stopMaintenance()
	log.Info().Str("addr", info.Addr).Str("mode", cfg.Mode).Str("version", version.Version).
		Str("upstream", upstreamLabel(cfg)).Int("pid", info.PID).Msg("metaclaw host listening")
	if !cfg.UpstreamConfigured() {
		log.Warn().Msg("no upstream LLM configured: requests will be answered with an error until one is set (metaclaw setup)")
	}
	if o.Ready != nil {
		o.Ready(info)
	}

	var runErr error
	select {
	case <-ctx.Done():
		log.Info().Msg("stopping")
	case s := <-sig:
		log.Info().Str("signal", s.String()).Msg("stopping")
	case err := <-serveErr:
		runErr = fmt.Errorf("proxy stopped: %w", err)
	case <-rpcStop:
		log.Info().Msg("stopping (shutdown over the rpc socket)")
	}
	shutCtx, cancel := context.WithTimeout(context.Background(), ShutdownGrace)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Warn().Err(err).Msg("in-flight requests did not finish in time")
	}
	closeRPC() // plugin calls finish before the core closes
	c.Close()  // persists every queued turn
	log.Info().Msg("stopped")
	return runErr
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
