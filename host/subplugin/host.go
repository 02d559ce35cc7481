package subplugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// Options are the host's policies for the plugins it launches. Zero fields
// take the defaults below.
type Options struct {
	// Dir is where plugins are discovered by name ($METACLAW_HOME/plugins).
	Dir string
	// StartTimeout bounds a launch: process start, handshake and the
	// kind's Info call. Default 30 s.
	StartTimeout time.Duration
	// CallTimeout bounds every call unless the caller's context ends
	// earlier. Default 30 s.
	CallTimeout time.Duration
	// HealthInterval is how often running plugins are checked (process
	// alive, gRPC health "plugin" SERVING). Default 15 s; negative disables.
	HealthInterval time.Duration
	// MaxRestarts is how many relaunches after crashes are allowed within
	// RestartWindow before the plugin is marked failed. Default 5; negative
	// means never relaunch.
	MaxRestarts int
	// RestartWindow: default 10 min.
	RestartWindow time.Duration
	// RestartBackoff is the wait before the second relaunch within the
	// window; it doubles for each further one, up to 30 s. The first
	// relaunch after a crash is immediate. Default 500 ms.
	RestartBackoff time.Duration
	// Logger receives the host's and the plugins' log lines.
	Logger zerolog.Logger
}

// Defaults.
const (
	DefaultStartTimeout   = 30 * time.Second
	DefaultCallTimeout    = 30 * time.Second
	DefaultHealthInterval = 15 * time.Second
	DefaultMaxRestarts    = 5
	DefaultRestartWindow  = 10 * time.Minute
	DefaultRestartBackoff = 500 * time.Millisecond
	maxBackoff            = 30 * time.Second
	healthTimeout         = 2 * time.Second
	killGrace             = 3 * time.Second
	stderrTail            = 2048
)

func (o Options) withDefaults() Options {
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.HealthInterval == 0 {
		o.HealthInterval = DefaultHealthInterval
	}
	if o.MaxRestarts == 0 {
		o.MaxRestarts = DefaultMaxRestarts
	}
	if o.RestartWindow <= 0 {
		o.RestartWindow = DefaultRestartWindow
	}
	if o.RestartBackoff <= 0 {
		o.RestartBackoff = DefaultRestartBackoff
	}
	return o
}

// State of a plugin.
type State string

// States. A crashed plugin is "restarting" until the next call relaunches
// it; "failed" is final (restart limit reached, or the plugin changed
// identity) until the host restarts.
const (
	StateStarting   State = "starting"
	StateRunning    State = "running"
	StateRestarting State = "restarting"
	StateFailed     State = "failed"
	StateStopped    State = "stopped"
)

// Status describes one plugin (or in-process built-in) for `metaclaw status`.
type Status struct {
	Kind        string     `json:"kind"`
	Name        string     `json:"name"`
	Path        string     `json:"path"` // "builtin" for in-process ones
	Builtin     bool       `json:"builtin,omitempty"`
	PID         int        `json:"pid,omitempty"`
	State       State      `json:"state"`
	Restarts    int        `json:"restarts"`
	LastError   string     `json:"last_error,omitempty"`
	LastErrorAt *time.Time `json:"last_error_at,omitempty"`
	StartedAt   *time.Time `json:"started_at,omitempty"`
	Identity    Identity   `json:"identity"`
}

// Errors of calls.
var (
	// ErrLaunch wraps every failure to start a plugin.
	ErrLaunch = errors.New("sub-plugin launch failed")
	// ErrCrashed: the plugin process died (or stopped answering its
	// health check) during the call; the next call relaunches it.
	ErrCrashed = errors.New("sub-plugin crashed")
	// ErrTimeout: the plugin did not answer within the call's deadline.
	ErrTimeout = errors.New("sub-plugin did not answer in time")
	// ErrFailed: the plugin is disabled (restart limit reached, …).
	ErrFailed = errors.New("sub-plugin disabled")
	// ErrClosed: the host was closed.
	ErrClosed = errors.New("sub-plugin host closed")

	errIdentityChanged = errors.New("the plugin changed identity")
)

// Host launches and supervises sub-plugins. It is safe for concurrent use.
type Host struct {
	opts Options
	log  zerolog.Logger
	hlog hclog.Logger

	mu        sync.Mutex
	instances []*Instance
	builtins  []Status
	closed    bool
	health    chan struct{} // closed to stop the health loop; nil until started

	bg sync.WaitGroup // health loop, background kills and checks
}

var (
	hostsMu sync.Mutex
	hosts   = map[*Host]struct{}{}
)

// NewHost returns a host with opts; Close it to stop its plugins.
func NewHost(opts Options) *Host {
	opts = opts.withDefaults()
	log := opts.Logger.With().Str("component", "subplugin").Logger()
	h := &Host{opts: opts, log: log, hlog: newHclog(log)}
	hostsMu.Lock()
	hosts[h] = struct{}{}
	hostsMu.Unlock()
	return h
}

// AllStatus lists the plugins and built-ins of every open host in this
// process, sorted by kind and name: what the daemon's status shows.
func AllStatus() []Status {
	hostsMu.Lock()
	list := make([]*Host, 0, len(hosts))
	for h := range hosts {
		list = append(list, h)
	}
	hostsMu.Unlock()
	var out []Status
	for _, h := range list {
		out = append(out, h.Status()...)
	}
	sortStatus(out)
	return out
}

// Shutdown closes every open host, then kills any managed plugin client
// left (go-plugin's CleanupClients): the daemon's last-resort cleanup.
func Shutdown() {
	hostsMu.Lock()
	list := make([]*Host, 0, len(hosts))
	for h := range hosts {
		list = append(list, h)
	}
	hostsMu.Unlock()
	for _, h := range list {
		_ = h.Close()
	}
	plugin.CleanupClients()
}

func sortStatus(s []Status) {
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].Kind != s[j].Kind {
			return s[i].Kind < s[j].Kind
		}
		return s[i].Name < s[j].Name
	})
}

// Status lists this host's plugins and built-ins.
func (h *Host) Status() []Status {
	h.mu.Lock()
	out := append([]Status(nil), h.builtins...)
	inst := append([]*Instance(nil), h.instances...)
	h.mu.Unlock()
	for _, in := range inst {
		out = append(out, in.Status())
	}
	sortStatus(out)
	return out
}

// addBuiltin records an in-process implementation for Status.
func (h *Host) addBuiltin(kind, name string, id Identity) {
	now := time.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	h.builtins = append(h.builtins, Status{Kind: kind, Name: name, Path: "builtin", Builtin: true, State: StateRunning, StartedAt: &now, Identity: id})
}

// Close stops every plugin of this host and waits (bounded) for them to
// exit. Calls in flight fail; later calls return ErrClosed.
func (h *Host) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	inst := h.instances
	h.instances, h.builtins = nil, nil
	if h.health != nil {
		close(h.health)
	}
	h.mu.Unlock()

	var wg sync.WaitGroup
	for _, in := range inst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			in.stop()
		}()
	}
	wg.Wait()
	h.bg.Wait()
	hostsMu.Lock()
	delete(hosts, h)
	hostsMu.Unlock()
	return nil
}

// Launch starts the plugin described by spec and checks it (handshake,
// AutoMTLS, the kind's Info). The returned instance relaunches itself after
// a crash, within the restart policy.
func (h *Host) Launch(ctx context.Context, spec Spec) (*Instance, error) {
	kind, ok := LookupKind(spec.Kind)
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownKind, spec.Kind)
	}
	if spec.Name == "" {
		spec.Name = filepath.Base(spec.Path)
		if k, n, err := parseExecName(spec.Name); err == nil && k == spec.Kind {
			spec.Name = n
		}
	}
	in := &Instance{host: h, kind: kind, spec: spec, state: StateStarting}
	done := make(chan error, 1)
	go func() { done <- in.launch() }()
	select {
	case err := <-done:
		if err != nil {
			return nil, err
		}
	case <-ctx.Done():
		// The launch is bounded by StartTimeout; stop it when it ends.
		h.goBG(func() {
			if <-done == nil {
				in.stop()
			}
		})
		return nil, fmt.Errorf("%w: %s plugin %q: %w", ErrLaunch, spec.Kind, spec.Name, ctx.Err())
	}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		in.stop()
		return nil, ErrClosed
	}
	h.instances = append(h.instances, in)
	if h.health == nil && h.opts.HealthInterval > 0 {
		h.health = make(chan struct{})
		h.bg.Add(1)
		go h.healthLoop(h.health)
	}
	h.mu.Unlock()
	return in, nil
}

// goBG runs fn in a goroutine that Close waits for (every fn is bounded).
// Once the host is closed, fn still runs but is no longer waited for: a
// WaitGroup must not grow while Close waits on it.
func (h *Host) goBG(fn func()) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		go fn()
		return
	}
	h.bg.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.bg.Done()
		fn()
	}()
}

func (h *Host) healthLoop(stop chan struct{}) {
	defer h.bg.Done()
	t := time.NewTicker(h.opts.HealthInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		h.mu.Lock()
		inst := append([]*Instance(nil), h.instances...)
		h.mu.Unlock()
		for _, in := range inst {
			in.checkHealth()
		}
	}
}

// Instance is one supervised plugin.
type Instance struct {
	host *Host
	kind *Kind
	spec Spec

	mu        sync.Mutex
	state     State
	gen       uint64 // incremented by each successful launch
	client    *plugin.Client
	cmd       *exec.Cmd
	conn      *grpc.ClientConn
	disp      any // the kind's client
	pid       int
	id        Identity
	hasID     bool
	startedAt time.Time
	restarts  int
	recent    []time.Time // relaunches within the window
	lastErr   error
	lastErrAt time.Time
	nextTry   time.Time
	launching chan struct{} // non-nil while a relaunch runs
}

// Spec is what the instance was launched from.
func (in *Instance) Spec() Spec { return in.spec }

// Identity is what the plugin reported at its last launch.
func (in *Instance) Identity() Identity {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.id
}

// Status describes the instance.
func (in *Instance) Status() Status {
	in.mu.Lock()
	defer in.mu.Unlock()
	s := Status{Kind: in.kind.Name, Name: in.spec.Name, Path: in.spec.Path, State: in.state, Restarts: in.restarts, Identity: in.id}
	if in.state == StateRunning {
		s.PID = in.pid
		t := in.startedAt
		s.StartedAt = &t
	}
	if in.lastErr != nil {
		s.LastError = in.lastErr.Error()
		t := in.lastErrAt
		s.LastErrorAt = &t
	}
	return s
}

// PID of the running plugin process, 0 when none runs.
func (in *Instance) PID() int {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.state != StateRunning {
		return 0
	}
	return in.pid
}

func (in *Instance) label() string { return fmt.Sprintf("%s plugin %q", in.kind.Name, in.spec.Name) }

// launch starts a process, handshakes, probes, and on success installs it
// as the running generation. It never holds in.mu while waiting.
func (in *Instance) launch() (err error) {
	h, spec, kind := in.host, in.spec, in.kind
	start := time.Now()
	stderr := newTail(stderrTail)
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Env = append(os.Environ(), spec.Env...)
	cfg := &plugin.ClientConfig{
		HandshakeConfig:  kind.Handshake,
		Plugins:          plugin.PluginSet{kind.Name: kind.Plugin},
		Cmd:              cmd,
		SkipHostEnv:      true, // cmd.Env already has it, with spec.Env winning
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		Managed:          true,
		StartTimeout:     h.opts.StartTimeout,
		Stderr:           stderr,
		Logger:           h.hlog,
	}
	client := plugin.NewClient(cfg)
	fail := func(err error) error {
		stopClient(client, cmd, true, h.log)
		if t := stderr.String(); strings.Contains(t, "This binary is a plugin") {
			err = fmt.Errorf("the program refused the handshake cookie %s=%s: it is not a MetaClaw %s plugin (a plugin of another kind, or of another application)",
				kind.Handshake.MagicCookieKey, kind.Handshake.MagicCookieValue, kind.Name)
		} else if t != "" {
			err = fmt.Errorf("%w; its stderr: %s", err, t)
		}
		return fmt.Errorf("%w: %s (%s): %w", ErrLaunch, in.label(), spec.Path, err)
	}
	rpc, err := client.Client()
	if err != nil {
		return fail(explainStartError(err))
	}
	if cfg.TLSConfig == nil || cfg.TLSConfig.RootCAs == nil {
		return fail(errors.New("the plugin did not negotiate AutoMTLS (no server certificate in its handshake line); " +
			"it must read PLUGIN_CLIENT_CERT and answer with its own certificate, see docs/subplugins.md"))
	}
	gc, ok := rpc.(*plugin.GRPCClient)
	if !ok {
		return fail(errors.New("the plugin does not speak gRPC"))
	}
	disp, err := rpc.Dispense(kind.Name)
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.opts.StartTimeout)
	defer cancel()
	id, err := kind.Probe(ctx, disp)
	if err != nil {
		return fail(fmt.Errorf("handshake succeeded but the %s service check failed: %w", kind.Name, err))
	}
	pid := 0
	if cmd.Process != nil {
		pid = cmd.Process.Pid
	}

	in.mu.Lock()
	if in.hasID && (id.Name != in.id.Name || id.Detail != in.id.Detail) {
		was := in.id
		in.mu.Unlock()
		return fail(fmt.Errorf("%w: it now reports %q (%s) but was %q (%s) when the host started; restart the host to use the new plugin",
			errIdentityChanged, id.Name, id.Detail, was.Name, was.Detail))
	}
	if in.state == StateStopped {
		in.mu.Unlock()
		stopClient(client, cmd, false, h.log)
		return ErrClosed
	}
	in.client, in.cmd, in.conn, in.disp, in.pid = client, cmd, gc.Conn, disp, pid
	in.id, in.hasID = id, true
	in.gen++
	in.state = StateRunning
	in.startedAt = time.Now()
	in.mu.Unlock()
	h.log.Info().Str("kind", kind.Name).Str("plugin", spec.Name).Str("path", spec.Path).Int("pid", pid).
		Str("identity", id.Name).Str("version", id.Version).Dur("took", time.Since(start)).Msg("sub-plugin started")
	return nil
}

// explainStartError rewords go-plugin's start errors for people.
func explainStartError(err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "Failed to read any lines from plugin's stdout"),
		strings.Contains(msg, "plugin exited before we could connect"):
		return errors.New("the program ended without printing go-plugin's handshake line on stdout")
	case strings.HasPrefix(msg, "Unrecognized remote plugin message:"):
		first, _, _ := strings.Cut(msg, "\n")
		line := strings.TrimSpace(strings.TrimPrefix(first, "Unrecognized remote plugin message:"))
		return fmt.Errorf("it is not a go-plugin plugin: its first line on stdout was %q, not the handshake line", line)
	case strings.Contains(msg, "incompatible API version"):
		return fmt.Errorf("protocol version mismatch: %v", oneLine(msg))
	case strings.Contains(msg, "incompatible core API version"):
		return fmt.Errorf("go-plugin core protocol mismatch: %v", oneLine(msg))
	case strings.Contains(msg, "timeout while waiting for plugin to start"):
		return errors.New("no handshake line on stdout within the start timeout")
	case strings.Contains(msg, "unsupported plugin protocol"):
		return fmt.Errorf("the plugin speaks net/rpc; MetaClaw sub-plugins must use gRPC (%v)", oneLine(msg))
	}
	return err
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// stopClient ends a plugin. Gracefully (hard false): go-plugin's Kill, which
// asks the plugin to shut down, then SIGKILL if that has not finished within
// killGrace (a hung or stopped process never answers). Hard: SIGKILL first,
// for a plugin already known to be broken. Either way it gives up waiting
// after another killGrace.
func stopClient(c *plugin.Client, cmd *exec.Cmd, hard bool, log zerolog.Logger) {
	sigkill := func() {
		if cmd != nil && cmd.Process != nil {
			_ = cmd.Process.Kill() // os.Process knows when it was reaped: no stray pid is signalled
		}
	}
	if hard {
		sigkill()
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Kill()
	}()
	select {
	case <-done:
		return
	case <-time.After(killGrace):
	}
	sigkill()
	select {
	case <-done:
	case <-time.After(killGrace):
		log.Warn().Msg("a sub-plugin did not exit after SIGKILL; giving up waiting for it")
	}
}

// stop ends the instance for good.
func (in *Instance) stop() {
	in.mu.Lock()
	in.state = StateStopped
	c, cmd := in.client, in.cmd
	in.client, in.cmd, in.conn, in.disp = nil, nil, nil, nil
	in.mu.Unlock()
	if c != nil {
		stopClient(c, cmd, false, in.host.log)
	}
}

func (in *Instance) backoffLocked() time.Duration {
	n := len(in.recent)
	if n == 0 {
		return 0
	}
	d := in.host.opts.RestartBackoff
	for i := 1; i < n && d < maxBackoff; i++ {
		d *= 2
	}
	return min(d, maxBackoff)
}

func (in *Instance) pruneLocked(now time.Time) {
	keep := in.recent[:0]
	for _, t := range in.recent {
		if now.Sub(t) < in.host.opts.RestartWindow {
			keep = append(keep, t)
		}
	}
	in.recent = keep
}

// crashed marks generation gen as dead (once) and stops its process in the
// background. The next call relaunches it.
func (in *Instance) crashed(gen uint64, cause error) {
	in.mu.Lock()
	if in.gen != gen || in.state != StateRunning {
		in.mu.Unlock()
		return
	}
	now := time.Now()
	in.pruneLocked(now)
	in.state = StateRestarting
	in.lastErr, in.lastErrAt = cause, now
	in.nextTry = now.Add(in.backoffLocked())
	c, cmd, pid := in.client, in.cmd, in.pid
	in.client, in.cmd, in.conn, in.disp = nil, nil, nil, nil
	in.mu.Unlock()
	in.host.log.Warn().Str("kind", in.kind.Name).Str("plugin", in.spec.Name).Int("pid", pid).AnErr("cause", cause).
		Msg("sub-plugin crashed; it will be relaunched on the next call")
	in.host.goBG(func() { stopClient(c, cmd, true, in.host.log) })
}

// acquire returns the running plugin's client, relaunching it first when it
// crashed (within the restart policy).
func (in *Instance) acquire(ctx context.Context) (any, uint64, error) {
	for {
		in.mu.Lock()
		switch {
		case in.state == StateStopped:
			in.mu.Unlock()
			return nil, 0, fmt.Errorf("%s: %w", in.label(), ErrClosed)
		case in.state == StateFailed:
			err := fmt.Errorf("%w: %s: %v", ErrFailed, in.label(), in.lastErr)
			in.mu.Unlock()
			return nil, 0, err
		case in.launching != nil:
			ch := in.launching
			in.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, 0, fmt.Errorf("%s is being relaunched: %w", in.label(), ctx.Err())
			}
		case in.state == StateRunning:
			if in.client.Exited() {
				gen := in.gen
				in.mu.Unlock()
				in.crashed(gen, errors.New("the plugin process exited"))
				continue
			}
			d, gen := in.disp, in.gen
			in.mu.Unlock()
			return d, gen, nil
		}
		// StateRestarting.
		if wait := time.Until(in.nextTry); wait > 0 {
			last := in.lastErr
			in.mu.Unlock()
			if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
				return nil, 0, fmt.Errorf("%w: %s crashed (%v) and is relaunched in %s, after this call's deadline",
					ErrCrashed, in.label(), last, wait.Round(time.Millisecond))
			}
			select {
			case <-time.After(wait):
				continue
			case <-ctx.Done():
				return nil, 0, fmt.Errorf("%s: waiting to relaunch: %w", in.label(), ctx.Err())
			}
		}
		now := time.Now()
		in.pruneLocked(now)
		if max := in.host.opts.MaxRestarts; max < 0 || len(in.recent) >= max {
			in.state = StateFailed
			in.lastErr = fmt.Errorf("restart limit reached (%d relaunches within %s); last error: %v; restart the host after fixing the plugin",
				len(in.recent), in.host.opts.RestartWindow, in.lastErr)
			in.lastErrAt = now
			err := fmt.Errorf("%w: %s: %v", ErrFailed, in.label(), in.lastErr)
			in.mu.Unlock()
			in.host.log.Error().Str("kind", in.kind.Name).Str("plugin", in.spec.Name).Err(err).Msg("sub-plugin disabled")
			return nil, 0, err
		}
		in.recent = append(in.recent, now)
		in.restarts++
		ch := make(chan struct{})
		in.launching = ch
		in.mu.Unlock()

		err := in.launch()

		in.mu.Lock()
		in.launching = nil
		close(ch)
		if err != nil {
			switch {
			case in.state == StateStopped:
			case errors.Is(err, errIdentityChanged):
				in.state = StateFailed // relaunching again would not help
				in.lastErr, in.lastErrAt = err, time.Now()
			default:
				in.state = StateRestarting
				in.lastErr, in.lastErrAt = err, time.Now()
				in.nextTry = time.Now().Add(in.backoffLocked())
			}
			in.mu.Unlock()
			in.host.log.Error().Str("kind", in.kind.Name).Str("plugin", in.spec.Name).Err(err).Msg("sub-plugin relaunch failed")
			return nil, 0, err
		}
		in.mu.Unlock()
	}
}

// alive reports whether generation gen is still the running plugin and
// answers its gRPC health check within healthTimeout; when not, it says why.
// A generation already replaced or marked crashed (by another caller) is
// reported dead with the recorded cause.
func (in *Instance) alive(gen uint64) (bool, error) {
	in.mu.Lock()
	if in.gen != gen || in.state != StateRunning {
		cause := in.lastErr
		in.mu.Unlock()
		if cause == nil {
			cause = errors.New("the plugin was stopped")
		}
		return false, cause
	}
	conn, client := in.conn, in.client
	in.mu.Unlock()
	if client.Exited() {
		return false, errors.New("the plugin process exited")
	}
	ctx, cancel := context.WithTimeout(context.Background(), healthTimeout)
	defer cancel()
	r, err := grpc_health_v1.NewHealthClient(conn).Check(ctx, &grpc_health_v1.HealthCheckRequest{Service: plugin.GRPCServiceName})
	if err != nil {
		if client.Exited() {
			return false, errors.New("the plugin process exited")
		}
		return false, fmt.Errorf("health check failed: %s", status.Convert(err).Message())
	}
	if r.GetStatus() != grpc_health_v1.HealthCheckResponse_SERVING {
		return false, fmt.Errorf("health check: %s", r.GetStatus())
	}
	return true, nil
}

// checkHealth is the periodic check of a running instance.
func (in *Instance) checkHealth() {
	in.mu.Lock()
	gen, running := in.gen, in.state == StateRunning
	in.mu.Unlock()
	if !running {
		return
	}
	if ok, err := in.alive(gen); !ok {
		in.crashed(gen, err)
	}
}

// Call runs fn with the plugin's client (the kind's client type) under the
// host's call deadline. A plugin found dead is relaunched first (within the
// restart policy). When fn fails because the plugin died, the instance is
// marked crashed, and if idempotent is true and time remains, fn runs once
// more on a relaunched plugin. Errors wrap ErrCrashed, ErrTimeout, ErrFailed
// or ErrClosed when those apply; the plugin's own errors are returned as
// "<kind> plugin "<name>": <message> (<gRPC code>)".
func (in *Instance) Call(ctx context.Context, idempotent bool, fn func(ctx context.Context, client any) error) error {
	ctx, cancel := context.WithTimeout(ctx, in.host.opts.CallTimeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		client, gen, err := in.acquire(ctx)
		if err != nil {
			return err
		}
		err = fn(ctx, client)
		if err == nil {
			return nil
		}
		code := status.Code(err)
		switch {
		case code == codes.Unavailable || code == codes.Canceled && ctx.Err() == nil:
			// The connection broke: find out whether the process is gone.
			if ok, why := in.alive(gen); !ok {
				in.crashed(gen, why)
				if idempotent && attempt == 0 && ctx.Err() == nil {
					continue
				}
				return fmt.Errorf("%w: %s: %v (the next call relaunches it)", ErrCrashed, in.label(), why)
			}
		case code == codes.DeadlineExceeded:
			// (gRPC's own timer for ctx's deadline may fire before ctx's.)
			// Late: check in the background whether it is hung for good,
			// without delaying the caller.
			in.host.goBG(func() { in.checkHealthOf(gen) })
			return fmt.Errorf("%w: %s: %w", ErrTimeout, in.label(), context.DeadlineExceeded)
		case ctx.Err() != nil:
			return fmt.Errorf("%s: %w", in.label(), ctx.Err())
		}
		st := status.Convert(err)
		return fmt.Errorf("%s: %s (%s)", in.label(), st.Message(), st.Code())
	}
}

func (in *Instance) checkHealthOf(gen uint64) {
	if ok, err := in.alive(gen); !ok {
		in.crashed(gen, fmt.Errorf("did not answer a call in time, then: %v", err))
	}
}
