package skills

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/block"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/skills/bank"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/testhost"
)

func bankHost(t *testing.T, upstream apiformat.API) *testhost.Host {
	t.Helper()
	return testhost.Start(t, testhost.Options{UpstreamAPI: upstream, Setup: func(c *core.Core, st *store.SQLite) []route.Route {
		lib, err := Open(context.Background(), Options{Dir: filepath.Join(t.TempDir(), "skills"), Store: st, Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { lib.Close() })
		if _, err := InstallBank(context.Background(), lib, bank.FS()); err != nil {
			t.Fatal(err)
		}
		p := NewProvider(lib, ProviderOptions{TopK: 6, MaxTokens: 1500})
		c.AddProvider(p)
		return Routes(lib, p)
	}})
}

func post(t *testing.T, url string, body any, hdr map[string]string) []byte {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s: %d %s", url, resp.StatusCode, out)
	}
	return out
}

// injectedBlock returns the part of s between the markers.
func injectedBlock(t *testing.T, s string) string {
	t.Helper()
	b, e := strings.Index(s, block.Begin), strings.Index(s, block.End)
	if b < 0 || e < b {
		t.Fatalf("no injected block in:\n%s", s)
	}
	return s[b : e+len(block.End)]
}

func TestEndToEndFlakyTestTurnGetsTheSkill(t *testing.T) {
	t.Run("openai client, openai upstream", func(t *testing.T) {
		h := bankHost(t, apiformat.OpenAI)
		post(t, h.URL+"/v1/chat/completions", map[string]any{"model": "m", "messages": []any{
			map[string]string{"role": "system", "content": "You are a coding agent."},
			map[string]string{"role": "user", "content": "TestPaymentRetry fails about one run in ten on CI but never locally. Can you help me debug it?"},
		}}, map[string]string{"X-Session-Id": "e2e-1"})
		msgs := h.Upstream.Last().Body["messages"].([]any)
		sys := msgs[0].(map[string]any)["content"].(string)
		if !strings.HasPrefix(sys, "You are a coding agent.") {
			t.Fatalf("the client's system prompt must stay first:\n%s", sys)
		}
		block := injectedBlock(t, sys)
		if !strings.Contains(block, "## Skills") || !strings.Contains(block, "### flaky-test-triage") {
			t.Fatalf("block:\n%s", block)
		}
		// The turn records which skills were injected.
		h.Flush(t)
		turns, err := h.Store.SessionTurns(context.Background(), "e2e-1")
		if err != nil || len(turns) != 1 || !strings.Contains(turns[0].InjectedJSON, "skill:flaky-test-triage@1") {
			t.Fatalf("recorded turn: %+v %v", turns, err)
		}
	})
	t.Run("anthropic client, openai upstream, agent path", func(t *testing.T) {
		h := bankHost(t, apiformat.OpenAI)
		post(t, h.URL+"/a/coder/v1/messages", map[string]any{"model": "claude-x", "max_tokens": 100, "system": "Be terse.",
			"messages": []any{map[string]any{"role": "user", "content": []any{map[string]string{"type": "text", "text": "my jest test is flaky: it passes alone and fails with the whole suite"}}}}},
			map[string]string{"anthropic-version": "2023-06-01"})
		msgs := h.Upstream.Last().Body["messages"].([]any)
		sys := msgs[0].(map[string]any)["content"].(string)
		if block := injectedBlock(t, sys); !strings.Contains(block, "### flaky-test-triage") {
			t.Fatalf("block:\n%s", block)
		}
	})
	t.Run("a block already present is not injected twice", func(t *testing.T) {
		h := bankHost(t, apiformat.OpenAI)
		pre := block.Begin + "\nfrom the hook\n" + block.End
		post(t, h.URL+"/v1/chat/completions", map[string]any{"model": "m", "messages": []any{
			map[string]string{"role": "system", "content": "Agent.\n\n" + pre},
			map[string]string{"role": "user", "content": "my test is flaky in CI"},
		}}, nil)
		sys := h.Upstream.Last().Body["messages"].([]any)[0].(map[string]any)["content"].(string)
		if strings.Count(sys, block.Begin) != 1 || strings.Contains(sys, "flaky-test-triage") {
			t.Fatalf("system prompt:\n%s", sys)
		}
	})
}

func TestRoutes(t *testing.T) {
	h := bankHost(t, apiformat.OpenAI)
	get := func(path string, into any) int {
		resp, err := http.Get(h.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(into)
		return resp.StatusCode
	}
	var list struct {
		Skills []map[string]any `json:"skills"`
		Active int              `json:"active"`
	}
	if code := get("/v1/skills", &list); code != 200 || len(list.Skills) != len(bank.Names()) || list.Active != len(bank.Names()) {
		t.Fatalf("list: %d %d %d", code, len(list.Skills), list.Active)
	}
	var search struct {
		Hits []map[string]any `json:"hits"`
	}
	if code := get("/v1/skills/search?q=flaky+test+in+CI", &search); code != 200 || len(search.Hits) == 0 || search.Hits[0]["name"] != "flaky-test-triage" {
		t.Fatalf("search: %d %v", code, search.Hits)
	}
	var one map[string]any
	if code := get("/v1/skills/sql-queries", &one); code != 200 || !strings.Contains(one["body"].(string), "EXPLAIN") {
		t.Fatalf("one: %d", code)
	}
	if code := get("/a/coder/v1/skills/nope", &one); code != 404 {
		t.Fatalf("missing skill: %d", code)
	}
}

func TestRoutesDashboardActions(t *testing.T) {
	h := bankHost(t, apiformat.OpenAI)
	do := func(method, path, ctype, origin string, body string) (int, map[string]any) {
		req, _ := http.NewRequest(method, h.URL+path, strings.NewReader(body))
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	// ?q= ranks the list.
	code, out := do("GET", "/v1/skills?q=docker+image+too+big", "", "", "")
	if list := out["skills"].([]any); code != 200 || len(list) == 0 || list[0].(map[string]any)["name"] != "dockerfile-best-practices" {
		t.Fatalf("list ?q=: %d %v", code, out)
	}
	// Disable from the dashboard (same origin, JSON), then it has history.
	self := "http://" + strings.TrimPrefix(h.URL, "http://")
	if code, out := do("POST", "/v1/skills/regex-writing/disable", "application/json", self, "{}"); code != 200 || out["skill"].(map[string]any)["status"] != "disabled" {
		t.Fatalf("disable: %d %v", code, out)
	}
	code, out = do("GET", "/v1/skills/regex-writing/history", "", "", "")
	if hist := out["history"].([]any); code != 200 || len(hist) < 2 || hist[0].(map[string]any)["action"] != "disabled" {
		t.Fatalf("history: %d %v", code, out)
	}
	// A page on another site cannot change anything; nor can a non-JSON form post.
	if code, _ := do("POST", "/v1/skills/regex-writing/enable", "application/json", "https://evil.example", "{}"); code != 403 {
		t.Fatalf("cross-origin enable: %d", code)
	}
	if code, _ := do("POST", "/v1/skills/regex-writing/enable", "text/plain", "", "{}"); code != 403 {
		t.Fatalf("text/plain enable: %d", code)
	}
	if code, _ := do("POST", "/v1/skills/regex-writing/approve", "application/json", "", "{}"); code != 409 {
		t.Fatalf("approve a disabled skill: %d", code)
	}
	if code, _ := do("POST", "/v1/skills/nope/enable", "application/json", "", "{}"); code != 404 {
		t.Fatalf("unknown skill: %d", code)
	}
	// Errors are the error object of every other route: {"error":{"message","type",…}}.
	for _, c := range []struct{ method, path, ctype string }{
		{"POST", "/v1/skills/nope/enable", "application/json"}, {"POST", "/v1/skills/regex-writing/approve", "application/json"},
		{"POST", "/v1/skills/regex-writing/enable", "text/plain"}, {"POST", "/v1/skills/regex-writing/frobnicate", "application/json"},
		{"GET", "/v1/skills/nope", ""},
	} {
		code, out := do(c.method, c.path, c.ctype, "", "{}")
		e, _ := out["error"].(map[string]any)
		if code < 400 || e == nil || e["message"] == "" || e["type"] == nil {
			t.Fatalf("%s %s: %d %v", c.method, c.path, code, out)
		}
	}
	if code, out := do("POST", "/v1/skills/regex-writing/enable", "application/json", "", "{}"); code != 200 || out["skill"].(map[string]any)["status"] != "active" {
		t.Fatalf("enable: %d %v", code, out)
	}
}
