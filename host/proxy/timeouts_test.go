package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/proxy"
)

// customUpstream points a harness at handler instead of the fake LLM.
func customUpstream(t *testing.T, handler http.HandlerFunc) func(*proxy.Options) {
	up := httptest.NewServer(handler)
	t.Cleanup(up.Close)
	return func(o *proxy.Options) { o.UpstreamBase = up.URL + "/v1" }
}

func flushOut(w http.ResponseWriter) { w.(http.Flusher).Flush() }

const okAnswer = `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`

func TestStalledBodyIsAnswered504(t *testing.T) {
	stall := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		io.WriteString(w, okAnswer[:40]) // headers and a first piece, then nothing
		flushOut(w)
		<-r.Context().Done()
	}
	for _, api := range []apiformat.API{apiformat.OpenAI, apiformat.Anthropic} {
		t.Run(string(api), func(t *testing.T) {
			h := newHarness(t, apiformat.OpenAI, customUpstream(t, stall), func(o *proxy.Options) { o.UpstreamTimeout = 300 * time.Millisecond })
			path := "/v1/chat/completions"
			if api == apiformat.Anthropic {
				path = "/v1/messages"
			}
			// The client would wait forever; the proxy must not. The test's
			// own deadline (far beyond the 300 ms one) turns a hang into a failure.
			req, _ := http.NewRequest(http.MethodPost, h.proxy.URL+path, strings.NewReader(`{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("X-Session-Id", "stall-"+string(api))
			resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
			if err != nil {
				t.Fatalf("the proxy did not answer a stalled body: %v", err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("the proxy did not finish its answer to a stalled body: %v", err)
			}
			if resp.StatusCode != http.StatusGatewayTimeout {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			errorShape(t, api, body, "llm.timeout_seconds")
			if turns := h.turns(t, "stall-"+string(api)); len(turns) != 1 || turns[0].Status != 504 {
				t.Fatalf("turn %+v", turns)
			}
		})
	}
}

// sseChunk is one OpenAI stream event carrying text.
func sseChunk(text string) string {
	return `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"` + text + `"}}]}` + "\n\n"
}

const sseEnd = `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}` + "\n\ndata: [DONE]\n\n"

// readStream reads a stream to its end at the client's pace and returns
// how many content bytes it carried and whether [DONE] arrived.
func readStream(t *testing.T, url, body string, pace func()) (int, bool, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Session-Id", "slow-client")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	n, done := 0, false
	var last string
	buf := make([]byte, 64<<10)
	var all bytes.Buffer
	for {
		if pace != nil {
			pace()
		}
		k, err := br.Read(buf)
		all.Write(buf[:k])
		if err != nil {
			break
		}
	}
	for _, line := range strings.Split(all.String(), "\n") {
		switch {
		case line == "data: [DONE]":
			done = true
		case strings.HasPrefix(line, "data: "):
			var c struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if json.Unmarshal([]byte(line[len("data: "):]), &c) == nil && len(c.Choices) > 0 {
				n += len(c.Choices[0].Delta.Content)
			}
			last = line
		}
	}
	return n, done, last
}

func TestSlowClientDoesNotTripTheUpstreamWatchdog(t *testing.T) {
	event := sseChunk(strings.Repeat("x", 1<<20))
	const events = 12
	fast := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		for i := 0; i < events; i++ {
			if _, err := io.WriteString(w, event); err != nil {
				return
			}
			flushOut(w)
		}
		io.WriteString(w, sseEnd)
	}
	h := newHarness(t, apiformat.OpenAI, customUpstream(t, fast), func(o *proxy.Options) { o.UpstreamTimeout = time.Second })
	// At most 6.4 MB/s: the relay spends several timeouts blocked on the
	// client while the upstream waits with everything ready to send.
	n, done, last := readStream(t, h.proxy.URL+"/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		func() { time.Sleep(10 * time.Millisecond) })
	if n != events<<20 || !done {
		t.Fatalf("client got %d of %d bytes, done=%v, last event %.200s", n, events<<20, done, last)
	}
	turns := h.turns(t, "slow-client")
	if len(turns) != 1 || turns[0].Status != 200 {
		t.Fatalf("turn %+v", turns)
	}
	if len(turns[0].ResponseText) > 1<<20+100 || !strings.HasSuffix(turns[0].ResponseText, "bytes not stored]") {
		t.Errorf("stored answer %d bytes: not bounded", len(turns[0].ResponseText))
	}
}

func TestLongLineArrivingSlowlyIsProgress(t *testing.T) {
	line := sseChunk(strings.Repeat("x", 2<<20))
	trickle := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		for i := 0; i < len(line); i += 64 << 10 {
			if _, err := io.WriteString(w, line[i:min(i+64<<10, len(line))]); err != nil {
				return
			}
			flushOut(w)
			time.Sleep(100 * time.Millisecond) // ~3 s for the line: longer than the timeout, never silent that long
		}
		io.WriteString(w, sseEnd)
	}
	h := newHarness(t, apiformat.OpenAI, customUpstream(t, trickle), func(o *proxy.Options) { o.UpstreamTimeout = time.Second })
	n, done, last := readStream(t, h.proxy.URL+"/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, nil)
	if n != 2<<20 || !done {
		t.Fatalf("got %d bytes, done=%v, last %.300s", n, done, last)
	}
}

func TestSilentStreamIsCut(t *testing.T) {
	silent := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		io.WriteString(w, sseChunk("x"))
		flushOut(w)
		<-r.Context().Done()
	}
	h := newHarness(t, apiformat.OpenAI, customUpstream(t, silent), func(o *proxy.Options) { o.UpstreamTimeout = 300 * time.Millisecond })
	_, done, last := readStream(t, h.proxy.URL+"/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, nil)
	if !done || !strings.Contains(last, "llm.timeout_seconds") {
		t.Fatalf("done=%v last %s", done, last)
	}
	if turns := h.turns(t, "slow-client"); len(turns) != 1 || turns[0].Status != 504 {
		t.Fatalf("turn %+v", turns)
	}
}

func TestOversizedAnswerIsRelayedNotHeld(t *testing.T) {
	content := strings.Repeat("y", 5<<20)
	big := `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"` + content + `"},"finish_reason":"stop"}]}`
	serve := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, big)
	}
	h := newHarness(t, apiformat.OpenAI, customUpstream(t, serve), func(o *proxy.Options) { o.MaxAnswerBytes = 1 << 20 })
	resp, body := post(t, h.proxy.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "X-Session-Id", "big")
	if resp.StatusCode != 200 || string(body) != big {
		t.Fatalf("status %d, %d of %d bytes relayed", resp.StatusCode, len(body), len(big))
	}
	turns := h.turns(t, "big")
	if len(turns) != 1 || turns[0].Status != 200 || !strings.Contains(turns[0].Error, "proxy.max_answer_mb") || len(turns[0].ResponseText) > 0 {
		t.Fatalf("turn: status %d error %q, %d bytes of answer", turns[0].Status, turns[0].Error, len(turns[0].ResponseText))
	}
	// Translation needs the whole answer: refused with a clear error.
	resp, body = post(t, h.proxy.URL+"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 502 {
		t.Fatalf("translated oversized answer: status %d", resp.StatusCode)
	}
	errorShape(t, apiformat.Anthropic, body, "proxy.max_answer_mb")
}

func TestEveryAnswerIsDurableWhenReceived(t *testing.T) {
	h := newHarness(t, apiformat.OpenAI)
	for i := 0; i < 10; i++ {
		for _, stream := range []bool{false, true} {
			session := fmt.Sprintf("durable-%d-%v", i, stream)
			resp, _ := post(t, h.proxy.URL+"/v1/chat/completions", fmt.Sprintf(`{"model":"m","stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream), "X-Session-Id", session)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			// No Flush: the turn must already be committed.
			turns, err := h.store.SessionTurns(context.Background(), session)
			if err != nil || len(turns) != 1 || turns[0].Status != 200 {
				t.Fatalf("answer received but turn not stored: %+v %v", turns, err)
			}
		}
	}
}
