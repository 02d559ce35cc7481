package chattemplate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const chatml = `{% for m in messages %}<|im_start|>{{ m.role }}
{{ m.content }}<|im_end|>
{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %}`

func writeModelDir(t *testing.T, cfg map[string]any, jinjaFile string) string {
	t.Helper()
	dir := t.TempDir()
	data, _ := json.Marshal(cfg)
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if jinjaFile != "" {
		if err := os.WriteFile(filepath.Join(dir, TemplateFile), []byte(jinjaFile), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoad(t *testing.T) {
	msgs := []Message{{Role: "user", Content: "hi"}}
	t.Run("config string", func(t *testing.T) {
		tmpl, err := Load(writeModelDir(t, map[string]any{"chat_template": chatml, "eos_token": map[string]any{"content": "<|im_end|>"}}, ""))
		if err != nil {
			t.Fatal(err)
		}
		got, err := tmpl.Render(msgs, nil, Options{AddGenerationPrompt: true})
		if err != nil || got != "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n" {
			t.Fatalf("%q %v", got, err)
		}
		if tmpl.Special()["eos_token"] != "<|im_end|>" {
			t.Errorf("special %v", tmpl.Special())
		}
	})
	t.Run("jinja file wins", func(t *testing.T) {
		tmpl, err := Load(writeModelDir(t, map[string]any{"chat_template": chatml}, "FILE {{ messages[0].content }}\n"))
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := tmpl.Render(msgs, nil, Options{}); got != "FILE hi" {
			t.Fatalf("%q", got)
		}
	})
	t.Run("named templates", func(t *testing.T) {
		tmpl, err := Load(writeModelDir(t, map[string]any{"chat_template": []map[string]string{
			{"name": "default", "template": "D{{ bos_token }}"}, {"name": "tool_use", "template": "T{{ tools | length }}"}}, "bos_token": "<s>"}, ""))
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := tmpl.Render(msgs, nil, Options{}); got != "D<s>" {
			t.Errorf("default: %q", got)
		}
		if got, _ := tmpl.Render(msgs, []json.RawMessage{json.RawMessage(`{"type":"function"}`)}, Options{}); got != "T1" {
			t.Errorf("tool_use: %q", got)
		}
	})
	for _, c := range []struct {
		name string
		cfg  map[string]any
		want string
	}{
		{"no template", map[string]any{}, "neither chat_template.jinja nor a chat_template"},
		{"bad template type", map[string]any{"chat_template": 7}, "neither a string nor a list"},
		{"bad token", map[string]any{"chat_template": "x", "eos_token": 5}, "eos_token"},
		{"syntax error", map[string]any{"chat_template": "{% if %}"}, "template"},
		{"unclosed tag", map[string]any{"chat_template": "{{ x "}, "unclosed tag"},
		{"no default", map[string]any{"chat_template": []map[string]string{{"name": "tool_use", "template": "x"}}}, "no default template"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(writeModelDir(t, c.cfg, ""))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "tokenizer_config.json") {
		t.Fatalf("missing dir: %v", err)
	}
}

func TestRenderErrorsAndOptions(t *testing.T) {
	tmpl, err := New(`{% if messages[0].role != 'user' %}{{ raise_exception('first message must be from the user') }}{% endif %}`+
		`{{ enable_thinking is defined }}/{{ reasoning_effort | default('none') }}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tmpl.Render([]Message{{Role: "system", Content: "x"}}, nil, Options{}); err == nil || !strings.Contains(err.Error(), "first message must be from the user") {
		t.Fatalf("raise_exception: %v", err)
	}
	off := false
	got, err := tmpl.Render([]Message{{Role: "user", Content: "x"}}, nil, Options{EnableThinking: &off, Extra: map[string]any{"reasoning_effort": "high"}})
	if err != nil || got != "True/high" {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := tmpl.Render(nil, nil, Options{}); err == nil {
		t.Fatal("no messages: no error")
	}
	if _, err := tmpl.Render([]Message{{Role: "user"}}, []json.RawMessage{json.RawMessage(`[1]`)}, Options{}); err == nil {
		t.Fatal("bad tool: no error")
	}
	if _, err := tmpl.Render([]Message{{Role: "user"}}, nil, Options{Extra: map[string]any{"f": func() {}}}); err == nil {
		t.Fatal("bad extra: no error")
	}
}

func TestFromOpenAI(t *testing.T) {
	body := `{"model": "m", "tools": [{"type": "function", "function": {"name": "f", "parameters": {"b": 1, "a": 2}}}],
	"messages": [
	 {"role": "developer", "content": "dev"},
	 {"role": "user", "content": [{"type": "text", "text": "one"}, {"type": "image_url", "image_url": {"url": "x"}}, {"type": "input_text", "text": "two"}], "name": "alice"},
	 {"role": "assistant", "content": null, "reasoning": "why", "tool_calls": [
	   {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{\"x\": 1}"}},
	   {"id": "c2", "type": "function", "function": {"name": "f", "arguments": {"y": [1, 2]}}}]},
	 {"role": "tool", "tool_call_id": "c1", "name": "f", "content": "r1"},
	 {"role": "function", "name": "f", "content": "legacy"},
	 {"role": "assistant", "content": "done", "reasoning_content": "because", "tool_call_id": "dropped"}]}`
	conv, err := FromOpenAI([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := []Message{
		{Role: "system", Content: "dev"},
		{Role: "user", Content: "one\ntwo"},
		{Role: "assistant", ReasoningContent: ptr("why"), ToolCalls: []ToolCall{{ID: "c1", Type: "function", Name: "f", Arguments: `{"x": 1}`}, {ID: "c2", Type: "function", Name: "f", Arguments: `{"y":[1,2]}`}}},
		{Role: "tool", Content: "r1", ToolCallID: "c1", Name: "f"},
		{Role: "tool", Content: "legacy", Name: "f"},
		{Role: "assistant", Content: "done", ReasoningContent: ptr("because")},
	}
	if !reflect.DeepEqual(conv.Messages, want) {
		t.Fatalf("got  %+v\nwant %+v", conv.Messages, want)
	}
	if len(conv.Tools) != 1 {
		t.Fatalf("tools %v", conv.Tools)
	}
	// The template sees tool schemas in the client's key order, and tool
	// arguments objects as objects.
	tmpl, err := New(`{{ tools[0] | tojson }}|{{ messages[2].tool_calls[1].function.arguments | tojson }}|{{ messages[0].reasoning_content is defined }}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render(conv.Messages, conv.Tools, Options{})
	if err != nil || got != `{"type": "function", "function": {"name": "f", "parameters": {"b": 1, "a": 2}}}|{"y": [1, 2]}|False` {
		t.Fatalf("%q %v", got, err)
	}
	if c, _ := FromOpenAI([]byte(`{"messages": [{"role": "user", "content": "x"}], "tools": []}`)); c.Tools == nil || len(c.Tools) != 0 {
		t.Errorf("empty tools list: %#v", c.Tools)
	}
	for _, c := range []struct{ body, want string }{
		{`{}`, "`messages` is empty"},
		{`{"messages": [{"content": "x"}]}`, "messages[0]: `role` is missing"},
		{`{"messages": [{"role": "robot", "content": "x"}]}`, `"robot" is not system`},
		{`{"messages": [{"role": "user", "content": 5}]}`, "`content` must be a string"},
		{`{"messages": [{"role": "assistant", "tool_calls": [{"function": {"arguments": "{}"}}]}]}`, "no function name"},
		{`{"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": {bad}}}]}]}`, "chat request"},
		{`{"messages": [{"role": "user", "content": "x"}], "tools": {}}`, "`tools` is not a list"},
		{`{"messages": [{"role": "user", "content": "x"}], "tools": [1]}`, "tools[0] is not an object"},
		{`[`, "chat request"},
	} {
		if _, err := FromOpenAI([]byte(c.body)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.body, err, c.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// TestMessageJSONIsWhatTheTemplateSees: the JSON the golden generator
// renders is the value the Go template gets.
func TestMessageJSONIsWhatTheTemplateSees(t *testing.T) {
	m := Message{Role: "assistant", Content: "a<b>&\u2028", ReasoningContent: ptr(""), ToolCalls: []ToolCall{
		{ID: "1", Name: "f", Arguments: `{"z": 1, "a": {"b": [true, null, 1.5]}}`}, {ID: "2", Name: "g", Arguments: "not json"}}}
	tmpl, err := New(`{{ messages[0] | tojson }}`, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := tmpl.Render([]Message{m}, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"role": "assistant", "content": "a<b>&` + "\u2028" + `", "reasoning_content": "", "tool_calls": [{"id": "1", "type": "function", "function": {"name": "f", "arguments": {"z": 1, "a": {"b": [true, null, 1.5]}}}}, {"id": "2", "type": "function", "function": {"name": "g", "arguments": "not json"}}]}`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func FuzzFromOpenAIAndRender(f *testing.F) {
	f.Add([]byte(`{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{}"}}]}], "tools": [{"type": "function"}]}`))
	f.Add([]byte(`{"messages": [{"role": "tool", "content": [{"type": "text", "text": "x"}]}]}`))
	tmpl, err := New(`{% for m in messages %}{{ m.role }}:{{ m.content }}{% for c in m.tool_calls or [] %}{{ c.function.arguments | tojson }}{% endfor %}{% endfor %}{% if tools %}{{ tools | tojson(indent=1) }}{% endif %}`, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		conv, err := FromOpenAI(body)
		if err != nil {
			return
		}
		if _, err := tmpl.Render(conv.Messages, conv.Tools, Options{AddGenerationPrompt: true}); err != nil && !strings.Contains(err.Error(), "render") {
			t.Fatalf("unexpected error shape: %v", err)
		}
	})
}

func FuzzPreprocess(f *testing.F) {
	f.Add("{%- if x -%}\n  {{ y | tojson }}\n{% endif +%}{# c #}{% raw %}{{{% endraw %}")
	f.Add("{{ a.b[0](c) | items | tojson(indent=2) }}{%+ for i in x %}{% endfor %}")
	f.Fuzz(func(t *testing.T, src string) {
		if _, err := preprocess(src); err != nil {
			return
		}
		// Whatever compiles must render without panicking.
		if tmpl, err := New(src, nil); err == nil {
			_, _ = tmpl.Render([]Message{{Role: "user", Content: "x"}}, nil, Options{})
		}
	})
}
