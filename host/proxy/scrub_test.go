package proxy_test

import (
	"bytes"
	"encoding/json"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/proxy"
)

const wifi = "BlueElephant42"

// TestStoredTurnsAreRedacted: the upstream gets the user's words and the
// client gets the answer as sent, but the stored request body (valid JSON
// still) and the stored answer hold no secret, also when the assistant
// repeats it back.
func TestStoredTurnsAreRedacted(t *testing.T) {
	for _, stream := range []bool{false, true} {
		h := newHarness(t, apiformat.OpenAI)
		session := "wifi-" + strconv.FormatBool(stream)
		body := `{"model":"m","stream":` + strconv.FormatBool(stream) + `,"messages":[{"role":"system","content":"Be brief."},` +
			`{"role":"user","content":"the office wifi password is ` + wifi + `"},{"role":"assistant","content":"OK, saved ` + wifi + `."},` +
			`{"role":"user","content":"ECHO-BACK: and my API key is sk-proj-abcdefghijklmnopqrstuvwx012345"}]}`
		resp, out := post(t, h.proxy.URL+"/v1/chat/completions", body, "X-Session-Id", session)
		if resp.StatusCode != 200 || !strings.Contains(string(out), "sk-proj-abcdefghijklmnopqrstuvwx012345") {
			t.Fatalf("stream=%v: the client must get the answer as sent: %d %s", stream, resp.StatusCode, out)
		}
		if sent, _ := json.Marshal(h.up.Last().Body); !strings.Contains(string(sent), wifi) {
			t.Fatalf("stream=%v: the upstream must get the original request: %s", stream, sent)
		}
		turns := h.awaitTurns(t, session, 1)
		if len(turns) != 1 {
			t.Fatalf("stream=%v: %d turns", stream, len(turns))
		}
		rec := turns[0]
		for what, v := range map[string]string{"request_json": rec.RequestJSON, "response_text": rec.ResponseText} {
			if strings.Contains(v, wifi) || strings.Contains(v, "sk-proj-abcdef") {
				t.Fatalf("stream=%v: %s keeps a secret: %s", stream, what, v)
			}
		}
		if !json.Valid([]byte(rec.RequestJSON)) || !strings.Contains(rec.RequestJSON, "[REDACTED:password]") || !strings.Contains(rec.ResponseText, "Noted:") {
			t.Fatalf("stream=%v: stored turn %q / %q", stream, rec.RequestJSON, rec.ResponseText)
		}
	}
}

// syncBuffer is a log sink tests can read while the proxy writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestUpstreamKeyNeverEchoed: an upstream that repeats the credentials it
// received in its error does not get them to the client, the log or
// turns.error, whichever formats are involved.
func TestUpstreamKeyNeverEchoed(t *testing.T) {
	for _, c := range []struct {
		upstream, client apiformat.API
		key              string // llm.api_key; "" = the client's own key passed through
	}{
		{apiformat.OpenAI, apiformat.OpenAI, "sk-upstream-SECRET"},
		{apiformat.Anthropic, apiformat.Anthropic, "sk-upstream-SECRET"},
		{apiformat.OpenAI, apiformat.Anthropic, "sk-upstream-SECRET"},
		{apiformat.Anthropic, apiformat.OpenAI, "sk-upstream-SECRET"},
		{apiformat.OpenAI, apiformat.OpenAI, ""},
	} {
		log := &syncBuffer{}
		h := newHarness(t, c.upstream, func(o *proxy.Options) {
			o.Log = zerolog.New(log)
			o.UpstreamKey = c.key
		})
		secret := c.key
		if secret == "" {
			secret = "sk-client-OWN-key-0123456789"
		}
		path, body := "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"ECHO-AUTH please"}]}`
		if c.client == apiformat.Anthropic {
			path, body = "/v1/messages", `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":"ECHO-AUTH please"}]}`
		}
		resp, out := post(t, h.proxy.URL+path, body, "X-Session-Id", "echo", "Authorization", "Bearer sk-client-OWN-key-0123456789")
		if resp.StatusCode != 401 {
			t.Fatalf("%+v: status %d %s", c, resp.StatusCode, out)
		}
		errorShape(t, c.client, out, "")
		turns := h.awaitTurns(t, "echo", 1)
		for what, v := range map[string]string{"client": string(out), "log": log.String(), "turns.error": turns[0].Error} {
			if strings.Contains(v, secret) {
				t.Fatalf("%+v: the key reached the %s: %s", c, what, v)
			}
		}
		if !strings.Contains(string(out), "[REDACTED:upstream_key]") {
			t.Fatalf("%+v: error not relayed: %s", c, out)
		}
	}
}

// TestNetworkErrorHidesAddress: an unreachable upstream is reported with
// its cause, not with the address it lives at.
func TestNetworkErrorHidesAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	_, port, _ := net.SplitHostPort(addr)
	h := newHarness(t, apiformat.OpenAI, func(o *proxy.Options) { o.UpstreamBase = "http://" + addr + "/v1" })
	resp, out := post(t, h.proxy.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "X-Session-Id", "down")
	if resp.StatusCode != 502 || strings.Contains(string(out), "127.0.0.1") || strings.Contains(string(out), ":"+port) || !strings.Contains(string(out), "connection refused") {
		t.Fatalf("%d %s", resp.StatusCode, out)
	}
	errorShape(t, apiformat.OpenAI, out, "upstream unreachable")
}
