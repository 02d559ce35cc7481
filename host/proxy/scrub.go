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
	_, keys := s.secretKeys(t)
	for _, k := range keys {
		if bytes.Contains(b, k) {
			b = bytes.ReplaceAll(b, k, []byte(keyRedacted))
		}
	}
	return b
}

func (s *Server) scrubKeys(t *turn, v string) string {
	keys, _ := s.secretKeys(t)
	for _, k := range keys {
		v = strings.ReplaceAll(v, k, keyRedacted)
	}
	return v
}

// secretKeys are the keys that must never be echoed (values shorter than
// 8 bytes would match ordinary text and are skipped), as strings and as
// bytes. They are kept with the turn for the key sent upstream they were
// made for: scrubKey runs on every stream event, and converting a key of
// more than 32 bytes there was an allocation each time.
func (s *Server) secretKeys(t *turn) ([]string, [][]byte) {
	if t.secrets != nil && t.secretsFor == t.sentKey {
		return t.secrets, t.secretBytes
	}
	keys, asBytes := make([]string, 0, 3), make([][]byte, 0, 3)
	for _, k := range []string{t.sentKey, s.o.UpstreamKey, s.o.APIKey} {
		if len(k) >= 8 && (len(keys) == 0 || keys[len(keys)-1] != k) {
			keys, asBytes = append(keys, k), append(asBytes, []byte(k))
		}
	}
	t.secrets, t.secretBytes, t.secretsFor = keys, asBytes, t.sentKey
	return keys, asBytes
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
