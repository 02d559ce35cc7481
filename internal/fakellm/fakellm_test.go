package fakellm

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// The fake reads only what its decision needs unless it records requests;
// both ways must answer the same, byte for byte.
func TestAnswersTheSameRecordedOrNot(t *testing.T) {
	cases := []struct{ name, path, body string }{
		{"openai plain", "/v1/chat/completions", `{"model":"m","messages":[{"role":"system","content":"sys"},{"role":"user","content":"hello"}]}`},
		{"openai tool call", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"USE-TOOL now"}]}]}`},
		{"openai tool result", "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"USE-TOOL"},{"role":"assistant","content":null},{"role":"tool","content":"the note"}]}`},
		{"openai stream with usage", "/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"a b c"}]}`},
		{"openai failure", "/v1/chat/completions", `{"messages":[{"role":"user","content":"FAIL-429"}]}`},
		{"openai echo", "/v1/chat/completions", `{"messages":[{"role":"user","content":"ECHO-BACK this"},{"role":"user","content":"<<<BEGIN_X"}]}`},
		{"numeric model and stream", "/v1/chat/completions", `{"model":5,"stream":"yes","messages":[{"role":"user","content":"hi"}]}`},
		{"messages not an array", "/v1/chat/completions", `{"messages":{"role":"user"}}`},
		{"null body", "/v1/chat/completions", `null`},
		{"array body", "/v1/chat/completions", `[1,2]`},
		{"bad json", "/v1/chat/completions", `{"messages":[`},
		{"anthropic plain", "/v1/messages", `{"model":"c","system":"long","messages":[{"role":"user","content":"hi there"}]}`},
		{"anthropic tool result", "/v1/messages", `{"model":"c","messages":[{"role":"user","content":"USE-TOOL"},{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"read","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"note text"}]}]}`},
		{"anthropic stream", "/v1/messages", `{"model":"c","stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"USE-TOOL"}]}]}`},
	}
	recorded, bare := New(), New()
	defer recorded.Close()
	defer bare.Close()
	bare.Record = false
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a, b := post(t, recorded.URL+tc.path, tc.body), post(t, bare.URL+tc.path, tc.body)
			if a != b {
				t.Fatalf("recorded:\n%s\nnot recorded:\n%s", a, b)
			}
		})
	}
	if got := len(bare.Requests()); got != 0 {
		t.Fatalf("Record off kept %d requests", got)
	}
	last := recorded.Last()
	if last.Body["model"] != "c" || string(last.Raw) != cases[len(cases)-1].body {
		t.Fatalf("last recorded request: %v %s", last.Body, last.Raw)
	}
}

func TestRespondGetsTheDecodedBody(t *testing.T) {
	s := New()
	defer s.Close()
	s.Record = false
	s.Respond = func(body map[string]any) (string, bool) {
		msgs, _ := body["messages"].([]any)
		return "messages: " + strings.Repeat("x", len(msgs)), true
	}
	got := post(t, s.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"a"},{"role":"user","content":"b"}]}`)
	if !strings.Contains(got, "messages: xx") {
		t.Fatalf("answer %s", got)
	}
}

func post(t *testing.T, url, body string) string {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.Status + "\n" + string(b)
}
