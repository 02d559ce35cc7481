package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/sourcegraph/jsonrpc2"

	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// HandlerFunc serves one method. params is never nil ("{}" when absent).
// Return a *jsonrpc2.Error to choose the code; any other error is reported as
// CodeInternal.
type HandlerFunc func(ctx context.Context, params json.RawMessage) (any, error)

// Mux routes JSON-RPC methods to handlers with bounded concurrency, a
// deadline per request and panic recovery.
type Mux struct {
	methods map[string]HandlerFunc
	// MaxInFlight bounds concurrently running requests per connection
	// (default 16); a request beyond it is answered CodeBusy at once.
	MaxInFlight int
	// Timeout bounds one request (default 30s).
	Timeout time.Duration
	// OnPanic is told about recovered panics (optional).
	OnPanic func(method string, v any)
}

// NewMux returns an empty mux.
func NewMux() *Mux { return &Mux{methods: map[string]HandlerFunc{}} }

// Handle registers a method.
func (m *Mux) Handle(method string, h HandlerFunc) { m.methods[method] = h }

// Methods lists registered method names.
func (m *Mux) Methods() []string {
	out := make([]string, 0, len(m.methods))
	for k := range m.methods {
		out = append(out, k)
	}
	return out
}

// Conn is one served connection.
type Conn struct {
	*jsonrpc2.Conn
	inflight sync.WaitGroup
}

// Wait blocks until in-flight requests have finished or the timeout passes.
func (c *Conn) Wait(timeout time.Duration) bool {
	done := make(chan struct{})
	go func() { c.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-time.After(timeout):
		return false
	}
}

// ServeOptions tune one served connection.
type ServeOptions struct {
	MaxMessage int
	// Drain bounds how long in-flight requests may still answer after the
	// peer closed its side (default 2s).
	Drain time.Duration
	// Log receives dropped-message notes (optional).
	Log func(msg string)
}

// Serve runs the mux on rwc until the peer goes away. The returned Conn's
// DisconnectNotify closes when it does.
func (m *Mux) Serve(ctx context.Context, r io.Reader, w io.Writer, c io.Closer, o ServeOptions) *Conn {
	if o.Drain <= 0 {
		o.Drain = 2 * time.Second
	}
	conn := &Conn{}
	stream := NewStream(r, w, c, StreamOptions{
		MaxMessage: o.MaxMessage, Server: true, Log: o.Log,
		BeforeEOF: func() { conn.Wait(o.Drain) },
	})
	logger := log.New(io.Discard, "", 0)
	if o.Log != nil {
		logger = log.New(logWriter(o.Log), "", 0)
	}
	conn.Conn = jsonrpc2.NewConn(ctx, stream, m.handler(conn), jsonrpc2.SetLogger(logger))
	return conn
}

type logWriter func(string)

func (l logWriter) Write(p []byte) (int, error) {
	l(string(bytes.TrimSpace(p)))
	return len(p), nil
}

func (m *Mux) handler(conn *Conn) jsonrpc2.Handler {
	limit := m.MaxInFlight
	if limit <= 0 {
		limit = 16
	}
	sem := make(chan struct{}, limit)
	timeout := m.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	return handlerFunc(func(ctx context.Context, c *jsonrpc2.Conn, req *jsonrpc2.Request) {
		select {
		case sem <- struct{}{}:
		default:
			if !req.Notif {
				_ = c.ReplyWithError(ctx, req.ID, Errorf(CodeBusy, "busy: more than %d requests in flight", limit))
			}
			return
		}
		conn.inflight.Add(1)
		go func() {
			defer conn.inflight.Done()
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), timeout)
			result, err := m.dispatch(rctx, req)
			cancel()
			<-sem // free the slot before answering: an answered request is no longer in flight
			if req.Notif {
				return
			}
			if err != nil {
				_ = c.ReplyWithError(ctx, req.ID, toRPCError(err))
				return
			}
			if err := c.Reply(ctx, req.ID, result); err != nil && !errors.Is(err, jsonrpc2.ErrClosed) {
				_ = c.ReplyWithError(ctx, req.ID, Errorf(CodeInternal, "encode result: %v", err))
			}
		}()
	})
}

func (m *Mux) dispatch(ctx context.Context, req *jsonrpc2.Request) (result any, err error) {
	h, ok := m.methods[req.Method]
	if !ok {
		return nil, Errorf(CodeMethodNotFound, "method not found: %q", textclip.Ellipsis(req.Method, 100))
	}
	params := json.RawMessage("{}")
	if req.Params != nil && string(bytes.TrimSpace(*req.Params)) != "null" {
		params = *req.Params
	}
	defer func() {
		if r := recover(); r != nil {
			if m.OnPanic != nil {
				m.OnPanic(req.Method, r)
			}
			result, err = nil, Errorf(CodeInternal, "internal error in %s", req.Method)
		}
	}()
	return h(ctx, params)
}

func toRPCError(err error) *jsonrpc2.Error {
	var e *jsonrpc2.Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return Errorf(CodeTimeout, "timed out")
	}
	return Errorf(CodeInternal, "%v", err)
}

type handlerFunc func(context.Context, *jsonrpc2.Conn, *jsonrpc2.Request)

func (f handlerFunc) Handle(ctx context.Context, c *jsonrpc2.Conn, r *jsonrpc2.Request) { f(ctx, c, r) }

// Decode unmarshals params into v, mapping failures to CodeInvalidParams.
// Unknown fields are ignored (clients may be newer than the host).
func Decode(params json.RawMessage, v any) error {
	p := bytes.TrimSpace(params)
	if len(p) == 0 || string(p) == "null" {
		p = []byte("{}")
	}
	if p[0] != '{' {
		return Errorf(CodeInvalidParams, "invalid params: expected an object")
	}
	if err := json.Unmarshal(p, v); err != nil {
		return Errorf(CodeInvalidParams, "invalid params: %s", describe(err))
	}
	return nil
}

func describe(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		// Drop Go names of embedded structs ("Identity.agent" → "agent").
		var keep []string
		for _, part := range strings.Split(te.Field, ".") {
			if part != "" && !unicode.IsUpper(rune(part[0])) {
				keep = append(keep, part)
			}
		}
		field := strings.Join(keep, ".")
		if field == "" {
			field = "(top level)"
		}
		return fmt.Sprintf("field %s must be %s, not %s", field, te.Type.String(), te.Value)
	}
	return err.Error()
}
