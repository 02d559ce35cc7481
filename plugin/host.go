// Package plugin is the client-facing side of MetaClaw: the processes agent
// clients start (a JSON-RPC stdio server for extension shims and PicoClaw
// process hooks, one-shot command hooks for Hermes and Claude Code) and their
// link to the host's unix socket. Everything is relayed to the one learning
// core; nothing here learns on its own.
//
// Failure policy: a client's turn never waits on MetaClaw longer than a
// deadline. When the host is down or slow, `context` answers an empty block
// (the turn proceeds without injection) and observe/end events are spooled
// under $METACLAW_HOME/spool/ and replayed once the host answers again.
package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/sourcegraph/jsonrpc2"

	"github.com/metaclaw-go/metaclaw/host/rpc/protocol"
)

// HostOptions configure the link to the host.
type HostOptions struct {
	Home string
	// AutoStart starts the host when its socket does not answer.
	AutoStart bool
	// Start launches the host; the default runs `metaclaw start` (detached)
	// and waits until it serves. Detach makes the default fire and forget
	// (one-shot hooks exit long before a host is up).
	Start  func(ctx context.Context, home string) error
	Detach bool
	// RetryStart is the least time between two start attempts (default 20s).
	RetryStart time.Duration
	Log        zerolog.Logger
	// OnConnect runs (in its own goroutine) after each new connection.
	OnConnect func()
}

// Host is a lazily (re)connected client of the host socket.
type Host struct {
	o      HostOptions
	socket string

	mu        sync.Mutex
	c         *protocol.Client
	starting  chan struct{}
	lastStart time.Time
}

// NewHost prepares a link; nothing is dialled until the first call.
func NewHost(o HostOptions) *Host {
	if o.RetryStart <= 0 {
		o.RetryStart = 20 * time.Second
	}
	if o.Start == nil {
		if o.Detach {
			o.Start = spawnStart
		} else {
			o.Start = startAndWait
		}
	}
	return &Host{o: o, socket: protocol.SocketPath(o.Home)}
}

// ErrUnavailable wraps every failure to reach the host.
func unavailable(err error) error {
	return protocol.Errorf(protocol.CodeHostUnavailable, "metaclaw host unavailable: %v", err)
}

// IsUnavailable reports whether err means the host could not be reached.
func IsUnavailable(err error) bool { return protocol.IsCode(err, protocol.CodeHostUnavailable) }

// Call relays one request. Transport failures come back as a
// CodeHostUnavailable error; the host's own errors as they are.
func (h *Host) Call(ctx context.Context, method string, params, result any) error {
	c, err := h.client(ctx)
	if err != nil {
		return err
	}
	err = c.Call(ctx, method, params, result)
	if err == nil {
		return nil
	}
	var rpcErr *jsonrpc2.Error
	if errors.As(err, &rpcErr) {
		return err
	}
	if ctx.Err() != nil {
		return unavailable(fmt.Errorf("no answer to %s in time", method))
	}
	h.drop(c)
	return unavailable(err)
}

// Connected reports whether a connection is open now.
func (h *Host) Connected() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.c == nil {
		return false
	}
	select {
	case <-h.c.Done():
		h.c = nil
		return false
	default:
		return true
	}
}

// Close drops the connection.
func (h *Host) Close() {
	h.mu.Lock()
	c := h.c
	h.c = nil
	h.mu.Unlock()
	if c != nil {
		c.Close()
	}
}

func (h *Host) drop(c *protocol.Client) {
	h.mu.Lock()
	if h.c == c {
		h.c = nil
	}
	h.mu.Unlock()
	c.Close()
}

func (h *Host) client(ctx context.Context) (*protocol.Client, error) {
	h.mu.Lock()
	if h.c != nil {
		select {
		case <-h.c.Done():
			h.c = nil
		default:
			c := h.c
			h.mu.Unlock()
			return c, nil
		}
	}
	h.mu.Unlock()
	c, err := h.dial(ctx)
	if err == nil {
		return c, nil
	}
	if !h.o.AutoStart {
		return nil, unavailable(err)
	}
	done := h.startOnce()
	if done == nil {
		return nil, unavailable(err)
	}
	select {
	case <-done:
	case <-ctx.Done():
		return nil, unavailable(fmt.Errorf("host starting: %w", ctx.Err()))
	}
	c, err = h.dial(ctx)
	if err != nil {
		return nil, unavailable(err)
	}
	return c, nil
}

func (h *Host) dial(ctx context.Context) (*protocol.Client, error) {
	dctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	c, err := protocol.Dial(dctx, h.socket)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	if h.c != nil {
		select {
		case <-h.c.Done():
		default:
			existing := h.c
			h.mu.Unlock()
			c.Close()
			return existing, nil
		}
	}
	h.c = c
	h.mu.Unlock()
	if h.o.OnConnect != nil {
		go h.o.OnConnect()
	}
	return c, nil
}

// startOnce starts the host unless a start runs (then it returns that one's
// channel) or one failed recently (nil).
func (h *Host) startOnce() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.starting != nil {
		return h.starting
	}
	if !h.lastStart.IsZero() && time.Since(h.lastStart) < h.o.RetryStart {
		return nil
	}
	h.lastStart = time.Now()
	done := make(chan struct{})
	h.starting = done
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		err := h.o.Start(ctx, h.o.Home)
		if err != nil {
			h.o.Log.Warn().Err(err).Msg("could not start the metaclaw host; turns proceed without it")
		} else {
			h.o.Log.Info().Msg("started the metaclaw host")
		}
		h.mu.Lock()
		h.starting = nil
		h.mu.Unlock()
		close(done)
	}()
	return done
}

// startAndWait runs `metaclaw start` (which detaches the host and returns
// once /healthz answers, or at once when a host already runs) and waits for
// the socket. The host is started by exec, not in process, so that the stdio
// side links none of the host's packages (store, memory, skills, RL).
func startAndWait(ctx context.Context, home string) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find own executable: %w", err)
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, exe, "start")
	cmd.Env = append(os.Environ(), "METACLAW_HOME="+home)
	cmd.Stdout, cmd.Stderr = &out, &out
	// The detached host gets its own stdio from `start`; this bounds the
	// wait should anything still hold the pipe.
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()
	// A host another process started meanwhile serves as well as ours.
	if waitSocket(ctx, protocol.SocketPath(home), 5*time.Second) {
		return nil
	}
	if runErr != nil {
		return fmt.Errorf("metaclaw start: %w: %s", runErr, lastLines(out.String(), 5))
	}
	return fmt.Errorf("metaclaw start returned but %s did not appear", protocol.SocketPath(home))
}

// lastLines keeps the end of a command's output for an error message.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "; ")
}

// waitSocket reports whether the host's socket exists within d.
func waitSocket(ctx context.Context, path string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return true
		}
		if !time.Now().Before(deadline) || ctx.Err() != nil {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// spawnStart runs `metaclaw start` detached and does not wait for it: a
// one-shot hook must answer within its own deadline.
func spawnStart(_ context.Context, home string) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer devnull.Close()
	cmd := exec.Command(exe, "start")
	cmd.Env = append(os.Environ(), "METACLAW_HOME="+home)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, devnull
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	return cmd.Process.Release()
}
