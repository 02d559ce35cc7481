package transcript

import (
	"testing"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/store"
)

func TestUserText(t *testing.T) {
	block := core.Render([]core.Section{{Title: "Skills", Body: "x"}}).Block
	tests := []struct{ name, body, want string }{
		{"openai string", `{"messages":[{"role":"system","content":"SYS"},{"role":"user","content":"I prefer tabs"}]}`, "I prefer tabs"},
		{"anthropic blocks", `{"system":"S","messages":[{"role":"user","content":[{"type":"text","text":"use pnpm"}]}]}`, "use pnpm"},
		{"history ignored", `{"messages":[{"role":"user","content":"old"},{"role":"assistant","content":"a"},{"role":"user","content":"new"}]}`, "new"},
		{"consecutive user messages", `{"messages":[{"role":"assistant","content":"a"},{"role":"user","content":"one"},{"role":"user","content":"two"}]}`, "one\ntwo"},
		{"openclaw internal context", `{"messages":[{"role":"user","content":"[Mon] hi"},{"role":"user","content":[{"type":"text","text":"<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>> secret runtime <<<END_OPENCLAW_INTERNAL_CONTEXT>>>"}]}]}`, "[Mon] hi"},
		{"openclaw envelope (live capture 01)", `{"messages":[{"role":"user","content":"[Mon 2026-11-30 03:16 UTC] Hello from fixture turn one\n\nRuntime: agent=main | session=agent:main:explicit:fx-openai | sessionId=fx-openai | host=vm | shell=bash"}]}`, "Hello from fixture turn one"},
		{"openclaw timestamp (live capture 02)", `{"messages":[{"role":"assistant","content":"a"},{"role":"user","content":"[Mon 2026-11-30 03:16 UTC] MC-PREPEND\n\nSecond turn in the same session"}]}`, "MC-PREPEND\n\nSecond turn in the same session"},
		{"a bracket the user typed", `{"messages":[{"role":"user","content":"[WIP] Runtime: agent=x is a config key"}]}`, "[WIP] Runtime: agent=x is a config key"},
		{"injected block stripped", `{"messages":[{"role":"user","content":` + quote(block+"\nreal question") + `}]}`, "real question"},
		{"tool round (openai)", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":null},{"role":"tool","content":"file"}]}`, ""},
		{"tool round (anthropic)", `{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":[]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"file"}]}]}`, ""},
		{"garbage", `not json`, ""},
	}
	for _, tt := range tests {
		if got := UserText(tt.body); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func quote(s string) string {
	b := []byte{'"'}
	for _, r := range s {
		switch r {
		case '"':
			b = append(b, '\\', '"')
		case '\n':
			b = append(b, '\\', 'n')
		default:
			b = append(b, string(r)...)
		}
	}
	return string(append(b, '"'))
}

func TestFromTurnAndLearnable(t *testing.T) {
	tr := store.Turn{ID: 3, SessionID: "s", Agent: "a", TurnType: "main", Status: 200, MemoryScope: "default",
		RequestJSON: `{"messages":[{"role":"user","content":"hello"}]}`, ResponseText: "hi there", ToolCallsJSON: `[{"id":"1"}]`}
	ex := FromTurn(tr)
	if ex.User != "hello" || ex.Assistant != "hi there" || ex.ToolCalls != 1 || ex.Scope != "default" {
		t.Fatalf("%+v", ex)
	}
	if !Learnable(tr) {
		t.Fatal("main 200 turn must be learnable")
	}
	tr.TurnType = "side"
	if Learnable(tr) {
		t.Fatal("side turns are not learnable")
	}
	tr.TurnType, tr.Status = "main", 502
	if Learnable(tr) {
		t.Fatal("failed turns are not learnable")
	}
}
