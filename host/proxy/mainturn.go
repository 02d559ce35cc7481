package proxy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/core"
)

// MainTurnResponder answers main turns in place of the upstream: in RL
// mode the user's own policy model does (host/rl/serve). The proxy keeps
// everything else: auth, identity, injection, truncation, translation to
// the client's format, streaming, recording.
type MainTurnResponder interface {
	// Serving reports whether main turns go to the responder now.
	Serving() bool
	// Respond answers one main turn as the upstream would: the response is
	// read exactly like the upstream's (its status, and a JSON or SSE body
	// in mt.API's format), so the client sees, and the host records, the
	// same as for any turn. ErrForward sends the turn upstream instead.
	Respond(ctx context.Context, mt MainTurn) (*http.Response, error)
}

// ErrForward tells the proxy to send a main turn to the upstream after all.
var ErrForward = errors.New("proxy: forward this turn upstream")

// MainTurn is a main turn as the upstream would receive it.
type MainTurn struct {
	// API is the format of Body and of the answer: the upstream's (llm.api).
	API apiformat.API
	// Body is the request as it would be forwarded (injected, truncated,
	// MetaClaw's fields removed).
	Body   []byte
	Stream bool
	Agent  string
	// Session is the turn's session id.
	Session string
	// Sampled links the recorded turn to the sample its answer came from
	// (listeners see it as store.Turn.SampleID). Call it before the answer's
	// body ends.
	Sampled func(sampleID int64)
}

// toResponder reports whether a main turn may go to the responder.
func (s *Server) toResponder(t *turn) bool {
	return s.o.MainTurns != nil && t.id.turnType == core.TurnMain
}

// send answers a forwarded request: from the responder for main turns it
// takes, else from the upstream.
func (s *Server) send(t *turn, req *http.Request, body []byte) (*http.Response, error) {
	if s.toResponder(t) {
		resp, err := s.o.MainTurns.Respond(req.Context(), MainTurn{
			API: s.o.UpstreamAPI, Body: body, Stream: t.req.stream, Agent: t.id.agent, Session: t.id.session,
			Sampled: func(id int64) { t.rec.SampleID = id },
		})
		if !errors.Is(err, ErrForward) {
			return resp, err
		}
		if s.o.NotConfigured != "" {
			return errorResponse(s.o.UpstreamAPI, http.StatusServiceUnavailable, s.o.NotConfigured), nil
		}
	}
	return s.client.Do(req)
}

// errorResponse is an upstream-shaped error answer.
func errorResponse(api apiformat.API, status int, msg string) *http.Response {
	return &http.Response{
		StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(apiformat.ErrorBody(api, status, msg))),
	}
}
