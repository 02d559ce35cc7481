package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/fakellm"
	"github.com/metaclaw-go/metaclaw/internal/testhost"
)

// scriptedExtractor answers the memory extractor's prompt the way a model
// would: it reads the turns in the prompt and returns, in the extractor's
// JSON, what it finds there (worded unlike the heuristic would, so the
// test can tell whose memories were injected). Other requests: ok false.
func scriptedExtractor(body map[string]any) (string, bool) {
	msgs, _ := body["messages"].([]any)
	if len(msgs) < 2 {
		return "", false
	}
	sys, _ := msgs[0].(map[string]any)["content"].(string)
	prompt, _ := msgs[len(msgs)-1].(map[string]any)["content"].(string)
	switch {
	case strings.HasPrefix(sys, "Summarise this conversation session"):
		return `{"summary":"The user talked about Go formatting and the team's database."}`, true
	case !strings.HasPrefix(sys, "You maintain the long-term memory"):
		return "", false
	}
	type mem struct {
		Type       string  `json:"type"`
		Content    string  `json:"content"`
		Subject    string  `json:"subject,omitempty"`
		Value      string  `json:"value,omitempty"`
		Importance float64 `json:"importance"`
		Correction bool    `json:"correction,omitempty"`
		Turn       int     `json:"turn"`
	}
	var out []mem
	for _, m := range regexp.MustCompile(`(?s)Turn (\d+):\nUser: (.*?)(?:\n\n|$)`).FindAllStringSubmatch(prompt, -1) {
		var turn int
		fmt.Sscan(m[1], &turn)
		user := strings.ToLower(m[2])
		if strings.Contains(user, "tabs") {
			out = append(out, mem{Type: "preference", Content: "The user indents Go code with tab characters.", Subject: "indentation", Value: "tabs", Importance: 0.8, Turn: turn})
		}
		if strings.Contains(user, "mysql") {
			out = append(out, mem{Type: "project_state", Content: "The team's primary database is MySQL, migrated from Postgres.", Subject: "database", Value: "mysql", Importance: 0.8, Correction: true, Turn: turn})
		}
	}
	b, _ := json.Marshal(map[string]any{"memories": out})
	return "```json\n" + string(b) + "\n```", true
}

// TestLLMExtractorThroughTheProxy: memory.extractor llm, the user's turns
// sent with the official openai-go client through the proxy, and one fake
// upstream answering both the user's turns and the extraction prompt in the
// OpenAI wire format (as llm.api_base serves both in the daemon). The
// memories the LLM extracted from the first session are injected into the
// first turn of the next one.
func TestLLMExtractorThroughTheProxy(t *testing.T) {
	up := fakellm.New()
	defer up.Close()
	up.Respond = scriptedExtractor
	cfg := nextSessionCfg(t, func(m *config.Memory) { m.Extractor = "llm" })
	cfg.LLM.APIBase, cfg.LLM.ModelID, cfg.LLM.API = up.URL+"/v1", "fake-model", "openai"
	mh := &memHost{t: t}
	mh.Host = testhost.Start(t, testhost.Options{
		Upstream: up,
		Setup: func(c *core.Core, st *store.SQLite) []route.Route {
			h, err := Assemble(context.Background(), cfg, st, c, zerolog.Nop(), AssembleOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := h.Store.Options().Extractor.(*LLMExtractor); !ok {
				t.Fatalf("memory.extractor llm: the store uses %T", h.Store.Options().Extractor)
			}
			mh.mem = h
			t.Cleanup(h.Store.StopIndex)
			return h.Routes
		},
	})
	client := openai.NewClient(option.WithBaseURL(mh.URL+"/v1"), option.WithAPIKey("client-key"), option.WithMaxRetries(0))
	say := func(session string, done bool, history []string, text string) string {
		t.Helper()
		opts := []option.RequestOption{option.WithHeader("X-Session-Id", session), option.WithHeader("X-User-Id", "dana")}
		if done {
			opts = append(opts, option.WithHeader("X-Session-Done", "true"))
		}
		msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a coding assistant.")}
		for _, h := range history {
			msgs = append(msgs, openai.UserMessage(h), openai.AssistantMessage("FAKE-REPLY-OK"))
		}
		msgs = append(msgs, openai.UserMessage(text))
		resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-test", Messages: msgs}, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.Choices[0].Message.Content; got != "FAKE-REPLY-OK" {
			t.Fatalf("the user's turn got %q", got)
		}
		for _, r := range slicesReverse(up.Requests()) {
			if strings.Contains(string(r.Raw), text) && !strings.Contains(string(r.Raw), "long-term memory") {
				return systemPrompt(r.Body)
			}
		}
		t.Fatalf("the upstream never got %q", text)
		return ""
	}

	first := "Quick one about Go formatting: I indent with tabs in Go, not spaces."
	second := "Also, heads-up: our team moved the main database from Postgres to MySQL last month."
	say("day-1", false, nil, first)
	say("day-1", true, []string{first}, second)
	mh.settle()

	// The extraction went to the same upstream, in the OpenAI format, and
	// its usage was recorded.
	calls := 0
	for _, r := range up.Requests() {
		if r.Path == "/v1/chat/completions" && strings.Contains(string(r.Raw), "You maintain the long-term memory") {
			calls++
			if !strings.Contains(string(r.Raw), "MySQL") {
				t.Fatalf("the extraction prompt lacks the user's turn: %s", r.Raw)
			}
		}
	}
	usage, _ := mh.Store.UsageByPurpose(context.Background())
	if calls == 0 || usage["extractor"].Calls == 0 || usage["extractor"].Failed != 0 {
		t.Fatalf("extraction calls %d, usage %+v", calls, usage)
	}

	sys := say("day-2", false, nil, "Which database should the new migration target, and how do I indent the Go code?")
	block := memoryBlock(sys)
	for _, want := range []string{"The team's primary database is MySQL, migrated from Postgres.", "The user indents Go code with tab characters."} {
		if !strings.Contains(block, want) {
			t.Fatalf("the next session's first turn lacks the LLM's memory %q:\n%s", want, sys)
		}
	}
}

func slicesReverse(rs []fakellm.Request) []fakellm.Request {
	out := make([]fakellm.Request, len(rs))
	for i, r := range rs {
		out[len(rs)-1-i] = r
	}
	return out
}
