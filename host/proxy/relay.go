package proxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// idleReader cuts an upstream body that stops making progress: each Read
// may wait at most d for bytes. Only time spent waiting on the upstream
// counts, never time spent relaying to a slow client, and a long line that
// keeps arriving is progress.
type idleReader struct {
	r     io.Reader
	d     time.Duration
	timer *time.Timer
	fired atomic.Bool
}

func newIdleReader(r io.Reader, d time.Duration, cancel context.CancelFunc) *idleReader {
	ir := &idleReader{r: r, d: d}
	ir.timer = time.AfterFunc(d, func() {
		ir.fired.Store(true)
		cancel()
	})
	ir.timer.Stop()
	return ir
}

func (ir *idleReader) Read(p []byte) (int, error) {
	ir.timer.Reset(ir.d)
	n, err := ir.r.Read(p)
	ir.timer.Stop()
	return n, err
}

// stalled reports whether the upstream was cut for going silent.
func (ir *idleReader) stalled() bool { return ir.fired.Load() }

func (ir *idleReader) stop() { ir.timer.Stop() }

// clientWriter bounds each write to the client (proxy ClientWriteTimeout),
// so a client that stops reading is let go, and blamed, instead of holding
// the relay forever. release clears the deadline for the connection's next
// request.
type clientWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
	d  time.Duration
}

func newClientWriter(w http.ResponseWriter, d time.Duration) *clientWriter {
	return &clientWriter{w: w, rc: http.NewResponseController(w), d: d}
}

func (cw *clientWriter) Write(p []byte) (int, error) {
	_ = cw.rc.SetWriteDeadline(time.Now().Add(cw.d))
	return cw.w.Write(p)
}

func (cw *clientWriter) Flush() error {
	_ = cw.rc.SetWriteDeadline(time.Now().Add(cw.d))
	return cw.rc.Flush()
}

func (cw *clientWriter) release() { _ = cw.rc.SetWriteDeadline(time.Time{}) }

// relayOversized passes on an answer larger than proxy.max_answer_mb as it
// arrives, holding at most one read buffer besides the head already read:
// it is neither parsed nor translated nor stored (the turn records why).
// The last bytes wait until the turn is durable, like every answer.
func (s *Server) relayOversized(ctx context.Context, w http.ResponseWriter, t *turn, resp *http.Response, head []byte, body *idleReader) {
	limitMsg := fmt.Sprintf("upstream answer is larger than proxy.max_answer_mb (%d MiB)", s.o.MaxAnswerBytes>>20)
	if t.clientAPI != s.o.UpstreamAPI {
		s.fail(w, t, http.StatusBadGateway, limitMsg+" and would have to be translated; raise proxy.max_answer_mb or ask for a streamed answer")
		return
	}
	t.ttfb = time.Since(t.start)
	t.rec.Status = resp.StatusCode
	w.Header().Set("Content-Type", "application/json")
	if resp.ContentLength > 0 && !resp.Uncompressed {
		w.Header().Set("Content-Length", strconv.FormatInt(resp.ContentLength, 10))
	}
	cw := newClientWriter(w, s.o.ClientWriteTimeout)
	defer cw.release()
	w.WriteHeader(resp.StatusCode)
	if _, err := cw.Write(head); err != nil {
		t.rec.Status, t.rec.Error = statusClientClosed, "client closed the request"
		return
	}
	total := int64(len(head))
	held := make([]byte, 0, 256<<10)
	buf := make([]byte, 256<<10)
	for {
		n, err := io.ReadFull(body, buf)
		if n > 0 {
			if len(held) > 0 {
				if _, werr := cw.Write(held); werr != nil {
					t.rec.Status, t.rec.Error = statusClientClosed, "client closed the request"
					return
				}
			}
			held = append(held[:0], buf[:n]...)
			total += int64(n)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			break
		}
		if err != nil {
			switch {
			case body.stalled():
				t.rec.Status, t.rec.Error = http.StatusGatewayTimeout, fmt.Sprintf("upstream stopped sending its answer for %s (llm.timeout_seconds)", s.o.UpstreamTimeout)
			case ctx.Err() != nil:
				t.rec.Status, t.rec.Error = statusClientClosed, "client closed the request"
			default:
				t.rec.Status, t.rec.Error = http.StatusBadGateway, "upstream answer was cut off: "+err.Error()
			}
			// The status line is gone: abort the connection so the client
			// sees a broken answer, not a short one (the deferred finish
			// records the turn on the way out).
			panic(http.ErrAbortHandler)
		}
	}
	t.rec.Error = fmt.Sprintf("%s: %d bytes relayed without being parsed or stored", limitMsg, total)
	s.observe(ctx, t)
	cw.Write(held)
}
