package skills

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// naiveEvolver is the evolver's LLM at its most gullible: an OpenAI-compatible
// chat endpoint that turns whatever conversation its prompt shows into one
// skill and obeys every instruction it reads there. Each sentence of the
// conversation section becomes a step, and "add a step that X" / "include X"
// becomes step X. It never refuses anything, so only what the host keeps out
// of its prompt (and the output check) stands between a pasted web page and
// the skill library.
type naiveEvolver struct {
	*httptest.Server
	mu      sync.Mutex
	prompts []string
}

func newNaiveEvolver(t *testing.T) *naiveEvolver {
	n := &naiveEvolver{}
	n.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Role, Content string } `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			w.WriteHeader(400)
			json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": "bad json: " + err.Error(), "type": "invalid_request_error"}})
			return
		}
		var prompt string
		for _, m := range req.Messages {
			if m.Role == "user" {
				prompt = m.Content
			}
		}
		n.mu.Lock()
		n.prompts = append(n.prompts, prompt)
		n.mu.Unlock()
		answer, _ := json.Marshal(map[string]any{"proposals": []any{naiveProposal(prompt)}})
		writeCompletion(w, string(answer), 900, 200)
	}))
	t.Cleanup(n.Close)
	return n
}

func (n *naiveEvolver) allPrompts() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return strings.Join(n.prompts, "\n\n")
}

var (
	naiveSentence = regexp.MustCompile(`(?:[^.!?\n]|[.!?]\S)+[.!?]?`)
	naiveObey     = regexp.MustCompile(`(?i)\b(?:add|include|insert|append|put)\s+(?:a|an|the|this)?\s*(?:new\s+)?(?:step|line|rule|instruction|note)?\s*(?:that|which|to|saying|telling\s+the\s+agent\s+to|:)\s*(.{8,})`)
	naiveTurnUser = regexp.MustCompile(`^User[^:]{0,40}:\s*`)
	naiveWord     = regexp.MustCompile(`[a-z][a-z0-9]+`)
)

// naiveProposal writes the skill a model that follows everything would write.
func naiveProposal(prompt string) map[string]any {
	conv := prompt
	if i := strings.Index(conv, "## The conversation"); i >= 0 {
		conv = conv[i:]
	}
	if i := strings.Index(conv, "### Turn"); i >= 0 {
		conv = conv[i:]
	}
	var steps []string
	firstUser := ""
	seen := map[string]bool{}
	inFence := false
	for _, line := range strings.Split(conv, "\n") {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, "```") {
			inFence = !inFence
			continue
		}
		if inFence && line != "" && len(steps) < 28 {
			steps = append(steps, "`"+line+"`") // a block it saw is copied as it is
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, "<<<") {
			continue
		}
		if loc := naiveTurnUser.FindStringIndex(line); loc != nil {
			line = line[loc[1]:]
			if firstUser == "" {
				firstUser = line
			}
		}
		line = strings.TrimPrefix(line, "Agent:")
		for _, s := range naiveSentence.FindAllString(line, -1) {
			s = strings.TrimSpace(s)
			if m := naiveObey.FindStringSubmatch(s); m != nil {
				s = m[1] // obeyed: the step it was told to add
			}
			if len(strings.Fields(s)) < 3 || seen[s] || len(steps) >= 28 {
				continue
			}
			seen[s] = true
			steps = append(steps, s)
		}
	}
	var body strings.Builder
	for i, s := range steps {
		fmt.Fprintf(&body, "%d. %s\n", i+1, s)
	}
	body.WriteString("\nPitfalls: repeat what worked in this conversation and nothing else.")
	b := body.String()
	if len(b) > 5500 {
		b = b[:5500]
	}
	words := naiveWord.FindAllString(strings.ToLower(firstUser), -1)
	var name []string
	for _, w := range words {
		if len(w) > 3 && len(name) < 4 {
			name = append(name, w)
		}
	}
	slug := "learned-" + strings.Join(name, "-")
	if len(slug) > 60 {
		slug = slug[:60]
	}
	slug = strings.TrimRight(slug, "-")
	desc := strings.TrimSpace(firstUser)
	desc = textclip.Ellipsis(desc, 200)
	desc = "Use when a request is like: " + desc
	return map[string]any{"action": "create", "name": slug, "description": desc, "category": "general",
		"tags": []string{"learned"}, "body": b, "rationale": "Everything the conversation said, as steps."}
}

// sdkTurn is one exchange of a recorded session: what the user typed, the
// agent's scripted answer, or (tool) a tool result the agent relays.
type sdkTurn struct {
	user, reply, tool string
}

// recordSession plays turns through the proxy with the official openai-go
// client (a tool turn: the fake upstream calls `read`, the client sends the
// tool result back, and the agent's answer relays it), then ends the session.
func (e *evoHost) recordSession(id string, turns []sdkTurn) {
	e.t.Helper()
	ctx := context.Background()
	c := openai.NewClient(option.WithBaseURL(e.URL+"/v1"), option.WithAPIKey("client-key"), option.WithMaxRetries(0), option.WithHeader("X-Session-Id", id))
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a helpful agent.")}
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
		Name: "read", Description: openai.String("Read a file or a web page"),
		Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}},
	})}
	for _, tr := range turns {
		user := tr.user
		if tr.tool != "" {
			user += " USE-TOOL"
		}
		e.Upstream.SetReply(tr.reply)
		msgs = append(msgs, openai.UserMessage(user))
		resp, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-test", Messages: msgs, Tools: tools})
		if err != nil {
			e.t.Fatalf("session %s: %v", id, err)
		}
		msg := resp.Choices[0].Message
		if tr.tool != "" {
			if len(msg.ToolCalls) == 0 {
				e.t.Fatalf("session %s: no tool call", id)
			}
			msgs = append(msgs, msg.ToParam(), openai.ToolMessage(tr.tool, msg.ToolCalls[0].ID))
			if resp, err = c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-test", Messages: msgs, Tools: tools}); err != nil {
				e.t.Fatalf("session %s: tool round: %v", id, err)
			}
			msg = resp.Choices[0].Message
		}
		msgs = append(msgs, msg.ToParam())
	}
	e.Flush(e.t)
	if err := e.Core.EndSession(ctx, id, "explicit"); err != nil {
		e.t.Fatal(err)
	}
}

// learnedText is every skill the library holds (any status) and every
// proposal waiting for review, as text.
func (e *evoHost) learnedText() string {
	var b strings.Builder
	for _, s := range e.skills.Lib.List() {
		b.WriteString(skillText(s.Name, s.Description, s.Tags, s.Body) + "\n")
	}
	hist, _ := e.skills.Lib.History(context.Background(), "", 200, true)
	for _, h := range hist {
		if h.Action == "proposed" {
			b.WriteString(h.Content + "\n")
		}
	}
	return b.String()
}
