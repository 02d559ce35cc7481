package plugin

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/rpc/protocol"
	"github.com/metaclaw-go/metaclaw/host/version"
)

// Clients `metaclaw plugin serve` knows by name. Any other name gets the
// generic methods only.
const (
	ClientOpenClaw = "openclaw"
	ClientPicoClaw = "picoclaw"
)

// ServeOptions configure `metaclaw plugin serve`.
type ServeOptions struct {
	Client string
	// Agent is the default agent id when a call names none.
	Agent string
	Relay *Relay
	Log   zerolog.Logger
	// MaxMessage bounds one line (default protocol.DefaultMaxMessage).
	MaxMessage int
	// Drain bounds how long in-flight calls may finish after stdin closes
	// (default 1500ms: PicoClaw kills its hook process 2s after closing it).
	Drain time.Duration
}

// MethodInitialize is served by plugin processes only: the shim sends its
// client name and configuration (OpenClaw: plugins.entries.<id>.config).
const MethodInitialize = "initialize"

// InitializeResult answers initialize.
type InitializeResult struct {
	Server  string   `json:"server"`
	Version string   `json:"version"`
	Client  string   `json:"client"`
	Methods []string `json:"methods"`
}

// server is one `plugin serve` process.
type server struct {
	o        ServeOptions
	relay    *Relay
	mux      *protocol.Mux
	stop     chan struct{}
	stopOnce sync.Once

	oc *openclaw
	pc *picoclaw
}

// Serve runs the stdio server until in closes or a shutdown call arrives.
func Serve(ctx context.Context, in io.Reader, out io.Writer, o ServeOptions) error {
	if o.Drain <= 0 {
		o.Drain = 1500 * time.Millisecond
	}
	if o.Agent == "" {
		o.Agent = defaultAgent(o.Client)
	}
	s := &server{o: o, relay: o.Relay, mux: protocol.NewMux(), stop: make(chan struct{})}
	s.mux.MaxInFlight = 32
	s.mux.Timeout = 60 * time.Second
	s.mux.OnPanic = func(method string, v any) {
		o.Log.Error().Str("method", method).Interface("panic", v).Msg("plugin handler panicked")
	}
	s.generic()
	switch o.Client {
	case ClientOpenClaw:
		s.oc = newOpenClaw(s.relay, o.Log)
		s.oc.routes(s.mux)
	case ClientPicoClaw:
		s.pc = newPicoClaw(s.relay, o.Agent, o.Log)
		s.pc.routes(s.mux)
	}
	// Connect (and start the host if needed) right away, so that the first
	// turn does not pay for it; replay what earlier processes spooled.
	go func() {
		if s.relay.off() {
			return // `metaclaw disable`: never start the host
		}
		cctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var pong protocol.PingResult
		if err := s.relay.Host.Call(cctx, protocol.MethodPing, nil, &pong); err != nil {
			o.Log.Info().Err(err).Msg("host not reachable yet; turns proceed without injection, events are spooled")
		}
	}()

	conn := s.mux.Serve(ctx, in, out, nopCloser{}, protocol.ServeOptions{
		MaxMessage: o.MaxMessage, Drain: o.Drain,
		Log: func(msg string) { o.Log.Debug().Str("part", "stdio").Msg(msg) },
	})
	select {
	case <-conn.DisconnectNotify():
	case <-s.stop:
		conn.Wait(o.Drain)
		conn.Close()
	case <-ctx.Done():
		conn.Wait(o.Drain)
		conn.Close()
	}
	s.relay.Close(500 * time.Millisecond)
	return nil
}

type nopCloser struct{}

func (nopCloser) Close() error { return nil }

// DefaultAgent is $METACLAW_AGENT, else the client name, else "default".
func DefaultAgent(client string) string { return defaultAgent(client) }

func defaultAgent(client string) string {
	if v := strings.TrimSpace(os.Getenv("METACLAW_AGENT")); v != "" {
		return v
	}
	if client == "" {
		return "default"
	}
	return client
}

// withDefaults fills the identity a call left empty.
func (s *server) withDefaults(id *protocol.Identity) {
	if id.Agent == "" {
		id.Agent = s.o.Agent
	}
	if id.Client == "" {
		id.Client = s.o.Client
	}
}

// generic registers the host's methods, relayed with the fail-open policy.
func (s *server) generic() {
	m := s.mux
	m.Handle(MethodInitialize, func(ctx context.Context, raw json.RawMessage) (any, error) {
		var p struct {
			Client string          `json:"client"`
			Config json.RawMessage `json:"config"`
		}
		if err := protocol.Decode(raw, &p); err != nil {
			return nil, err
		}
		if s.oc != nil && len(p.Config) > 0 {
			if err := s.oc.configure(p.Config); err != nil {
				return nil, err
			}
		}
		methods := s.mux.Methods()
		sort.Strings(methods)
		return InitializeResult{Server: "metaclaw", Version: version.Version, Client: s.o.Client, Methods: methods}, nil
	})
	m.Handle(protocol.MethodPing, func(ctx context.Context, _ json.RawMessage) (any, error) {
		cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		up := !s.relay.off() && s.relay.Host.Call(cctx, protocol.MethodPing, nil, nil) == nil
		return protocol.PingResult{Pong: true, Version: version.Version, PID: os.Getpid(), Host: &up}, nil
	})
	m.Handle(protocol.MethodStatus, func(ctx context.Context, _ json.RawMessage) (any, error) {
		var res json.RawMessage
		if err := s.relay.Call(ctx, protocol.MethodStatus, nil, &res); err != nil {
			return map[string]any{"host": map[string]any{"running": false, "error": err.Error()},
				"plugin": s.pluginStatus()}, nil
		}
		var obj map[string]any
		if json.Unmarshal(res, &obj) == nil && obj != nil {
			obj["plugin"] = s.pluginStatus()
			return obj, nil
		}
		return res, nil
	})
	m.Handle(protocol.MethodContext, func(ctx context.Context, raw json.RawMessage) (any, error) {
		var p protocol.ContextParams
		if err := protocol.Decode(raw, &p); err != nil {
			return nil, err
		}
		s.withDefaults(&p.Identity)
		return s.relay.Context(ctx, p), nil
	})
	relayed := func(method string) protocol.HandlerFunc {
		return func(ctx context.Context, raw json.RawMessage) (any, error) {
			var id protocol.Identity
			if err := protocol.Decode(raw, &id); err != nil {
				return nil, err
			}
			var obj map[string]json.RawMessage
			if err := protocol.Decode(raw, &obj); err != nil {
				return nil, err
			}
			setDefault(obj, "agent", s.o.Agent)
			setDefault(obj, "client", s.o.Client)
			var res json.RawMessage
			if err := s.relay.Call(ctx, method, obj, &res); err != nil {
				return nil, err
			}
			return res, nil
		}
	}
	m.Handle(protocol.MethodTraceRegister, relayed(protocol.MethodTraceRegister))
	m.Handle(protocol.MethodSessionStart, relayed(protocol.MethodSessionStart))
	m.Handle(protocol.MethodToolsList, relayed(protocol.MethodToolsList))
	m.Handle(protocol.MethodToolsCall, relayed(protocol.MethodToolsCall))
	delivered := func(method string) protocol.HandlerFunc {
		return func(ctx context.Context, raw json.RawMessage) (any, error) {
			if err := protocol.Decode(raw, typedParams(method)); err != nil {
				return nil, err
			}
			var obj map[string]json.RawMessage
			if err := protocol.Decode(raw, &obj); err != nil {
				return nil, err
			}
			setDefault(obj, "agent", s.o.Agent)
			setDefault(obj, "client", s.o.Client)
			if method == protocol.MethodObserve {
				if _, ok := obj["at"]; !ok {
					at, _ := json.Marshal(time.Now().UTC())
					obj["at"] = at
				}
			}
			d, err := s.relay.Deliver(ctx, method, obj)
			if err != nil {
				return nil, err
			}
			return d, nil
		}
	}
	for _, method := range []string{protocol.MethodObserve, protocol.MethodAgentEnd, protocol.MethodSessionEnd, protocol.MethodSessionReset} {
		m.Handle(method, delivered(method))
	}
	m.Handle(protocol.MethodShutdown, func(ctx context.Context, _ json.RawMessage) (any, error) {
		// Stops this plugin process only; the host is shared by every client.
		time.AfterFunc(50*time.Millisecond, func() { s.stopOnce.Do(func() { close(s.stop) }) })
		return protocol.ShutdownResult{OK: true, Stopping: true, Reason: "this plugin process exits; the host keeps running"}, nil
	})
}

func (s *server) pluginStatus() map[string]any {
	return map[string]any{
		"client": s.o.Client, "pid": os.Getpid(), "version": version.Version,
		"host_connected": s.relay.Host.Connected(), "spooled": s.relay.Spool.Len(), "spool_dropped": s.relay.Spool.Dropped(),
	}
}

func setDefault(obj map[string]json.RawMessage, key, value string) {
	if value == "" {
		return
	}
	if v, ok := obj[key]; ok && string(v) != `""` && string(v) != "null" {
		return
	}
	b, _ := json.Marshal(value)
	obj[key] = b
}

// typedParams is the parameter type of an event method, to reject wrong
// types here rather than spool them.
func typedParams(method string) any {
	switch method {
	case protocol.MethodObserve:
		return &protocol.ObserveParams{}
	case protocol.MethodAgentEnd:
		return &protocol.AgentEndParams{}
	default:
		return &protocol.SessionEndParams{}
	}
}
