package proxy

import (
	"io"
	"net/http"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
)

// An upstream stream that reaches its end without the final event ([DONE]
// for OpenAI, message_stop for Anthropic) was cut off: the client must not
// take the partial answer for a whole one, and the turn must not be learned
// from. When the answer itself is complete (a stop reason arrived) and only
// the end marker is missing, the marker is supplied instead.

// incompleteStreamMsg is the error of a cut-off stream.
const incompleteStreamMsg = "upstream stream ended before its final event (no [DONE] / message_stop): the answer is incomplete"

// endWithoutTerminal finishes a stream whose upstream reached EOF without a
// terminal event; write is relayStream's writer (it records the turn on a
// terminal event).
func (s *Server) endWithoutTerminal(w io.Writer, t *turn, tr apiformat.StreamTranslator, acc apiformat.Accumulator, write func(apiformat.Event) bool) {
	if acc.Summary().StopReason != "" {
		switch {
		case tr != nil:
			for _, e := range tr.Finish() {
				if !write(e) {
					return
				}
			}
		case t.clientAPI == apiformat.OpenAI:
			write(apiformat.Event{Data: []byte("[DONE]")})
		default:
			write(apiformat.Event{Name: "message_stop", Data: []byte(`{"type":"message_stop"}`)})
		}
		return
	}
	t.rec.Status, t.rec.Error = http.StatusBadGateway, incompleteStreamMsg
	s.writeStreamError(w, t.clientAPI, http.StatusBadGateway, incompleteStreamMsg)
}

// unparseableAnswer fails a 200 answer that is not a valid response of the
// upstream's format: the client gets an error in its own format, and the
// turn is recorded as failed (so nothing learns from it).
func (s *Server) unparseableAnswer(w http.ResponseWriter, t *turn, err error) {
	s.fail(w, t, http.StatusBadGateway, "upstream answered 200 with a body that is not a valid "+string(s.o.UpstreamAPI)+" response: "+err.Error())
}
