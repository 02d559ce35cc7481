package transcript

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/block"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/msgcontent"
	"github.com/metaclaw-go/metaclaw/host/usertext"
)

// TestCapturedOpenClawRequests runs UserText on the requests the real
// OpenClaw 2026.9.6 sent: what the capture plugin injected (MC-PREPEND,
// MC-APPEND-CTX) is replaced by a real MetaClaw block, as our hook would
// have put there; the timestamp, the Runtime line and the internal-context
// message must all go.
func TestCapturedOpenClawRequests(t *testing.T) {
	dir := filepath.Join("..", "..", "testdata", "openclaw-2026.9.6", "requests")
	injected := core.Render([]core.Section{{Title: "Memories", Body: "- the user prefers tabs"}}).Block
	quoted, _ := json.Marshal(injected)
	inner := string(quoted[1 : len(quoted)-1])
	for file, want := range map[string]string{
		"01-openai-completions.turn1.request.json":                    "Hello from fixture turn one",
		"02-openai-completions.turn2-same-session.request.json":       "Second turn in the same session",
		"05-anthropic-messages.turn1.request.json":                    "Hello over anthropic-messages",
		"08-openai-completions.all-prompt-build-returns.request.json": "Which markers land where?",
		"11-gateway.openai-completions.turn1.request.json":            "Hello via the gateway",
	} {
		raw, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatalf("captured request missing from the repository: %v", err)
		}
		var capture struct {
			Body json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(raw, &capture); err != nil {
			t.Fatal(err)
		}
		body := strings.NewReplacer("MC-PREPEND", inner, "MC-APPEND-CTX", inner).Replace(string(capture.Body))
		if !strings.Contains(string(capture.Body), "Runtime: ") && strings.Contains(file, "turn1") && !strings.Contains(file, "anthropic") {
			t.Fatalf("%s: expected the first turn to carry OpenClaw's Runtime line", file)
		}
		if got := UserText(body); got != want {
			t.Errorf("%s: %q, want %q", file, got, want)
		}
		// History: every earlier user message of the request is clean too.
		var req struct {
			Messages []message `json:"messages"`
		}
		_ = json.Unmarshal([]byte(body), &req)
		for _, m := range req.Messages {
			if m.Role != "user" {
				continue
			}
			c := usertext.Clean(msgcontent.Text(m.Content))
			if strings.Contains(c, "Runtime:") || strings.Contains(c, "UTC]") || strings.Contains(c, "OPENCLAW_INTERNAL") || strings.Contains(c, block.Begin) {
				t.Errorf("%s: envelope left in %q", file, c)
			}
		}
	}
}
