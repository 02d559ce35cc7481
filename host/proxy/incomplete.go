package proxy

import (
	"bytes"
	"encoding/json"
	"errors"
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

// checkAnswer tells a 200 answer that is a response of the upstream's format
// (OpenAI: an object with "choices"; Anthropic: a "message" with
// "content") from anything else: an HTML page from a captive proxy, a
// truncated body, or an error object some gateways send with 200.
func checkAnswer(api apiformat.API, raw []byte) error {
	var probe struct {
		Choices json.RawMessage `json:"choices"`
		Content json.RawMessage `json:"content"`
		Type    string          `json:"type"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return err
	}
	if e := bytes.TrimSpace(probe.Error); len(e) > 0 && string(e) != "null" {
		return errors.New("it carries an error: " + truncateText(string(e), 300))
	}
	isArray := func(b json.RawMessage) bool { b = bytes.TrimSpace(b); return len(b) > 0 && b[0] == '[' }
	if api == apiformat.Anthropic {
		if probe.Type != "message" && !isArray(probe.Content) {
			return errors.New(`no "content" array`)
		}
		return nil
	}
	if !isArray(probe.Choices) {
		return errors.New(`no "choices" array`)
	}
	return nil
}
