package prompt_test

import (
	"reflect"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/rl/chattemplate"
	"github.com/metaclaw-go/metaclaw/host/rl/completion"
	"github.com/metaclaw-go/metaclaw/host/rl/prompt"
	"github.com/metaclaw-go/metaclaw/internal/rlgoldens"
)

// TestServingFlow is the path RL serving takes, with a stand-in sampler
// that returns the ids of a canned Qwen3 answer: request → prompt ids →
// sampled ids decoded one by one → streamed deltas, which add up to the
// whole-text parse; the sampler stops on a stop id.
func TestServingFlow(t *testing.T) {
	codec, err := prompt.Load(rlgoldens.TokenizerDir(t))
	if err != nil {
		t.Fatal(err)
	}
	conv, err := chattemplate.FromOpenAI([]byte(`{"messages": [{"role": "user", "content": "Read NOTE.txt 📄"}],
		"tools": [{"type": "function", "function": {"name": "read", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	p, err := codec.EncodeChat(conv, chattemplate.Options{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	imStart, _ := codec.Tokenizer.TokenID("<|im_start|>")
	if p.IDs[len(p.IDs)-3] != imStart || p.InReasoning {
		t.Fatalf("prompt does not end with the generation prompt: %q", p.Text[len(p.Text)-40:])
	}
	stop := codec.StopTokenIDs()
	answer := "<think>\nThe user wants the file 📄.\n</think>\n\n<tool_call>\n{\"name\": \"read\", \"arguments\": {\"path\": \"NOTE.txt\"}}\n</tool_call>"
	sampled := append(codec.Tokenizer.Encode(answer), stop[0])

	dec := codec.Tokenizer.NewStreamDecoder(true)
	parser := completion.NewStreamParser(completion.Options{InReasoning: p.InReasoning, NewID: func() string { return "call_1" }})
	var sum completion.Message
	add := func(ds []completion.Delta) {
		for _, d := range ds {
			sum.Reasoning += d.Reasoning
			sum.Content += d.Content
			if d.ToolCall != nil {
				sum.ToolCalls = append(sum.ToolCalls, *d.ToolCall)
			}
		}
	}
	stopped := false
	for _, id := range sampled {
		if contains(stop, id) {
			stopped = true
			break
		}
		add(parser.Feed(dec.Add(id)))
	}
	add(parser.Feed(dec.Flush()))
	add(parser.Finish())
	want := completion.Message{Reasoning: "The user wants the file 📄.", ToolCalls: []completion.ToolCall{{ID: "call_1", Name: "read", Arguments: `{"path": "NOTE.txt"}`}}}
	if !stopped || !reflect.DeepEqual(sum, want) || !reflect.DeepEqual(parser.Message(), want) {
		t.Fatalf("stopped=%v\n sum %#v\nwant %#v", stopped, sum, want)
	}
	if got := completion.FinishReason(completion.StopStop, sum); got != "tool_calls" {
		t.Errorf("finish_reason %q", got)
	}
}

func contains(ids []int, id int) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}
