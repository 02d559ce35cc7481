package serve

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"io"
	"net/http"
	"strings"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/completion"
	"github.com/metaclaw-go/metaclaw/host/rl/tokenizer"
)

// cutter decodes sampled ids one at a time and stops at the first of the
// client's stop strings: the answer is the text before it, and the sample
// keeps the ids up to the one that completed it (what the model generated
// before stopping, exactly).
type cutter struct {
	dec   *tokenizer.StreamDecoder
	stops []string
	text  strings.Builder
	n     int  // ids consumed
	hit   bool // a stop string was found; later ids are ignored
	maxL  int  // longest stop string
}

func (r *Responder) newCutter(stops []string) *cutter {
	c := &cutter{dec: r.o.Codec.Tokenizer.NewStreamDecoder(true), stops: stops}
	for _, s := range stops {
		c.maxL = max(c.maxL, len(s))
	}
	return c
}

// add consumes one id and returns the text it settles (without anything
// from a stop string on).
func (c *cutter) add(id int32) string {
	if c.hit {
		return ""
	}
	c.n++
	return c.push(c.dec.Add(int(id)))
}

// flush settles what the decoder holds (end of the sample).
func (c *cutter) flush() string {
	if c.hit {
		return ""
	}
	return c.push(c.dec.Flush())
}

func (c *cutter) push(piece string) string {
	if piece == "" {
		return ""
	}
	before := c.text.Len()
	c.text.WriteString(piece)
	if len(c.stops) == 0 {
		return piece
	}
	full := c.text.String()
	from := max(0, before-c.maxL+1) // a stop string may straddle pieces
	at := -1
	for _, s := range c.stops {
		if i := strings.Index(full[from:], s); i >= 0 && (at < 0 || from+i < at) {
			at = from + i
		}
	}
	if at < 0 {
		return piece
	}
	c.hit = true
	c.text.Reset()
	c.text.WriteString(full[:at])
	if at <= before {
		return ""
	}
	return full[before:at]
}

func (c *cutter) addAll(ids []int32) {
	for _, id := range ids {
		c.add(id)
	}
	c.flush()
}

// answer is what the policy said, as sampled and as parsed.
type answer struct {
	tokens     []int32
	logprobs   []float32
	stopReason string // backend.StopReasonStop or StopReasonLength
	text       string
	msg        completion.Message
}

// answer cuts the sequence at a stop string and parses its text.
func (r *Responder) answer(t *turn, seq backend.Sequence, c *cutter) *answer {
	a := &answer{tokens: seq.Tokens, logprobs: seq.Logprobs, stopReason: seq.StopReason, text: c.text.String()}
	if c.hit {
		a.tokens, a.stopReason = seq.Tokens[:c.n], backend.StopReasonStop
		if len(seq.Logprobs) == len(seq.Tokens) {
			a.logprobs = seq.Logprobs[:c.n]
		}
	}
	if a.stopReason != backend.StopReasonLength {
		a.stopReason = backend.StopReasonStop
	}
	a.msg = completion.Parse(a.text, completion.Options{InReasoning: t.prompt.InReasoning})
	return a
}

func (r *Responder) usage(t *turn, a *answer) completion.Usage {
	return completion.Usage{PromptTokens: len(t.req.Prompt), CompletionTokens: len(a.tokens)}
}

// tokenLogprobs are the answer's tokens for logprobs.content (special
// tokens such as the end-of-turn marker left out).
func (r *Responder) tokenLogprobs(a *answer) []completion.TokenLogprob {
	tok := r.o.Codec.Tokenizer
	out := []completion.TokenLogprob{}
	for i, id := range a.tokens {
		if tok.IsSpecial(int(id)) || i >= len(a.logprobs) {
			continue
		}
		b := tok.TokenBytes(int(id))
		out = append(out, completion.TokenLogprob{Token: string(b), Bytes: b, Logprob: float64(a.logprobs[i])})
	}
	return out
}

// body is the non-streamed answer in api's format.
func (r *Responder) body(api apiformat.API, t *turn, a *answer) ([]byte, error) {
	resp := completion.Response{ID: t.id, Model: r.o.BaseModel, Created: t.created, StopReason: a.stopReason, Usage: r.usage(t, a)}
	if t.p.logprobs {
		resp.Logprobs = r.tokenLogprobs(a)
	}
	body, err := completion.OpenAIResponse(a.msg, resp)
	if err != nil || api != apiformat.Anthropic {
		return body, err
	}
	return apiformat.OpenAIToAnthropicResponse(body)
}

// events writes OpenAI chunks as SSE events in api's format.
type events struct {
	w  io.Writer
	tr apiformat.StreamTranslator
}

func newEvents(w io.Writer, api apiformat.API, model string) *events {
	e := &events{w: w}
	if api == apiformat.Anthropic {
		e.tr = apiformat.NewOpenAIToAnthropicStream(model)
	}
	return e
}

func (e *events) send(chunks ...[]byte) error {
	for _, c := range chunks {
		evs := []apiformat.Event{{Data: c}}
		if e.tr != nil {
			var err error
			if evs, err = e.tr.Translate(evs[0]); err != nil {
				return err
			}
		}
		for _, ev := range evs {
			if err := apiformat.WriteEvent(e.w, ev); err != nil {
				return err
			}
		}
	}
	return nil
}

// finish sends the closing chunks and the end of the stream.
func (e *events) finish(cw *completion.ChunkWriter, finishReason string, usage *completion.Usage) error {
	fin, err := cw.Finish(finishReason, usage)
	if err != nil {
		return err
	}
	return e.send(append(fin, []byte("[DONE]"))...)
}

// chunksAtOnce is a whole answer as a stream (the sampler does not stream:
// the chunks are sent together once it has answered).
func (r *Responder) chunksAtOnce(api apiformat.API, t *turn, a *answer) []byte {
	var buf bytes.Buffer
	ev := newEvents(&buf, api, r.o.BaseModel)
	cw := &completion.ChunkWriter{ID: t.id, Model: r.o.BaseModel, Created: t.created}
	p := completion.NewStreamParser(completion.Options{InReasoning: t.prompt.InReasoning})
	deltas := append(p.Feed(a.text), p.Finish()...)
	chunks, err := cw.Deltas(deltas)
	if err == nil {
		err = ev.send(chunks...)
	}
	if err == nil {
		var u *completion.Usage
		if t.p.usageChunk {
			uu := r.usage(t, a)
			u = &uu
		}
		err = ev.finish(cw, completion.FinishReason(a.stopReason, p.Message()), u)
	}
	if err != nil {
		buf.Reset()
		writeStreamError(&buf, api, err.Error())
	}
	return buf.Bytes()
}

// writeStreamError ends a stream with an error event in api's format.
func writeStreamError(w io.Writer, api apiformat.API, msg string) {
	body := apiformat.ErrorBody(api, http.StatusInternalServerError, "RL serving: "+msg)
	if api == apiformat.Anthropic {
		_ = apiformat.WriteEvent(w, apiformat.Event{Name: "error", Data: body})
		return
	}
	_ = apiformat.WriteEvent(w, apiformat.Event{Data: body})
	_ = apiformat.WriteEvent(w, apiformat.Event{Data: []byte("[DONE]")})
}

func jsonResponse(body []byte) *http.Response {
	return &http.Response{
		StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
	}
}

func sseResponse(body []byte) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: -1,
	}, nil
}

func errorResponse(api apiformat.API, status int, msg string) *http.Response {
	body := apiformat.ErrorBody(api, status, msg)
	return &http.Response{
		StatusCode: status, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
	}
}

// newID is a chat completion id.
func newID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "chatcmpl-mc" + hex.EncodeToString(b[:])
}
