package apiformat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

type oaiToolSlot struct {
	oaiIndex int // tool_calls[].index upstream
	antIndex int // content block index downstream
	id       string
}

// openAIToAnthropic converts chat.completion.chunk events into Anthropic
// message events. Anthropic content blocks are strictly sequential, so a block
// is closed before the next opens.
type openAIToAnthropic struct {
	model      string
	started    bool
	done       bool
	finishSeen bool
	finish     string // upstream finish_reason
	usage      *oaiUsage
	nextIndex  int // next content block index
	openIndex  int
	openKind   int
	openTool   int // position in tools of the open tool block
	tools      []oaiToolSlot
}

// NewOpenAIToAnthropicStream translates an upstream OpenAI chunk stream into
// Anthropic events. model is reported in message_start; when empty the
// upstream's model is used.
func NewOpenAIToAnthropicStream(model string) StreamTranslator {
	return &openAIToAnthropic{model: model, openTool: -1}
}

func (t *openAIToAnthropic) Translate(ev Event) ([]Event, error) {
	if t.done {
		return nil, nil
	}
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 {
		return nil, nil
	}
	if bytes.Equal(data, doneData) {
		return t.close(nil), nil
	}
	var c oaiChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("apiformat: openai stream chunk: %w", err)
	}
	if !isNullOrEmpty(c.Error) {
		t.done = true
		msg, typ := openAIErrorFields(c.Error)
		if msg == "" {
			msg = "upstream error"
		}
		return []Event{anthropicErrorEvent(anthropicErrorType(typ, 0), msg)}, nil
	}
	out := make([]Event, 0, 3)
	if !t.started {
		out = t.start(out, &c)
	}
	for i := range c.Choices {
		ch := &c.Choices[i]
		if ch.Index != 0 {
			continue // Anthropic has a single choice
		}
		d := &ch.Delta
		if r := d.reasoning(); r != "" {
			out = t.appendText(out, blockThinking, r)
		}
		if jsonKind(d.Content) == '"' {
			s, err := jsonString(d.Content)
			if err != nil {
				return nil, fmt.Errorf("apiformat: openai stream chunk: %w", err)
			}
			out = t.appendText(out, blockText, s)
		}
		if d.Refusal != "" {
			out = t.appendText(out, blockText, string(d.Refusal))
		}
		for j := range d.ToolCalls {
			out = t.appendTool(out, &d.ToolCalls[j])
		}
		if ch.FinishReason != "" {
			t.finishSeen = true
			t.finish = string(ch.FinishReason)
		}
	}
	if c.Usage != nil {
		t.usage = c.Usage
		// The usage chunk ends the stream (include_usage); a server that sends
		// usage on every chunk ends it on the finish_reason chunk instead.
		if t.finishSeen {
			out = t.close(out)
		}
	}
	return out, nil
}

func (t *openAIToAnthropic) start(out []Event, c *oaiChunk) []Event {
	t.started = true
	id := c.ID
	if id == "" {
		id = newID("msg_")
	}
	model := t.model
	if model == "" {
		model = c.Model
	}
	in := 0
	if c.Usage != nil {
		in = c.Usage.PromptTokens - c.Usage.cached()
	}
	b := make([]byte, 0, 192+len(id)+len(model))
	b = append(b, `{"type":"message_start","message":{"id":`...)
	b = appendString(b, id)
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = appendString(b, model)
	b = append(b, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":`...)
	b = strconv.AppendInt(b, int64(max(in, 0)), 10)
	b = append(b, `,"output_tokens":0}}}`...)
	return append(out, Event{Name: "message_start", Data: b})
}

func (t *openAIToAnthropic) closeBlock(out []Event) []Event {
	if t.openKind == blockNone {
		return out
	}
	t.openKind = blockNone
	t.openTool = -1
	b := make([]byte, 0, 48)
	b = append(b, `{"type":"content_block_stop","index":`...)
	b = strconv.AppendInt(b, int64(t.openIndex), 10)
	b = append(b, '}')
	return append(out, Event{Name: "content_block_stop", Data: b})
}

func (t *openAIToAnthropic) openBlock(out []Event, kind int, block []byte) []Event {
	out = t.closeBlock(out)
	t.openKind = kind
	t.openIndex = t.nextIndex
	t.nextIndex++
	b := make([]byte, 0, 64+len(block))
	b = append(b, `{"type":"content_block_start","index":`...)
	b = strconv.AppendInt(b, int64(t.openIndex), 10)
	b = append(b, `,"content_block":`...)
	b = append(b, block...)
	b = append(b, '}')
	return append(out, Event{Name: "content_block_start", Data: b})
}

func (t *openAIToAnthropic) appendText(out []Event, kind int, s string) []Event {
	if s == "" {
		return out
	}
	if t.openKind != kind {
		if kind == blockText {
			out = t.openBlock(out, kind, []byte(`{"type":"text","text":""}`))
		} else {
			out = t.openBlock(out, kind, []byte(`{"type":"thinking","thinking":"","signature":""}`))
		}
	}
	b := make([]byte, 0, 80+len(s))
	b = append(b, `{"type":"content_block_delta","index":`...)
	b = strconv.AppendInt(b, int64(t.openIndex), 10)
	if kind == blockText {
		b = append(b, `,"delta":{"type":"text_delta","text":`...)
	} else {
		b = append(b, `,"delta":{"type":"thinking_delta","thinking":`...)
	}
	b = appendString(b, s)
	b = append(b, "}}"...)
	return append(out, Event{Name: "content_block_delta", Data: b})
}

func (t *openAIToAnthropic) appendTool(out []Event, tc *oaiToolCall) []Event {
	pos := -1
	if tc.Index != nil {
		for i := range t.tools {
			if t.tools[i].oaiIndex == *tc.Index {
				pos = i
				break
			}
		}
	} else if tc.ID == "" || (t.openTool >= 0 && t.tools[t.openTool].id == tc.ID) {
		// Some servers omit index: a delta without a new id continues the
		// current call.
		pos = t.openTool
		if pos < 0 && len(t.tools) > 0 {
			pos = len(t.tools) - 1
		}
	}
	if pos < 0 {
		idx := len(t.tools)
		if tc.Index != nil {
			idx = *tc.Index
		}
		id := anthropicToolID(tc.ID)
		block := make([]byte, 0, 64+len(id)+len(tc.Function.Name))
		block = append(block, `{"type":"tool_use","id":`...)
		block = appendString(block, id)
		block = append(block, `,"name":`...)
		block = appendString(block, tc.Function.Name)
		block = append(block, `,"input":{}}`...)
		out = t.openBlock(out, blockTool, block)
		t.tools = append(t.tools, oaiToolSlot{oaiIndex: idx, antIndex: t.openIndex, id: tc.ID})
		pos = len(t.tools) - 1
		t.openTool = pos
	}
	args := string(tc.Function.Arguments)
	if args == "" {
		return out
	}
	// A fragment for a call whose block is already closed (servers that
	// interleave parallel calls) still goes to that call's block index:
	// clients assemble partial_json per index.
	b := make([]byte, 0, 80+len(args))
	b = append(b, `{"type":"content_block_delta","index":`...)
	b = strconv.AppendInt(b, int64(t.tools[pos].antIndex), 10)
	b = append(b, `,"delta":{"type":"input_json_delta","partial_json":`...)
	b = appendString(b, args)
	b = append(b, "}}"...)
	return append(out, Event{Name: "content_block_delta", Data: b})
}

// close ends the message: closes the open block, then message_delta with the
// stop reason and usage, then message_stop.
func (t *openAIToAnthropic) close(out []Event) []Event {
	if t.done {
		return out
	}
	if !t.started {
		out = t.start(out, &oaiChunk{})
	}
	out = t.closeBlock(out)
	t.done = true
	stop := anthropicStopReason(t.finish, len(t.tools) > 0)
	b := make([]byte, 0, 160)
	b = append(b, `{"type":"message_delta","delta":{"stop_reason":`...)
	b = appendString(b, stop)
	b = append(b, `,"stop_sequence":null},"usage":{`...)
	if t.usage != nil {
		cached := t.usage.cached()
		b = append(b, `"input_tokens":`...)
		b = strconv.AppendInt(b, int64(max(t.usage.PromptTokens-cached, 0)), 10)
		if cached > 0 {
			b = append(b, `,"cache_read_input_tokens":`...)
			b = strconv.AppendInt(b, int64(cached), 10)
		}
		b = append(b, `,"output_tokens":`...)
		b = strconv.AppendInt(b, int64(t.usage.CompletionTokens), 10)
	} else {
		b = append(b, `"output_tokens":0`...)
	}
	b = append(b, "}}"...)
	return append(out,
		Event{Name: "message_delta", Data: b},
		Event{Name: "message_stop", Data: []byte(`{"type":"message_stop"}`)})
}

// Finish closes a stream that ended early. When the upstream had already said
// why it stopped (finish_reason) the message is closed normally; otherwise the
// answer was cut off, and the client gets an error event rather than a
// message that looks complete.
func (t *openAIToAnthropic) Finish() []Event {
	if t.done {
		return nil
	}
	if t.finishSeen {
		return t.close(nil)
	}
	out := t.closeBlock(nil)
	t.done = true
	return append(out, anthropicErrorEvent("api_error", "upstream stream ended before the response was complete"))
}

func anthropicErrorEvent(typ, msg string) Event {
	return Event{Name: "error", Data: anthropicErrorBody(typ, msg)}
}
