package completion

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func seqIDs() func() string {
	n := 0
	return func() string { n++; return fmt.Sprintf("call_%d", n) }
}

func TestParse(t *testing.T) {
	tc := func(name, args string) ToolCall { return ToolCall{Name: name, Arguments: args} }
	for _, c := range []struct {
		name string
		in   string
		opts Options
		want Message
	}{
		{"plain", "Hello there.", Options{}, Message{Content: "Hello there."}},
		{"empty", "", Options{}, Message{}},
		{"think then answer", "<think>\nLet me think.\n</think>\n\nThe answer is 4.", Options{}, Message{Reasoning: "Let me think.", Content: "The answer is 4."}},
		{"empty think (thinking off)", "<think>\n\n</think>\n\nHi!", Options{}, Message{Content: "Hi!"}},
		{"prompt opened think", "Reasoning here.\n</think>\n\nAnswer.", Options{InReasoning: true}, Message{Reasoning: "Reasoning here.", Content: "Answer."}},
		{"unclosed think (length)", "<think>\nStill thinking about", Options{}, Message{Reasoning: "Still thinking about"}},
		{"one tool call", "<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"NOTE.txt\"}}\n</tool_call>", Options{},
			Message{ToolCalls: []ToolCall{tc("read", `{"path": "NOTE.txt"}`)}}},
		{"content then calls", "Checking both.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\"x\": [1, 2]}}\n</tool_call>", Options{},
			Message{Content: "Checking both.", ToolCalls: []ToolCall{tc("a", "{}"), tc("b", `{"x": [1, 2]}`)}}},
		{"think and call", "<think>\nneed the file\n</think>\n\n<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>", Options{},
			Message{Reasoning: "need the file", ToolCalls: []ToolCall{tc("read", `{"path": "a"}`)}}},
		{"arguments as a string", `<tool_call>{"name": "f", "arguments": "{\"q\": 1}"}</tool_call>`, Options{}, Message{ToolCalls: []ToolCall{tc("f", `{"q": 1}`)}}},
		{"parameters key, no args", `<tool_call>{"name": "f", "parameters": {"a": 1}}</tool_call><tool_call>{"name": "g"}</tool_call>`, Options{},
			Message{ToolCalls: []ToolCall{tc("f", `{"a": 1}`), tc("g", "{}")}}},
		{"bad json stays text", "Try:\n<tool_call>\n{not json}\n</tool_call>", Options{}, Message{Content: "Try:<tool_call>\n{not json}\n</tool_call>"}},
		{"no name stays text", `<tool_call>{"arguments": {}}</tool_call>`, Options{}, Message{Content: `<tool_call>{"arguments": {}}</tool_call>`}},
		{"trailing data stays text", `<tool_call>{"name": "f"} x</tool_call>`, Options{}, Message{Content: `<tool_call>{"name": "f"} x</tool_call>`}},
		{"unclosed call (length)", "<tool_call>\n{\"name\": \"f\", \"argu", Options{}, Message{Content: "<tool_call>\n{\"name\": \"f\", \"argu"}},
		{"text after a call", "<tool_call>{\"name\": \"f\"}</tool_call>\n\nDone.", Options{}, Message{Content: "Done.", ToolCalls: []ToolCall{tc("f", "{}")}}},
		{"text around a call", "Before\n<tool_call>{\"name\": \"f\"}</tool_call>\nAfter", Options{}, Message{Content: "Before\nAfter", ToolCalls: []ToolCall{tc("f", "{}")}}},
		{"think mid answer is text", "Answer <think>x</think> more", Options{}, Message{Content: "Answer <think>x</think> more"}},
		{"stray close is text", "a </think> b", Options{}, Message{Content: "a </think> b"}},
		{"tool call inside think is reasoning", "<think><tool_call>{\"name\": \"f\"}</tool_call></think>ok", Options{}, Message{Reasoning: "<tool_call>{\"name\": \"f\"}</tool_call>", Content: "ok"}},
		{"newlines kept inside", "<think>\na\n\nb\n</think>\n\nx\n\ny\n", Options{}, Message{Reasoning: "a\n\nb", Content: "x\n\ny"}},
		{"leading newlines", "\n\nHi", Options{}, Message{Content: "Hi"}},
		{"partial tag at end", "see <tool_ca", Options{}, Message{Content: "see <tool_ca"}},
		{"lookalike tag", "<tool_calls> and <thinking>", Options{}, Message{Content: "<tool_calls> and <thinking>"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.opts.NewID = seqIDs()
			got := Parse(c.in, c.opts)
			for i := range got.ToolCalls {
				got.ToolCalls[i].ID = ""
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Parse(%q)\n got %#v\nwant %#v", c.in, got, c.want)
			}
		})
	}
}

// streamed feeds s in the given chunk sizes and returns the message and the
// message the deltas add up to.
func streamed(s string, sizes []int, opts Options) (Message, Message) {
	p := NewStreamParser(opts)
	var ds []Delta
	for i := 0; i < len(s); {
		n := 1
		if len(sizes) > 0 {
			n = max(1, sizes[0])
			sizes = sizes[1:]
		}
		end := min(len(s), i+n)
		ds = append(ds, p.Feed(s[i:end])...)
		i = end
	}
	ds = append(ds, p.Finish()...)
	var sum Message
	for _, d := range ds {
		sum.Reasoning += d.Reasoning
		sum.Content += d.Content
		if d.ToolCall != nil {
			if d.Index != len(sum.ToolCalls) {
				panic(fmt.Sprintf("tool call delta index %d, want %d", d.Index, len(sum.ToolCalls)))
			}
			sum.ToolCalls = append(sum.ToolCalls, *d.ToolCall)
		}
		if (d.Reasoning != "") == (d.Content != "") && d.ToolCall == nil {
			panic(fmt.Sprintf("delta with both or neither text: %+v", d))
		}
	}
	return p.Message(), sum
}

func TestStreamingEqualsWhole(t *testing.T) {
	texts := []string{
		"<think>\nLet me think.\n</think>\n\nThe answer is 4.",
		"Checking both.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>\n<tool_call>\n{\"name\": \"b\", \"arguments\": {\"x\": \"</tool_call>\"}}\n</tool_call>",
		"Before\n<tool_call>{\"name\": \"f\"}</tool_call>\nAfter\n\n",
		"<<<think>>> <tool_call <tool_call>{bad}</tool_call>\n\n\nx",
	}
	for _, s := range texts {
		want := Parse(s, Options{NewID: seqIDs()})
		for _, sizes := range [][]int{nil, {2}, {3, 1, 4, 1, 5, 9, 2, 6}, {len(s)}} {
			got, sum := streamed(s, append([]int(nil), sizes...), Options{NewID: seqIDs()})
			if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(sum, want) {
				t.Errorf("%q in chunks %v:\n got %#v\n sum %#v\nwant %#v", s, sizes, got, sum, want)
			}
		}
	}
}

func FuzzStreamParser(f *testing.F) {
	f.Add("<think>\nx\n</think>\n\ny<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call>", []byte{1, 2, 3}, false)
	f.Add("r\n</think>\n\nc", []byte{5}, true)
	f.Add("<tool_call>{\"name\":\"f\",\"arguments\":\"{}\"}</tool_call>\n<tool_call>x</tool_call>", []byte{7, 1}, false)
	f.Fuzz(func(t *testing.T, s string, chunks []byte, inReasoning bool) {
		sizes := make([]int, len(chunks))
		for i, c := range chunks {
			sizes[i] = int(c%16) + 1
		}
		want := Parse(s, Options{InReasoning: inReasoning, NewID: seqIDs()})
		got, sum := streamed(s, sizes, Options{InReasoning: inReasoning, NewID: seqIDs()})
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(sum, want) {
			t.Fatalf("%q in chunks %v:\n got %#v\n sum %#v\nwant %#v", s, sizes, got, sum, want)
		}
		// Nothing is lost: every byte of the input that is not markup or a
		// newline the template adds is in the message.
		if strings.Contains(s, ToolCallOpen) {
			return // tool calls drop their JSON syntax
		}
		all := want.Reasoning + want.Content
		for _, r := range strings.NewReplacer(ThinkOpen, "", ThinkClose, "").Replace(s) {
			if r != '\n' && !strings.ContainsRune(all, r) {
				t.Fatalf("%q: rune %q lost; got %#v", s, r, want)
			}
		}
	})
}
