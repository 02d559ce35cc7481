package apiformat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// fixtureDir holds OpenClaw's captured upstream requests (testdata/SOURCES.md).
var fixtureDir = filepath.Join("..", "..", "testdata", "openclaw-2026.9.6", "requests")

type fixture struct {
	name string
	path string
	body []byte
}

func loadFixtures(t testing.TB) []fixture {
	t.Helper()
	entries, err := os.ReadDir(fixtureDir)
	if err != nil {
		t.Fatal(err)
	}
	var out []fixture
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".request.json") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(fixtureDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		var f struct {
			Path string          `json:"path"`
			Body json.RawMessage `json:"body"`
		}
		if err := json.Unmarshal(raw, &f); err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		out = append(out, fixture{name: e.Name(), path: f.Path, body: f.Body})
	}
	if len(out) != 12 {
		t.Fatalf("found %d fixtures, want 12", len(out))
	}
	return out
}

// atom is one unit of conversation content in a format-neutral form: the
// round trip may merge or split messages, but must keep this sequence.
type atom struct {
	Role string // user | assistant | tool
	Kind string // text | call | result | image
	Text string
	ID   string
	Name string
	Args any
}

type neutral struct {
	Model     string
	System    string
	MaxTokens int
	Stream    bool
	Atoms     []atom
	Tools     []neutralTool
	Choice    string
}

type neutralTool struct {
	Name, Description string
	Schema            any
}

func parseArgs(t testing.TB, s string) any {
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("arguments %q: %v", s, err)
	}
	return v
}

func openAINeutral(t testing.TB, body []byte) neutral {
	t.Helper()
	var r struct {
		Model               string `json:"model"`
		MaxTokens           int    `json:"max_tokens"`
		MaxCompletionTokens int    `json:"max_completion_tokens"`
		Stream              bool   `json:"stream"`
		Messages            []struct {
			Role       string          `json:"role"`
			Content    json.RawMessage `json:"content"`
			ToolCallID string          `json:"tool_call_id"`
			ToolCalls  []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"messages"`
		Tools []struct {
			Function struct {
				Name        string `json:"name"`
				Description string `json:"description"`
				Parameters  any    `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
		ToolChoice any `json:"tool_choice"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	n := neutral{Model: r.Model, MaxTokens: max(r.MaxTokens, r.MaxCompletionTokens), Stream: r.Stream}
	var sys []string
	for _, m := range r.Messages {
		texts := openAITexts(t, m.Content)
		switch m.Role {
		case "system", "developer":
			sys = append(sys, strings.Join(texts, "\n\n"))
		case "tool":
			n.Atoms = append(n.Atoms, atom{Role: "tool", Kind: "result", ID: m.ToolCallID, Text: strings.Join(texts, "\n\n")})
		default:
			for _, s := range texts {
				n.Atoms = append(n.Atoms, atom{Role: m.Role, Kind: "text", Text: s})
			}
			for _, c := range m.ToolCalls {
				n.Atoms = append(n.Atoms, atom{Role: m.Role, Kind: "call", ID: c.ID, Name: c.Function.Name, Args: parseArgs(t, c.Function.Arguments)})
			}
		}
	}
	n.System = strings.Join(sys, "\n\n")
	for _, tl := range r.Tools {
		n.Tools = append(n.Tools, neutralTool{tl.Function.Name, tl.Function.Description, tl.Function.Parameters})
	}
	switch c := r.ToolChoice.(type) {
	case string:
		n.Choice = map[string]string{"auto": "auto", "required": "any", "none": "none"}[c]
	case map[string]any:
		n.Choice = "tool:" + c["function"].(map[string]any)["name"].(string)
	}
	return n
}

func openAITexts(t testing.TB, raw json.RawMessage) []string {
	switch jsonKind(raw) {
	case '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		return []string{s}
	case '[':
		var parts []struct{ Type, Text string }
		if err := json.Unmarshal(raw, &parts); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range parts {
			out = append(out, p.Text)
		}
		return out
	}
	return nil
}

func anthropicNeutral(t testing.TB, body []byte) neutral {
	t.Helper()
	var r struct {
		Model     string          `json:"model"`
		MaxTokens int             `json:"max_tokens"`
		Stream    bool            `json:"stream"`
		System    json.RawMessage `json:"system"`
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name        string `json:"name"`
			Description string `json:"description"`
			InputSchema any    `json:"input_schema"`
		} `json:"tools"`
		ToolChoice *struct{ Type, Name string } `json:"tool_choice"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatal(err)
	}
	n := neutral{Model: r.Model, MaxTokens: r.MaxTokens, Stream: r.Stream}
	n.System = strings.Join(anthropicTexts(t, r.System), "\n\n")
	for _, m := range r.Messages {
		if jsonKind(m.Content) == '"' {
			var s string
			_ = json.Unmarshal(m.Content, &s)
			n.Atoms = append(n.Atoms, atom{Role: m.Role, Kind: "text", Text: s})
			continue
		}
		var blocks []struct {
			Type      string          `json:"type"`
			Text      string          `json:"text"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Input     any             `json:"input"`
			ToolUseID string          `json:"tool_use_id"`
			Content   json.RawMessage `json:"content"`
			IsError   bool            `json:"is_error"`
		}
		if err := json.Unmarshal(m.Content, &blocks); err != nil {
			t.Fatal(err)
		}
		for _, b := range blocks {
			switch b.Type {
			case "text":
				n.Atoms = append(n.Atoms, atom{Role: m.Role, Kind: "text", Text: b.Text})
			case "tool_use":
				n.Atoms = append(n.Atoms, atom{Role: m.Role, Kind: "call", ID: b.ID, Name: b.Name, Args: b.Input})
			case "tool_result":
				text := strings.Join(anthropicTexts(t, b.Content), "\n\n")
				if b.IsError {
					text = "Error: " + text
				}
				n.Atoms = append(n.Atoms, atom{Role: "tool", Kind: "result", ID: b.ToolUseID, Text: text})
			}
		}
	}
	for _, tl := range r.Tools {
		n.Tools = append(n.Tools, neutralTool{tl.Name, tl.Description, tl.InputSchema})
	}
	if c := r.ToolChoice; c != nil {
		n.Choice = c.Type
		if c.Type == "tool" {
			n.Choice = "tool:" + c.Name
		}
	}
	return n
}

func anthropicTexts(t testing.TB, raw json.RawMessage) []string {
	switch jsonKind(raw) {
	case '"':
		var s string
		_ = json.Unmarshal(raw, &s)
		return []string{s}
	case '[':
		var blocks []struct{ Type, Text string }
		if err := json.Unmarshal(raw, &blocks); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, b := range blocks {
			if b.Type == "text" {
				out = append(out, b.Text)
			}
		}
		return out
	}
	return nil
}

func diffNeutral(t *testing.T, stage string, got, want neutral) {
	t.Helper()
	if got.Model != want.Model || got.System != want.System || got.MaxTokens != want.MaxTokens || got.Stream != want.Stream || got.Choice != want.Choice {
		t.Errorf("%s: scalars differ: model %q/%q system %d/%d bytes (equal=%v) max %d/%d stream %v/%v choice %q/%q", stage,
			got.Model, want.Model, len(got.System), len(want.System), got.System == want.System,
			got.MaxTokens, want.MaxTokens, got.Stream, want.Stream, got.Choice, want.Choice)
	}
	if !reflect.DeepEqual(got.Atoms, want.Atoms) {
		t.Errorf("%s: messages differ:\ngot  %+v\nwant %+v", stage, got.Atoms, want.Atoms)
	}
	if !reflect.DeepEqual(got.Tools, want.Tools) {
		t.Errorf("%s: tools differ", stage)
	}
}

func TestFixtureRoundTrips(t *testing.T) {
	for _, f := range loadFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			switch f.path {
			case "/v1/chat/completions":
				orig := openAINeutral(t, f.body)
				mid, err := OpenAIToAnthropicRequest(f.body)
				if err != nil {
					t.Fatal(err)
				}
				back, err := AnthropicToOpenAIRequest(mid)
				if err != nil {
					t.Fatal(err)
				}
				diffNeutral(t, "openai->anthropic", anthropicNeutral(t, mid), orig)
				diffNeutral(t, "openai->anthropic->openai", openAINeutral(t, back), orig)
				var opts struct {
					StreamOptions struct {
						IncludeUsage bool `json:"include_usage"`
					} `json:"stream_options"`
				}
				_ = json.Unmarshal(back, &opts)
				if !opts.StreamOptions.IncludeUsage {
					t.Errorf("stream_options.include_usage lost")
				}
				if len(orig.Atoms) == 0 || len(orig.Tools) != 12 || orig.System == "" {
					t.Errorf("fixture not parsed as expected: %d atoms, %d tools", len(orig.Atoms), len(orig.Tools))
				}
			case "/v1/messages":
				orig := anthropicNeutral(t, f.body)
				mid, err := AnthropicToOpenAIRequest(f.body)
				if err != nil {
					t.Fatal(err)
				}
				back, err := OpenAIToAnthropicRequest(mid)
				if err != nil {
					t.Fatal(err)
				}
				// Anthropic fixtures carry no tool_choice; the OpenAI side has none either.
				diffNeutral(t, "anthropic->openai", openAINeutral(t, mid), orig)
				diffNeutral(t, "anthropic->openai->anthropic", anthropicNeutral(t, back), orig)
				if strings.Contains(string(mid), "cache_control") || strings.Contains(string(back), "cache_control") {
					t.Errorf("cache_control leaked into a translation")
				}
				if len(orig.Atoms) == 0 || len(orig.Tools) != 12 || orig.System == "" {
					t.Errorf("fixture not parsed as expected: %d atoms, %d tools", len(orig.Atoms), len(orig.Tools))
				}
			default:
				t.Fatalf("unexpected path %s", f.path)
			}
		})
	}
}

// TestFixtureToolRounds pins the concrete tool-round content of the captures.
func TestFixtureToolRounds(t *testing.T) {
	fx := map[string][]byte{}
	for _, f := range loadFixtures(t) {
		fx[f.name[:2]] = f.body
	}
	out, err := OpenAIToAnthropicRequest(fx["04"])
	if err != nil {
		t.Fatal(err)
	}
	n := anthropicNeutral(t, out)
	want := []atom{
		{Role: "assistant", Kind: "call", ID: "callfake4", Name: "read", Args: map[string]any{"path": "NOTE.txt"}},
		{Role: "tool", Kind: "result", ID: "callfake4", Text: "The secret word in this note is PINEAPPLE-42.\n"},
	}
	if !reflect.DeepEqual(n.Atoms[1:3], want) {
		t.Errorf("fixture 04 tool round: %+v", n.Atoms[1:3])
	}
	if !strings.HasPrefix(n.System, "<!-- openclaw:attempt:STABLE -->") {
		t.Errorf("system prompt lost or escaped: %.60q", n.System)
	}

	out, err = AnthropicToOpenAIRequest(fx["07"])
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Messages []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	var roles []string
	for _, m := range r.Messages {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, ","); got != "system,user,assistant,tool,user" {
		t.Errorf("fixture 07 roles = %s", got)
	}
	if r.Messages[3].ToolCallID != "toolufake7" {
		t.Errorf("tool_call_id = %q", r.Messages[3].ToolCallID)
	}
}
