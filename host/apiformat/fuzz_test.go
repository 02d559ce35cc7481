package apiformat

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Seeds shared by the request fuzzers: small but covering every block and
// part type the translators branch on.
var anthropicRequestSeeds = []string{
	`{"model":"m","max_tokens":5,"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],"stream":true,
	  "messages":[{"role":"user","content":[{"type":"text","text":"hi"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]},
	  {"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"x"},{"type":"text","text":"a"},{"type":"tool_use","id":"toolu_1","name":"read","input":{"p":1}}]},
	  {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":[{"type":"text","text":"e"},{"type":"image","source":{"type":"url","url":"http://x"}}]},{"type":"text","text":"more"}]}],
	  "tools":[{"name":"read","input_schema":{"type":"object"}},{"type":"bash_20250124","name":"bash"}],"tool_choice":{"type":"tool","name":"read","disable_parallel_tool_use":true},
	  "metadata":{"user_id":"u"},"stop_sequences":["x"],"temperature":1,"top_p":0.5}`,
	`{"model":"m","system":"plain","messages":[{"role":"user","content":"x"},{"role":"user","content":[{"type":"document","source":{"type":"content","content":[{"type":"text","text":"d"}]}}]}]}`,
	`{"messages":[{"role":"user","content":null}]}`,
	`{}`,
	`[]`,
	`{"messages":[{"role":"user","content":[{"type":"tool_result","content":5}]}]}`,
}

var openAIRequestSeeds = []string{
	`{"model":"m","messages":[{"role":"system","content":"s"},{"role":"developer","content":[{"type":"text","text":"d"}]},
	  {"role":"user","content":[{"type":"text","text":"hi"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}},{"type":"image_url","image_url":"https://x/y.png"},{"type":"file","file":{"file_data":"data:application/pdf;base64,AA==","filename":"f"}}]},
	  {"role":"assistant","content":null,"tool_calls":[{"id":"call.1","type":"function","function":{"name":"r","arguments":"{\"a\":"}},{"id":"c2","function":{"name":"q","arguments":{"o":1}}}]},
	  {"role":"tool","tool_call_id":"call.1","content":"ok"},{"role":"tool","tool_call_id":"c2","content":[{"type":"text","text":"x"}]},
	  {"role":"user","content":"next"}],
	  "tools":[{"type":"function","function":{"name":"r","parameters":{"type":"object"}}}],"tool_choice":{"type":"function","function":{"name":"r"}},
	  "parallel_tool_calls":false,"stop":["a"],"max_completion_tokens":9,"stream":true,"stream_options":{"include_usage":true},"user":"u"}`,
	`{"messages":[{"role":"assistant","content":[{"type":"refusal","refusal":"no"}]},{"role":"function","content":"x"}],"stop":"s","tool_choice":"required","tools":[{"type":"function","function":{"name":"x"}}]}`,
	`{"messages":[{"role":"user","content":{}}]}`,
	`{}`,
	`null`,
}

func FuzzAnthropicToOpenAIRequest(f *testing.F) {
	for _, s := range anthropicRequestSeeds {
		f.Add([]byte(s))
	}
	addFixtureSeeds(f, "/v1/messages")
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := AnthropicToOpenAIRequest(body)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON output: %s", out)
		}
		// What we produce must itself be a request we can read.
		if _, err := OpenAIToAnthropicRequest(out); err != nil {
			t.Fatalf("output not readable back: %v\n%s", err, out)
		}
	})
}

func FuzzOpenAIToAnthropicRequest(f *testing.F) {
	for _, s := range openAIRequestSeeds {
		f.Add([]byte(s))
	}
	addFixtureSeeds(f, "/v1/chat/completions")
	f.Fuzz(func(t *testing.T, body []byte) {
		out, err := OpenAIToAnthropicRequest(body)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON output: %s", out)
		}
		if _, err := AnthropicToOpenAIRequest(out); err != nil {
			t.Fatalf("output not readable back: %v\n%s", err, out)
		}
	})
}

// addFixtureSeeds adds the small captured fixtures (only 09 is under 20 KB);
// big seeds make the fuzzer spend its time minimising.
func addFixtureSeeds(f *testing.F, path string) {
	entries, err := os.ReadDir(fixtureDir)
	if err != nil {
		f.Fatalf("captured OpenClaw requests missing from the repository: %v", err)
	}
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join(fixtureDir, e.Name()))
		if err != nil || len(raw) > 20000 {
			continue
		}
		var fx struct {
			Path string          `json:"path"`
			Body json.RawMessage `json:"body"`
		}
		if json.Unmarshal(raw, &fx) == nil && fx.Path == path {
			f.Add([]byte(fx.Body))
		}
	}
}

func FuzzSSEReader(f *testing.F) {
	for _, s := range []string{
		"data: {\"a\":1}\n\ndata: [DONE]\n\n",
		"event: ping\r\ndata: {}\r\n\r\n",
		": c\ndata: a\ndata:b\n\nevent:x\n\n",
		"\xef\xbb\xbfdata: x",
		"data\n\nid: 1\nretry: 2\n\n",
		"data: a\rb\r\n\n",
	} {
		f.Add([]byte(s))
	}
	for _, name := range []string{"openai_text_usage.sse", "anthropic_tool_thinking.sse"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		evs, err := readAll(bytes.NewReader(in))
		if err != nil {
			t.Fatalf("unexpected error on small input: %v", err)
		}
		// A tiny read buffer makes every line a long one: same events.
		small := newSSEReaderSize(bytes.NewReader(in), 16)
		for i := 0; ; i++ {
			ev, err := small.Next()
			if err == io.EOF {
				if i != len(evs) {
					t.Fatalf("small buffer: %d events, want %d", i, len(evs))
				}
				break
			}
			if err != nil || i >= len(evs) || ev.Name != evs[i].Name || !bytes.Equal(ev.Data, evs[i].Data) {
				t.Fatalf("small buffer: event %d = %q %q (%v)", i, ev.Name, ev.Data, err)
			}
		}
		// Writing the events and reading them again gives the same events,
		// up to the line-break normalisation WriteEvent documents.
		var buf bytes.Buffer
		for _, ev := range evs {
			if err := WriteEvent(&buf, ev); err != nil {
				t.Fatal(err)
			}
		}
		again, err := readAll(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if len(again) != len(evs) {
			t.Fatalf("%d events became %d", len(evs), len(again))
		}
		nl := strings.NewReplacer("\r\n", "\n", "\r", "\n")
		for i := range evs {
			wantName := strings.ReplaceAll(evs[i].Name, "\r", " ")
			wantData := nl.Replace(string(evs[i].Data))
			if again[i].Name != wantName || string(again[i].Data) != wantData {
				t.Fatalf("event %d: %q %q became %q %q", i, evs[i].Name, evs[i].Data, again[i].Name, again[i].Data)
			}
		}
	})
}

// FuzzStreamTranslators feeds arbitrary event data, one event per line, to
// both translators and both accumulators.
func FuzzStreamTranslators(f *testing.F) {
	// Short seeds: large ones make the fuzzer spend its time minimising.
	for _, lines := range [][]string{
		{`{"id":"c","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"hi","reasoning_content":"r"}}]}`,
			`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a.1","function":{"name":"n","arguments":"{\"p"}},{"index":1,"id":"b","function":{"name":"m","arguments":""}}]}}]}`,
			`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\":1}"}}]},"finish_reason":"tool_calls"}]}`,
			`{"id":"c","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":4}}}`,
			`[DONE]`},
		{`{"type":"message_start","message":{"id":"m","model":"c","usage":{"input_tokens":3,"cache_read_input_tokens":2}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"t"}}`,
			`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t","name":"n","input":{}}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{}"}}`,
			`{"type":"content_block_stop","index":1}`,
			`{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":5}}`,
			`{"type":"message_stop"}`},
		{`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}`, `{"type":"ping"}`},
		{`{"error":{"message":"x","type":"server_error"}}`},
		{`{"type":"error","error":{"type":"overloaded_error","message":"x"}}`},
		{`{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"{"}},{"index":-1,"id":"a.b"}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":-5}}`},
		{`{"type":"content_block_start","index":99999999999,"content_block":{"type":"tool_use","input":[1]}}`, `{"type":"content_block_stop","index":99999999999}`},
		{`[DONE]`, `{"choices":[{"delta":{"content":"late"}}]}`},
	} {
		f.Add([]byte(strings.Join(lines, "\n")))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		lines := bytes.Split(in, []byte("\n"))
		o2a := NewOpenAIToAnthropicStream("m")
		a2o := NewAnthropicToOpenAIStream()
		var outA, outO []Event
		for _, l := range lines {
			ev := Event{Data: l}
			if evs, err := o2a.Translate(ev); err == nil {
				outA = append(outA, evs...)
			}
			if evs, err := a2o.Translate(ev); err == nil {
				outO = append(outO, evs...)
			}
		}
		outA = append(outA, o2a.Finish()...)
		outO = append(outO, a2o.Finish()...)
		for _, ev := range append(outA, outO...) {
			if string(ev.Data) != "[DONE]" && !json.Valid(ev.Data) {
				t.Fatalf("invalid event data %q", ev.Data)
			}
		}
		if len(outA) == 0 || outA[len(outA)-1].Name != "message_stop" && outA[len(outA)-1].Name != "error" {
			t.Fatalf("anthropic stream not terminated: %v", eventTypes(outA))
		}
		if len(outO) == 0 || string(outO[len(outO)-1].Data) != "[DONE]" {
			t.Fatalf("openai stream not terminated")
		}
		// Accumulators tolerate anything, including raw upstream lines.
		for _, api := range []API{OpenAI, Anthropic} {
			acc := NewAccumulator(api)
			for _, l := range lines {
				acc.Add(Event{Data: l})
			}
			for _, ev := range outA {
				acc.Add(ev)
			}
			for _, ev := range outO {
				acc.Add(ev)
			}
			_ = acc.Summary()
		}
	})
}

// FuzzResponses covers the non-streaming parsers: response translation,
// summaries and error bodies.
func FuzzResponses(f *testing.F) {
	f.Add([]byte(`{"id":"c","model":"m","choices":[{"message":{"content":"x","reasoning_content":"r","tool_calls":[{"id":"a","function":{"name":"n","arguments":"{"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"prompt_tokens_details":{"cached_tokens":9}}}`))
	f.Add([]byte(`{"id":"msg","content":[{"type":"text","text":"x"},{"type":"thinking","thinking":"t"},{"type":"tool_use","id":"t","name":"n","input":{"a":[1]}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"cache_read_input_tokens":2}}`))
	f.Add([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"x"}}`))
	f.Add([]byte(`{"error":"plain"}`))
	f.Add([]byte("<html>502</html>"))
	f.Fuzz(func(t *testing.T, body []byte) {
		if out, err := OpenAIToAnthropicResponse(body); err == nil && !json.Valid(out) {
			t.Fatalf("invalid JSON: %s", out)
		}
		if out, err := AnthropicToOpenAIResponse(body); err == nil && !json.Valid(out) {
			t.Fatalf("invalid JSON: %s", out)
		}
		_, _ = SummarizeResponse(OpenAI, body)
		_, _ = SummarizeResponse(Anthropic, body)
		for _, from := range []API{OpenAI, Anthropic} {
			for _, to := range []API{OpenAI, Anthropic} {
				out := TranslateErrorBody(from, to, 500, body)
				if !json.Valid(out) {
					t.Fatalf("invalid error JSON: %s", out)
				}
			}
		}
	})
}

// FuzzJSONString checks the fast string decoder against encoding/json.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{`"plain"`, `"a\nb\\c\"d\/e\tf\rg\bh\fi"`, `"\u00e9\ud83d\ude00"`, `"\ud800"`, "\"\xff\"", `"x\"`, `"`, `""`, `5`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var want string
		wantErr := json.Unmarshal(raw, &want)
		if wantErr != nil {
			return // jsonString's contract covers validated tokens only
		}
		got, err := jsonString(raw)
		if err != nil || got != want {
			t.Fatalf("jsonString(%q) = %q, %v; want %q", raw, got, err, want)
		}
		// appendString must encode it back to the same string.
		var back string
		if err := json.Unmarshal(appendString(nil, want), &back); err != nil || back != want {
			t.Fatalf("appendString(%q) does not round-trip: %q %v", want, back, err)
		}
	})
}
