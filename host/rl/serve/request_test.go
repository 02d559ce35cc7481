package serve

import (
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/rl/chattemplate"
	"github.com/metaclaw-go/metaclaw/internal/rltest"
)

func TestReadParams(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	tests := []struct {
		name string
		api  apiformat.API
		body string
		want params
		err  string
	}{
		{"openai defaults", apiformat.OpenAI, `{"messages":[]}`, params{}, ""},
		{"openai all", apiformat.OpenAI, `{"max_completion_tokens":50,"max_tokens":9,"temperature":0.2,"top_p":0.5,"stop":"END","logprobs":true,"stream_options":{"include_usage":true},"chat_template_kwargs":{"enable_thinking":false}}`,
			params{maxTokens: 50, temperature: f(0.2), topP: f(0.5), stop: []string{"END"}, logprobs: true, usageChunk: true}, ""},
		{"openai stop list", apiformat.OpenAI, `{"stop":["a","","b"]}`, params{stop: []string{"a", "b"}}, ""},
		{"openai stop null", apiformat.OpenAI, `{"stop":null,"max_tokens":7}`, params{maxTokens: 7}, ""},
		{"bad stop", apiformat.OpenAI, `{"stop":5}`, params{}, "stop must be"},
		{"negative max", apiformat.OpenAI, `{"max_tokens":-1}`, params{}, "must not be negative"},
		{"bad top_p", apiformat.OpenAI, `{"top_p":2}`, params{}, "top_p"},
		{"bad temperature", apiformat.OpenAI, `{"temperature":-1}`, params{}, "temperature"},
		{"not json", apiformat.OpenAI, `{`, params{}, "request"},
		{"anthropic", apiformat.Anthropic, `{"max_tokens":100,"top_k":5,"stop_sequences":["\n\nHuman:"],"thinking":{"type":"enabled","budget_tokens":1024}}`,
			params{maxTokens: 100, stop: []string{"\n\nHuman:"}, usageChunk: true}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readParams(tc.api, []byte(tc.body))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.maxTokens != tc.want.maxTokens || strings.Join(got.stop, "|") != strings.Join(tc.want.stop, "|") || got.logprobs != tc.want.logprobs || got.usageChunk != tc.want.usageChunk {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if (got.temperature == nil) != (tc.want.temperature == nil) || (got.topP == nil) != (tc.want.topP == nil) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
	p, _ := readParams(apiformat.Anthropic, []byte(`{"top_k":5,"thinking":{"type":"disabled"}}`))
	if p.topK == nil || *p.topK != 5 || p.thinking == nil || *p.thinking {
		t.Fatalf("anthropic top_k/thinking: %+v", p)
	}
	p, _ = readParams(apiformat.OpenAI, []byte(`{"chat_template_kwargs":{"enable_thinking":false}}`))
	if p.thinking == nil || *p.thinking {
		t.Fatalf("enable_thinking: %+v", p)
	}
}

func FuzzReadParams(f *testing.F) {
	f.Add(true, `{"max_tokens":5,"stop":["x"],"temperature":1}`)
	f.Add(false, `{"stop_sequences":["a"],"thinking":{"type":"enabled"}}`)
	f.Fuzz(func(t *testing.T, openai bool, body string) {
		api := apiformat.Anthropic
		if openai {
			api = apiformat.OpenAI
		}
		p, err := readParams(api, []byte(body))
		if err != nil {
			return
		}
		if p.maxTokens < 0 || (p.topP != nil && (*p.topP < 0 || *p.topP > 1)) {
			t.Fatalf("accepted out-of-range params %+v", p)
		}
		for _, s := range p.stop {
			if s == "" {
				t.Fatal("an empty stop string was kept")
			}
		}
	})
}

func TestJudgeTexts(t *testing.T) {
	conv := chattemplate.Conversation{Messages: []chattemplate.Message{
		{Role: "system", Content: "sys"},
		{Role: "user", Content: "<metaclaw_context>\nskills\n</metaclaw_context>\nread the note"},
		{Role: "assistant", ToolCalls: []chattemplate.ToolCall{{Name: "read", Arguments: `{}`}}},
		{Role: "tool", Name: "read", Content: "NOTE: hi"},
	}}
	if got := instruction(conv); got != "read the note" {
		t.Errorf("instruction %q", got)
	}
	if got := lastMessage(conv); got != "tool (read): NOTE: hi" {
		t.Errorf("last message %q", got)
	}
	if got := judgeText("  Reading.\n", []struct{ Name, Arguments string }{{"read", `{"path":"a"}`}}); got != "Reading.\n[tool call] read({\"path\":\"a\"})" {
		t.Errorf("judge text %q", got)
	}
}

// FuzzCutter checks the stop-string cut on token sequences that split
// characters: the answer never holds a stop string, is a prefix of the full
// decoded text which continues with the stop string, and the sample keeps
// exactly the ids up to the one that completed it.
func FuzzCutter(f *testing.F) {
	codec := rltest.Codec(f)
	r := &Responder{o: Options{Codec: codec}}
	tok := codec.Tokenizer
	pool := []int32{rltest.EOS}
	for _, id := range rltest.Words {
		pool = append(pool, id)
	}
	for b := int32(0); b < 256; b++ {
		pool = append(pool, b)
	}
	f.Add([]byte{1, 2, 3, 4, 5, 6}, " says")
	f.Add([]byte{200, 201, 202, 9, 10}, "\xc3")
	f.Add([]byte{7, 7, 7}, "")
	f.Fuzz(func(t *testing.T, picks []byte, stop string) {
		ids := make([]int32, len(picks))
		all := make([]int, len(picks))
		for i, p := range picks {
			ids[i] = pool[int(p)%len(pool)]
			all[i] = int(ids[i])
		}
		stops := nonEmpty([]string{stop})
		c := r.newCutter(stops)
		c.addAll(ids)
		text := c.text.String()
		full := tok.DecodeSkipSpecial(all)
		if stop != "" && strings.Contains(text, stop) {
			t.Fatalf("answer %q holds the stop string %q", text, stop)
		}
		if !c.hit {
			if text != full {
				t.Fatalf("no stop: answer %q, full %q", text, full)
			}
			return
		}
		if !strings.HasPrefix(full, text) || !strings.HasPrefix(full[len(text):], stop) {
			t.Fatalf("cut answer %q is not where %q starts in %q", text, stop, full)
		}
		before := r.newCutter(stops)
		for _, id := range ids[:c.n-1] {
			before.add(id)
		}
		if before.hit {
			t.Fatalf("the sample keeps %d ids but the stop string was complete after %d", c.n, c.n-1)
		}
	})
}
