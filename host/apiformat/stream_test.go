package apiformat

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.sse from the current output")

// fixedClock makes "created" deterministic for golden files.
func fixedClock(t testing.TB) {
	t.Helper()
	old := nowUnix
	nowUnix = func() int64 { return 1764472600 }
	t.Cleanup(func() { nowUnix = old })
}

func readEvents(t testing.TB, path string) []Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var evs []Event
	r := NewSSEReader(f)
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			return evs
		}
		if err != nil {
			t.Fatal(err)
		}
		evs = append(evs, ev)
	}
}

func translateAll(t testing.TB, tr StreamTranslator, in []Event) []Event {
	t.Helper()
	var out []Event
	for _, ev := range in {
		got, err := tr.Translate(ev)
		if err != nil {
			t.Fatalf("Translate(%s): %v", ev.Data, err)
		}
		out = append(out, got...)
	}
	return append(out, tr.Finish()...)
}

func encodeEvents(t testing.TB, evs []Event) []byte {
	t.Helper()
	var buf bytes.Buffer
	for _, ev := range evs {
		if err := WriteEvent(&buf, ev); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func summarize(api API, evs []Event) Summary {
	acc := NewAccumulator(api)
	for _, ev := range evs {
		acc.Add(ev)
	}
	return acc.Summary()
}

func TestStreamTranscripts(t *testing.T) {
	fixedClock(t)
	cases := []struct {
		in, golden string
		from, to   API
		newT       func() StreamTranslator
		// stop reason the client should see for the upstream's
		wantStop string
	}{
		{"openai_text_usage.sse", "openai_text_usage.to_anthropic.golden.sse", OpenAI, Anthropic,
			func() StreamTranslator { return NewOpenAIToAnthropicStream("") }, "end_turn"},
		{"openai_parallel_tools.sse", "openai_parallel_tools.to_anthropic.golden.sse", OpenAI, Anthropic,
			func() StreamTranslator { return NewOpenAIToAnthropicStream("") }, "tool_use"},
		{"anthropic_text.sse", "anthropic_text.to_openai.golden.sse", Anthropic, OpenAI,
			NewAnthropicToOpenAIStream, "stop"},
		{"anthropic_tool_thinking.sse", "anthropic_tool_thinking.to_openai.golden.sse", Anthropic, OpenAI,
			NewAnthropicToOpenAIStream, "tool_calls"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			upstream := readEvents(t, filepath.Join("testdata", tc.in))
			client := translateAll(t, tc.newT(), upstream)
			got := encodeEvents(t, client)
			golden := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("client stream differs from %s:\n--- got\n%s\n--- want\n%s", golden, got, want)
			}
			for _, ev := range client {
				if string(ev.Data) != "[DONE]" && !json.Valid(ev.Data) {
					t.Errorf("invalid JSON event: %s", ev.Data)
				}
			}
			// Re-reading what we wrote gives back the same events.
			reread := readEvents(t, writeTemp(t, got))
			if !reflect.DeepEqual(normEvents(reread), normEvents(client)) {
				t.Errorf("re-read events differ")
			}

			up := summarize(tc.from, upstream)
			cl := summarize(tc.to, client)
			if cl.StopReason != tc.wantStop {
				t.Errorf("client stop reason = %q, want %q", cl.StopReason, tc.wantStop)
			}
			cl.StopReason = up.StopReason
			if !reflect.DeepEqual(up, cl) {
				t.Errorf("summaries differ:\nupstream %+v\nclient   %+v", up, cl)
			}
			if up.Text == "" && len(up.ToolCalls) == 0 {
				t.Errorf("upstream summary is empty: %+v", up)
			}
		})
	}
}

func writeTemp(t testing.TB, b []byte) string {
	p := filepath.Join(t.TempDir(), "s.sse")
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func normEvents(evs []Event) []Event {
	out := make([]Event, len(evs))
	for i, ev := range evs {
		out[i] = Event{Name: ev.Name, Data: append([]byte{}, ev.Data...)}
	}
	return out
}

func TestStreamSummariesWanted(t *testing.T) {
	// The expected summaries, spelled out, so a wrong accumulator cannot
	// agree with a wrong translator.
	cases := []struct {
		file string
		api  API
		want Summary
	}{
		{"openai_text_usage.sse", OpenAI, Summary{
			Text: "The secret word is **PINEAPPLE-42** <ok> & \"quoted\"\n", StopReason: "stop",
			Model: "gpt-4.1-mini-2025-04-14", InputTokens: 11873, OutputTokens: 14, ID: "chatcmpl-AbC123"}},
		{"openai_parallel_tools.sse", OpenAI, Summary{
			ToolCalls: []ToolCall{
				{ID: "call_Qk9rR2sUe1lZ", Name: "read", Arguments: `{"path": "NOTE.txt"}`},
				{ID: "call_Zm8xWc3pLq0T", Name: "exec", Arguments: `{"command": "ls -la <dir> && echo done"}`},
			},
			StopReason: "tool_calls", Model: "gpt-4.1-2025-04-14", InputTokens: 12044, OutputTokens: 52, ID: "chatcmpl-Tool77"}},
		{"anthropic_text.sse", Anthropic, Summary{
			Text:       "Hello! The note says the secret word is PINEAPPLE-42 — \"quoted\" <b>&</b>.\n\nAnything else?",
			StopReason: "end_turn", Model: "claude-sonnet-4-5-20250929", InputTokens: 472 + 11230, OutputTokens: 27,
			ID: "msg_01XFDUDYJgAACzvnptvVoYEL"}},
		{"anthropic_tool_thinking.sse", Anthropic, Summary{
			Text:      "I'll read the note first.",
			Reasoning: "The user wants the secret word. I should read NOTE.txt and list the directory.",
			ToolCalls: []ToolCall{
				{ID: "toolu_01A09q90qw90lq917835lq9", Name: "read", Arguments: `{"path": "NOTE.txt"}`},
				{ID: "toolu_01B7kLmN3oPqRsTuVwXyZ12", Name: "sessions_yield", Arguments: `{}`},
			},
			StopReason: "tool_use", Model: "claude-opus-4-1-20250805", InputTokens: 1290 + 10844, OutputTokens: 112,
			ID: "msg_01ThinkTool9x"}},
	}
	for _, tc := range cases {
		got := summarize(tc.api, readEvents(t, filepath.Join("testdata", tc.file)))
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\ngot  %+v\nwant %+v", tc.file, got, tc.want)
		}
	}
}

// chunk builds an OpenAI chunk event for the table tests below.
func chunk(s string) Event {
	return Event{Data: []byte(`{"id":"c1","model":"m","choices":` + s + `}`)}
}

func eventTypes(evs []Event) string {
	var b strings.Builder
	for i, ev := range evs {
		if i > 0 {
			b.WriteByte(' ')
		}
		if ev.Name != "" {
			b.WriteString(ev.Name)
			continue
		}
		var v struct {
			Choices []struct {
				Delta        map[string]any `json:"delta"`
				FinishReason *string        `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct{} `json:"usage"`
			Error *struct{} `json:"error"`
		}
		switch {
		case string(ev.Data) == "[DONE]":
			b.WriteString("DONE")
		case json.Unmarshal(ev.Data, &v) != nil:
			b.WriteString("BAD")
		case v.Error != nil:
			b.WriteString("error")
		case v.Usage != nil:
			b.WriteString("usage")
		case len(v.Choices) > 0 && v.Choices[0].FinishReason != nil:
			b.WriteString("finish:" + *v.Choices[0].FinishReason)
		case len(v.Choices) > 0:
			keys := make([]string, 0, 2)
			for k := range v.Choices[0].Delta {
				keys = append(keys, k)
			}
			if len(keys) > 1 {
				b.WriteString("role")
			} else if len(keys) == 1 {
				b.WriteString(keys[0])
			}
		}
	}
	return b.String()
}

func TestOpenAIToAnthropicStreamTerminations(t *testing.T) {
	role := chunk(`[{"index":0,"delta":{"role":"assistant","content":""}}]`)
	text := chunk(`[{"index":0,"delta":{"content":"hi"}}]`)
	stop := chunk(`[{"index":0,"delta":{},"finish_reason":"stop"}]`)
	usage := Event{Data: []byte(`{"id":"c1","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2}}`)}
	stopUsage := Event{Data: []byte(`{"id":"c1","choices":[{"index":0,"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":10,"completion_tokens":2}}`)}
	everyUsage := Event{Data: []byte(`{"id":"c1","choices":[{"index":0,"delta":{"content":"hi"}}],"usage":{"prompt_tokens":10,"completion_tokens":1}}`)}
	done := Event{Data: []byte("[DONE]")}
	errChunk := Event{Data: []byte(`{"error":{"message":"boom","type":"server_error"}}`)}
	const full = "message_start content_block_start content_block_delta content_block_stop message_delta message_stop"
	cases := []struct {
		name     string
		in       []Event
		want     string
		wantStop string
		wantOut  int
	}{
		{"usage chunk then DONE", []Event{role, text, stop, usage, done}, full, "end_turn", 2},
		{"no usage chunk", []Event{role, text, stop, done}, full, "end_turn", 0},
		{"finish and usage together", []Event{role, text, stopUsage, done}, full, "max_tokens", 2},
		{"usage on every chunk", []Event{everyUsage, everyUsage, stopUsage, done}, "message_start content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop", "max_tokens", 2},
		{"EOF after finish_reason", []Event{role, text, stop}, full, "end_turn", 0},
		{"DONE without finish_reason", []Event{role, text, done}, full, "end_turn", 0},
		{"EOF mid-answer", []Event{role, text}, "message_start content_block_start content_block_delta content_block_stop error", "", 0},
		{"nothing at all", nil, "error", "", 0},
		{"error chunk", []Event{role, text, errChunk, done}, "message_start content_block_start content_block_delta error", "", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := translateAll(t, NewOpenAIToAnthropicStream("client-model"), tc.in)
			if s := eventTypes(got); s != tc.want {
				t.Fatalf("events:\ngot  %s\nwant %s", s, tc.want)
			}
			sum := summarize(Anthropic, got)
			if sum.StopReason != tc.wantStop || sum.OutputTokens != tc.wantOut {
				t.Errorf("summary stop=%q out=%d, want %q %d", sum.StopReason, sum.OutputTokens, tc.wantStop, tc.wantOut)
			}
			if tc.wantOut > 0 && sum.InputTokens != 10 {
				t.Errorf("input tokens = %d, want 10", sum.InputTokens)
			}
			if len(got) > 1 && sum.Model != "client-model" {
				t.Errorf("model = %q, want the one given to the constructor", sum.Model)
			}
		})
	}
}

func TestOpenAIToAnthropicStreamBlocks(t *testing.T) {
	cases := []struct {
		name string
		in   []Event
		want string
		sum  Summary
	}{
		{"reasoning then text", []Event{
			chunk(`[{"index":0,"delta":{"role":"assistant","reasoning_content":"think"}}]`),
			chunk(`[{"index":0,"delta":{"reasoning_content":" more"}}]`),
			chunk(`[{"index":0,"delta":{"content":"answer"}}]`),
			chunk(`[{"index":0,"delta":{},"finish_reason":"stop"}]`),
			{Data: []byte("[DONE]")},
		}, "message_start content_block_start content_block_delta content_block_delta content_block_stop content_block_start content_block_delta content_block_stop message_delta message_stop",
			Summary{Text: "answer", Reasoning: "think more", StopReason: "end_turn", ID: "c1", Model: "m"}},
		{"openrouter reasoning field", []Event{
			chunk(`[{"index":0,"delta":{"reasoning":"r"}}]`),
			chunk(`[{"index":0,"delta":{},"finish_reason":"stop"}]`),
		}, "message_start content_block_start content_block_delta content_block_stop message_delta message_stop",
			Summary{Reasoning: "r", StopReason: "end_turn", ID: "c1", Model: "m"}},
		{"text then tool, stop reason forced to tool_use", []Event{
			chunk(`[{"index":0,"delta":{"content":"Let me look."}}]`),
			chunk(`[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"functions.read:0","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}}]}}]`),
			chunk(`[{"index":0,"delta":{},"finish_reason":"stop"}]`),
		}, "message_start content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_stop message_delta message_stop",
			Summary{Text: "Let me look.", ToolCalls: []ToolCall{{ID: "functions_read_0", Name: "read", Arguments: `{"path":"a"}`}}, StopReason: "tool_use", ID: "c1", Model: "m"}},
		{"tool calls without index (some servers)", []Event{
			chunk(`[{"index":0,"delta":{"tool_calls":[{"id":"a","type":"function","function":{"name":"x","arguments":"{}"}}]}}]`),
			chunk(`[{"index":0,"delta":{"tool_calls":[{"id":"b","type":"function","function":{"name":"y","arguments":"{\"k\""}}]}}]`),
			chunk(`[{"index":0,"delta":{"tool_calls":[{"function":{"arguments":":1}"}}]}}]`),
			chunk(`[{"index":0,"delta":{},"finish_reason":"tool_calls"}]`),
		}, "message_start content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop",
			Summary{ToolCalls: []ToolCall{{ID: "a", Name: "x", Arguments: "{}"}, {ID: "b", Name: "y", Arguments: `{"k":1}`}}, StopReason: "tool_use", ID: "c1", Model: "m"}},
		{"interleaved parallel fragments keep their block index", []Event{
			chunk(`[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"x","arguments":"{\"p\":"}}]}}]`),
			chunk(`[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","function":{"name":"y","arguments":"{\"q\":"}}]}}]`),
			chunk(`[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]}}]`),
			chunk(`[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"2}"}}]}}]`),
			chunk(`[{"index":0,"delta":{},"finish_reason":"tool_calls"}]`),
		}, "message_start content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_delta content_block_delta content_block_stop message_delta message_stop",
			Summary{ToolCalls: []ToolCall{{ID: "a", Name: "x", Arguments: `{"p":1}`}, {ID: "b", Name: "y", Arguments: `{"q":2}`}}, StopReason: "tool_use", ID: "c1", Model: "m"}},
		{"other choices ignored", []Event{
			chunk(`[{"index":1,"delta":{"content":"no"}},{"index":0,"delta":{"content":"yes"}}]`),
			chunk(`[{"index":0,"delta":{},"finish_reason":"length"}]`),
		}, "message_start content_block_start content_block_delta content_block_stop message_delta message_stop",
			Summary{Text: "yes", StopReason: "max_tokens", ID: "c1", Model: "m"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := translateAll(t, NewOpenAIToAnthropicStream(""), tc.in)
			if s := eventTypes(got); s != tc.want {
				t.Fatalf("events:\ngot  %s\nwant %s", s, tc.want)
			}
			if sum := summarize(Anthropic, got); !reflect.DeepEqual(sum, tc.sum) {
				t.Errorf("summary:\ngot  %+v\nwant %+v", sum, tc.sum)
			}
		})
	}
}

func antEv(name, data string) Event { return Event{Name: name, Data: []byte(data)} }

func TestAnthropicToOpenAIStreamTerminations(t *testing.T) {
	start := antEv("message_start", `{"type":"message_start","message":{"id":"msg_1","model":"claude","usage":{"input_tokens":5,"output_tokens":1}}}`)
	bstart := antEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	delta := antEv("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}`)
	bstop := antEv("content_block_stop", `{"type":"content_block_stop","index":0}`)
	mdelta := antEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":3}}`)
	mstop := antEv("message_stop", `{"type":"message_stop"}`)
	ping := antEv("ping", `{"type":"ping"}`)
	errEv := antEv("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
	cases := []struct {
		name string
		in   []Event
		want string
	}{
		{"complete", []Event{start, ping, bstart, delta, bstop, mdelta, mstop}, "role content finish:length usage DONE"},
		{"EOF after message_delta", []Event{start, bstart, delta, bstop, mdelta}, "role content finish:length usage DONE"},
		{"message_stop without message_delta", []Event{start, bstart, delta, bstop, mstop}, "role content finish:stop usage DONE"},
		{"EOF mid-answer", []Event{start, bstart, delta}, "role content error DONE"},
		{"upstream error", []Event{start, bstart, delta, errEv, mstop}, "role content error DONE"},
		{"nothing", nil, "error DONE"},
		{"name only, type from event name", []Event{antEv("message_start", `{"message":{"id":"m"}}`), antEv("content_block_delta", `{"index":0,"delta":{"type":"text_delta","text":"x"}}`), antEv("message_stop", `{}`)}, "role content finish:stop usage DONE"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := translateAll(t, NewAnthropicToOpenAIStream(), tc.in)
			if s := eventTypes(got); s != tc.want {
				t.Fatalf("events:\ngot  %s\nwant %s", s, tc.want)
			}
		})
	}
	// The error chunk keeps Anthropic's type and message.
	got := translateAll(t, NewAnthropicToOpenAIStream(), []Event{errEv})
	if want := `{"error":{"message":"Overloaded","type":"server_error","param":null,"code":null}}`; string(got[0].Data) != want {
		t.Errorf("error chunk = %s", got[0].Data)
	}
}

func TestAnthropicToOpenAIStreamWholeInput(t *testing.T) {
	// A tool_use whose input arrives whole in content_block_start.
	in := []Event{
		antEv("message_start", `{"type":"message_start","message":{"id":"msg_2","model":"c"}}`),
		antEv("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"read","input":{"path": "x"}}}`),
		antEv("content_block_stop", `{"type":"content_block_stop","index":0}`),
		antEv("message_delta", `{"type":"message_delta","delta":{"stop_reason":"tool_use"}}`),
		antEv("message_stop", `{"type":"message_stop"}`),
	}
	got := translateAll(t, NewAnthropicToOpenAIStream(), in)
	sum := summarize(OpenAI, got)
	want := []ToolCall{{ID: "toolu_1", Name: "read", Arguments: `{"path":"x"}`}}
	if !reflect.DeepEqual(sum.ToolCalls, want) || sum.StopReason != "tool_calls" {
		t.Errorf("got %+v", sum)
	}
	if up := summarize(Anthropic, in); !reflect.DeepEqual(up.ToolCalls, want) {
		t.Errorf("upstream summary %+v", up)
	}
}

func TestTranslateAfterEndAndBadData(t *testing.T) {
	for _, tr := range []StreamTranslator{NewOpenAIToAnthropicStream("m"), NewAnthropicToOpenAIStream()} {
		if _, err := tr.Translate(Event{Data: []byte("{not json")}); err == nil {
			t.Errorf("%T: want error for bad JSON", tr)
		}
		if evs, err := tr.Translate(Event{Data: []byte("  ")}); err != nil || evs != nil {
			t.Errorf("%T: empty data gave %v %v", tr, evs, err)
		}
		if tr.Finish() == nil {
			t.Errorf("%T: first Finish must close the stream", tr)
		}
		if tr.Finish() != nil {
			t.Errorf("%T: second Finish must be nil", tr)
		}
		if evs, _ := tr.Translate(chunk(`[{"index":0,"delta":{"content":"late"}}]`)); evs != nil {
			t.Errorf("%T: events after end: %v", tr, evs)
		}
	}
}
