package faketinker

import (
	"net/http"
	"strconv"
)

// Fault is an injected failure. It hits the next Times requests (default 1)
// that match Endpoint (and Op, for retrieve_future).
type Fault struct {
	// Endpoint is the path under /api/v1/ ("forward_backward",
	// "retrieve_future", "asample", …); "" matches every POST.
	Endpoint string
	// Op restricts a retrieve_future fault to futures of one operation
	// ("forward_backward", "optim_step", "sample", "create_model", …).
	Op string
	// Status answers the request with this HTTP status: 408 and 429 carry
	// Tinker's queue-state body, others {"detail": …}. On retrieve_future
	// 410 also breaks the promise: polls of that request id keep answering
	// 410 and the client must submit the request again (same seq_id), which
	// yields a new request id for the same operation (never run twice).
	Status int
	// RetryAfter sets the Retry-After header (seconds).
	RetryAfter int
	// AfterApply (compute POSTs) accepts the request first, then answers
	// Status: the answer is lost, and only dedupe by X-Idempotency-Key or
	// seq_id keeps the client's retry from running the work twice.
	AfterApply bool
	// TryAgain (retrieve_future) answers 200 {"type":"try_again",…}.
	TryAgain bool
	// Category makes the submitted operation fail: its future answers
	// {"error": …, "category": Category} ("user", "server", "unknown").
	Category string
	// Times is how many requests it hits; 0 means 1.
	Times int
}

// Inject queues a fault.
func (s *Server) Inject(f Fault) {
	if f.Times <= 0 {
		f.Times = 1
	}
	s.mu.Lock()
	s.faults = append(s.faults, &f)
	s.mu.Unlock()
}

// PendingFaults is how many injected faults have not fired yet.
func (s *Server) PendingFaults() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, f := range s.faults {
		n += f.Times
	}
	return n
}

// takeFault consumes one hit of the first fault matching endpoint and op.
// For retrieve_future, onlyPoll selects poll faults (Status/TryAgain).
func (s *Server) takeFault(endpoint, op string, onlyPoll bool) *Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, f := range s.faults {
		if f.Endpoint != "" && f.Endpoint != endpoint {
			continue
		}
		if f.Endpoint == "" && endpoint == "retrieve_future" {
			continue // catch-all faults are for submissions
		}
		if f.Op != "" && f.Op != op {
			continue
		}
		if onlyPoll && f.Status == 0 && !f.TryAgain {
			continue
		}
		f.Times--
		if f.Times <= 0 {
			s.faults = append(s.faults[:i], s.faults[i+1:]...)
		}
		c := *f
		return &c
	}
	return nil
}

// writeFault answers with f's status.
func (s *Server) writeFault(w http.ResponseWriter, f *Fault, requestID string) {
	if f.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
	}
	switch f.Status {
	case http.StatusRequestTimeout, http.StatusTooManyRequests:
		state := "active"
		if f.Status == http.StatusTooManyRequests {
			state = "paused_rate_limit"
		}
		writeJSON(w, f.Status, map[string]any{"type": "try_again", "request_id": requestID, "queue_state": state})
	default:
		writeErr(w, errf(f.Status, "injected failure (HTTP %d)", f.Status))
	}
}
