// Package completion reads a sampled completion (the decoded text of the
// policy model's tokens) back into an assistant message: <think> reasoning,
// answer text and <tool_call>{json}</tool_call> blocks, the markup Qwen
// (and Hermes-style) chat templates use. The same state machine serves whole
// texts (Parse) and text arriving token by token (StreamParser), so a
// streamed answer always adds up to the non-streamed one.
//
// The output is shaped for OpenAI Chat Completions (OpenAIResponse,
// ChunkWriter); Anthropic clients get it through host/apiformat's translators,
// which map reasoning_content to thinking blocks and tool_calls to tool_use.
package completion

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"strings"
)

// Markup of the completion, as Qwen's template renders assistant turns.
const (
	ThinkOpen     = "<think>"
	ThinkClose    = "</think>"
	ToolCallOpen  = "<tool_call>"
	ToolCallClose = "</tool_call>"
)

// Message is a parsed assistant message.
type Message struct {
	Content   string
	Reasoning string
	ToolCalls []ToolCall
}

// ToolCall is one parsed call. Arguments is the JSON text of the arguments
// object exactly as the model wrote it (so the next turn's prompt can show
// the model its own call unchanged).
type ToolCall struct {
	ID        string
	Name      string
	Arguments string
}

// Options configure a parser.
type Options struct {
	// InReasoning: the prompt ended inside an open <think> (see
	// prompt.Prompt.InReasoning), so the completion starts with reasoning.
	InReasoning bool
	// NewID makes tool call ids; default "call_" and 24 random characters.
	NewID func() string
}

// Delta is one increment of a streamed message: reasoning text, answer
// text, or one complete tool call (Index counts calls from 0).
type Delta struct {
	Reasoning string
	Content   string
	ToolCall  *ToolCall
	Index     int
}

// Parse reads a whole completion.
func Parse(text string, opts Options) Message {
	p := NewStreamParser(opts)
	p.Feed(text)
	p.Finish()
	return p.Message()
}

type state int

const (
	stStart     state = iota // nothing yet: a <think> may open
	stReasoning              // inside <think>
	stContent                // answer text
	stToolCall               // inside <tool_call>
)

// StreamParser parses a completion that arrives in pieces. Text that could
// be the start of a tag, and newlines the template would have added, are
// held back until the following text decides them.
type StreamParser struct {
	opts      Options
	st        state
	buf       string // undecided text (a possible tag prefix)
	held      string // newlines held at the end of reasoning or content
	begun     bool   // the current reasoning/content section has non-newline text
	afterTC   bool   // a tool call closed and no answer text followed yet
	toolBody  strings.Builder
	content   strings.Builder
	reasoning strings.Builder
	calls     []ToolCall
	finished  bool
}

// NewStreamParser starts a parser.
func NewStreamParser(opts Options) *StreamParser {
	p := &StreamParser{opts: opts}
	if opts.InReasoning {
		p.st = stReasoning
	}
	return p
}

func (p *StreamParser) tags() []string {
	switch p.st {
	case stStart:
		return []string{ThinkOpen, ToolCallOpen}
	case stReasoning:
		return []string{ThinkClose}
	case stContent:
		return []string{ToolCallOpen}
	}
	return []string{ToolCallClose}
}

// Feed consumes the next piece of text and returns the deltas it completes.
func (p *StreamParser) Feed(text string) []Delta {
	if p.finished {
		return nil
	}
	p.buf += text
	var out []Delta
	for {
		at, tag := -1, ""
		for _, t := range p.tags() {
			if i := strings.Index(p.buf, t); i >= 0 && (at < 0 || i < at) {
				at, tag = i, t
			}
		}
		if at < 0 {
			keep := partialTagSuffix(p.buf, p.tags())
			out = p.emit(out, p.buf[:len(p.buf)-keep])
			p.buf = p.buf[len(p.buf)-keep:]
			return out
		}
		before := p.st
		out = p.emit(out, p.buf[:at])
		p.buf = p.buf[at:]
		if p.st != before {
			continue // the text began the answer: look for that state's tags
		}
		p.buf = p.buf[len(tag):]
		out = p.onTag(out, tag)
	}
}

// Finish ends the completion: held text is settled, an unclosed <think>
// keeps its text as reasoning, an unclosed <tool_call> becomes answer text.
func (p *StreamParser) Finish() []Delta {
	if p.finished {
		return nil
	}
	out := p.emit(nil, p.buf)
	p.buf = ""
	if p.st == stToolCall {
		p.st = stContent
		out = p.emitText(out, ToolCallOpen+p.toolBody.String())
		p.toolBody.Reset()
	}
	p.held = "" // trailing newlines of the last section are dropped
	p.finished = true
	return out
}

// Message is everything parsed so far.
func (p *StreamParser) Message() Message {
	return Message{Content: p.content.String(), Reasoning: p.reasoning.String(), ToolCalls: append([]ToolCall(nil), p.calls...)}
}

func (p *StreamParser) onTag(out []Delta, tag string) []Delta {
	switch tag {
	case ThinkOpen:
		p.st, p.held, p.begun = stReasoning, "", false
	case ThinkClose:
		p.st, p.held, p.begun = stContent, "", false
	case ToolCallOpen:
		p.st, p.held = stToolCall, "" // the newline before a call is the template's
		p.toolBody.Reset()
	case ToolCallClose:
		body := p.toolBody.String()
		p.toolBody.Reset()
		p.st = stContent
		if tc, ok := parseToolCall(body); ok {
			if p.opts.NewID != nil {
				tc.ID = p.opts.NewID()
			} else {
				tc.ID = newCallID()
			}
			p.calls = append(p.calls, tc)
			p.afterTC = true
			c := tc
			return append(out, Delta{ToolCall: &c, Index: len(p.calls) - 1})
		}
		return p.emitText(out, ToolCallOpen+body+ToolCallClose)
	}
	return out
}

// emit routes decided text to the current section.
func (p *StreamParser) emit(out []Delta, s string) []Delta {
	if s == "" {
		return out
	}
	switch p.st {
	case stToolCall:
		p.toolBody.WriteString(s)
		return out
	case stStart:
		// Leading newlines before a <think> or the answer are dropped.
		if strings.TrimLeft(s, "\n") == "" && !p.begun {
			return out
		}
		p.st = stContent
	}
	return p.emitText(out, s)
}

// emitText adds text to reasoning or content, dropping the section's
// leading newlines and holding its trailing ones.
func (p *StreamParser) emitText(out []Delta, s string) []Delta {
	if !p.begun {
		s = strings.TrimLeft(s, "\n")
		if s == "" {
			return out
		}
		p.begun = true
	}
	if p.st == stContent && p.afterTC && strings.TrimLeft(s, "\n") == "" {
		return out // newlines between tool calls
	}
	trimmed := strings.TrimRight(s, "\n")
	if trimmed == "" {
		p.held += s
		return out
	}
	text := p.held + trimmed
	p.held = s[len(trimmed):]
	if p.st == stReasoning {
		p.reasoning.WriteString(text)
		return append(out, Delta{Reasoning: text})
	}
	if p.afterTC {
		// Answer text after a tool call joins what came before it on a
		// new line.
		text = strings.TrimLeft(text, "\n")
		if p.content.Len() > 0 {
			text = "\n" + text
		}
		p.afterTC = false
	}
	p.content.WriteString(text)
	return append(out, Delta{Content: text})
}

// partialTagSuffix returns the length of the longest suffix of s that is a
// proper prefix of one of tags.
func partialTagSuffix(s string, tags []string) int {
	best := 0
	for _, t := range tags {
		for n := min(len(t)-1, len(s)); n > best; n-- {
			if strings.HasSuffix(s, t[:n]) {
				best = n
				break
			}
		}
	}
	return best
}

// parseToolCall reads {"name": …, "arguments": …} (or "parameters").
func parseToolCall(body string) (ToolCall, bool) {
	var v struct {
		Name       *string         `json:"name"`
		Arguments  json.RawMessage `json:"arguments"`
		Parameters json.RawMessage `json:"parameters"`
	}
	dec := json.NewDecoder(strings.NewReader(body))
	if err := dec.Decode(&v); err != nil || v.Name == nil || *v.Name == "" {
		return ToolCall{}, false
	}
	if strings.TrimSpace(body[dec.InputOffset():]) != "" {
		return ToolCall{}, false // trailing data
	}
	args := v.Arguments
	if args == nil {
		args = v.Parameters
	}
	args = bytes.TrimSpace(args)
	var text string
	switch {
	case len(args) == 0 || string(args) == "null":
		text = "{}"
	case args[0] == '"':
		if err := json.Unmarshal(args, &text); err != nil {
			return ToolCall{}, false
		}
	default:
		text = string(args)
	}
	return ToolCall{Name: *v.Name, Arguments: text}, true
}

const idChars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

func newCallID() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = idChars[int(b[i])%len(idChars)]
	}
	return "call_" + string(b)
}
