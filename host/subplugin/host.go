package subplugin

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/rs/zerolog"
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
