package memory

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/transcript"
)

// openAIBody is a request whose last user message is text, behind a system
// prompt that says nothing durable.
func openAIBody(text string) string {
	b, _ := json.Marshal(map[string]any{"model": "m", "messages": []map[string]any{
		{"role": "system", "content": "You are a coding agent. Keep answers short."},
		{"role": "user", "content": text},
	}})
	return string(b)
}

func TestMayBeDurable(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{openAIBody("Remember that the staging port is 9090."), true},
		{openAIBody("FROM NOW ON, answer in British English."), true},
		{openAIBody("OK. You should NEVER push to main."), true},
		{openAIBody("Don't ever deploy on Fridays."), true},
		{openAIBody("记住，周五不要部署。"), true},
		{`{"messages":[{"role":"user","content":"\u8bb0\u4f4f\uff0c\u5468\u4e94"}]}`, true}, // escaped: maybe
		{`{"messages":[{"role":"user","content":"&#97;lways test first"}]}`, true},          // an entity: maybe
		{openAIBody("What is the weather like?"), false},
		{openAIBody("I prefer tabs for indentation."), false},
		{openAIBody("我喜欢用空格缩进"), false},
		// A durable word after a line break: raw JSON has "\nremember".
		{openAIBody("ok\nremember that the port is 9090."), true},
		{openAIBody("x\r\nFrom now on, tabs."), true},
		{openAIBody("first line\n\tnever push to main"), true},
		// Only the messages UserText reads are scanned: a durable word in
		// the system prompt or an earlier exchange says nothing of this turn.
		{`{"messages":[{"role":"system","content":"Always answer briefly; remember the rules."},{"role":"user","content":"What time is it?"}]}`, false},
		{`{"messages":[{"role":"user","content":"Remember the port."},{"role":"assistant","content":"Noted."},{"role":"user","content":"Thanks."}]}`, false},
		{`{"system":"Never guess.","messages":[{"role":"user","content":[{"type":"text","text":"from now on use tabs"}]}]}`, true},
		// Bodies the fast scan does not read are scanned whole.
		{`{"messages":[{"role":"system","content":"Always answer briefly."}],"messages":[{"role":"user","content":"hi"}]}`, true},
		{`{"messages":[{"role":"user","content":"hi"}], "x": "always"`, true},
	} {
		if got := mayBeDurable(tc.body); got != tc.want {
			t.Errorf("mayBeDurable(%s) = %v, want %v", tc.body, got, tc.want)
		}
	}
}

// FuzzMayBeDurable: the prefilter never says "no" for a body whose user
// text is durable.
func FuzzMayBeDurable(f *testing.F) {
	for _, s := range []string{"Remember that the port is 9090.", "ok\nremember that x", "a\n\tNever b", "please, always run tests", "以后请用中文回答。", "dont ever", "Going Forward we ship on Mondays", "plain question", "KEEP IN MIND: x"} {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, text string, anthropic bool) {
		body := openAIBody(text)
		if anthropic {
			b, _ := json.Marshal(map[string]any{"system": "Be brief.", "messages": []map[string]any{
				{"role": "user", "content": []map[string]any{{"type": "text", "text": text}}},
			}})
			body = string(b)
		}
		if Durable(transcript.UserText(body)) && !mayBeDurable(body) {
			t.Fatalf("durable text %q filtered out of %s", text, body)
		}
	})
}

// FuzzMayBeDurableBody: the same for whole bodies of any shape (history,
// tool rounds, both wire formats, invalid JSON, duplicate keys).
func FuzzMayBeDurableBody(f *testing.F) {
	for _, s := range []string{
		openAIBody("Remember that the port is 9090."),
		openAIBody("plain question"),
		`{"messages":[{"role":"user","content":"Remember the port."},{"role":"assistant","content":"Noted."},{"role":"user","content":"Thanks."}]}`,
		`{"messages":[{"role":"user","content":"always"},{"role":"user","content":[{"type":"text","text":"keep in mind"}]}]}`,
		`{"system":"Never guess.","messages":[{"role":"user","content":[{"type":"tool_result","content":"remember"}]}]}`,
		`{"messages":[{"role":"system","content":"x"}],"messages":[{"role":"user","content":"from now on"}]}`,
		`{"messages":[{"role":"user","content":"\u0061lways"}]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if Durable(transcript.UserText(body)) && !mayBeDurable(body) {
			t.Fatalf("durable user text %q filtered out of %s", transcript.UserText(body), body)
		}
	})
}

// BenchmarkDurableCheck is the per-turn check on a 6 KB agent request: the
// byte scan that settles most turns, and the parse it saves.
func BenchmarkDurableCheck(b *testing.B) {
	sys := strings.Repeat("You are a coding agent working in the user's repository. Follow the workspace rules and keep answers short. ", 56)[:6000]
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": []map[string]any{
		{"role": "system", "content": sys}, {"role": "user", "content": "Can you help me refactor the parser and make sure it handles errors?"}}})
	text := string(body)
	b.Run("scan", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if mayBeDurable(text) {
				b.Fatal("maybe")
			}
		}
	})
	b.Run("parse", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if Durable(transcript.UserText(text)) {
				b.Fatal("durable")
			}
		}
	})
}
