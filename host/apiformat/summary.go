package apiformat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// SummarizeResponse summarises a non-streaming response body in api's format.
func SummarizeResponse(api API, body []byte) (Summary, error) {
	s, _, err := decodeAnswer(api, body)
	return s, err
}

// SummarizeAnswer is SummarizeResponse for an answer about to be relayed:
// it also refuses a body that decodes but is not a response of api's
// format (OpenAI: no "choices" array; Anthropic: neither a "message" nor a
// "content" array; either: an "error" member, which some gateways send
// with status 200), in the same single decode.
func SummarizeAnswer(api API, body []byte) (Summary, error) {
	s, shape, err := decodeAnswer(api, body)
	if err != nil {
		return s, err
	}
	if e := bytes.TrimSpace(shape.err); len(e) > 0 && string(e) != "null" {
		return s, fmt.Errorf("it carries an error: %s", textclip.Ellipsis(string(e), 300))
	}
	switch {
	case api == Anthropic && shape.typ != "message" && !shape.list:
		return s, fmt.Errorf(`no "content" array`)
	case api == OpenAI && !shape.list:
		return s, fmt.Errorf(`no "choices" array`)
	}
	return s, nil
}

// answerShape is what SummarizeAnswer checks beside the summary.
type answerShape struct {
	err  json.RawMessage // the "error" member
	typ  string          // Anthropic's "type"
	list bool            // "choices" (OpenAI) or "content" (Anthropic) is an array
}

func decodeAnswer(api API, body []byte) (Summary, answerShape, error) {
	switch api {
	case OpenAI:
		var r struct {
			oaiResponse
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			return Summary{}, answerShape{}, fmt.Errorf("apiformat: openai response: %w", err)
		}
		s := Summary{ID: r.ID, Model: r.Model}
		if len(r.Choices) > 0 {
			m := &r.Choices[0].Message
			s.StopReason = string(r.Choices[0].FinishReason)
			s.Text, _ = openAIContentText(m.Content, "")
			if s.Text == "" {
				s.Text = string(m.Refusal)
			}
			s.Reasoning = m.reasoning()
			for i := range m.ToolCalls {
				tc := &m.ToolCalls[i]
				s.ToolCalls = append(s.ToolCalls, ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: normArgs(string(tc.Function.Arguments))})
			}
		}
		if r.Usage != nil {
			s.InputTokens, s.OutputTokens = r.Usage.PromptTokens, r.Usage.CompletionTokens
		}
		// A null or absent "choices" leaves the slice nil; [] does not.
		return s, answerShape{err: r.Error, list: r.Choices != nil}, nil
	case Anthropic:
		var r struct {
			antResponse
			Type  string          `json:"type"`
			Error json.RawMessage `json:"error"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			return Summary{}, answerShape{}, fmt.Errorf("apiformat: anthropic response: %w", err)
		}
		s := Summary{ID: r.ID, Model: r.Model, StopReason: string(r.StopReason)}
		var text, reasoning strings.Builder
		for i := range r.Content {
			b := &r.Content[i]
			switch b.Type {
			case "text":
				text.WriteString(b.Text)
			case "thinking":
				reasoning.WriteString(b.Thinking)
			case "tool_use":
				s.ToolCalls = append(s.ToolCalls, ToolCall{ID: b.ID, Name: b.Name, Arguments: compactJSON(b.Input)})
			}
		}
		s.Text, s.Reasoning = text.String(), reasoning.String()
		if u := r.Usage; u != nil {
			s.InputTokens = intOr0(u.InputTokens) + intOr0(u.CacheReadInputTokens) + intOr0(u.CacheCreationInputTokens)
			s.OutputTokens = intOr0(u.OutputTokens)
		}
		return s, answerShape{err: r.Error, typ: r.Type, list: r.Content != nil}, nil
	}
	return Summary{}, answerShape{}, fmt.Errorf("apiformat: unknown API %q", api)
}

// Accumulator builds a Summary from the events of a stream. It never fails:
// events it cannot read are ignored, so it can sit on any stream.
type Accumulator interface {
	Add(ev Event)
	Summary() Summary
}

// NewAccumulator returns an Accumulator for streams in api's format; for an
// unknown api it returns one that ignores everything.
func NewAccumulator(api API) Accumulator {
	return NewAccumulatorLimit(api, 0)
}

// NewAccumulatorLimit is NewAccumulator keeping at most limit bytes of the
// text, the reasoning and each tool call's arguments (0 = no limit), so a
// huge stream is relayed without being held: the rest is counted, and the
// summary ends with a marker saying how much was left out.
func NewAccumulatorLimit(api API, limit int) Accumulator {
	switch api {
	case OpenAI:
		a := &openAIAcc{limit: limit}
		a.text.limit, a.reasoning.limit = limit, limit
		return a
	case Anthropic:
		a := &anthropicAcc{limit: limit}
		a.text.limit, a.reasoning.limit = limit, limit
		return a
	}
	return nopAcc{}
}

// capped keeps the first limit bytes written to it (0 = all) and counts the rest.
type capped struct {
	b     strings.Builder
	limit int
	over  int
}

func (c *capped) WriteString(s string) {
	if c.limit <= 0 || c.b.Len()+len(s) <= c.limit {
		c.b.WriteString(s)
		return
	}
	kept := textclip.Prefix(s, c.limit-c.b.Len())
	c.b.WriteString(kept)
	c.over += len(s) - len(kept)
}

func (c *capped) String() string {
	if c.over == 0 {
		return c.b.String()
	}
	return c.b.String() + "…[metaclaw: " + strconv.Itoa(c.over) + " bytes not stored]"
}

// skipBig says whether an event can be skipped unparsed: once the summary
// holds limit bytes of text, a large event only carries more content, while
// what is still wanted (stop reason, usage) comes in small events.
func skipBig(data []byte, limit int, text, reasoning *capped) bool {
	return limit > 0 && len(data) >= 64<<10 && text.b.Len()+reasoning.b.Len() >= limit
}

type nopAcc struct{}

func (nopAcc) Add(Event)        {}
func (nopAcc) Summary() Summary { return Summary{} }

type accTool struct {
	key  int // OpenAI tool index or Anthropic block index
	id   string
	name string
	args capped
}

func findTool(tools []*accTool, key int) *accTool {
	for _, t := range tools {
		if t.key == key {
			return t
		}
	}
	return nil
}

func toolCalls(tools []*accTool) []ToolCall {
	if len(tools) == 0 {
		return nil
	}
	out := make([]ToolCall, len(tools))
	for i, t := range tools {
		out[i] = ToolCall{ID: t.id, Name: t.name, Arguments: normArgs(t.args.String())}
	}
	return out
}

type openAIAcc struct {
	s               Summary
	text, reasoning capped
	tools           []*accTool
	limit           int
}

func (a *openAIAcc) Add(ev Event) {
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 || data[0] != '{' {
		return // [DONE] or junk
	}
	if skipBig(data, a.limit, &a.text, &a.reasoning) {
		a.text.over += len(data)
		return
	}
	var c oaiChunk
	if json.Unmarshal(data, &c) != nil {
		return
	}
	if a.s.ID == "" {
		a.s.ID = c.ID
	}
	if a.s.Model == "" {
		a.s.Model = c.Model
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue
		}
		d := &ch.Delta
		a.reasoning.WriteString(d.reasoning())
		if jsonKind(d.Content) == '"' {
			if s, err := jsonString(d.Content); err == nil {
				a.text.WriteString(s)
			}
		}
		a.text.WriteString(string(d.Refusal))
		for j := range d.ToolCalls {
			tc := &d.ToolCalls[j]
			key := len(a.tools)
			if tc.Index != nil {
				key = *tc.Index
			} else if tc.ID == "" && len(a.tools) > 0 {
				key = a.tools[len(a.tools)-1].key
			}
			t := findTool(a.tools, key)
			if t == nil {
				t = &accTool{key: key}
				t.args.limit = a.limit
				a.tools = append(a.tools, t)
			}
			if t.id == "" {
				t.id = tc.ID
			}
			if t.name == "" {
				t.name = tc.Function.Name
			}
			t.args.WriteString(string(tc.Function.Arguments))
		}
		if ch.FinishReason != "" {
			a.s.StopReason = string(ch.FinishReason)
		}
	}
	if c.Usage != nil {
		a.s.InputTokens, a.s.OutputTokens = c.Usage.PromptTokens, c.Usage.CompletionTokens
	}
}

func (a *openAIAcc) Summary() Summary {
	s := a.s
	s.Text, s.Reasoning = a.text.String(), a.reasoning.String()
	s.ToolCalls = toolCalls(a.tools)
	return s
}

type anthropicAcc struct {
	s                            Summary
	text, reasoning              capped
	tools                        []*accTool
	input, cacheRead, cacheWrite int
	limit                        int
}

func (a *anthropicAcc) usage(u *antUsage) {
	if u == nil {
		return
	}
	if u.InputTokens != nil {
		a.input = *u.InputTokens
	}
	if u.CacheReadInputTokens != nil {
		a.cacheRead = *u.CacheReadInputTokens
	}
	if u.CacheCreationInputTokens != nil {
		a.cacheWrite = *u.CacheCreationInputTokens
	}
	if u.OutputTokens != nil {
		a.s.OutputTokens = *u.OutputTokens
	}
}

func (a *anthropicAcc) Add(ev Event) {
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 || data[0] != '{' {
		return
	}
	if skipBig(data, a.limit, &a.text, &a.reasoning) {
		a.text.over += len(data)
		return
	}
	var e antEvent
	if json.Unmarshal(data, &e) != nil {
		return
	}
	typ := e.Type
	if typ == "" {
		typ = ev.Name
	}
	switch typ {
	case "message_start":
		if m := e.Message; m != nil {
			a.s.ID, a.s.Model = m.ID, m.Model
			a.usage(m.Usage)
		}
	case "content_block_start":
		cb := e.ContentBlock
		if cb == nil {
			return
		}
		switch cb.Type {
		case "text":
			a.text.WriteString(cb.Text)
		case "thinking":
			a.reasoning.WriteString(cb.Thinking)
		case "tool_use":
			t := &accTool{key: e.Index, id: cb.ID, name: cb.Name}
			t.args.limit = a.limit
			if in := bytes.TrimSpace(cb.Input); len(in) > 0 && !bytes.Equal(in, []byte("{}")) && !isNullOrEmpty(in) {
				t.args.WriteString(compactJSON(in))
			}
			a.tools = append(a.tools, t)
		}
	case "content_block_delta":
		d := e.Delta
		if d == nil {
			return
		}
		switch d.Type {
		case "text_delta":
			a.text.WriteString(d.Text)
		case "thinking_delta":
			a.reasoning.WriteString(d.Thinking)
		case "input_json_delta":
			if t := findTool(a.tools, e.Index); t != nil {
				t.args.WriteString(d.PartialJSON)
			}
		}
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != "" {
			a.s.StopReason = string(e.Delta.StopReason)
		}
		a.usage(e.Usage)
	}
}

func (a *anthropicAcc) Summary() Summary {
	s := a.s
	s.Text, s.Reasoning = a.text.String(), a.reasoning.String()
	s.ToolCalls = toolCalls(a.tools)
	s.InputTokens = a.input + a.cacheRead + a.cacheWrite
	return s
}
