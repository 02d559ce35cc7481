package proxy

import (
	"bytes"
	"testing"
)

// TestSpliceContentMatchesAppend: writing the message in one buffer gives
// the bytes the field-by-field path gives.
func TestSpliceContentMatchesAppend(t *testing.T) {
	block := "<metaclaw_context>\n## Memories\n\n- \"quoted\" \\ back <b> & \u2028 é\n</metaclaw_context>"
	for _, raw := range []string{
		`{"role":"system","content":"You are helpful."}`,
		`{"role":"system","content":"line\nnext \"q\" \u00e9","name":"x"}`,
		`{ "content" : "first" , "role" : "developer" }`,
		`{"role":"system","content":"a","content":"dup"}`,
	} {
		fields := objectFields([]byte(raw))
		content, _ := lookup(fields, "content")
		got, ok := spliceContent(fields, bytes.TrimSpace(content), block, len(raw))
		if !ok {
			t.Fatalf("%s: not spliced", raw)
		}
		updated := appendToContent(content, block)
		for j := range fields {
			if fields[j].key == "content" {
				fields[j].val = updated
			}
		}
		want := appendObject(nil, fields)
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\n got %s\nwant %s", raw, got, want)
		}
	}
	for _, raw := range []string{`{"role":"system","content":""}`, `{"role":"system","content":[{"type":"text","text":"x"}]}`, `{"role":"system"}`} {
		fields := objectFields([]byte(raw))
		content, _ := lookup(fields, "content")
		if _, ok := spliceContent(fields, bytes.TrimSpace(content), block, len(raw)); ok {
			t.Errorf("%s: spliced a content that is not a non-empty string", raw)
		}
	}
}
