package safety

import (
	"encoding/json"
	"strings"
	"testing"
)

// agentBody is shaped like a real agent turn: a 44 KB system prompt that
// mentions keys, tokens and passwords (tool docs do), and a history.
func agentBody(secret bool) []byte {
	sys := strings.Repeat("You are a personal assistant running inside an agent runtime. Use the API key from the environment; never print a token or a password. Follow the workspace rules. ", 280)
	msgs := []map[string]any{{"role": "system", "content": sys}}
	for i := range 20 {
		msgs = append(msgs, map[string]any{"role": "user", "content": "Please look at the build log and tell me what broke in step " + strings.Repeat("x", i)},
			map[string]any{"role": "assistant", "content": "The key step that failed is the token refresh; the pass rate dropped."})
	}
	last := "What does the error mean?"
	if secret {
		last = "the office wifi password is BlueElephant42, remember it"
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": last})
	b, _ := json.Marshal(map[string]any{"model": "gpt-x", "stream": true, "messages": msgs})
	return b
}

func BenchmarkRedactJSON(b *testing.B) {
	for _, c := range []struct {
		name   string
		secret bool
	}{{"clean", false}, {"secret", true}} {
		body := agentBody(c.secret)
		b.Run(c.name+"/cold", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				resetCache()
				RedactJSON(body)
			}
		})
		b.Run(c.name+"/next-turn", func(b *testing.B) { // system prompt and history seen before
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				RedactJSON(body)
			}
		})
	}
}

// BenchmarkStripPasted: a user's question as learning reads it (no pasted
// material, no request to process text).
func BenchmarkStripPasted(b *testing.B) {
	text := "Can you help me deploy the staging cluster and make sure it handles retries and backoff? It failed twice yesterday."
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		StripPasted(text)
	}
}
