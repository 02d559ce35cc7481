package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/metaclaw-go/metaclaw/host/rpc/protocol"
)

// DefaultMaxLine bounds one inbound message (the SDK's own default).
const DefaultMaxLine = mcp.DefaultMaxLineLength

// Transport is newline-delimited JSON-RPC over a reader and a writer, as
// mcp.StdioTransport, except that one bad line never ends the session: a
// line that is not JSON, not a JSON-RPC object (a batch, a bare value), too
// deep or larger than MaxLine is answered with a JSON-RPC error and the
// next line is read, the way `metaclaw plugin serve` does (it shares the
// line reader, host/rpc/protocol.Stream).
type Transport struct {
	In  io.Reader
	Out io.Writer
	// MaxLine bounds one message in bytes (default DefaultMaxLine); a longer
	// one is skipped without being held in memory.
	MaxLine int
	// Log receives one line per rejected message (optional).
	Log func(msg string)
}

// Connect implements mcp.Transport.
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	max := t.MaxLine
	if max <= 0 {
		max = DefaultMaxLine
	}
	c := &lineConn{
		s:        protocol.NewStream(t.In, t.Out, nil, protocol.StreamOptions{MaxMessage: max, Server: true, Log: t.Log}),
		incoming: make(chan readResult),
		closed:   make(chan struct{}),
		log:      t.Log,
	}
	go c.readLoop()
	return c, nil
}

type readResult struct {
	msg jsonrpc.Message
	err error
}

type lineConn struct {
	s         *protocol.Stream
	incoming  chan readResult
	closed    chan struct{}
	closeOnce sync.Once
	log       func(string)
}

// readLoop decodes well-formed lines (the stream has already answered the
// malformed ones) and answers what the SDK's decoder still refuses.
func (c *lineConn) readLoop() {
	for {
		var raw json.RawMessage
		err := c.s.ReadObject(&raw)
		var msg jsonrpc.Message
		if err == nil {
			if msg, err = jsonrpc.DecodeMessage(raw); err != nil {
				c.reject(raw, err)
				continue
			}
		}
		select {
		case c.incoming <- readResult{msg, err}:
		case <-c.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

func (c *lineConn) reject(raw json.RawMessage, err error) {
	if c.log != nil {
		c.log("invalid MCP message: " + err.Error())
	}
	id, _, _, _ := protocol.Check(raw)
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	_ = c.s.WriteObject(map[string]any{"jsonrpc": "2.0", "id": id,
		"error": map[string]any{"code": jsonrpc.CodeInvalidRequest, "message": "invalid request: " + err.Error()}})
}

// Read implements mcp.Connection.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case r := <-c.incoming:
		return r.msg, r.err
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write implements mcp.Connection; lines are written whole, so answers and
// rejections never interleave.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	select {
	case <-c.closed:
		return errors.New("connection closed")
	default:
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.s.WriteObject(json.RawMessage(data))
}

// Close implements mcp.Connection.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// SessionID implements mcp.Connection.
func (c *lineConn) SessionID() string { return "" }
