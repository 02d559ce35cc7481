package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unsafe"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/jsonstr"
	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// statusClientClosed records a turn the client abandoned (nginx's convention).
const statusClientClosed = 499

// turn carries one request through the handler.
type turn struct {
	start     time.Time
	ttfb      time.Duration
	clientAPI apiformat.API
	req       *request
	id        identity
	inj       core.Lazy
	rec       *store.Turn
	body      []byte // the request as the client sent it (rec.RequestJSON's bytes)
	observed  bool
	ctx       context.Context // the request's
	sentKey   string          // the key sent upstream: never echoed back (scrub.go)
	// secrets and secretBytes are secretKeys' answer for secretsFor, the
	// sentKey they were made for (scrub.go).
	secrets     []string
	secretBytes [][]byte
	secretsFor  string
	// passThrough: MetaClaw is switched off; nothing is injected or recorded.
	passThrough bool
	// scrubbed is the request body's redaction, done while the upstream
	// works (scrub.go): nil when it was not started.
	scrubbed chan redacted
}

func (s *Server) chat(api apiformat.API) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		t := &turn{start: time.Now(), clientAPI: api, ctx: r.Context()}
		defer s.o.Core.Answering()() // learning waits for a gap (core.WaitForGap)
		step := phase{ctx: t.ctx}
		defer step.end()
		step.to("metaclaw.request.parse")
		body, err := readBody(http.MaxBytesReader(w, r.Body, s.o.MaxBodyBytes), r.ContentLength, s.o.MaxBodyBytes)
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				writeError(w, api, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes (proxy.max_body_mb)", s.o.MaxBodyBytes))
				return
			}
			writeError(w, api, http.StatusBadRequest, "could not read request body: "+err.Error())
			return
		}
		if t.req, err = parseRequest(api, body); err != nil {
			writeError(w, api, http.StatusBadRequest, err.Error())
			return
		}
		if t.id, err = resolveIdentity(r, t.req, r.PathValue("agent")); err != nil {
			writeError(w, api, http.StatusBadRequest, err.Error())
			return
		}
		if s.o.ResolveTrace != nil {
			s.applyTrace(r, &t.id)
			if t.id.derived {
				s.applyBlock(r, t.req, &t.id)
			}
		}
		w.Header().Set("X-Metaclaw-Session-Id", t.id.session)
		if s.o.NotConfigured != "" && !(s.toResponder(t) && s.o.MainTurns.Serving()) {
			writeError(w, api, http.StatusServiceUnavailable, s.o.NotConfigured)
			return
		}
		t.rec = &store.Turn{
			SessionID: t.id.session, Agent: t.id.agent, TurnType: t.id.turnType,
			ClientAPI: string(api), UpstreamAPI: string(s.o.UpstreamAPI), Model: t.req.model, Stream: t.req.stream,
			RequestJSON: frozenString(body), UserID: t.id.scope.UserID, WorkspaceID: t.id.scope.WorkspaceID, MemoryScope: t.id.scope.Key(),
		}
		t.body = body
		defer s.finish(t)

		t.passThrough = s.o.PassThrough != nil && s.o.PassThrough()
		if t.passThrough {
			// `metaclaw disable`: forward as is.
		} else if t.id.turnType == core.TurnMain && !t.req.alreadyInjected() {
			q := core.Query{Agent: t.id.agent, SessionID: t.id.session, Scope: t.id.scope, UserTexts: t.req.recentUserTexts(3)}
			step.to("metaclaw.context")
			t.inj = s.o.Core.ContextLazy(r.Context(), q)
			step.to("metaclaw.request.prepare")
			t.req.inject(&t.inj) // a pointer: no copy of the value boxed on the heap
		} else if t.id.turnType == core.TurnMain {
			s.hookInjection(r, t)
		}
		t.req.truncate(s.o.MaxContextTokens, s.counter)
		if s.o.Model != "" && t.req.model != s.o.Model {
			t.req.set("model", s.o.Model)
			t.rec.Model = s.o.Model
		}
		// An OpenAI client gets the stream's usage chunk only when it asked
		// (stream_options.include_usage); the proxy wants it either way.
		dropUsage := false
		if t.req.stream && api == apiformat.OpenAI && s.o.UpstreamAPI == apiformat.OpenAI {
			dropUsage = t.req.ensureStreamUsage()
		} else if t.req.stream && api == apiformat.OpenAI {
			dropUsage = !t.req.wantsStreamUsage()
		}
		out, err := t.req.encode()
		if err == nil && api != s.o.UpstreamAPI {
			if api == apiformat.Anthropic {
				out, err = apiformat.AnthropicToOpenAIRequest(out)
			} else {
				out, err = apiformat.OpenAIToAnthropicRequest(out)
			}
		}
		if err != nil {
			s.fail(w, t, http.StatusBadRequest, "cannot translate request: "+err.Error())
			return
		}
		step.end()
		s.forward(w, r, t, out, dropUsage)
	}
}

// frozenString is b as a string without a copy (the request body: 6 KB
// and up on an agent's turn). The body is never written after it is read:
// parsing slices it, injection and encoding write new buffers, and
// redaction (scrub.go) returns a new one when it changes anything.
func frozenString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// ensureStreamUsage asks an OpenAI upstream for the usage chunk so the turn
// can be recorded with token counts; it reports whether the client did not
// ask for it (then the chunk is not passed on).
func (r *request) ensureStreamUsage() bool {
	so, ok := r.streamOptions()
	if !ok || r.wantsStreamUsage() {
		return false
	}
	so["include_usage"] = json.RawMessage("true")
	r.set("stream_options", so)
	return true
}

// wantsStreamUsage reports whether an OpenAI client asked for the usage
// chunk (stream_options.include_usage) or sent stream_options the proxy
// cannot read (then it is left as the client sent it).
func (r *request) wantsStreamUsage() bool {
	so, ok := r.streamOptions()
	if !ok {
		return true
	}
	var inc bool
	return json.Unmarshal(so["include_usage"], &inc) == nil && inc
}

// streamOptions returns the request's stream_options (empty when absent);
// ok is false when they are not an object.
func (r *request) streamOptions() (map[string]json.RawMessage, bool) {
	so := map[string]json.RawMessage{}
	if raw, ok := lookup(r.fields, "stream_options"); ok && !isNull(raw) {
		if json.Unmarshal(raw, &so) != nil {
			return nil, false
		}
	}
	return so, true
}

// fail answers with an error in the client's format and records it.
func (s *Server) fail(w http.ResponseWriter, t *turn, status int, msg string) {
	writeError(w, t.clientAPI, status, msg)
	t.rec.Status, t.rec.Error = status, msg
}

func (s *Server) forward(w http.ResponseWriter, r *http.Request, t *turn, body []byte, dropUsage bool) {
	endpoint := "chat/completions"
	if s.o.UpstreamAPI == apiformat.Anthropic {
		endpoint = "messages"
	}
	ctx, cancel := context.WithCancel(r.Context()) // a client that goes away cancels the upstream call
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.upstreamURL(endpoint), bytes.NewReader(body))
	if err != nil {
		s.fail(w, t, http.StatusBadGateway, "bad upstream URL (llm.api_base): fix it with `metaclaw config set llm.api_base <url>`")
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "metaclaw/"+versionString())
	if t.req.stream {
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("Accept-Encoding", "identity") // compressed SSE would be buffered
	}
	s.setUpstreamAuth(req, r)
	t.sentKey = sentKey(req)
	s.scrubRequestAside(t)

	step := phase{ctx: ctx}
	step.to("metaclaw.upstream")
	resp, err := s.send(t, req, body)
	step.end()
	if err != nil {
		switch {
		case r.Context().Err() != nil:
			t.rec.Status, t.rec.Error = statusClientClosed, "client closed the request"
		case isTimeout(err):
			s.fail(w, t, http.StatusGatewayTimeout, fmt.Sprintf("upstream did not answer within %s (llm.timeout_seconds)", s.o.UpstreamTimeout))
		default:
			s.o.Log.Warn().Str("error", s.scrubKeys(t, redactURLError(err))).Msg("upstream unreachable")
			s.fail(w, t, http.StatusBadGateway, "upstream unreachable: "+netCause(err)+" (check llm.api_base; details in the host log)")
		}
		return
	}
	defer resp.Body.Close()

	if resp.StatusCode >= 400 {
		s.relayError(w, t, resp)
		return
	}
	isSSE := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	if t.req.stream && isSSE {
		s.relayStream(ctx, cancel, w, t, resp, dropUsage)
		return
	}
	s.relayBody(ctx, cancel, w, t, resp)
}

func (s *Server) relayError(w http.ResponseWriter, t *turn, resp *http.Response) {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	raw = s.scrubKey(t, raw) // an upstream may echo the Authorization header it got
	out := raw
	if t.clientAPI != s.o.UpstreamAPI || !json.Valid(raw) {
		out = apiformat.TranslateErrorBody(s.o.UpstreamAPI, t.clientAPI, resp.StatusCode, raw)
	}
	for _, h := range []string{"Retry-After", "X-Request-Id", "Request-Id"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.StatusCode)
	w.Write(out)
	t.rec.Status = resp.StatusCode
	t.rec.Error = textclip.Ellipsis(string(raw), 2000)
}

func (s *Server) relayBody(ctx context.Context, cancel context.CancelFunc, w http.ResponseWriter, t *turn, resp *http.Response) {
	body := newIdleReader(resp.Body, s.o.UpstreamTimeout, cancel)
	defer body.stop()
	step := phase{ctx: ctx}
	defer step.end()
	step.to("metaclaw.answer.read")
	raw, err := readBody(io.LimitReader(body, s.o.MaxAnswerBytes+1), resp.ContentLength, s.o.MaxAnswerBytes+1)
	if err != nil {
		switch {
		case body.stalled():
			s.fail(w, t, http.StatusGatewayTimeout, fmt.Sprintf("upstream stopped sending its answer for %s (llm.timeout_seconds)", s.o.UpstreamTimeout))
		case ctx.Err() != nil:
			t.rec.Status, t.rec.Error = statusClientClosed, "client closed the request"
		case isTimeout(err):
			s.fail(w, t, http.StatusGatewayTimeout, "upstream timed out while sending its answer")
		default:
			s.o.Log.Warn().Str("error", s.scrubKeys(t, err.Error())).Msg("upstream answer cut off")
			s.fail(w, t, http.StatusBadGateway, "upstream answer was cut off: "+netCause(err))
		}
		return
	}
	if int64(len(raw)) > s.o.MaxAnswerBytes {
		s.relayOversized(ctx, w, t, resp, raw, body)
		return
	}
	step.to("metaclaw.answer.parse")
	// One decode both summarises the answer and tells a response of the
	// upstream's format from an HTML page from a captive proxy, a
	// truncated body, or an error object some gateways send with 200.
	sum, serr := apiformat.SummarizeAnswer(s.o.UpstreamAPI, raw)
	if serr != nil {
		s.unparseableAnswer(w, t, serr)
		return
	}
	out := raw
	if t.clientAPI != s.o.UpstreamAPI {
		if t.clientAPI == apiformat.Anthropic {
			out, err = apiformat.OpenAIToAnthropicResponse(raw)
		} else {
			out, err = apiformat.AnthropicToOpenAIResponse(raw)
		}
		if err != nil {
			s.fail(w, t, http.StatusBadGateway, "cannot translate upstream answer: "+err.Error())
			return
		}
	}
	t.ttfb = time.Since(t.start)
	t.rec.Status = resp.StatusCode
	t.recordSummary(sum)
	// Durable before the client can see the answer (and send its next turn,
	// which keeps turn order too).
	step.to("metaclaw.record")
	s.observe(ctx, t)
	step.to("metaclaw.answer.write")
	cw := newClientWriter(w, s.o.ClientWriteTimeout)
	defer cw.release()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(resp.StatusCode)
	cw.Write(out)
}

func (t *turn) recordSummary(sum apiformat.Summary) {
	t.rec.ResponseText = sum.Text
	t.rec.Reasoning = sum.Reasoning
	t.rec.StopReason = sum.StopReason
	t.rec.InputTokens, t.rec.OutputTokens = sum.InputTokens, sum.OutputTokens
	if sum.Model != "" {
		t.rec.Model = sum.Model
	}
	if len(sum.ToolCalls) > 0 {
		b, _ := json.Marshal(sum.ToolCalls)
		t.rec.ToolCallsJSON = string(b)
	}
}

// relayStream passes each upstream event on as it arrives, flushing after
// each one, translating when the formats differ, and reassembles the answer
// on the side for recording (bounded: a huge stream is not held).
func (s *Server) relayStream(ctx context.Context, cancel context.CancelFunc, w http.ResponseWriter, t *turn, resp *http.Response, dropUsage bool) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(resp.StatusCode)
	cw := newClientWriter(w, s.o.ClientWriteTimeout)
	defer cw.release()
	_ = cw.Flush()
	t.ttfb = time.Since(t.start)
	t.rec.Status = resp.StatusCode

	var tr apiformat.StreamTranslator
	if t.clientAPI != s.o.UpstreamAPI {
		if t.clientAPI == apiformat.Anthropic {
			tr = apiformat.NewOpenAIToAnthropicStream(t.rec.Model)
		} else {
			tr = apiformat.NewAnthropicToOpenAIStream()
		}
	}
	acc := apiformat.NewAccumulatorLimit(s.o.UpstreamAPI, s.o.MaxStoredBytes)

	// The watchdog cuts an upstream that makes no progress for
	// UpstreamTimeout; time spent relaying to the client does not count.
	body := newIdleReader(resp.Body, s.o.UpstreamTimeout, cancel)
	defer body.stop()
	sse := apiformat.NewSSEReader(body)
	clientGone := false
	write := func(ev apiformat.Event) bool {
		if dropUsage && isUsageOnlyChunk(ev.Data) {
			return true // the client did not ask for it (stream_options)
		}
		if isTerminal(ev) {
			// Durable before the client sees the end of the answer, so its
			// next turn can never be recorded ahead of this one, and no
			// answer the client completed belongs to a lost turn.
			t.recordSummary(acc.Summary())
			s.observe(ctx, t)
		}
		if err := apiformat.WriteEvent(cw, ev); err != nil {
			clientGone = true
			return false
		}
		return true
	}
	var readErr error
	for {
		ev, err := sse.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				readErr = err
			}
			break
		}
		ev.Data = s.scrubKey(t, ev.Data)
		acc.Add(ev)
		if tr == nil {
			if !write(ev) {
				break
			}
		} else {
			evs, terr := tr.Translate(ev)
			if terr != nil {
				s.o.Log.Debug().Err(terr).Msg("untranslatable stream event skipped")
			}
			ok := true
			for _, e := range evs {
				if ok = write(e); !ok {
					break
				}
			}
			if !ok {
				break
			}
		}
		if err := cw.Flush(); err != nil {
			clientGone = true
			break
		}
	}
	idle := body.stalled()
	if t.observed {
		// The stream reached its end and the turn is recorded; t.rec now
		// belongs to the core and must not be touched.
		_ = cw.Flush()
		return
	}
	switch {
	case clientGone || (ctx.Err() != nil && !idle):
		t.rec.Status, t.rec.Error = statusClientClosed, "client closed the stream"
	case idle:
		t.rec.Status, t.rec.Error = http.StatusGatewayTimeout, "upstream stream went silent"
		s.writeStreamError(cw, t.clientAPI, http.StatusGatewayTimeout, fmt.Sprintf("upstream sent nothing for %s (llm.timeout_seconds)", s.o.UpstreamTimeout))
	case readErr != nil:
		s.o.Log.Warn().Str("error", s.scrubKeys(t, readErr.Error())).Msg("upstream stream broke")
		t.rec.Status, t.rec.Error = http.StatusBadGateway, "upstream stream broke: "+netCause(readErr)
		s.writeStreamError(cw, t.clientAPI, http.StatusBadGateway, t.rec.Error)
	default:
		// Upstream ended without its terminal event (incomplete.go).
		s.endWithoutTerminal(cw, t, tr, acc, write)
	}
	_ = cw.Flush()
	if !t.observed {
		t.recordSummary(acc.Summary())
	}
}

// writeStreamError ends a stream that is already under way with an error
// event in the client's format (headers are gone, so the status cannot change).
func (s *Server) writeStreamError(w io.Writer, api apiformat.API, status int, msg string) {
	body := apiformat.ErrorBody(api, status, msg)
	if api == apiformat.Anthropic {
		apiformat.WriteEvent(w, apiformat.Event{Name: "error", Data: body})
		return
	}
	apiformat.WriteEvent(w, apiformat.Event{Data: body})
	apiformat.WriteEvent(w, apiformat.Event{Data: []byte("[DONE]")})
}

// isUsageOnlyChunk spots the OpenAI usage chunk (`"choices":[]` plus usage).
func isUsageOnlyChunk(data []byte) bool {
	if !bytes.Contains(data, []byte(`"usage"`)) {
		return false
	}
	var c struct {
		Choices []json.RawMessage `json:"choices"`
		Usage   json.RawMessage   `json:"usage"`
	}
	return json.Unmarshal(data, &c) == nil && len(c.Choices) == 0 && !isNull(c.Usage)
}

// isTerminal spots the event that ends a stream in either format.
func isTerminal(ev apiformat.Event) bool {
	return ev.Name == "message_stop" || (ev.Name == "" && string(ev.Data) == "[DONE]")
}

// observe hands the turn to the core once and waits until it is durable
// (shared commits: concurrent answers wait for one write together).
func (s *Server) observe(ctx context.Context, t *turn) {
	if t.observed {
		return
	}
	t.observed = true
	if t.passThrough {
		return
	}
	s.scrubTurn(t)
	t.rec.LatencyMS = time.Since(t.start).Milliseconds()
	t.rec.TTFBMS = t.ttfb.Milliseconds()
	t.rec.InjectedTokens = t.inj.Tokens
	if len(t.inj.IDs) > 0 {
		t.rec.InjectedJSON = idsJSON(t.inj.IDs)
	}
	if s.o.RecordAsync {
		s.o.Core.Observe(t.rec)
		return
	}
	if err := s.o.Core.ObserveDurable(ctx, t.rec); err != nil && ctx.Err() == nil {
		s.o.Log.Warn().Err(err).Str("session", t.id.session).Msg("answer released before its turn was persisted")
	}
}

// idsJSON is json.Marshal(ids), without its reflection: ids are plain
// words, and one with a character encoding/json escapes for HTML goes
// through json.Marshal.
func idsJSON(ids []string) string {
	n := 2
	for _, id := range ids {
		if strings.ContainsAny(id, "<>&") {
			b, _ := json.Marshal(ids)
			return string(b)
		}
		n += len(id) + 3
	}
	dst := make([]byte, 0, n)
	dst = append(dst, '[')
	for i, id := range ids {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(dst, id)
	}
	return string(append(dst, ']'))
}

// finish records the turn if nothing did yet (errors included), logs it,
// and ends the session when the client said so.
func (s *Server) finish(t *turn) {
	// Before the handler returns, so before the last byte of any answer.
	s.observe(t.ctx, t)
	ev := s.o.Log.Debug()
	if t.rec.Status >= 400 {
		ev = s.o.Log.Warn()
	}
	ev.Str("agent", t.id.agent).Str("session", t.id.session).Str("turn", t.id.turnType).
		Str("client", string(t.clientAPI)).Bool("stream", t.req.stream).Int("status", t.rec.Status).
		Int64("ms", t.rec.LatencyMS).Int("injected_tokens", t.inj.Tokens).Str("error", t.rec.Error).Msg("turn")
	if t.id.sessionDone && !t.passThrough {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := s.o.Core.EndSession(ctx, t.id.session, "client"); err != nil {
				s.o.Log.Error().Err(err).Str("session", t.id.session).Msg("end session")
			}
		}()
	}
}

// redactURLError keeps the error's cause but not the URL's query or userinfo.
func redactURLError(err error) string {
	msg := err.Error()
	if i := strings.Index(msg, "://"); i >= 0 {
		if at := strings.Index(msg[i:], "@"); at >= 0 && !strings.ContainsAny(msg[i:i+at], " /") {
			msg = msg[:i+3] + "…@" + msg[i+at+1:]
		}
	}
	return msg
}
