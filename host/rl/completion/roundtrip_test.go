package completion_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/rl/chattemplate"
	"github.com/metaclaw-go/metaclaw/host/rl/completion"
	"github.com/metaclaw-go/metaclaw/host/rl/prompt"
	"github.com/metaclaw-go/metaclaw/internal/rlgoldens"
)

func ptr[T any](v T) *T { return &v }

// TestParseInvertsTemplate renders assistant messages with Qwen3's real
// template, cuts the assistant turn out, and parses it back: the parser must
// return what the template was given (tool arguments in the form the
// template prints them). This is the format the model is trained to emit.
func TestParseInvertsTemplate(t *testing.T) {
	codec, err := prompt.Load(rlgoldens.TokenizerDir(t))
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range []chattemplate.Message{
		{Role: "assistant", Content: "Plain answer.\n\nWith two paragraphs."},
		{Role: "assistant", Content: "Answer.", ReasoningContent: ptr("Some reasoning\nover lines.")},
		{Role: "assistant", ReasoningContent: ptr("Need the file."), ToolCalls: []chattemplate.ToolCall{
			{ID: "a", Name: "read", Arguments: `{"path":"NOTE.txt"}`}}},
		{Role: "assistant", Content: "Calling two tools.", ToolCalls: []chattemplate.ToolCall{
			{ID: "a", Name: "exec", Arguments: `{"command":"ls -la","env":{"LANG":"C"}}`},
			{ID: "b", Name: "get_weather", Arguments: `{"city":"Zürich","days":3}`}}},
		{Role: "assistant", Content: "中文回答 😀", ReasoningContent: ptr("思考")},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			conv := []chattemplate.Message{{Role: "user", Content: "q"}, m}
			text, err := codec.Template.Render(conv, nil, chattemplate.Options{})
			if err != nil {
				t.Fatal(err)
			}
			const open = "<|im_start|>assistant\n"
			turn := text[strings.LastIndex(text, open)+len(open):]
			turn = strings.TrimSuffix(turn, "<|im_end|>\n")
			got := completion.Parse(turn, completion.Options{})
			want := completion.Message{Content: m.Content}
			if m.ReasoningContent != nil {
				want.Reasoning = *m.ReasoningContent
			}
			for j, c := range m.ToolCalls {
				// The template prints argument objects with tojson.
				args, err := codec.Template.Render([]chattemplate.Message{{Role: "user", Content: "x"}, {Role: "assistant", ToolCalls: []chattemplate.ToolCall{c}}}, nil, chattemplate.Options{})
				if err != nil {
					t.Fatal(err)
				}
				args = args[strings.Index(args, `"arguments": `)+len(`"arguments": `) : strings.LastIndex(args, "}\n</tool_call>")]
				want.ToolCalls = append(want.ToolCalls, completion.ToolCall{ID: got.ToolCalls[j].ID, Name: c.Name, Arguments: args})
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("turn %q\n got %#v\nwant %#v", turn, got, want)
			}
			// Decoding the turn's ids gives the same text back.
			ids := codec.Tokenizer.Encode(turn)
			if d := codec.Tokenizer.Decode(ids); d != turn {
				t.Errorf("decode(encode(turn)) = %q", d)
			}
		})
	}
}
