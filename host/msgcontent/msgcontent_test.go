package msgcontent

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestRead(t *testing.T) {
	for _, tc := range []struct {
		name, raw string
		o         Options
		want      Content
		err       bool
		notKind   bool // the error is ErrNotContent
	}{
		{name: "string", raw: `"hello"`, want: Content{Text: "hello"}},
		{name: "escaped string", raw: ` "a\nb" `, want: Content{Text: "a\nb"}},
		{name: "null", raw: `null`},
		{name: "absent", raw: ``},
		{name: "text parts", raw: `[{"type":"text","text":"a"},{"type":"text","text":"b"}]`, o: Options{Sep: "\n"}, want: Content{Text: "a\nb"}},
		{name: "input_text parts", raw: `[{"type":"input_text","text":"a"},{"type":"text","text":"b"}]`, o: Options{Sep: " "}, want: Content{Text: "a b"}},
		{name: "no separator", raw: `[{"type":"text","text":"a"},{"type":"text","text":"b"}]`, want: Content{Text: "ab"}},
		{name: "empty text part keeps its place", raw: `[{"type":"text","text":""},{"type":"text","text":"b"}]`, o: Options{Sep: "\n"}, want: Content{Text: "\nb"}},
		{name: "text part without text", raw: `[{"type":"text"},{"type":"text","text":"b"}]`, o: Options{Sep: "\n"}, want: Content{Text: "b"}},
		{name: "openai image", raw: `[{"type":"image_url","image_url":{"url":"data:x"}},{"type":"text","text":"what is this"}]`, o: Options{Sep: "\n"}, want: Content{Text: "what is this"}},
		{name: "anthropic image", raw: `[{"type":"image","source":{"type":"base64","data":"AA=="}}]`, o: Options{Sep: "\n"}},
		{name: "tool result", raw: `[{"type":"tool_result","tool_use_id":"t1","content":"42"}]`, o: Options{Sep: "\n"}, want: Content{ToolResult: true}},
		{name: "tool result beside text", raw: `[{"type":"tool_result","tool_use_id":"t1","content":"42"},{"type":"text","text":"and?"}]`, o: Options{Sep: "\n"}, want: Content{Text: "and?", ToolResult: true}},
		{name: "tool use is not text", raw: `[{"type":"tool_use","id":"t1","name":"f","input":{}}]`},
		{name: "refusal ignored", raw: `[{"type":"refusal","refusal":"no"}]`},
		{name: "refusal kept", raw: `[{"type":"text","text":"a"},{"type":"refusal","refusal":"no"}]`, o: Options{Refusals: true, Sep: "\n\n"}, want: Content{Text: "a\n\nno"}},
		{name: "number", raw: `5`, err: true, notKind: true},
		{name: "object", raw: `{"type":"text","text":"a"}`, err: true, notKind: true},
		{name: "bad string", raw: `"abc`, err: true},
		{name: "bad parts", raw: `[{"type":1}]`, err: true},
		{name: "not null", raw: `nil`, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Read(json.RawMessage(tc.raw), tc.o)
			if (err != nil) != tc.err || errors.Is(err, ErrNotContent) != tc.notKind {
				t.Fatalf("err = %v, want error %v (not content %v)", err, tc.err, tc.notKind)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			// the lenient reader never fails: no text where Read fails
			if lt := Text(json.RawMessage(tc.raw)); tc.err && lt != "" {
				t.Errorf("Text of bad content = %q", lt)
			}
		})
	}
}

func FuzzRead(f *testing.F) {
	for _, s := range []string{`"x"`, `null`, `[{"type":"text","text":"a"}]`, `[{"type":"tool_result"}]`, `5`, `{}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := Read(json.RawMessage(raw), Options{Sep: "\n", Refusals: true})
		if err != nil && c != (Content{}) {
			t.Fatalf("error %v with content %+v", err, c)
		}
		_ = Text(json.RawMessage(raw))
	})
}
