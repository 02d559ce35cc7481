package apiformat

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// assertJSON compares two JSON documents semantically.
func assertJSON(t *testing.T, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("bad want JSON: %v\n%s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		gi, _ := json.MarshalIndent(g, "", "  ")
		wi, _ := json.MarshalIndent(w, "", "  ")
		t.Errorf("JSON differs\n--- got\n%s\n--- want\n%s", gi, wi)
	}
}

func TestAnthropicToOpenAIRequest(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"scalars and string system",
			`{"model":"claude-x","max_tokens":1024,"system":"Be brief.","stop_sequences":["END"],"temperature":0.2,"top_p":0.9,"top_k":5,
			  "stream":true,"metadata":{"user_id":"u-1"},"thinking":{"type":"enabled","budget_tokens":2000},
			  "messages":[{"role":"user","content":"Hi"}]}`,
			`{"model":"claude-x","max_tokens":1024,"stop":["END"],"temperature":0.2,"top_p":0.9,"stream":true,
			  "stream_options":{"include_usage":true},"user":"u-1",
			  "messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}`},
		{"system blocks joined, cache_control dropped, no stream",
			`{"model":"m","max_tokens":10,"system":[{"type":"text","text":"stable","cache_control":{"type":"ephemeral"}},{"type":"text","text":"dynamic"}],
			  "messages":[{"role":"user","content":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}]}]}`,
			`{"model":"m","max_tokens":10,"messages":[{"role":"system","content":"stable\n\ndynamic"},{"role":"user","content":"a"}]}`},
		{"images and multiple parts",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[
			  {"type":"text","text":"what is this?"},
			  {"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},
			  {"type":"image","source":{"type":"url","url":"https://example.com/cat.jpg"}},
			  {"type":"image","source":{"type":"file","file_id":"file_1"}}]}]}`,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[
			  {"type":"text","text":"what is this?"},
			  {"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}},
			  {"type":"image_url","image_url":{"url":"https://example.com/cat.jpg"}}]}]}`},
		{"documents",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[
			  {"type":"document","title":"spec.pdf","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0="}},
			  {"type":"document","source":{"type":"text","media_type":"text/plain","data":"plain doc"}}]}]}`,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[
			  {"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERi0=","filename":"spec.pdf"}},
			  {"type":"text","text":"plain doc"}]}]}`},
		{"parallel tool use, results, errors and trailing text",
			`{"model":"m","max_tokens":1,"messages":[
			  {"role":"user","content":"read both"},
			  {"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"text","text":"Reading."},
			    {"type":"tool_use","id":"toolu_a","name":"read","input":{"path":"a.txt"}},
			    {"type":"tool_use","id":"toolu_b","name":"read","input":{"path":"b.txt"}}]},
			  {"role":"user","content":[
			    {"type":"text","text":"also this"},
			    {"type":"tool_result","tool_use_id":"toolu_a","content":"A","cache_control":{"type":"ephemeral"}},
			    {"type":"tool_result","tool_use_id":"toolu_b","is_error":true,"content":[{"type":"text","text":"no such"},{"type":"text","text":"file"}]}]}]}`,
			`{"model":"m","max_tokens":1,"messages":[
			  {"role":"user","content":"read both"},
			  {"role":"assistant","content":"Reading.","tool_calls":[
			    {"id":"toolu_a","type":"function","function":{"name":"read","arguments":"{\"path\":\"a.txt\"}"}},
			    {"id":"toolu_b","type":"function","function":{"name":"read","arguments":"{\"path\":\"b.txt\"}"}}]},
			  {"role":"tool","tool_call_id":"toolu_a","content":"A"},
			  {"role":"tool","tool_call_id":"toolu_b","content":"Error: no such\n\nfile"},
			  {"role":"user","content":"also this"}]}`},
		{"tool-only assistant gets null content; empty input becomes {}; empty error result",
			`{"model":"m","max_tokens":1,"messages":[
			  {"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"sessions_yield","input":{}},{"type":"tool_use","id":"t2","name":"x"}]},
			  {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"},{"type":"tool_result","tool_use_id":"t2","is_error":true}]}]}`,
			`{"model":"m","max_tokens":1,"messages":[
			  {"role":"assistant","content":null,"tool_calls":[
			    {"id":"t1","type":"function","function":{"name":"sessions_yield","arguments":"{}"}},
			    {"id":"t2","type":"function","function":{"name":"x","arguments":"{}"}}]},
			  {"role":"tool","tool_call_id":"t1","content":""},
			  {"role":"tool","tool_call_id":"t2","content":"Error"}]}`},
		{"image returned by a tool moves to the following user message",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":[
			  {"type":"tool_result","tool_use_id":"t1","content":[{"type":"text","text":"screenshot"},{"type":"image","source":{"type":"base64","media_type":"image/jpeg","data":"/9j/"}}]}]}]}`,
			`{"model":"m","max_tokens":1,"messages":[
			  {"role":"tool","tool_call_id":"t1","content":"screenshot"},
			  {"role":"user","content":[{"type":"text","text":"Image(s) returned by tool call t1:"},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/"}}]}]}`},
		{"thinking-only assistant message is omitted",
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[{"type":"redacted_thinking","data":"x"}]},{"role":"user","content":"again"}]}`,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"q"},{"role":"user","content":"again"}]}`},
		{"tools and tool_choice any with parallel disabled; server tools dropped",
			`{"model":"m","max_tokens":1,"messages":[],"tool_choice":{"type":"any","disable_parallel_tool_use":true},
			  "tools":[{"name":"read","description":"Read a file","input_schema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"x-extra":1},"cache_control":{"type":"ephemeral"}},
			           {"name":"noschema"},
			           {"type":"web_search_20250305","name":"web_search","max_uses":5}]}`,
			`{"model":"m","max_tokens":1,"messages":[],"tool_choice":"required","parallel_tool_calls":false,
			  "tools":[{"type":"function","function":{"name":"read","description":"Read a file","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"x-extra":1}}},
			           {"type":"function","function":{"name":"noschema","parameters":{"type":"object","properties":{}}}}]}`},
		{"tool_choice tool",
			`{"model":"m","max_tokens":1,"messages":[],"tool_choice":{"type":"tool","name":"read"},"tools":[{"name":"read","input_schema":{"type":"object"}}]}`,
			`{"model":"m","max_tokens":1,"messages":[],"tool_choice":{"type":"function","function":{"name":"read"}},"tools":[{"type":"function","function":{"name":"read","parameters":{"type":"object"}}}]}`},
		{"tool_choice auto and none",
			`{"model":"m","messages":[],"tool_choice":{"type":"none"},"tools":[{"name":"r","input_schema":{"type":"object"}}]}`,
			`{"model":"m","messages":[],"tool_choice":"none","tools":[{"type":"function","function":{"name":"r","parameters":{"type":"object"}}}]}`},
		{"tool_choice without tools is dropped",
			`{"model":"m","messages":[],"tool_choice":{"type":"auto"}}`,
			`{"model":"m","messages":[]}`},
		{"html characters are not escaped",
			`{"model":"m","messages":[{"role":"user","content":"<<<BEGIN>>> a & b"}]}`,
			`{"model":"m","messages":[{"role":"user","content":"<<<BEGIN>>> a & b"}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := AnthropicToOpenAIRequest([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			assertJSON(t, got, tc.want)
			if strings.Contains(string(got), `\u003c`) {
				t.Errorf("HTML-escaped output: %s", got)
			}
		})
	}
}

func TestOpenAIToAnthropicRequest(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"system and developer joined, defaults, scalars, dropped fields",
			`{"model":"gpt","messages":[{"role":"system","content":"sys"},{"role":"developer","content":[{"type":"text","text":"dev1"},{"type":"text","text":"dev2"}]},{"role":"user","content":"hi"}],
			  "stop":"STOP","temperature":0.5,"top_p":1,"stream":true,"stream_options":{"include_usage":true},"user":"u-9",
			  "reasoning_effort":"high","logprobs":true,"top_logprobs":2,"n":1,"seed":3,"response_format":{"type":"json_object"}}`,
			`{"model":"gpt","max_tokens":4096,"system":"sys\n\ndev1\n\ndev2","messages":[{"role":"user","content":"hi"}],
			  "stop_sequences":["STOP"],"temperature":0.5,"top_p":1,"stream":true,"metadata":{"user_id":"u-9"}}`},
		{"max_completion_tokens wins over max_tokens; stop list",
			`{"model":"m","max_tokens":10,"max_completion_tokens":20,"stop":["a","b"],"messages":[{"role":"user","content":"x"}]}`,
			`{"model":"m","max_tokens":20,"stop_sequences":["a","b"],"messages":[{"role":"user","content":"x"}]}`},
		{"max_tokens alone",
			`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"x"}]}`,
			`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"x"}]}`},
		{"consecutive users merged; empty and blank content skipped",
			`{"model":"m","messages":[{"role":"user","content":"one"},{"role":"user","content":[{"type":"text","text":"two"},{"type":"text","text":"  "}]},{"role":"assistant","content":""},{"role":"user","content":"three"}]}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"one"},{"type":"text","text":"two"},{"type":"text","text":"three"}]}]}`},
		{"parallel tool calls and results merged into one user turn",
			`{"model":"m","messages":[
			  {"role":"user","content":"go"},
			  {"role":"assistant","content":"On it.","tool_calls":[
			    {"id":"call_1","type":"function","function":{"name":"read","arguments":"{\"path\":\"a\"}"}},
			    {"id":"call_2","type":"function","function":{"name":"exec","arguments":"{\"command\":\"ls\"}"}}]},
			  {"role":"tool","tool_call_id":"call_1","content":"A"},
			  {"role":"tool","tool_call_id":"call_2","content":[{"type":"text","text":"x"},{"type":"text","text":"y"}]},
			  {"role":"user","content":[{"type":"text","text":"<<<CTX>>>"}]}]}`,
			`{"model":"m","max_tokens":4096,"messages":[
			  {"role":"user","content":"go"},
			  {"role":"assistant","content":[{"type":"text","text":"On it."},
			    {"type":"tool_use","id":"call_1","name":"read","input":{"path":"a"}},
			    {"type":"tool_use","id":"call_2","name":"exec","input":{"command":"ls"}}]},
			  {"role":"user","content":[
			    {"type":"tool_result","tool_use_id":"call_1","content":"A"},
			    {"type":"tool_result","tool_use_id":"call_2","content":"x\n\ny"},
			    {"type":"text","text":"<<<CTX>>>"}]}]}`},
		{"invalid, empty, non-object and object arguments; ids sanitised",
			`{"model":"m","messages":[{"role":"assistant","content":null,"tool_calls":[
			    {"id":"functions.read:0","type":"function","function":{"name":"read","arguments":"{\"path\":"}},
			    {"id":"call_e","type":"function","function":{"name":"yield","arguments":""}},
			    {"id":"call_s","type":"function","function":{"name":"s","arguments":"[1]"}},
			    {"id":"call_o","type":"function","function":{"name":"o","arguments":{"k":1}}}]},
			  {"role":"tool","tool_call_id":"functions.read:0","content":"partial"}]}`,
			`{"model":"m","max_tokens":4096,"messages":[
			  {"role":"assistant","content":[
			    {"type":"tool_use","id":"functions_read_0","name":"read","input":{"_raw":"{\"path\":"}},
			    {"type":"tool_use","id":"call_e","name":"yield","input":{}},
			    {"type":"tool_use","id":"call_s","name":"s","input":{"_raw":"[1]"}},
			    {"type":"tool_use","id":"call_o","name":"o","input":{"k":1}}]},
			  {"role":"user","content":[{"type":"tool_result","tool_use_id":"functions_read_0","content":"partial"}]}]}`},
		{"tool results are moved before text in a merged user turn",
			`{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","function":{"name":"n","arguments":"{}"}}]},{"role":"user","content":"early"},{"role":"tool","tool_call_id":"c","content":""}]}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"c","name":"n","input":{}}]},
			  {"role":"user","content":[{"type":"tool_result","tool_use_id":"c"},{"type":"text","text":"early"}]}]}`},
		{"images: data URL, http URL, string form, unusable",
			`{"model":"m","messages":[{"role":"user","content":[
			  {"type":"text","text":"look"},
			  {"type":"image_url","image_url":{"url":"data:image/webp;base64,UklGRg==","detail":"high"}},
			  {"type":"image_url","image_url":{"url":"https://example.com/a.png"}},
			  {"type":"image_url","image_url":"https://example.com/b.png"},
			  {"type":"image_url","image_url":{"url":"data:image/svg+xml,%3Csvg%3E"}},
			  {"type":"input_audio","input_audio":{"data":"AAA","format":"wav"}},
			  {"type":"file","file":{"file_data":"data:application/pdf;base64,JVBE","filename":"a.pdf"}},
			  {"type":"file","file":{"file_id":"file-1"}}]}]}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":[
			  {"type":"text","text":"look"},
			  {"type":"image","source":{"type":"base64","media_type":"image/webp","data":"UklGRg=="}},
			  {"type":"image","source":{"type":"url","url":"https://example.com/a.png"}},
			  {"type":"image","source":{"type":"url","url":"https://example.com/b.png"}},
			  {"type":"document","title":"a.pdf","source":{"type":"base64","media_type":"application/pdf","data":"JVBE"}}]}]}`},
		{"tools, tool_choice required, parallel off",
			`{"model":"m","messages":[],"tool_choice":"required","parallel_tool_calls":false,
			  "tools":[{"type":"function","function":{"name":"read","description":"Read","parameters":{"type":"object","properties":{"p":{"type":"string"}}},"strict":true}},
			           {"type":"function","function":{"name":"bare"}},
			           {"type":"custom","custom":{"name":"grammar"}}]}`,
			`{"model":"m","max_tokens":4096,"messages":[],"tool_choice":{"type":"any","disable_parallel_tool_use":true},
			  "tools":[{"name":"read","description":"Read","input_schema":{"type":"object","properties":{"p":{"type":"string"}}}},
			           {"name":"bare","input_schema":{"type":"object","properties":{}}}]}`},
		{"tool_choice function; parallel off without choice",
			`{"model":"m","messages":[],"tool_choice":{"type":"function","function":{"name":"read"}},"tools":[{"type":"function","function":{"name":"read","parameters":{"type":"object"}}}]}`,
			`{"model":"m","max_tokens":4096,"messages":[],"tool_choice":{"type":"tool","name":"read"},"tools":[{"name":"read","input_schema":{"type":"object"}}]}`},
		{"parallel off alone creates auto choice",
			`{"model":"m","messages":[],"parallel_tool_calls":false,"tools":[{"type":"function","function":{"name":"r"}}]}`,
			`{"model":"m","max_tokens":4096,"messages":[],"tool_choice":{"type":"auto","disable_parallel_tool_use":true},"tools":[{"name":"r","input_schema":{"type":"object","properties":{}}}]}`},
		{"tool_choice none keeps parallel flag off",
			`{"model":"m","messages":[],"tool_choice":"none","parallel_tool_calls":false,"tools":[{"type":"function","function":{"name":"r"}}]}`,
			`{"model":"m","max_tokens":4096,"messages":[],"tool_choice":{"type":"none"},"tools":[{"name":"r","input_schema":{"type":"object","properties":{}}}]}`},
		{"assistant refusal part and reasoning_content; legacy function role dropped",
			`{"model":"m","messages":[{"role":"user","content":"q"},{"role":"assistant","reasoning_content":"secret thoughts","content":[{"type":"refusal","refusal":"I can't."}]},{"role":"function","name":"f","content":"x"}]}`,
			`{"model":"m","max_tokens":4096,"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"I can't."}]}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := OpenAIToAnthropicRequest([]byte(tc.in))
			if err != nil {
				t.Fatal(err)
			}
			assertJSON(t, got, tc.want)
		})
	}
}

func TestRequestErrors(t *testing.T) {
	cases := []struct {
		name string
		fn   func([]byte) ([]byte, error)
		in   string
	}{
		{"a2o not json", AnthropicToOpenAIRequest, `{`},
		{"a2o bad role", AnthropicToOpenAIRequest, `{"messages":[{"role":"system","content":"x"}]}`},
		{"a2o bad content", AnthropicToOpenAIRequest, `{"messages":[{"role":"user","content":5}]}`},
		{"a2o bad system", AnthropicToOpenAIRequest, `{"system":5,"messages":[]}`},
		{"a2o bad max_tokens", AnthropicToOpenAIRequest, `{"max_tokens":"many","messages":[]}`},
		{"o2a not json", OpenAIToAnthropicRequest, `[]`},
		{"o2a bad role", OpenAIToAnthropicRequest, `{"messages":[{"role":"robot","content":"x"}]}`},
		{"o2a bad content", OpenAIToAnthropicRequest, `{"messages":[{"role":"user","content":{}}]}`},
		{"o2a bad stop", OpenAIToAnthropicRequest, `{"stop":5,"messages":[]}`},
	}
	for _, tc := range cases {
		if _, err := tc.fn([]byte(tc.in)); err == nil {
			t.Errorf("%s: want error", tc.name)
		} else if !strings.HasPrefix(err.Error(), "apiformat: ") {
			t.Errorf("%s: error %q lacks package prefix", tc.name, err)
		}
	}
}

func TestToolIDs(t *testing.T) {
	if got := anthropicToolID("call_ok-1"); got != "call_ok-1" {
		t.Errorf("kept id changed: %s", got)
	}
	if got := anthropicToolID("a.b:c/é"); got != "a_b_c___" {
		t.Errorf("sanitised id = %q", got)
	}
	a, b := anthropicToolID(""), anthropicToolID("")
	if !strings.HasPrefix(a, "toolu_") || a == b || len(a) != 30 {
		t.Errorf("generated ids %q %q", a, b)
	}
	if c := openAIToolID(""); !strings.HasPrefix(c, "call_") {
		t.Errorf("generated %q", c)
	}
}

func TestParseDataURL(t *testing.T) {
	cases := []struct {
		in, media, data string
		ok              bool
	}{
		{"data:image/png;base64,AAAA", "image/png", "AAAA", true},
		{"DATA:image/jpeg;charset=x;BASE64,Zm9v", "image/jpeg", "Zm9v", true},
		{"data:;base64,", "", "", true},
		{"data:text/plain,hello", "", "", false},
		{"data:image/png;base64", "", "", false},
		{"https://x/y.png", "", "", false},
		{"dat", "", "", false},
	}
	for _, tc := range cases {
		m, d, ok := parseDataURL(tc.in)
		if m != tc.media || d != tc.data || ok != tc.ok {
			t.Errorf("parseDataURL(%q) = %q %q %v", tc.in, m, d, ok)
		}
	}
}
