package protocol

import (
	"context"
	"errors"
	"io"
	"log"
	"net"
	"time"

	"github.com/sourcegraph/jsonrpc2"
)

// Client calls a JSON-RPC server over one connection (the host socket, or a
// plugin process's stdio in tests).
type Client struct {
	conn *jsonrpc2.Conn
}

// ErrClosed means the connection is gone.
var ErrClosed = jsonrpc2.ErrClosed

// Dial connects to the host socket.
func Dial(ctx context.Context, socket string) (*Client, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, err
	}
	return NewClient(c, c, c, 0), nil
}

// NewClient speaks JSON-RPC on r/w; Close closes c. Requests from the server
// are refused (method not found).
func NewClient(r io.Reader, w io.Writer, c io.Closer, maxMessage int) *Client {
	stream := NewStream(r, w, c, StreamOptions{MaxMessage: maxMessage})
	refuse := handlerFunc(func(ctx context.Context, c *jsonrpc2.Conn, req *jsonrpc2.Request) {
		if !req.Notif {
			_ = c.ReplyWithError(ctx, req.ID, Errorf(CodeMethodNotFound, "the client serves no methods"))
		}
	})
	conn := jsonrpc2.NewConn(context.Background(), stream, jsonrpc2.AsyncHandler(refuse),
		jsonrpc2.SetLogger(log.New(io.Discard, "", 0)))
	return &Client{conn: conn}
}

// Call sends a request and decodes the result into result (may be nil).
// A context without deadline gets 30s.
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	err := c.conn.Call(ctx, method, params, result)
	if err != nil && errors.Is(err, io.ErrUnexpectedEOF) {
		return ErrClosed
	}
	return err
}

// Notify sends a notification.
func (c *Client) Notify(ctx context.Context, method string, params any) error {
	return c.conn.Notify(ctx, method, params)
}

// Done closes when the connection is gone.
func (c *Client) Done() <-chan struct{} { return c.conn.DisconnectNotify() }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }
