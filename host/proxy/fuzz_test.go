package proxy

import (
	"bytes"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/tokens"
)

// FuzzRequestPipeline drives the request path (parse, identity, inject,
// truncate, encode) with arbitrary bodies: it must never panic, and an
// injected body must stay valid JSON carrying the block exactly once.
func FuzzRequestPipeline(f *testing.F) {
	seeds := []string{
		`{"model":"m","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"s"}]},{"role":"user","content":[{"type":"text","text":"x"}]}]}`,
		`{"model":"m","system":[{"type":"text","text":"a"}],"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"r"}]}]}`,
		`{"messages":[{"role":"system","content":7}],"session_id":5,"turn_type":"side"}`,
		`{"messages":[null,{"role":"user"}],"max_tokens":-1}`,
		`{"messages":"nope"}`, `[]`, `null`, `{"messages":[{"role":"user","content":"<metaclaw_context>"}]}`,
	}
	for _, s := range seeds {
		f.Add(s, true)
		f.Add(s, false)
	}
	counter := tokens.NewCache(64)
	block := core.RenderLazy([]core.Section{{Title: "T", Body: "B \"q\"\n\xff\u2028"}})
	f.Fuzz(func(t *testing.T, body string, anthropic bool) {
		api := apiformat.OpenAI
		if anthropic {
			api = apiformat.Anthropic
		}
		r, err := parseRequest(api, []byte(body))
		if err != nil {
			return
		}
		hr := httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body))
		if _, err := resolveIdentity(hr, r, ""); err != nil {
			return
		}
		_ = r.recentUserTexts(3)
		injected := false
		if !r.alreadyInjected() {
			r.inject(block)
			injected = true
		}
		r.truncate(200, counter)
		out, err := r.encode()
		if err != nil {
			return
		}
		if injected {
			// The lazy block goes out byte for byte as its string would.
			r2, _ := parseRequest(api, []byte(body))
			_, _ = resolveIdentity(hr, r2, "")
			r2.inject(plainText(block.String()))
			r2.truncate(200, counter)
			if out2, _ := r2.encode(); !bytes.Equal(out, out2) {
				t.Fatalf("lazy block:\n%s\nstring block:\n%s", out, out2)
			}

			if _, err := parseRequest(api, out); err != nil {
				t.Fatalf("injected body no longer parses: %v\n%s", err, out)
			}
		}
	})
}
