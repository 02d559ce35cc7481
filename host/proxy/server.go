// Package proxy is the LLM proxy every client talks to: OpenAI Chat
// Completions and Anthropic Messages in, either format out, with real
// streaming, context injection through the core, and every turn recorded.
package proxy

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/host/tokens"
	"github.com/metaclaw-go/metaclaw/host/version"
)

// Options configure the proxy.
type Options struct {
	Core *core.Core
	Log  zerolog.Logger

	UpstreamAPI  apiformat.API // wire format of the upstream
	UpstreamBase string        // e.g. https://api.openai.com/v1 or https://api.anthropic.com
	UpstreamKey  string
	Model        string // replaces the client's model when set
	// UpstreamTimeout bounds the wait for response headers, and then any
	// wait for more of the answer (the upstream making no progress).
	UpstreamTimeout time.Duration
	// ClientWriteTimeout bounds one write of an answer to a client that
	// stopped reading (default 5 min); slow clients are otherwise served at
	// their pace.
	ClientWriteTimeout time.Duration
	// MaxAnswerBytes is the largest non-streaming answer held in memory to
	// be parsed, translated and recorded (proxy.max_answer_mb); a larger one
	// is relayed as it arrives without being stored. Default 16 MiB.
	MaxAnswerBytes int64
	// RecordAsync releases answers without waiting for their turn to be
	// durable (the behaviour before group commit). Only proxybench sets it,
	// to measure what the wait costs in the same run.
	RecordAsync bool
	// MaxStoredBytes bounds what a streamed answer's summary keeps
	// (store.max_body_kb; the core bounds every stored body the same way).
	MaxStoredBytes int

	APIKey           string // proxy key clients must present; empty = no auth (loopback only)
	MaxBodyBytes     int64
	MaxContextTokens int // 0 = no truncation

	// NotConfigured, when set, is the message every LLM request gets because
	// there is no upstream yet.
	NotConfigured string

	// Status renders GET /v1/status.
	Status func(ctx context.Context) any
	// Transport overrides the upstream transport (tests, benchmarks).
	Transport http.RoundTripper
	// Routes are extra endpoints served behind the proxy's auth (memory API,
	// dashboard API), each also under /a/<agent-id>/.
	Routes []route.Route
	// LoopbackOnly says the proxy listens on a loopback address: requests
	// must then name a loopback host (DNS-rebinding protection).
	LoopbackOnly bool
	// PublicRoutes are served without auth (the dashboard's static page,
	// which holds no data: its data calls go through Routes).
	PublicRoutes []route.Route
	// ResolveTrace correlates a request with a client hook: given the trace
	// id of the request's W3C traceparent, it returns the agent, session and
	// turn type the hook registered (host/rpc trace.register). They fill in
	// what the request does not say itself (no /a/<agent>/ or X-Agent-Id, no
	// X-Session-Id, no X-Turn-Type). It is called for every request that
	// carries a traceparent, so the hook side also learns the turn went
	// through the proxy.
	ResolveTrace func(traceID string) (agent, session, turnType string, ok bool)
	// MainTurns, when set, answers main turns instead of the upstream (RL
	// serving from the user's policy model); see MainTurnResponder.
	MainTurns MainTurnResponder
	// ResolveInjected returns the ids and tokens a hook injected, by trace
	// id or block key (core.BlockKey): a request that already carries the
	// block is recorded with them (--via both records one turn, complete).
	ResolveInjected func(key string) (ids []string, tokens int, ok bool)
	// PassThrough reports `metaclaw disable`: requests are then forwarded
	// without injection and nothing is recorded.
	PassThrough func() bool
}

// DefaultMaxAnswerBytes is proxy.max_answer_mb's default.
const DefaultMaxAnswerBytes = 16 << 20

// Server serves the proxy's routes.
type Server struct {
	o       Options
	client  *http.Client
	keyHash [32]byte
	counter *tokens.Cache
	mux     *http.ServeMux
}

// New builds a Server.
func New(o Options) (*Server, error) {
	if o.Core == nil {
		return nil, errors.New("proxy: a core is required")
	}
	if o.UpstreamAPI == "" {
		o.UpstreamAPI = apiformat.OpenAI
	}
	if o.UpstreamAPI != apiformat.OpenAI && o.UpstreamAPI != apiformat.Anthropic {
		return nil, fmt.Errorf("proxy: unknown upstream api %q", o.UpstreamAPI)
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 32 << 20
	}
	if o.UpstreamTimeout <= 0 {
		o.UpstreamTimeout = 10 * time.Minute
	}
	if o.ClientWriteTimeout <= 0 {
		o.ClientWriteTimeout = 5 * time.Minute
	}
	if o.MaxAnswerBytes <= 0 {
		o.MaxAnswerBytes = DefaultMaxAnswerBytes
	}
	if o.MaxStoredBytes <= 0 {
		o.MaxStoredBytes = store.DefaultMaxBodyBytes
	}
	rt := o.Transport
	if rt == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = o.UpstreamTimeout
		t.MaxIdleConnsPerHost = 64
		t.ForceAttemptHTTP2 = true
		// An agent's request (6–64 KB) goes out in one write from the
		// connection's buffer: with the default 4 KB, the rest went
		// through a copy buffer allocated for every request.
		t.WriteBufferSize = 64 << 10
		rt = t
	}
	s := &Server{
		o:       o,
		client:  &http.Client{Transport: rt}, // no overall timeout: streams may run long; see UpstreamTimeout
		counter: tokens.NewCache(4096),
		mux:     http.NewServeMux(),
	}
	if o.APIKey != "" {
		s.keyHash = sha256.Sum256([]byte(o.APIKey))
	}
	s.routes()
	return s, nil
}

// Handler returns the HTTP handler.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.guard) }

// guard keeps web pages the user happens to visit away from the proxy: a
// browser request from another site (Origin or Sec-Fetch-Site says so), or
// one that reached a loopback listener under a foreign host name (DNS
// rebinding), is refused. Agents and SDKs send neither header.
func (s *Server) guard(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/healthz" {
		if why := foreignBrowserRequest(r, s.o.LoopbackOnly); why != "" {
			writeError(w, clientAPIFromHeaders(r), http.StatusForbidden, why)
			return
		}
	}
	s.mux.ServeHTTP(w, r)
}

func foreignBrowserRequest(r *http.Request, loopbackOnly bool) string {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return "cross-site browser request refused"
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || o == "null" || u.Host != r.Host {
			return "request from another origin refused"
		}
	}
	if loopbackOnly {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.Trim(host, "[]")
		if ip := net.ParseIP(host); !(host == "localhost" || strings.HasSuffix(host, ".localhost") || (ip != nil && ip.IsLoopback())) {
			return "host " + r.Host + " is not a loopback name: refused (this proxy only listens on loopback)"
		}
	}
	return ""
}

func (s *Server) routes() {
	s.mux.HandleFunc("GET /healthz", s.healthz)
	for _, prefix := range []string{"", "/a/{agent}"} {
		s.mux.HandleFunc("POST "+prefix+"/v1/chat/completions", s.auth(apiformat.OpenAI, s.chat(apiformat.OpenAI)))
		s.mux.HandleFunc("POST "+prefix+"/v1/messages", s.auth(apiformat.Anthropic, s.chat(apiformat.Anthropic)))
		s.mux.HandleFunc("GET "+prefix+"/v1/models", s.authByHeaders(s.models))
		s.mux.HandleFunc("GET "+prefix+"/v1/status", s.authByHeaders(s.status))
		for _, rt := range s.o.Routes {
			method, path, ok := strings.Cut(rt.Pattern, " ")
			if !ok {
				method, path = "", rt.Pattern
			}
			pattern := strings.TrimSpace(method + " " + prefix + path)
			s.mux.HandleFunc(pattern, s.authByHeaders(rt.Handler))
		}
	}
	for _, rt := range s.o.PublicRoutes {
		s.mux.HandleFunc(rt.Pattern, rt.Handler)
	}
	index := s.index()
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		api := clientAPIFromHeaders(r)
		writeError(w, api, http.StatusNotFound, fmt.Sprintf("no route for %s %s: MetaClaw serves %s", r.Method, r.URL.Path, index))
	})
}

// index lists every route the server has, for the answer to an unknown
// path (GET / included): the model API first, then the dashboard and the
// extra routes (skills, memory, scheduler, …) in order.
func (s *Server) index() string {
	modelAPI := []string{"POST /v1/chat/completions", "POST /v1/messages", "GET /v1/models", "GET /v1/status"}
	seen := map[string]bool{}
	var public, extra []string
	for _, rt := range s.o.PublicRoutes {
		if !seen[rt.Pattern] {
			seen[rt.Pattern] = true
			public = append(public, rt.Pattern)
		}
	}
	for _, rt := range s.o.Routes {
		if !seen[rt.Pattern] {
			seen[rt.Pattern] = true
			extra = append(extra, rt.Pattern)
		}
	}
	sort.Strings(public)
	sort.Strings(extra)
	all := append(append(modelAPI, extra...), "GET /healthz")
	msg := strings.Join(all, ", ") + " (all but /healthz also under /a/<agent-id>/)"
	if len(public) > 0 {
		msg += "; the dashboard: " + strings.Join(public, ", ")
	}
	return msg
}

func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"ok":true}`)
}

// clientAPIFromHeaders guesses the caller's format for routes both formats share.
func clientAPIFromHeaders(r *http.Request) apiformat.API {
	if r.Header.Get("anthropic-version") != "" || r.Header.Get("x-api-key") != "" || strings.HasSuffix(r.URL.Path, "/messages") {
		return apiformat.Anthropic
	}
	return apiformat.OpenAI
}

func (s *Server) authByHeaders(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.auth(clientAPIFromHeaders(r), next)(w, r)
	}
}

// presentedKey returns the key a client sent: Bearer token or x-api-key.
func presentedKey(r *http.Request) string {
	if v := r.Header.Get("Authorization"); v != "" {
		if k, ok := strings.CutPrefix(v, "Bearer "); ok {
			return strings.TrimSpace(k)
		}
		if k, ok := strings.CutPrefix(v, "bearer "); ok {
			return strings.TrimSpace(k)
		}
	}
	return strings.TrimSpace(r.Header.Get("x-api-key"))
}

// auth requires proxy.api_key when one is configured. Hashing first makes
// the comparison constant-time regardless of the key's length.
func (s *Server) auth(api apiformat.API, next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.o.APIKey != "" {
			got := presentedKey(r)
			h := sha256.Sum256([]byte(got))
			if got == "" || subtle.ConstantTimeCompare(h[:], s.keyHash[:]) != 1 {
				msg := "invalid proxy API key: send proxy.api_key as `Authorization: Bearer <key>` (it is in $METACLAW_HOME/secrets.yaml; `metaclaw env` prints the exports, `metaclaw wire <client>` sets it in a client)"
				if api == apiformat.Anthropic {
					msg = "invalid proxy API key: send proxy.api_key as `x-api-key` or `Authorization: Bearer <key>` (it is in $METACLAW_HOME/secrets.yaml; `metaclaw env` prints the exports, `metaclaw wire <client>` sets it in a client)"
				}
				if got == "" {
					msg = "missing proxy API key: " + msg[len("invalid proxy API key: "):]
				}
				writeError(w, api, http.StatusUnauthorized, msg)
				return
			}
		}
		next(w, r)
	}
}

func (s *Server) status(w http.ResponseWriter, r *http.Request) {
	var v any = map[string]any{"ok": true, "version": version.Version}
	if s.o.Status != nil {
		v = s.o.Status(r.Context())
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// models answers GET /v1/models: the upstream's list when it can be read in
// the caller's format, else the configured model.
func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	api := clientAPIFromHeaders(r)
	if s.o.NotConfigured == "" && api == s.o.UpstreamAPI {
		ctx, cancel := context.WithTimeout(r.Context(), 15*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.upstreamURL("models"), nil)
		if err == nil {
			s.setUpstreamAuth(req, r)
			if resp, err := s.client.Do(req); err == nil {
				defer resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					w.Header().Set("Content-Type", "application/json")
					io.Copy(w, io.LimitReader(resp.Body, 8<<20))
					return
				}
			}
		}
	}
	model := s.o.Model
	if model == "" {
		model = "metaclaw"
	}
	w.Header().Set("Content-Type", "application/json")
	if api == apiformat.Anthropic {
		json.NewEncoder(w).Encode(map[string]any{
			"data":     []any{map[string]any{"type": "model", "id": model, "display_name": model, "created_at": "1970-01-01T00:00:00Z"}},
			"has_more": false, "first_id": model, "last_id": model,
		})
		return
	}
	json.NewEncoder(w).Encode(map[string]any{
		"object": "list",
		"data":   []any{map[string]any{"id": model, "object": "model", "created": 0, "owned_by": "metaclaw"}},
	})
}

// upstreamURL joins the base with an endpoint (chat/completions, messages, models).
func (s *Server) upstreamURL(endpoint string) string {
	base := strings.TrimRight(s.o.UpstreamBase, "/")
	if s.o.UpstreamAPI == apiformat.Anthropic && !strings.HasSuffix(base, "/v1") {
		base += "/v1"
	}
	return base + "/" + endpoint
}

// setUpstreamAuth authenticates to the upstream with llm.api_key. Without
// one (and without a proxy key, so the client's key is not ours) the
// client's own credentials are passed on: a transparent proxy.
func (s *Server) setUpstreamAuth(req *http.Request, client *http.Request) {
	key := s.o.UpstreamKey
	if key == "" && s.o.APIKey == "" {
		key = presentedKey(client)
	}
	if s.o.UpstreamAPI == apiformat.Anthropic {
		if key != "" {
			req.Header.Set("x-api-key", key)
		}
		v := client.Header.Get("anthropic-version")
		if v == "" {
			v = "2023-06-01"
		}
		req.Header.Set("anthropic-version", v)
		if b := client.Header.Get("anthropic-beta"); b != "" {
			req.Header.Set("anthropic-beta", b)
		}
		return
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	for _, h := range []string{"OpenAI-Organization", "OpenAI-Project"} {
		if v := client.Header.Get(h); v != "" {
			req.Header.Set(h, v)
		}
	}
}

func writeError(w http.ResponseWriter, api apiformat.API, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(apiformat.ErrorBody(api, status, msg))
}

// isTimeout reports whether err is a deadline or network timeout.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func versionString() string { return version.Version }
