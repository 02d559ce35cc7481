package subplugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-plugin"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	"github.com/metaclaw-go/metaclaw/host/core"
)

// Instance, one plugin process under supervision: launch, health checks,
// restarts with backoff, and calls that wait for a relaunch.

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
	// The process inherits the niceness of the thread that starts it: not
	// a background job's (core.GoBackground), or every later call, a
	// request's included, would be served at that priority.
	var rpc plugin.ClientProtocol
	core.Foreground(func() { rpc, err = client.Client() })
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
