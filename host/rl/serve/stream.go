package serve

import (
	"context"
	"errors"
	"io"
	"net/http"
	"unicode/utf8"

	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/completion"
)

// errStopped ends a streamed sample at the client's stop string.
var errStopped = errors.New("stop string reached")

// streamLive streams the answer while a StreamSampler generates it: each
// run of tokens is decoded, parsed and sent as chunks at once (text that may
// still turn out to start a stop string is held back until it cannot).
func (r *Responder) streamLive(ctx context.Context, mt proxy.MainTurn, v *backend.Version, t *turn, ss backend.StreamSampler) *http.Response {
	pr, pw := io.Pipe()
	go func() {
		err := r.runLive(ctx, mt, v, t, ss, pw)
		pw.CloseWithError(err)
	}()
	return &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: pr, ContentLength: -1}
}

func (r *Responder) runLive(ctx context.Context, mt proxy.MainTurn, v *backend.Version, t *turn, ss backend.StreamSampler, w io.Writer) error {
	ev := newEvents(w, mt.API, r.o.BaseModel)
	cw := &completion.ChunkWriter{ID: t.id, Model: r.o.BaseModel, Created: t.created}
	parser := completion.NewStreamParser(completion.Options{InReasoning: t.prompt.InReasoning})
	c := r.newCutter(t.p.stop)
	hold := max(c.maxL-1, 0)
	emitted := 0
	var sendErr error
	send := func(final bool) {
		text := c.text.String()
		limit := len(text)
		if !final && !c.hit {
			limit -= hold
			for limit > emitted && limit < len(text) && !utf8.RuneStart(text[limit]) {
				limit--
			}
		}
		if sendErr != nil || limit <= emitted {
			return
		}
		chunks, err := cw.Deltas(parser.Feed(text[emitted:limit]))
		if err == nil {
			err = ev.send(chunks...)
		}
		sendErr, emitted = err, limit
	}
	var tokens []int32
	var logprobs []float32
	res, err := ss.SampleStream(ctx, t.req, func(ts []int32, lps []float32) error {
		tokens, logprobs = append(tokens, ts...), append(logprobs, lps...)
		for _, id := range ts {
			c.add(id)
		}
		send(false)
		switch {
		case sendErr != nil:
			return sendErr
		case c.hit:
			return errStopped
		}
		return nil
	})
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case sendErr != nil:
		return sendErr
	case err != nil && !errors.Is(err, errStopped):
		r.failures.Add(1)
		r.noteError(err.Error())
		r.o.Log.Warn().Err(err).Msg("the policy model's stream failed")
		writeStreamError(w, mt.API, "the policy model could not sample: "+err.Error())
		return nil
	}
	seq := backend.Sequence{Tokens: tokens, Logprobs: logprobs, StopReason: backend.StopReasonStop}
	if err == nil && res != nil && len(res.Sequences) > 0 {
		seq = res.Sequences[0] // the whole result is authoritative
		c.n = min(c.n, len(seq.Tokens))
	}
	c.flush()
	send(true)
	if sendErr != nil {
		return sendErr
	}
	a := &answer{tokens: seq.Tokens, logprobs: seq.Logprobs, stopReason: seq.StopReason, text: c.text.String()}
	if c.hit {
		a.tokens, a.stopReason = seq.Tokens[:c.n], backend.StopReasonStop
		if len(seq.Logprobs) >= c.n {
			a.logprobs = seq.Logprobs[:c.n]
		}
	}
	if a.stopReason != backend.StopReasonLength {
		a.stopReason = backend.StopReasonStop
	}
	chunks, err := cw.Deltas(parser.Finish())
	if err == nil {
		err = ev.send(chunks...)
	}
	if err != nil {
		return err
	}
	a.msg = parser.Message()
	r.record(ctx, mt, v, t, a)
	var u *completion.Usage
	if t.p.usageChunk {
		uu := r.usage(t, a)
		u = &uu
	}
	return ev.finish(cw, completion.FinishReason(a.stopReason, a.msg), u)
}
