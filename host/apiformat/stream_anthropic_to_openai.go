package apiformat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

type antBlockSlot struct {
	antIndex  int
	kind      int
	toolIndex int  // OpenAI tool_calls[].index
	gotArgs   bool // any non-empty input_json_delta seen
}

// anthropicToOpenAI converts Anthropic message events into
// chat.completion.chunk events ending with the usage chunk and [DONE].
type anthropicToOpenAI struct {
	id, model  string
	created    int64
	prefix     []byte // `{"id":...,"object":...,"created":...,"model":...` shared by every chunk
	roleSent   bool
	finishSent bool
	done       bool
	stop       string // upstream stop_reason
	nextTool   int
	blocks     []antBlockSlot
	input      int
	cacheRead  int
	cacheWrite int
	output     int
}

// NewAnthropicToOpenAIStream translates an upstream Anthropic event stream
// into OpenAI chunks. The id is the upstream message id, so records of both
// sides correlate.
func NewAnthropicToOpenAIStream() StreamTranslator {
	return &anthropicToOpenAI{created: nowUnix()}
}

func (t *anthropicToOpenAI) Translate(ev Event) ([]Event, error) {
	if t.done {
		return nil, nil
	}
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 {
		return nil, nil
	}
	var e antEvent
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("apiformat: anthropic stream event: %w", err)
	}
	typ := e.Type
	if typ == "" {
		typ = ev.Name
	}
	var out []Event // most events yield one chunk, ping none
	switch typ {
	case "message_start":
		if e.Message != nil {
			if t.prefix == nil {
				t.id, t.model = e.Message.ID, e.Message.Model
			}
			t.addUsage(e.Message.Usage)
		}
		out = t.ensureRole(out)
	case "content_block_start":
		out = t.ensureRole(out)
		if e.ContentBlock == nil {
			break
		}
		cb := e.ContentBlock
		slot := antBlockSlot{antIndex: e.Index}
		switch cb.Type {
		case "text":
			slot.kind = blockText
			out = t.textChunk(out, "content", cb.Text)
		case "thinking":
			slot.kind = blockThinking
			out = t.textChunk(out, "reasoning_content", cb.Thinking)
		case "tool_use":
			slot.kind = blockTool
			slot.toolIndex = t.nextTool
			t.nextTool++
			out = t.toolStart(out, slot.toolIndex, openAIToolID(cb.ID), cb.Name)
			// Input normally streams as input_json_delta after an empty {};
			// a proxy that sends it whole in the start event is honoured too.
			if in := bytes.TrimSpace(cb.Input); len(in) > 0 && !bytes.Equal(in, []byte("{}")) && !isNullOrEmpty(in) {
				out = t.toolArgs(out, slot.toolIndex, compactJSON(in))
				slot.gotArgs = true
			}
		}
		t.setSlot(slot)
	case "content_block_delta":
		if e.Delta == nil {
			break
		}
		out = t.ensureRole(out)
		slot := t.slot(e.Index)
		switch e.Delta.Type {
		case "text_delta":
			out = t.textChunk(out, "content", e.Delta.Text)
		case "thinking_delta":
			out = t.textChunk(out, "reasoning_content", e.Delta.Thinking)
		case "input_json_delta":
			if slot != nil && slot.kind == blockTool && e.Delta.PartialJSON != "" {
				slot.gotArgs = true
				out = t.toolArgs(out, slot.toolIndex, e.Delta.PartialJSON)
			}
			// signature_delta, citations_delta: nothing to say in OpenAI terms.
		}
	case "content_block_stop":
		// A tool without input would otherwise leave arguments "", which
		// OpenAI clients fail to JSON-parse.
		if slot := t.slot(e.Index); slot != nil && slot.kind == blockTool && !slot.gotArgs {
			slot.gotArgs = true
			out = t.toolArgs(out, slot.toolIndex, "{}")
		}
	case "message_delta":
		if e.Delta != nil && e.Delta.StopReason != "" {
			t.stop = string(e.Delta.StopReason)
		}
		t.addUsage(e.Usage)
		out = t.ensureRole(out)
		out = t.finishChunk(out)
	case "message_stop":
		out = t.ensureRole(out)
		out = t.end(out)
	case "error":
		msg, etyp := anthropicErrorFields(e.Error)
		if msg == "" {
			msg = "upstream error"
		}
		t.done = true
		out = append(out, Event{Data: openAIErrorBody(openAIType(etyp, http.StatusInternalServerError), msg)}, doneEvent())
	}
	return out, nil
}

func anthropicErrorFields(raw json.RawMessage) (msg, typ string) {
	var e antErrorObj
	if jsonKind(raw) == '{' && json.Unmarshal(raw, &e) == nil {
		return string(e.Message), string(e.Type)
	}
	return "", ""
}

func (t *anthropicToOpenAI) addUsage(u *antUsage) {
	if u == nil {
		return
	}
	// message_delta usage is cumulative: later values replace earlier ones.
	if u.InputTokens != nil {
		t.input = *u.InputTokens
	}
	if u.CacheReadInputTokens != nil {
		t.cacheRead = *u.CacheReadInputTokens
	}
	if u.CacheCreationInputTokens != nil {
		t.cacheWrite = *u.CacheCreationInputTokens
	}
	if u.OutputTokens != nil {
		t.output = *u.OutputTokens
	}
}

func (t *anthropicToOpenAI) slot(index int) *antBlockSlot {
	for i := range t.blocks {
		if t.blocks[i].antIndex == index {
			return &t.blocks[i]
		}
	}
	return nil
}

func (t *anthropicToOpenAI) setSlot(s antBlockSlot) {
	if p := t.slot(s.antIndex); p != nil {
		*p = s
		return
	}
	t.blocks = append(t.blocks, s)
}

func (t *anthropicToOpenAI) chunkPrefix() []byte {
	if t.prefix == nil {
		if t.id == "" {
			t.id = newID("chatcmpl-")
		}
		b := make([]byte, 0, 80+len(t.id)+len(t.model))
		b = append(b, `{"id":`...)
		b = appendString(b, t.id)
		b = append(b, `,"object":"chat.completion.chunk","created":`...)
		b = strconv.AppendInt(b, t.created, 10)
		b = append(b, `,"model":`...)
		b = appendString(b, t.model)
		t.prefix = b
	}
	return t.prefix
}

// chunk builds a chunk whose single choice has the given delta JSON.
func (t *anthropicToOpenAI) chunk(out []Event, delta []byte, finish string) []Event {
	p := t.chunkPrefix()
	b := make([]byte, 0, len(p)+len(delta)+96)
	b = append(b, p...)
	b = append(b, `,"choices":[{"index":0,"delta":`...)
	b = append(b, delta...)
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	if finish == "" {
		b = append(b, "null"...)
	} else {
		b = appendString(b, finish)
	}
	b = append(b, "}]}"...)
	return append(out, Event{Data: b})
}

func (t *anthropicToOpenAI) ensureRole(out []Event) []Event {
	if t.roleSent {
		return out
	}
	t.roleSent = true
	return t.chunk(out, []byte(`{"role":"assistant","content":""}`), "")
}

func (t *anthropicToOpenAI) textChunk(out []Event, field, s string) []Event {
	if s == "" {
		return out
	}
	d := make([]byte, 0, len(field)+len(s)+8)
	d = append(d, `{"`...)
	d = append(d, field...)
	d = append(d, `":`...)
	d = appendString(d, s)
	d = append(d, '}')
	return t.chunk(out, d, "")
}

func (t *anthropicToOpenAI) toolStart(out []Event, index int, id, name string) []Event {
	d := make([]byte, 0, 96+len(id)+len(name))
	d = append(d, `{"tool_calls":[{"index":`...)
	d = strconv.AppendInt(d, int64(index), 10)
	d = append(d, `,"id":`...)
	d = appendString(d, id)
	d = append(d, `,"type":"function","function":{"name":`...)
	d = appendString(d, name)
	d = append(d, `,"arguments":""}}]}`...)
	return t.chunk(out, d, "")
}

func (t *anthropicToOpenAI) toolArgs(out []Event, index int, args string) []Event {
	d := make([]byte, 0, 64+len(args))
	d = append(d, `{"tool_calls":[{"index":`...)
	d = strconv.AppendInt(d, int64(index), 10)
	d = append(d, `,"function":{"arguments":`...)
	d = appendString(d, args)
	d = append(d, `}}]}`...)
	return t.chunk(out, d, "")
}

func (t *anthropicToOpenAI) finishChunk(out []Event) []Event {
	if t.finishSent {
		return out
	}
	t.finishSent = true
	return t.chunk(out, []byte(`{}`), openAIFinishReason(t.stop, t.nextTool > 0))
}

// end emits the finish chunk if still due, the usage chunk and [DONE].
func (t *anthropicToOpenAI) end(out []Event) []Event {
	out = t.finishChunk(out)
	t.done = true
	p := t.chunkPrefix()
	prompt := t.input + t.cacheRead + t.cacheWrite
	b := make([]byte, 0, len(p)+160)
	b = append(b, p...)
	b = append(b, `,"choices":[],"usage":{"prompt_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(t.output), 10)
	b = append(b, `,"total_tokens":`...)
	b = strconv.AppendInt(b, int64(prompt+t.output), 10)
	if t.cacheRead > 0 {
		b = append(b, `,"prompt_tokens_details":{"cached_tokens":`...)
		b = strconv.AppendInt(b, int64(t.cacheRead), 10)
		b = append(b, '}')
	}
	b = append(b, "}}"...)
	return append(out, Event{Data: b}, doneEvent())
}

// Finish closes a stream that ended early. After message_delta the answer is
// complete and only the usage chunk and [DONE] are missing; before it the
// answer was cut off, and the client gets an error chunk and [DONE].
func (t *anthropicToOpenAI) Finish() []Event {
	if t.done {
		return nil
	}
	if t.finishSent {
		return t.end(nil)
	}
	t.done = true
	return []Event{
		{Data: openAIErrorBody("server_error", "upstream stream ended before the response was complete")},
		doneEvent(),
	}
}
