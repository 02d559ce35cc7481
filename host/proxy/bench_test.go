package proxy

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/core"
)

// BenchmarkRequestPath measures the proxy's own work on a real OpenClaw
// request (44 KB system prompt, 12 tools): parse, identity, query texts,
// injection and re-encoding.
func BenchmarkRequestPath(b *testing.B) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "openclaw-2026.9.6", "requests", "01-openai-completions.turn1.request.json"))
	if err != nil {
		b.Fatalf("captured OpenClaw request missing from the repository: %v", err)
	}
	var capt struct {
		Body json.RawMessage `json:"body"`
	}
	json.Unmarshal(raw, &capt)
	block := core.RenderLazy([]core.Section{{Title: "Skills", Body: "### debugging\nReproduce, bisect, fix, add a test."}})
	hr := httptest.NewRequest("POST", "/a/main/v1/chat/completions", nil)
	hr.Header.Set("X-Session-Id", "bench")
	b.SetBytes(int64(len(capt.Body)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := parseRequest(apiformat.OpenAI, capt.Body)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := resolveIdentity(hr, r, "main"); err != nil {
			b.Fatal(err)
		}
		_ = r.recentUserTexts(3)
		if !r.alreadyInjected() {
			r.inject(&block)
		}
		if _, err := r.encode(); err != nil {
			b.Fatal(err)
		}
	}
}
