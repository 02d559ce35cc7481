// Package msgcontent reads the text of a chat message's content, which both
// wire formats allow to be a string, null, or an array of parts (OpenAI:
// text, image_url, refusal, input_text; Anthropic: text, image, tool_use,
// tool_result). It is the one place that decides which parts are text.
package msgcontent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrNotContent is returned for content that is neither a string, null nor
// an array (a number, an object).
var ErrNotContent = errors.New("content must be a string, an array of parts or null")

// Options are the deliberate differences between readers.
type Options struct {
	// Sep joins the text of consecutive text parts: "\n" for what a user
	// wrote, "" for an OpenAI answer split into parts (one text), "\n\n"
	// for system prompts merged into Anthropic's one system text.
	Sep string
	// Refusals counts an OpenAI "refusal" part (its refusal field) as text:
	// translating an assistant message keeps what the model said.
	Refusals bool
}

// Content is what a message's content holds besides its parts' structure.
type Content struct {
	// Text is the text of the string, or of the text parts ("text",
	// "input_text"; with Options.Refusals also "refusal") joined by the
	// separator. Images, tool calls and tool results are not text.
	Text string
	// ToolResult reports an Anthropic tool_result block: the message carries
	// a tool's output, not words the user wrote.
	ToolResult bool
}

type part struct {
	Type    string  `json:"type"`
	Text    *string `json:"text"`
	Refusal *string `json:"refusal"`
}

// Read parses content strictly: malformed JSON or a value of the wrong kind
// is an error (wrapping ErrNotContent for the latter).
func Read(raw json.RawMessage, o Options) (Content, error) {
	switch firstByte(raw) {
	case 0, 'n':
		if k := strings.TrimSpace(string(raw)); k != "" && k != "null" {
			return Content{}, fmt.Errorf("invalid JSON %.20q", k)
		}
		return Content{}, nil
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return Content{}, fmt.Errorf("string: %w", err)
		}
		return Content{Text: s}, nil
	case '[':
		var parts []part
		if err := json.Unmarshal(raw, &parts); err != nil {
			return Content{}, fmt.Errorf("parts: %w", err)
		}
		var c Content
		var texts []string
		for _, p := range parts {
			switch {
			case (p.Type == "text" || p.Type == "input_text") && p.Text != nil:
				texts = append(texts, *p.Text)
			case p.Type == "refusal" && o.Refusals && p.Refusal != nil:
				texts = append(texts, *p.Refusal)
			case p.Type == "tool_result":
				c.ToolResult = true
			}
		}
		c.Text = strings.Join(texts, o.Sep)
		return c, nil
	}
	return Content{}, ErrNotContent
}

// Text is the lenient reader for what a turn says (session ids, retrieval
// queries, learning): content it cannot read has no text.
func Text(raw json.RawMessage) string {
	c, _ := Read(raw, Options{Sep: "\n"})
	return c.Text
}

func firstByte(b []byte) byte {
	if b = bytes.TrimLeft(b, " \t\n\r"); len(b) > 0 {
		return b[0]
	}
	return 0
}
