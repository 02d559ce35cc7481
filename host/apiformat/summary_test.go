package apiformat

import (
	"reflect"
	"strings"
	"testing"
)

func TestAccumulatorTolerance(t *testing.T) {
	junk := []Event{
		{Data: nil},
		{Data: []byte("not json")},
		{Data: []byte("[DONE]")},
		{Data: []byte(`{"choices":"nope"}`)},
		{Data: []byte(`{"type":"content_block_delta","index":7,"delta":{"type":"input_json_delta","partial_json":"x"}}`)},
		{Name: "message_delta", Data: []byte(`{"delta":{"stop_reason":5}}`)},
	}
	for _, api := range []API{OpenAI, Anthropic, "other"} {
		acc := NewAccumulator(api)
		for _, ev := range junk {
			acc.Add(ev)
		}
		if s := acc.Summary(); !reflect.DeepEqual(s, Summary{}) {
			t.Errorf("%s: junk produced %+v", api, s)
		}
	}
}

func TestAccumulatorOpenAIDetails(t *testing.T) {
	acc := NewAccumulator(OpenAI)
	for _, d := range []string{
		`{"id":"a","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":null,"reasoning":"r1"}}]}`,
		`{"id":"b","choices":[{"index":0,"delta":{"reasoning_content":"r2","refusal":"no"}},{"index":1,"delta":{"content":"other choice"}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"id":"t3","function":{"name":"x","arguments":"{\"a\""}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":3,"function":{"arguments":":1}"}},{"index":1,"id":"t1","function":{"name":"y"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":7,"completion_tokens":8}}`,
	} {
		acc.Add(Event{Data: []byte(d)})
	}
	want := Summary{Text: "no", Reasoning: "r1r2", StopReason: "tool_calls", Model: "m", InputTokens: 7, OutputTokens: 8, ID: "a",
		ToolCalls: []ToolCall{{ID: "t3", Name: "x", Arguments: `{"a":1}`}, {ID: "t1", Name: "y", Arguments: "{}"}}}
	if got := acc.Summary(); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestAccumulatorAnthropicUsageUpdates(t *testing.T) {
	acc := NewAccumulator(Anthropic)
	for _, d := range []string{
		`{"type":"message_start","message":{"id":"m1","model":"c","usage":{"input_tokens":10,"cache_creation_input_tokens":5,"output_tokens":1}}}`,
		`{"type":"message_delta","delta":{"stop_reason":"pause_turn"},"usage":{"input_tokens":12,"cache_read_input_tokens":3,"output_tokens":9}}`,
	} {
		acc.Add(Event{Data: []byte(d)})
	}
	want := Summary{StopReason: "pause_turn", Model: "c", InputTokens: 12 + 3 + 5, OutputTokens: 9, ID: "m1"}
	if got := acc.Summary(); !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
}

func TestAccumulatorLimitKeepsMetadata(t *testing.T) {
	big := strings.Repeat("x", 100<<10)
	for _, tc := range []struct {
		api    API
		events []Event
	}{
		{OpenAI, []Event{
			{Data: []byte(`{"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"` + big + `"}}]}`)},
			{Data: []byte(`{"id":"c1","model":"m","choices":[{"index":0,"delta":{"content":"` + big + `"}}]}`)},
			{Data: []byte(`{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":9}}`)},
		}},
		{Anthropic, []Event{
			{Name: "message_start", Data: []byte(`{"type":"message_start","message":{"id":"m1","model":"m","usage":{"input_tokens":3}}}`)},
			{Name: "content_block_start", Data: []byte(`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)},
			{Name: "content_block_delta", Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + big + `"}}`)},
			{Name: "content_block_delta", Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"` + big + `"}}`)},
			{Name: "message_delta", Data: []byte(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":9}}`)},
		}},
	} {
		acc := NewAccumulatorLimit(tc.api, 1000)
		for _, ev := range tc.events {
			acc.Add(ev)
		}
		s := acc.Summary()
		if len(s.Text) > 1100 || !strings.HasSuffix(s.Text, "bytes not stored]") || s.OutputTokens != 9 || s.InputTokens != 3 || s.StopReason == "" {
			t.Errorf("%s: text %d bytes (%q…), summary %+v", tc.api, len(s.Text), s.Text[:20], s.StopReason)
		}
	}
}

// TestSummarizeAnswerRefusesWhatIsNoResponse: one decode tells an answer of
// the upstream's format from a body that decodes but is none.
func TestSummarizeAnswerRefusesWhatIsNoResponse(t *testing.T) {
	for _, tt := range []struct {
		api     API
		body    string
		wantErr string // "" = accepted
	}{
		{OpenAI, `{"id":"c","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`, ""},
		{OpenAI, `{"id":"c","choices":[]}`, ""},
		{OpenAI, `{"id":"c","choices":[],"error":null}`, ""},
		{OpenAI, `{"id":"c"}`, `no "choices" array`},
		{OpenAI, `{"id":"c","choices":null}`, `no "choices" array`},
		{OpenAI, `{"error":{"message":"quota exceeded"}}`, `it carries an error: {"message":"quota exceeded"}`},
		{OpenAI, `{"choices":[],"error":"down"}`, `it carries an error: "down"`},
		{OpenAI, `{"choices":{}}`, `cannot unmarshal`},
		{OpenAI, `<html>`, `invalid character`},
		{Anthropic, `{"type":"message","content":[{"type":"text","text":"hi"}]}`, ""},
		{Anthropic, `{"type":"message"}`, ""},
		{Anthropic, `{"content":[]}`, ""},
		{Anthropic, `{"type":"error","error":{"type":"overloaded_error"}}`, `it carries an error`},
		{Anthropic, `{"id":"m"}`, `no "content" array`},
		{Anthropic, `{"type":"other","content":null}`, `no "content" array`},
	} {
		s, err := SummarizeAnswer(tt.api, []byte(tt.body))
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s %s: %v", tt.api, tt.body, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s %s: error %v, want one with %q", tt.api, tt.body, err, tt.wantErr)
		}
		if want, werr := SummarizeResponse(tt.api, []byte(tt.body)); werr == nil && !reflect.DeepEqual(s, want) {
			t.Errorf("%s %s: summary %+v, SummarizeResponse gives %+v", tt.api, tt.body, s, want)
		}
	}
}
