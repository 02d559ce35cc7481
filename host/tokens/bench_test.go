package tokens

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Realistic texts for the counting benchmarks: what skills, memory and
// learning count.

// benchPrompt is the 45 KB system prompt OpenClaw 2026.9.6 sent.
func benchPrompt(b *testing.B) string {
	raw, err := os.ReadFile(filepath.Join("..", "rl", "testdata", "openclaw", "01-openai-completions.turn1.body.json"))
	if err != nil {
		b.Fatal(err)
	}
	var body struct {
		Messages []struct{ Content json.RawMessage } `json:"messages"`
	}
	var s string
	if err := json.Unmarshal(raw, &body); err != nil || len(body.Messages) == 0 || json.Unmarshal(body.Messages[0].Content, &s) != nil || s == "" {
		b.Fatalf("no system prompt (%v)", err)
	}
	return s
}

// benchTurn is a 14 KB request body of a turn (its messages and tools, as
// JSON text).
func benchTurn(b *testing.B) string {
	raw, err := os.ReadFile(filepath.Join("..", "rl", "testdata", "openclaw", "09-openai-completions.systemPrompt-return.body.json"))
	if err != nil {
		b.Fatal(err)
	}
	return string(raw)
}

// benchSkills is the skill bank's files, one text each.
func benchSkills(b *testing.B) []string {
	var out []string
	filepath.WalkDir(filepath.Join("..", "skills", "bank"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			if raw, err := os.ReadFile(path); err == nil {
				out = append(out, string(raw))
			}
		}
		return nil
	})
	if len(out) == 0 {
		b.Fatal("no skill bank")
	}
	return out
}

func benchCount(b *testing.B, texts ...string) {
	Warm()
	n := 0
	for _, s := range texts {
		n += len(s)
	}
	b.SetBytes(int64(n))
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range texts {
			Count(s)
		}
	}
}

func BenchmarkCountPrompt(b *testing.B) { benchCount(b, benchPrompt(b)) }
func BenchmarkCountTurn(b *testing.B)   { benchCount(b, benchTurn(b)) }
func BenchmarkCountSkills(b *testing.B) { benchCount(b, benchSkills(b)...) }

// BenchmarkCountShort: the short texts memory counts, one line each.
func BenchmarkCountShort(b *testing.B) {
	benchCount(b, "### Preferences\n", "- The user prefers concise answers with code first.\n",
		"- Deploys go through `make release` after CI is green; never push to main directly.\n",
		"- Timezone: Europe/Paris (UTC+1), works 09:00–18:00.\n")
}
