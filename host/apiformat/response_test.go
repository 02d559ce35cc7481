package apiformat

import (
	"reflect"
	"strings"
	"testing"
)

func TestOpenAIToAnthropicResponse(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"text with cached usage",
			`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"Hi <there> & you","refusal":null},"logprobs":null,"finish_reason":"stop"}],
			  "usage":{"prompt_tokens":1200,"completion_tokens":7,"total_tokens":1207,"prompt_tokens_details":{"cached_tokens":1024}},"system_fingerprint":"fp"}`,
			`{"id":"chatcmpl-1","type":"message","role":"assistant","model":"gpt-4.1","content":[{"type":"text","text":"Hi <there> & you"}],
			  "stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":176,"output_tokens":7,"cache_read_input_tokens":1024}}`},
		{"reasoning, text and parallel tool calls",
			`{"id":"x","model":"deepseek","choices":[{"index":0,"message":{"role":"assistant","reasoning_content":"plan","content":"Calling.","tool_calls":[
			    {"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}},
			    {"id":"call_2","type":"function","function":{"name":"exec","arguments":"not json"}}]},"finish_reason":"tool_calls"}],
			  "usage":{"prompt_tokens":5,"completion_tokens":6}}`,
			`{"id":"x","type":"message","role":"assistant","model":"deepseek","content":[
			    {"type":"thinking","thinking":"plan","signature":""},
			    {"type":"text","text":"Calling."},
			    {"type":"tool_use","id":"call_1","name":"read","input":{"path":"a"}},
			    {"type":"tool_use","id":"call_2","name":"exec","input":{"_raw":"not json"}}],
			  "stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":6}}`},
		{"tool calls with finish_reason stop are tool_use",
			`{"id":"x","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"n","arguments":"{}"}}]},"finish_reason":"stop"}]}`,
			`{"id":"x","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"c","name":"n","input":{}}],
			  "stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}`},
		{"length",
			`{"id":"x","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"cut"},"finish_reason":"length"}]}`,
			`{"id":"x","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"cut"}],"stop_reason":"max_tokens","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}`},
		{"content_filter ends the turn; refusal becomes text",
			`{"id":"x","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"No."},"finish_reason":"content_filter"}]}`,
			`{"id":"x","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"No."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}`},
		{"no choices",
			`{"id":"x","model":"m","choices":[]}`,
			`{"id":"x","type":"message","role":"assistant","model":"m","content":[],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":0,"output_tokens":0}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := OpenAIToAnthropicResponse([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			assertJSON(t, got, tc.want)
			checkSummariesAgree(t, OpenAI, []byte(tc.in), Anthropic, got)
		})
	}
	got, err := OpenAIToAnthropicResponse([]byte(`{"choices":[{"message":{"content":"","tool_calls":[{"function":{"name":"n","arguments":"{}"}}]}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	s, _ := SummarizeResponse(Anthropic, got)
	if !strings.HasPrefix(s.ID, "msg_") || !strings.HasPrefix(s.ToolCalls[0].ID, "toolu_") {
		t.Errorf("generated ids: %+v", s)
	}
}

func TestAnthropicToOpenAIResponse(t *testing.T) {
	fixedClock(t)
	cases := []struct {
		name, in, want string
	}{
		{"thinking, texts and tool_use with cache usage",
			`{"id":"msg_1","type":"message","role":"assistant","model":"claude","content":[
			    {"type":"thinking","thinking":"hmm","signature":"sig"},
			    {"type":"redacted_thinking","data":"xx"},
			    {"type":"text","text":"Let me "},{"type":"text","text":"check."},
			    {"type":"tool_use","id":"toolu_1","name":"read","input":{"path": "a"}},
			    {"type":"tool_use","id":"toolu_2","name":"yield","input":{}}],
			  "stop_reason":"tool_use","stop_sequence":null,
			  "usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":20}}`,
			`{"id":"msg_1","object":"chat.completion","created":1764472600,"model":"claude","choices":[{"index":0,"message":{
			    "role":"assistant","content":"Let me check.","reasoning_content":"hmm","refusal":null,"tool_calls":[
			      {"id":"toolu_1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}},
			      {"id":"toolu_2","type":"function","function":{"name":"yield","arguments":"{}"}}]},
			    "logprobs":null,"finish_reason":"tool_calls"}],
			  "usage":{"prompt_tokens":1110,"completion_tokens":20,"total_tokens":1130,"prompt_tokens_details":{"cached_tokens":1000}}}`},
		{"tool only has null content",
			`{"id":"msg_2","model":"c","content":[{"type":"tool_use","id":"toolu_1","name":"r","input":{}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":2}}`,
			`{"id":"msg_2","object":"chat.completion","created":1764472600,"model":"c","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,
			    "tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"r","arguments":"{}"}}]},"logprobs":null,"finish_reason":"tool_calls"}],
			  "usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`},
		{"empty content",
			`{"id":"msg_3","model":"c","content":[],"stop_reason":"end_turn"}`,
			`{"id":"msg_3","object":"chat.completion","created":1764472600,"model":"c","choices":[{"index":0,"message":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":"stop"}],
			  "usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AnthropicToOpenAIResponse([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			assertJSON(t, got, tc.want)
			checkSummariesAgree(t, Anthropic, []byte(tc.in), OpenAI, got)
		})
	}
}

func checkSummariesAgree(t *testing.T, from API, in []byte, to API, out []byte) {
	t.Helper()
	a, err := SummarizeResponse(from, in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := SummarizeResponse(to, out)
	if err != nil {
		t.Fatal(err)
	}
	if from == OpenAI {
		for i := range b.ToolCalls {
			// invalid arguments travel wrapped; compare what the client got
			if strings.HasPrefix(b.ToolCalls[i].Arguments, `{"_raw":`) {
				b.ToolCalls[i].Arguments = a.ToolCalls[i].Arguments
			}
			if a.ToolCalls[i].ID == "" {
				a.ToolCalls[i].ID = b.ToolCalls[i].ID
			}
		}
	}
	a.StopReason, b.StopReason = "", ""
	// compare arguments semantically
	for i := range a.ToolCalls {
		if i < len(b.ToolCalls) {
			a.ToolCalls[i].Arguments = compactJSON([]byte(a.ToolCalls[i].Arguments))
			b.ToolCalls[i].Arguments = compactJSON([]byte(b.ToolCalls[i].Arguments))
		}
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("summaries differ:\n%s %+v\n%s %+v", from, a, to, b)
	}
}

func TestStopReasonMaps(t *testing.T) {
	toAnt := map[string]string{"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use", "function_call": "tool_use", "content_filter": "end_turn", "": "end_turn", "weird": "end_turn"}
	for in, want := range toAnt {
		if got := anthropicStopReason(in, false); got != want {
			t.Errorf("anthropicStopReason(%q) = %q, want %q", in, got, want)
		}
	}
	if got := anthropicStopReason("length", true); got != "max_tokens" {
		t.Errorf("truncated tool call should stay max_tokens, got %q", got)
	}
	toOAI := map[string]string{"end_turn": "stop", "max_tokens": "length", "tool_use": "tool_calls", "stop_sequence": "stop", "pause_turn": "stop", "refusal": "stop", "model_context_window_exceeded": "length", "": "stop"}
	for in, want := range toOAI {
		if got := openAIFinishReason(in, false); got != want {
			t.Errorf("openAIFinishReason(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestResponseErrors(t *testing.T) {
	for _, in := range []string{`{`, `[]`, `{"choices":5}`} {
		if _, err := OpenAIToAnthropicResponse([]byte(in)); err == nil {
			t.Errorf("OpenAIToAnthropicResponse(%s): want error", in)
		}
	}
	for _, in := range []string{`{`, `"x"`, `{"content":{}}`} {
		if _, err := AnthropicToOpenAIResponse([]byte(in)); err == nil {
			t.Errorf("AnthropicToOpenAIResponse(%s): want error", in)
		}
	}
	if _, err := SummarizeResponse("gemini", []byte(`{}`)); err == nil {
		t.Error("unknown API: want error")
	}
	if _, err := SummarizeResponse(OpenAI, []byte(`{`)); err == nil {
		t.Error("bad body: want error")
	}
}

func TestSummarizeResponse(t *testing.T) {
	s, err := SummarizeResponse(OpenAI, []byte(`{"id":"c","model":"m","choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],"reasoning":"r",
	  "tool_calls":[{"id":"t","function":{"name":"n","arguments":""}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`))
	if err != nil {
		t.Fatal(err)
	}
	want := Summary{Text: "ab", Reasoning: "r", ToolCalls: []ToolCall{{ID: "t", Name: "n", Arguments: "{}"}}, StopReason: "tool_calls", Model: "m", InputTokens: 3, OutputTokens: 4, ID: "c"}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("got %+v", s)
	}
}
