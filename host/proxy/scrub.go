package proxy

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/metaclaw-go/metaclaw/host/safety"
)

// What the proxy stores and relays is scrubbed; what it forwards is not:
// the upstream gets the client's request as sent, and the client gets the
// upstream's answer as sent, but
//   - a stored turn (request body, answer, reasoning, tool calls, error) has
//     its secrets redacted (host/safety), so a password pasted once does not
//     sit in turns.request_json of every later turn of the conversation;
//   - the upstream key never leaves in an error: an upstream that echoes the
//     Authorization header it received has the key replaced before the
//     error reaches the client, the log or turns.error;
//   - a network error names its cause, not the upstream's address.

// keyRedacted replaces the upstream key in relayed errors.
const keyRedacted = "[REDACTED:upstream_key]"

// redacted is the request body's redaction and the secrets it found.
type redacted struct {
	body  []byte
	found []string
}

// scrubRequestAside redacts the request body on another goroutine while
// the upstream works on the turn: the stored copy must be redacted before
// the turn is journaled, which is before the client gets its answer, and
// the request (often 50 KB of history) is known long before the answer.
// scrubTurn collects the result.
func (s *Server) scrubRequestAside(t *turn) {
	if t.passThrough || t.scrubbed != nil || t.body == nil {
		return
	}
	ch := make(chan redacted, 1)
	t.scrubbed = ch
	body := t.body
	go func() {
		red, found := safety.RedactJSON(body)
		ch <- redacted{red, found}
	}()
}

// scrubTurn redacts the stored copy of a turn.
func (s *Server) scrubTurn(t *turn) {
	rec := t.rec
	// t.body holds RequestJSON's bytes: no copy each way when (as on
	// almost every turn) there is nothing to redact.
	body := t.body
	if body == nil {
		body = []byte(rec.RequestJSON)
	}
	var req []byte
	var found []string
	if t.scrubbed != nil {
		r := <-t.scrubbed
		req, found = r.body, r.found
	} else {
		req, found = safety.RedactJSON(body)
	}
	if len(found) > 0 || !bytes.Equal(req, body) {
		rec.RequestJSON = string(req)
	}
	var more []string
	rec.ResponseText, more = safety.RedactCollect(rec.ResponseText)
	found = append(found, more...)
	rec.ResponseText = safety.ScrubValues(rec.ResponseText, found)
	rec.Reasoning, _ = safety.RedactCollect(rec.Reasoning)
	rec.Reasoning = safety.ScrubValues(rec.Reasoning, found)
	if rec.ToolCallsJSON != "" {
		calls, _ := safety.RedactJSON([]byte(rec.ToolCallsJSON))
		rec.ToolCallsJSON = string(calls)
	}
	rec.Error, _ = safety.Redact(s.scrubKeys(t, rec.Error))
}

// scrubKey replaces the key sent upstream (llm.api_key, or the client's
// own key passed through) and the proxy key in b.
func (s *Server) scrubKey(t *turn, b []byte) []byte {
	keys := s.secretKeys(t)
	if len(t.secretBytes) != len(keys) {
		t.secretBytes = t.secretBytes[:0]
		for _, k := range keys {
			t.secretBytes = append(t.secretBytes, []byte(k))
		}
	}
	for i, k := range t.secretBytes {
		if keys[i] != string(k) {
			k = []byte(keys[i]) // the keys changed (sentKey set since)
			t.secretBytes[i] = k
		}
		if bytes.Contains(b, k) {
			b = bytes.ReplaceAll(b, k, []byte(keyRedacted))
		}
	}
	return b
}

func (s *Server) scrubKeys(t *turn, v string) string {
	for _, k := range s.secretKeys(t) {
		v = strings.ReplaceAll(v, k, keyRedacted)
	}
	return v
}

// secretKeys are the keys that must never be echoed (values shorter than
// 8 bytes would match ordinary text and are skipped); kept with the turn
// once the key sent upstream is known.
func (s *Server) secretKeys(t *turn) []string {
	if t.secrets != nil {
		return t.secrets
	}
	out := []string{}
	for _, k := range []string{t.sentKey, s.o.UpstreamKey, s.o.APIKey} {
		if len(k) >= 8 && (len(out) == 0 || out[len(out)-1] != k) {
			out = append(out, k)
		}
	}
	if t.sentKey != "" {
		t.secrets = out
	}
	return out
}

// sentKey is the credential an upstream request carries.
func sentKey(req *http.Request) string {
	if k := req.Header.Get("x-api-key"); k != "" {
		return k
	}
	v := req.Header.Get("Authorization")
	if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		return strings.TrimSpace(v[7:])
	}
	return v
}

// netCause names what went wrong with a connection without the address it
// was going to (the upstream may sit on an internal network).
func netCause(err error) string {
	var dns *net.DNSError
	switch {
	case errors.As(err, &dns):
		if dns.IsNotFound {
			return "the upstream host name does not resolve"
		}
		return "the upstream host name could not be resolved"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return "no route to the upstream host"
	case strings.Contains(err.Error(), "tls:") || strings.Contains(err.Error(), "x509:"):
		return "TLS handshake with the upstream failed"
	case strings.Contains(err.Error(), "EOF"):
		return "the upstream closed the connection"
	}
	var op *net.OpError
	var ue *url.Error
	if msg := err.Error(); !errors.As(err, &op) && !errors.As(err, &ue) && !strings.Contains(msg, "://") && !strings.Contains(msg, "tcp") {
		return msg // not about a connection (a line too long, bad data): no address in it
	}
	return "network error"
}
