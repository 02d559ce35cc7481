package faketinker

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// future is one request id handed to a client.
type future struct {
	id     string
	op     string // operation kind, as Fault.Op names it
	done   chan struct{}
	body   []byte // the result (or {"error","category"}) once done
	broken bool   // a 410 was answered: polls keep answering 410
}

// futureRef is the immediate answer to a compute POST.
type futureRef struct {
	RequestID string `json:"request_id"`
	ModelID   string `json:"model_id,omitempty"`
}

// work is one submitted operation. A re-submission after a 410 attaches a
// new future to the same work, so it never runs twice.
type work struct {
	kind    string
	seq     int
	key     string // what a re-submission must match
	run     func() (any, *opError)
	fail    string // injected failure category
	started bool
	done    bool
	body    []byte
	futs    []*future
}

// opError fails an operation: its future answers {"error", "category"}.
type opError struct {
	category string
	msg      string
}

type faultKey struct{}

// faultOf returns the submission fault (Category) riding on r's context.
func faultOf(ctx context.Context) string {
	if f, ok := ctx.Value(faultKey{}).(*Fault); ok && f != nil {
		return f.Category
	}
	return ""
}

// newFuture registers a future for w; called with s.mu held.
func (s *Server) newFuture(w *work) *future {
	f := &future{id: s.newID("req-"), op: w.kind, done: make(chan struct{})}
	s.futures[f.id] = f
	w.futs = append(w.futs, f)
	if w.done {
		f.body = w.body
		close(f.done)
	}
	return f
}

// currentFuture returns w's live future, or a new one if the last was broken
// (the client re-submitted after a 410); called with s.mu held.
func (s *Server) currentFuture(w *work) *future {
	if n := len(w.futs); n > 0 && !w.futs[n-1].broken {
		return w.futs[n-1]
	}
	return s.newFuture(w)
}

// execute runs w (outside s.mu) and completes its futures.
func (s *Server) execute(w *work) {
	if d := s.opts.Latency; d > 0 {
		select {
		case <-time.After(d):
		case <-s.closed:
			return
		}
	}
	var v any
	var oerr *opError
	if w.fail != "" {
		oerr = &opError{category: w.fail, msg: "injected operation failure"}
	} else {
		v, oerr = w.run()
	}
	if oerr != nil {
		v = map[string]string{"error": oerr.msg, "category": oerr.category}
	}
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"error": "encode result: " + err.Error(), "category": "server"})
	}
	s.mu.Lock()
	w.done, w.body = true, b
	s.counts["op:"+w.kind]++
	for _, f := range w.futs {
		if f.body == nil {
			f.body = b
			close(f.done)
		}
	}
	s.mu.Unlock()
}

// runAsync executes w on its own goroutine (operations outside a model's
// FIFO: create_model, sampling, unload).
func (s *Server) runAsync(w *work) {
	w.started = true
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.execute(w)
	}()
}

func (s *Server) retrieveFuture(w http.ResponseWriter, r *http.Request, body []byte) {
	var req retrieveFutureReq
	if herr := decodeStrict(body, &req); herr != nil {
		writeErr(w, herr)
		return
	}
	if s.opts.Flavor == MinT && req.AllowMetadataOnly != nil {
		writeErr(w, errf(http.StatusBadRequest, `invalid request body: json: unknown field "allow_metadata_only"`))
		return
	}
	s.mu.Lock()
	f := s.futures[req.RequestID]
	s.mu.Unlock()
	if f == nil {
		writeErr(w, errf(http.StatusNotFound, "request %q not found", req.RequestID))
		return
	}
	if fault := s.takeFault("retrieve_future", f.op, true); fault != nil {
		switch {
		case fault.TryAgain:
			writeJSON(w, http.StatusOK, map[string]any{"type": "try_again", "request_id": f.id, "queue_state": "active"})
			return
		case fault.Status == http.StatusGone:
			s.mu.Lock()
			f.broken = true
			s.mu.Unlock()
		default:
			s.writeFault(w, fault, f.id)
			return
		}
	}
	s.mu.Lock()
	broken := f.broken
	s.mu.Unlock()
	if broken {
		writeErr(w, errf(http.StatusGone, "promise for request %s expired; submit the request again", f.id))
		return
	}
	hold := s.opts.LongPoll
	if s.opts.Flavor == MinT {
		hold = 0
	}
	timer := time.NewTimer(hold)
	defer timer.Stop()
	select {
	case <-f.done:
	case <-timer.C:
	case <-r.Context().Done():
		return
	case <-s.closed:
	}
	select {
	case <-f.done:
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(f.body)
	default:
		writeJSON(w, http.StatusRequestTimeout, map[string]any{"type": "try_again", "request_id": f.id, "queue_state": "active"})
	}
}
