package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/block"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/internal/testwait"
)

func post(t *testing.T, url string, body string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// errorShape checks the body is an error object in the given format.
func errorShape(t *testing.T, api apiformat.API, body []byte, wantSubstr string) {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("error body is not JSON: %s", body)
	}
	e, _ := v["error"].(map[string]any)
	if e == nil || e["message"] == nil {
		t.Fatalf("no error object: %s", body)
	}
	if api == apiformat.Anthropic && v["type"] != "error" {
		t.Fatalf("anthropic error lacks type:error: %s", body)
	}
	if !strings.Contains(fmt.Sprint(e["message"]), wantSubstr) {
		t.Fatalf("error %q lacks %q", e["message"], wantSubstr)
	}
}

func TestErrorsInClientFormat(t *testing.T) {
	h := newHarness(t, apiformat.OpenAI, func(o *proxy.Options) { o.MaxBodyBytes = 4096; o.APIKey = "proxy-key" })
	okBody := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name    string
		path    string
		body    string
		headers []string
		status  int
		api     apiformat.API
		msg     string
	}{
		{"malformed json openai", "/v1/chat/completions", `{"model":`, []string{"Authorization", "Bearer proxy-key"}, 400, apiformat.OpenAI, "not a JSON object"},
		{"malformed json anthropic", "/v1/messages", `[1,2]`, []string{"x-api-key", "proxy-key"}, 400, apiformat.Anthropic, "not a JSON object"},
		{"no messages", "/v1/chat/completions", `{"model":"m"}`, []string{"Authorization", "Bearer proxy-key"}, 400, apiformat.OpenAI, "messages"},
		{"empty messages", "/v1/messages", `{"model":"m","messages":[]}`, []string{"x-api-key", "proxy-key"}, 400, apiformat.Anthropic, "non-empty"},
		{"too large", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, []string{"Authorization", "Bearer proxy-key"}, 413, apiformat.OpenAI, "larger than"},
		{"too large anthropic", "/v1/messages", `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, []string{"x-api-key", "proxy-key"}, 413, apiformat.Anthropic, "larger than"},
		{"missing key", "/v1/chat/completions", okBody, nil, 401, apiformat.OpenAI, "missing proxy API key"},
		{"bad key", "/v1/chat/completions", okBody, []string{"Authorization", "Bearer nope"}, 401, apiformat.OpenAI, "invalid proxy API key"},
		{"bad key anthropic", "/v1/messages", okBody, []string{"x-api-key", "nope"}, 401, apiformat.Anthropic, "x-api-key"},
		{"anthropic bearer accepted, upstream 429 passed through", "/v1/messages", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"FAIL-429"}]}`, []string{"Authorization", "Bearer proxy-key"}, 429, apiformat.Anthropic, "fake upstream error 429"},
		{"upstream 500 passed through", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"FAIL-500"}]}`, []string{"Authorization", "Bearer proxy-key"}, 500, apiformat.OpenAI, "fake upstream error 500"},
		{"bad turn type", "/v1/chat/completions", okBody, []string{"Authorization", "Bearer proxy-key", "X-Turn-Type", "sideways"}, 400, apiformat.OpenAI, "X-Turn-Type"},
		{"unknown route", "/v2/nothing", okBody, []string{"Authorization", "Bearer proxy-key"}, 404, apiformat.OpenAI, "no route"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, h.proxy.URL+tt.path, tt.body, tt.headers...)
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, body)
			}
			errorShape(t, tt.api, body, tt.msg)
		})
	}
}

func TestUpstreamUnreachableAndTimeout(t *testing.T) {
	// A port nobody listens on.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	h := newHarness(t, apiformat.OpenAI, func(o *proxy.Options) { o.UpstreamBase = dead })
	resp, body := post(t, h.proxy.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "X-Session-Id", "dead")
	if resp.StatusCode != 502 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	errorShape(t, apiformat.OpenAI, body, "upstream unreachable")
	if strings.Contains(string(body), "sk-upstream-SECRET") {
		t.Fatal("upstream key leaked")
	}
	if turns := h.turns(t, "dead"); len(turns) != 1 || turns[0].Status != 502 {
		t.Fatalf("failed turn not recorded: %+v", turns)
	}

	slow := newHarness(t, apiformat.Anthropic, func(o *proxy.Options) { o.UpstreamTimeout = 200 * time.Millisecond })
	resp, body = post(t, slow.proxy.URL+"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"SLOW-3000"}]}`)
	if resp.StatusCode != 504 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	errorShape(t, apiformat.Anthropic, body, "did not answer")
}

func TestSDKSeesErrors(t *testing.T) {
	h := newHarness(t, apiformat.Anthropic)
	oc := openaiClient(h.proxy.URL + "/v1")
	_, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
		Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("FAIL-429")},
	})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 429 || !strings.Contains(oe.Message, "fake upstream error 429") {
		t.Fatalf("openai sdk error: %v", err)
	}
	h2 := newHarness(t, apiformat.OpenAI)
	ac := anthropicClient(h2.proxy.URL)
	_, err = ac.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "m", MaxTokens: 5, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("FAIL-503"))},
	})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != 503 || !strings.Contains(err.Error(), "fake upstream error 503") {
		t.Fatalf("anthropic sdk error: %v", err)
	}
}

// TestRealStreaming proves events reach the client as the upstream sends
// them: the first chunk arrives while the upstream is still sending.
func TestRealStreaming(t *testing.T) {
	for _, api := range []apiformat.API{apiformat.OpenAI, apiformat.Anthropic} {
		t.Run(string(api), func(t *testing.T) {
			h := newHarness(t, apiformat.OpenAI)
			h.up.EventDelay = 150 * time.Millisecond
			h.up.Reply = "one two three four five six"
			path, body := "/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`
			if api == apiformat.Anthropic {
				path, body = "/v1/messages", `{"model":"m","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
			}
			req, _ := http.NewRequest(http.MethodPost, h.proxy.URL+path, strings.NewReader(body))
			start := time.Now()
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			sc := bufio.NewScanner(resp.Body)
			var firstData time.Duration
			var lines []string
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "data:") && firstData == 0 {
					firstData = time.Since(start)
				}
				lines = append(lines, sc.Text())
			}
			total := time.Since(start)
			// The upstream takes ≥ 8 events × 150 ms; the first event must not wait for the end.
			if firstData == 0 || firstData > total/2 {
				t.Fatalf("first event after %v of %v: the stream was buffered", firstData, total)
			}
			if !strings.Contains(strings.Join(lines, "\n"), "six") {
				t.Fatal("stream incomplete")
			}
		})
	}
}

// TestClientDisconnectCancelsUpstream checks an abandoned stream stops the upstream call.
func TestClientDisconnectCancelsUpstream(t *testing.T) {
	h := newHarness(t, apiformat.OpenAI)
	h.up.EventDelay = 200 * time.Millisecond
	h.up.Reply = strings.Repeat("word ", 100)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, h.proxy.URL+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("X-Session-Id", "gone")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	resp.Body.Read(buf)
	cancel()
	resp.Body.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		turns := h.turns(t, "gone")
		if len(turns) == 1 {
			if turns[0].Status != 499 {
				t.Fatalf("status %d", turns[0].Status)
			}
			// 100 words at 200 ms would take 20 s; recorded well before that means the upstream was cut.
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("abandoned stream never finished: upstream not cancelled")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestUnknownFieldsPassThroughAndIdentityFieldsStripped(t *testing.T) {
	h := newHarness(t, apiformat.OpenAI)
	body := `{"model":"m","messages":[{"role":"user","content":"hi","x_msg_ext":1}],"x_vendor":{"a":[1,2]},"seed":7,` +
		`"session_id":"body-sess","turn_type":"side","user_id":"u1","workspace_id":"w1","memory_scope":"","session_done":false}`
	resp, b := post(t, h.proxy.URL+"/v1/chat/completions", body)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	got := h.up.Last().Body
	if fmt.Sprint(got["x_vendor"]) != "map[a:[1 2]]" || got["seed"] != float64(7) {
		t.Fatalf("unknown fields lost: %v", got)
	}
	for _, f := range []string{"session_id", "turn_type", "user_id", "workspace_id", "memory_scope", "session_done"} {
		if _, ok := got[f]; ok {
			t.Fatalf("identity field %s forwarded", f)
		}
	}
	msgs := got["messages"].([]any)
	if msgs[0].(map[string]any)["x_msg_ext"] != float64(1) {
		t.Fatalf("message extension lost: %v", msgs[0])
	}
	// Side turn: not injected, recorded with the body's identity.
	if len(msgs) != 1 {
		t.Fatalf("side turn was injected: %v", msgs)
	}
	turns := h.turns(t, "body-sess")
	if len(turns) != 1 || turns[0].TurnType != "side" || turns[0].MemoryScope != "user:u1|workspace:w1" {
		t.Fatalf("recorded %+v", turns)
	}
	if resp.Header.Get("X-Metaclaw-Session-Id") != "body-sess" {
		t.Fatal("session header missing")
	}
}

func TestUntouchedRequestForwardedByteForByte(t *testing.T) {
	h := newHarness(t, apiformat.OpenAI)
	h.provider.body = "" // nothing to inject
	body := `{"messages":[{"role":"user","content":"hi"}],  "model":"m", "zeta":{"b":1,"a":2}}`
	post(t, h.proxy.URL+"/v1/chat/completions", body)
	if got := string(h.up.Last().Raw); got != body {
		t.Fatalf("forwarded %q, want the exact bytes %q", got, body)
	}
}

func TestInjectOnce(t *testing.T) {
	h := newHarness(t, apiformat.Anthropic)
	already := core.Render([]core.Section{{Title: "Hook", Body: "FROM-HOOK"}}).Block
	body, _ := json.Marshal(map[string]any{
		"model": "m", "max_tokens": 10,
		"system":   []any{map[string]any{"type": "text", "text": "stable", "cache_control": map[string]any{"type": "ephemeral"}}, map[string]any{"type": "text", "text": "dynamic\n" + already}},
		"messages": []any{map[string]any{"role": "user", "content": "hi"}},
	})
	post(t, h.proxy.URL+"/v1/messages", string(body))
	sys := upstreamSystem(t, h)
	if strings.Count(sys, block.Begin) != 1 || strings.Contains(sys, "INJECTED-SKILL") {
		t.Fatalf("injected twice: %q", sys)
	}
	// Without a block, the injection is a new trailing block; the cached block is untouched.
	body, _ = json.Marshal(map[string]any{
		"model": "m", "max_tokens": 10,
		"system":   []any{map[string]any{"type": "text", "text": "stable", "cache_control": map[string]any{"type": "ephemeral"}}},
		"messages": []any{map[string]any{"role": "user", "content": "hi"}},
	})
	post(t, h.proxy.URL+"/v1/messages", string(body))
	blocks := h.up.Last().Body["system"].([]any)
	if len(blocks) != 2 || blocks[0].(map[string]any)["cache_control"] == nil || !strings.Contains(fmt.Sprint(blocks[1]), "INJECTED-SKILL") {
		t.Fatalf("system blocks %v", blocks)
	}
}

func TestNoSystemPromptGetsOne(t *testing.T) {
	h := newHarness(t, apiformat.OpenAI)
	post(t, h.proxy.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	msgs := h.up.Last().Body["messages"].([]any)
	first := msgs[0].(map[string]any)
	if first["role"] != "system" || !strings.HasPrefix(fmt.Sprint(first["content"]), block.Begin) || len(msgs) != 2 {
		t.Fatalf("messages %v", msgs)
	}
}

func TestTruncationKeepsSystemAndRecentTurns(t *testing.T) {
	h := newHarness(t, apiformat.OpenAI, func(o *proxy.Options) { o.MaxContextTokens = 700 })
	h.provider.body = ""
	msgs := []map[string]any{{"role": "system", "content": "SYSTEM-PROMPT"}}
	for i := 0; i < 40; i++ {
		msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("question %d %s", i, strings.Repeat("lorem ipsum ", 20))})
		msgs = append(msgs, map[string]any{"role": "assistant", "content": fmt.Sprintf("answer %d", i)})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": "LAST-QUESTION"})
	body, _ := json.Marshal(map[string]any{"model": "m", "max_tokens": 100, "messages": msgs})
	post(t, h.proxy.URL+"/v1/chat/completions", string(body))
	got := h.up.Last().Body["messages"].([]any)
	if len(got) >= len(msgs) || len(got) < 3 {
		t.Fatalf("kept %d of %d messages", len(got), len(msgs))
	}
	if got[0].(map[string]any)["content"] != "SYSTEM-PROMPT" || got[len(got)-1].(map[string]any)["content"] != "LAST-QUESTION" {
		t.Fatalf("system or last turn lost: first %v last %v", got[0], got[len(got)-1])
	}
	if r := got[1].(map[string]any)["role"]; r != "user" && r != "assistant" {
		t.Fatalf("history starts with %v", r)
	}
}

func TestSessionDerivedAndEnded(t *testing.T) {
	h := newHarness(t, apiformat.OpenAI)
	c := openaiClient(h.proxy.URL + "/v1")
	first := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Plan my trip to Lisbon")}
	r1, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "m", Messages: first})
	if err != nil {
		t.Fatal(err)
	}
	second := append(first, openai.AssistantMessage(r1.Choices[0].Message.Content), openai.UserMessage("And Porto?"))
	var hr *http.Response
	_, err = c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "m", Messages: second},
		option.WithHeader("X-Session-Done", "true"), option.WithResponseInto(&hr))
	if err != nil {
		t.Fatal(err)
	}
	sid := hr.Header.Get("X-Metaclaw-Session-Id")
	if !strings.HasPrefix(sid, "auto-") {
		t.Fatalf("derived session %q", sid)
	}
	turns := h.turns(t, sid)
	if len(turns) != 2 || turns[1].TurnIndex != 2 {
		t.Fatalf("both turns of one conversation should share a session: %+v", turns)
	}
	testwait.For(t, "X-Session-Done to end the session", func() bool {
		s, _ := h.store.Session(context.Background(), sid)
		return s.EndedAt != nil && s.EndReason == "client"
	})
	// A different conversation gets another session.
	c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Something else")}},
		option.WithResponseInto(&hr))
	if other := hr.Header.Get("X-Metaclaw-Session-Id"); other == sid || other == "" {
		t.Fatalf("new conversation reused session %q", other)
	}
}

func TestConcurrentSessions(t *testing.T) {
	h := newHarness(t, apiformat.Anthropic)
	c := openaiClient(h.proxy.URL + "/v1")
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for s := 0; s < 8; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			for i := 0; i < 5; i++ {
				params := openai.ChatCompletionNewParams{Model: "m", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(fmt.Sprintf("s%d t%d", s, i))}}
				opt := option.WithHeader("X-Session-Id", fmt.Sprintf("c-%d", s))
				if i%2 == 0 {
					st := c.Chat.Completions.NewStreaming(context.Background(), params, opt)
					for st.Next() {
					}
					if err := st.Err(); err != nil {
						errs <- err
					}
					continue
				}
				if _, err := c.Chat.Completions.New(context.Background(), params, opt); err != nil {
					errs <- err
				}
			}
		}(s)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for s := 0; s < 8; s++ {
		turns := h.turns(t, fmt.Sprintf("c-%d", s))
		if len(turns) != 5 {
			t.Fatalf("session c-%d has %d turns", s, len(turns))
		}
	}
}

func TestNotConfiguredAndModelsAndHealth(t *testing.T) {
	h := newHarness(t, apiformat.OpenAI, func(o *proxy.Options) { o.NotConfigured = "run `metaclaw setup`" })
	resp, body := post(t, h.proxy.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 503 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	errorShape(t, apiformat.OpenAI, body, "metaclaw setup")
	resp, body = post(t, h.proxy.URL+"/a/x/v1/messages", `{"model":"m","max_tokens":3,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 503 {
		t.Fatalf("%d", resp.StatusCode)
	}
	errorShape(t, apiformat.Anthropic, body, "metaclaw setup")

	r, err := http.Get(h.proxy.URL + "/healthz")
	if err != nil || r.StatusCode != 200 {
		t.Fatalf("healthz %v %v", r, err)
	}
	r.Body.Close()

	live := newHarness(t, apiformat.OpenAI, func(o *proxy.Options) { o.Model = "served-model" })
	oc := openaiClient(live.proxy.URL + "/v1")
	page, err := oc.Models.List(context.Background())
	if err != nil || len(page.Data) != 1 || page.Data[0].ID != "fake-model" {
		t.Fatalf("models via openai upstream: %+v %v", page, err)
	}
	// An Anthropic client against an OpenAI upstream gets the configured model in its own format.
	ac := anthropicClient(live.proxy.URL)
	mp, err := ac.Models.List(context.Background(), anthropic.ModelListParams{})
	if err != nil || len(mp.Data) != 1 || mp.Data[0].ID != "served-model" {
		t.Fatalf("models for anthropic client: %+v %v", mp, err)
	}
	// The configured model replaces the client's.
	post(t, live.proxy.URL+"/v1/chat/completions", `{"model":"client-model","messages":[{"role":"user","content":"hi"}]}`)
	if live.up.Last().Body["model"] != "served-model" {
		t.Fatalf("model %v", live.up.Last().Body["model"])
	}
}

func TestUpstreamCredentials(t *testing.T) {
	h := newHarness(t, apiformat.Anthropic)
	post(t, h.proxy.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "Authorization", "Bearer client-key")
	hd := h.up.Last().Header
	if hd.Get("x-api-key") != "sk-upstream-SECRET" || hd.Get("anthropic-version") == "" || hd.Get("Authorization") != "" {
		t.Fatalf("anthropic upstream headers %v", hd)
	}
	// No llm.api_key and no proxy key: the client's own key is passed on.
	pt := newHarness(t, apiformat.OpenAI, func(o *proxy.Options) { o.UpstreamKey = "" })
	post(t, pt.proxy.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, "Authorization", "Bearer users-own-key")
	if got := pt.up.Last().Header.Get("Authorization"); got != "Bearer users-own-key" {
		t.Fatalf("pass-through auth %q", got)
	}
}

// TestOpenClawCapturedRequests replays the real OpenClaw 2026.9.6 upstream
// requests through the proxy: each is accepted, injected once into the
// system prompt, and otherwise forwarded unchanged.
func TestOpenClawCapturedRequests(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "openclaw-2026.9.6", "requests")
	files, _ := filepath.Glob(filepath.Join(dir, "*.request.json"))
	if len(files) < 5 {
		t.Fatalf("captured OpenClaw requests missing from %s (testdata/SOURCES.md)", dir)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			raw, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var capt struct {
				Path    string            `json:"path"`
				Headers map[string]string `json:"headers"`
				Body    json.RawMessage   `json:"body"`
			}
			if err := json.Unmarshal(raw, &capt); err != nil {
				t.Fatal(err)
			}
			api := apiformat.OpenAI
			if strings.HasSuffix(capt.Path, "/messages") {
				api = apiformat.Anthropic
			}
			h := newHarness(t, api)
			path := "/a/main" + capt.Path
			resp, body := post(t, h.proxy.URL+path, string(capt.Body), "traceparent", capt.Headers["traceparent"])
			if resp.StatusCode != 200 {
				t.Fatalf("%d %s", resp.StatusCode, body)
			}
			if !bytes.Contains(body, []byte("FAKE-REPLY-OK")) && !bytes.Contains(body, []byte("NOTE.txt")) && !bytes.Contains(body, []byte("TOOL-RESULT")) {
				t.Fatalf("unexpected answer %s", body)
			}
			var orig map[string]any
			json.Unmarshal(capt.Body, &orig)
			got := h.up.Last().Body
			for k, v := range orig {
				if k == "messages" || k == "system" {
					continue
				}
				if fmt.Sprint(got[k]) != fmt.Sprint(v) {
					t.Fatalf("field %s changed: %v -> %v", k, v, got[k])
				}
			}
			if n := len(got["messages"].([]any)); n != len(orig["messages"].([]any)) {
				t.Fatalf("message count %d -> %d", len(orig["messages"].([]any)), n)
			}
			sys := upstreamSystem(t, h)
			if strings.Count(sys, block.Begin) != 1 {
				t.Fatalf("injected %d times", strings.Count(sys, block.Begin))
			}
			// The context query is the user's words only: no timestamp,
			// Runtime line or internal context (they would choose the skills).
			q := h.provider.last()
			if len(q.UserTexts) == 0 {
				t.Fatal("no user text in the context query")
			}
			for _, u := range q.UserTexts {
				if strings.Contains(u, "OPENCLAW_INTERNAL_CONTEXT") || strings.Contains(u, "Runtime:") || strings.Contains(u, "UTC]") {
					t.Fatalf("envelope used as query: %q", u)
				}
			}
		})
	}
}

func TestBrowserGuard(t *testing.T) {
	h := newHarness(t, apiformat.OpenAI, func(o *proxy.Options) { o.LoopbackOnly = true })
	body := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name    string
		headers []string
		status  int
	}{
		{"sdk", nil, 200},
		{"same origin", []string{"Origin", h.proxy.URL}, 200},
		{"other origin", []string{"Origin", "https://evil.example"}, 403},
		{"null origin", []string{"Origin", "null"}, 403},
		{"cross-site fetch", []string{"Sec-Fetch-Site", "cross-site"}, 403},
		{"dns rebinding", []string{"Host", "evil.example:30000"}, 403},
		{"localhost name", []string{"Host", "localhost:30000"}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest(http.MethodPost, h.proxy.URL+"/v1/chat/completions", strings.NewReader(body))
			for i := 0; i+1 < len(tt.headers); i += 2 {
				if tt.headers[i] == "Host" {
					req.Host = tt.headers[i+1]
				} else {
					req.Header.Set(tt.headers[i], tt.headers[i+1])
				}
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tt.status, b)
			}
		})
	}
}
