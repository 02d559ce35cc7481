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
// keeps arriving is progress. A Read costs two clock reads and no timer
// operation; one timer per body checks for a stalled read.
type idleReader struct {
	r      io.Reader
	d      time.Duration
	cancel context.CancelFunc
	timer  *time.Timer
	// readingSince is when the Read in progress started (unix ns); 0 when
	// no Read is in progress.
	readingSince atomic.Int64
	fired        atomic.Bool
	stopped      atomic.Bool
}

func newIdleReader(r io.Reader, d time.Duration, cancel context.CancelFunc) *idleReader {
	ir := &idleReader{r: r, d: d, cancel: cancel}
	ir.timer = time.AfterFunc(time.Hour, ir.check)
	ir.timer.Reset(d) // armed only once ir.timer is set: check uses it
	return ir
}

// check runs when a Read may have waited d: it cuts the upstream if one
// has, else looks again when the current Read (or a next one) could.
func (ir *idleReader) check() {
	if ir.stopped.Load() {
		return
	}
	next := ir.d
	if since := ir.readingSince.Load(); since != 0 {
		waited := time.Duration(time.Now().UnixNano() - since)
		if waited >= ir.d {
			ir.fired.Store(true)
			ir.cancel()
			return
		}
		next = ir.d - waited
	}
	ir.timer.Reset(next)
}

func (ir *idleReader) Read(p []byte) (int, error) {
	ir.readingSince.Store(time.Now().UnixNano())
	n, err := ir.r.Read(p)
	ir.readingSince.Store(0)
	return n, err
}

// stalled reports whether the upstream was cut for going silent.
func (ir *idleReader) stalled() bool { return ir.fired.Load() }

func (ir *idleReader) stop() {
	ir.stopped.Store(true)
	ir.timer.Stop()
}

// clientWriter bounds each write to the client (proxy ClientWriteTimeout),
// so a client that stops reading is let go, and blamed, instead of holding
// the relay forever. The connection's deadline is moved only when less than
// half of d is left, so a write may block between d/2 and d. release clears
// the deadline for the connection's next request.
type clientWriter struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	d        time.Duration
	deadline time.Time
}

func newClientWriter(w http.ResponseWriter, d time.Duration) *clientWriter {
	return &clientWriter{w: w, rc: http.NewResponseController(w), d: d}
}

func (cw *clientWriter) extend() {
	if now := time.Now(); cw.deadline.Sub(now) < cw.d/2 {
		cw.deadline = now.Add(cw.d)
		_ = cw.rc.SetWriteDeadline(cw.deadline)
	}
}

func (cw *clientWriter) Write(p []byte) (int, error) {
	cw.extend()
	return cw.w.Write(p)
}

func (cw *clientWriter) Flush() error {
	cw.extend()
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
