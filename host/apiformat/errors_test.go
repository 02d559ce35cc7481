package apiformat

import (
	"strings"
	"testing"
)

func TestErrorBody(t *testing.T) {
	cases := []struct {
		status       int
		oaiType      string
		anthropicTyp string
	}{
		{400, "invalid_request_error", "invalid_request_error"},
		{401, "authentication_error", "authentication_error"},
		{402, "insufficient_quota", "billing_error"},
		{403, "permission_error", "permission_error"},
		{404, "not_found_error", "not_found_error"},
		{408, "timeout_error", "timeout_error"},
		{413, "request_too_large", "request_too_large"},
		{422, "invalid_request_error", "invalid_request_error"},
		{429, "rate_limit_error", "rate_limit_error"},
		{500, "server_error", "api_error"},
		{502, "upstream_error", "api_error"},
		{503, "server_error", "overloaded_error"},
		{504, "timeout_error", "timeout_error"},
		{529, "server_error", "overloaded_error"},
	}
	for _, tc := range cases {
		assertJSON(t, ErrorBody(OpenAI, tc.status, `bad "thing" <x>`),
			`{"error":{"message":"bad \"thing\" <x>","type":"`+tc.oaiType+`","param":null,"code":null}}`)
		assertJSON(t, ErrorBody(Anthropic, tc.status, "m"),
			`{"type":"error","error":{"type":"`+tc.anthropicTyp+`","message":"m"}}`)
	}
	assertJSON(t, ErrorBody(Anthropic, 404, ""), `{"type":"error","error":{"type":"not_found_error","message":"Not Found"}}`)
}

func TestTranslateErrorBody(t *testing.T) {
	long := strings.Repeat("é", 3000)
	cases := []struct {
		name     string
		from, to API
		status   int
		in, want string
	}{
		{"openai to anthropic", OpenAI, Anthropic, 429,
			`{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			`{"type":"error","error":{"type":"rate_limit_error","message":"Rate limit reached"}}`},
		{"openai server_error", OpenAI, Anthropic, 500,
			`{"error":{"message":"oops","type":"server_error"}}`,
			`{"type":"error","error":{"type":"api_error","message":"oops"}}`},
		{"anthropic to openai in OpenAI's words", Anthropic, OpenAI, 529,
			`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`,
			`{"error":{"message":"Overloaded","type":"server_error","param":null,"code":null}}`},
		{"anthropic to openai keeps a shared type", Anthropic, OpenAI, 429,
			`{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`,
			`{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":null}}`},
		{"anthropic billing to openai", Anthropic, OpenAI, 402,
			`{"type":"error","error":{"type":"billing_error","message":"no credit"}}`,
			`{"error":{"message":"no credit","type":"insufficient_quota","param":null,"code":null}}`},
		{"openai string error", OpenAI, Anthropic, 400, `{"error":"bad model"}`,
			`{"type":"error","error":{"type":"invalid_request_error","message":"bad model"}}`},
		{"fastapi detail", OpenAI, OpenAI, 404, `{"detail":"Not found"}`,
			`{"error":{"message":"Not found","type":"not_found_error","param":null,"code":null}}`},
		{"html page", Anthropic, OpenAI, 502, "<html><body>Bad Gateway</body></html>\n",
			`{"error":{"message":"<html><body>Bad Gateway</body></html>","type":"upstream_error","param":null,"code":null}}`},
		{"empty body", OpenAI, Anthropic, 503, "",
			`{"type":"error","error":{"type":"overloaded_error","message":"Service Unavailable"}}`},
		{"unknown JSON", OpenAI, Anthropic, 500, `{"weird":true}`,
			`{"type":"error","error":{"type":"api_error","message":"{\"weird\":true}"}}`},
		{"long text truncated on a rune boundary", OpenAI, Anthropic, 500, long,
			`{"type":"error","error":{"type":"api_error","message":"` + strings.Repeat("é", 1024) + `"}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertJSON(t, TranslateErrorBody(tc.from, tc.to, tc.status, []byte(tc.in)), tc.want)
		})
	}
	// Same format and recognised: passed through untouched.
	in := `{"error":{"message":"x","type":"t","code":"c","extra":1}}`
	if got := TranslateErrorBody(OpenAI, OpenAI, 400, []byte(in)); string(got) != in {
		t.Errorf("passthrough changed body: %s", got)
	}
	// A same-format body that is not a proper error envelope is normalised.
	assertJSON(t, TranslateErrorBody(OpenAI, OpenAI, 400, []byte(`{"message":"m"}`)),
		`{"error":{"message":"m","type":"invalid_request_error","param":null,"code":null}}`)
}
