package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/safety"
	"github.com/metaclaw-go/metaclaw/host/version"
)

// Remote is another host's memory over HTTP (memory.sidecar_url): one memory
// shared by several machines. It is a core.Provider (POST
// /v1/memory/retrieve) and an ingestion Sink (POST /v1/memory/ingest with
// the turns, already redacted here, each with a source key so a resend after
// a crash is not mined twice). Pending turns stay in this host's store.
type Remote struct {
	base      *url.URL
	key       string
	topK      int
	standingK int
	tokens    int
	http      *http.Client
	local     *Store // this host's store: pending turns for Counts
	log       zerolog.Logger
}

// RemoteOptions configure a Remote.
type RemoteOptions struct {
	URL       string // the other host's proxy base URL, e.g. http://10.0.0.2:30000
	Key       string // its proxy.api_key, if any
	TopK      int
	StandingK int
	MaxTokens int
	Local     *Store
	Timeout   time.Duration // per call; default 10 s (retrieval is also bounded by the core's window)
	Log       zerolog.Logger
}

// NewRemote returns a client for the memory at o.URL.
func NewRemote(o RemoteOptions) (*Remote, error) {
	u, err := url.Parse(strings.TrimRight(strings.TrimSpace(o.URL), "/"))
	if err != nil || u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return nil, fmt.Errorf("memory.sidecar_url %q: want http(s)://host:port of another metaclaw host", o.URL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/v1")
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Second
	}
	return &Remote{base: u, key: o.Key, topK: o.TopK, standingK: o.StandingK, tokens: o.MaxTokens, http: &http.Client{Timeout: o.Timeout}, local: o.Local, log: o.Log}, nil
}

// URL is the remote's base URL.
func (r *Remote) URL() string { return r.base.String() }

func (r *Remote) call(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base.String()+path, body)
	if err != nil {
		return fmt.Errorf("memory sidecar: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "metaclaw/"+version.Version)
	if r.key != "" {
		req.Header.Set("Authorization", "Bearer "+r.key)
	}
	resp, err := r.http.Do(req)
	if err != nil {
		return fmt.Errorf("memory sidecar %s: %w", r.base.Host, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("memory sidecar %s: %w", r.base.Host, err)
	}
	if resp.StatusCode >= 300 {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		msg := strings.TrimSpace(string(raw))
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		return fmt.Errorf("memory sidecar %s %s: HTTP %d: %.300s", r.base.Host, path, resp.StatusCode, msg)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("memory sidecar %s %s: bad answer: %w", r.base.Host, path, err)
		}
	}
	return nil
}

// Name implements core.Provider.
func (r *Remote) Name() string { return "memory" }

// Context implements core.Provider.
func (r *Remote) Context(ctx context.Context, q core.Query) (core.Section, error) {
	agent := q.Agent
	if agent == "" {
		agent = "default"
	}
	var out RetrieveResponse
	if err := r.call(ctx, http.MethodPost, "/v1/memory/retrieve", RetrieveRequest{
		UserTexts: q.UserTexts, ScopeID: q.Scope.Key(), Agent: agent, TopK: r.topK, StandingTopK: r.standingK, MaxTokens: r.tokens,
	}, &out); err != nil {
		return core.Section{}, err
	}
	body := r.admitLines(out.RenderedPrompt)
	if strings.TrimSpace(body) == "" {
		return core.Section{}, nil
	}
	return core.Section{Title: "Memories", Body: body, IDs: out.IDs, Tokens: out.Tokens}, nil
}

// admitLines drops every line of another host's rendered memories that this
// host's injection guard refuses: that host may run older rules, or not be
// a MetaClaw host at all, and what it sends reaches this user's prompt.
func (r *Remote) admitLines(rendered string) string {
	lines := strings.Split(rendered, "\n")
	kept := lines[:0]
	for _, ln := range lines {
		if fs := safety.CheckMemory(ln); len(fs) > 0 {
			r.log.Warn().Str("sidecar", r.base.String()).Str("rule", fs[0].Rule).Msg("memory: a line from the sidecar was refused by the injection guard")
			continue
		}
		kept = append(kept, ln)
	}
	return strings.Join(kept, "\n")
}

// Ingest implements Sink.
func (r *Remote) Ingest(ctx context.Context, b Batch) (IngestResult, error) {
	final := b.Final
	req := IngestRequest{SessionID: b.SessionID, ScopeID: b.Scope, Agent: b.Agent, Turns: b.Turns, SummaryTurns: b.SummaryTurns, Final: &final}
	var out IngestResponse
	// ?wait=1: the batch is mined before this host moves its cursor, and the
	// counts come back (the sidecar stops if this call is cancelled).
	if err := r.call(ctx, http.MethodPost, "/v1/memory/ingest?wait=1", req, &out); err != nil {
		return IngestResult{}, err
	}
	return out.IngestResult, nil
}

// Status asks the remote for its status.
func (r *Remote) Status(ctx context.Context) (StatusResponse, error) {
	var out StatusResponse
	err := r.call(ctx, http.MethodGet, "/v1/memory/status", nil, &out)
	return out, err
}

// Counts implements core.Counter: the remote's units, this host's pending turns.
func (r *Remote) Counts(ctx context.Context) map[string]int {
	out := map[string]int{}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if st, err := r.Status(cctx); err == nil {
		out["memories"] = st.Memories
		out["memories_refused"] = st.Refused
	}
	if r.local != nil {
		r.local.pendingCounts(ctx, out)
	}
	return out
}

// ForwardRoutes serves this host's /v1/memory/… routes by forwarding them
// to the remote, except POST /v1/memory/ingest without turns, which ingests
// this host's recorded turns into the remote: as a durable job on jobs
// (202, see ingestjob.go), or now with ?wait=1 or no jobs.
func (r *Remote) ForwardRoutes(in *Ingester, jobs JobQueue) []route.Route {
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(r.base)
			pr.Out.URL.Path = strings.TrimRight(r.base.Path, "/") + pr.In.URL.Path
			pr.Out.URL.RawPath = ""
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Del("x-api-key")
			if r.key != "" {
				pr.Out.Header.Set("Authorization", "Bearer "+r.key)
			}
		},
		ErrorHandler: func(w http.ResponseWriter, req *http.Request, err error) {
			WriteError(w, http.StatusBadGateway, "memory sidecar "+r.base.Host+": "+err.Error())
		},
	}
	forward := func(w http.ResponseWriter, req *http.Request) {
		// The sidecar may answer before the transport has forwarded the
		// whole request body; without full duplex net/http's server would
		// read off or close that body as the answer's header goes out,
		// under the transport still sending it (a stalled or cut answer).
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, req)
	}
	ingest := func(w http.ResponseWriter, req *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBody))
		if err != nil {
			WriteError(w, http.StatusBadRequest, "could not read request body: "+err.Error())
			return
		}
		var ir IngestRequest
		if len(bytes.TrimSpace(body)) > 0 {
			if err := json.Unmarshal(body, &ir); err != nil {
				WriteError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
				return
			}
		}
		if len(ir.Turns) > 0 || len(ir.SummaryTurns) > 0 {
			req.Body = io.NopCloser(bytes.NewReader(body))
			req.ContentLength = int64(len(body))
			rp.ServeHTTP(w, req)
			return
		}
		if jobs != nil && !wantsWait(req) {
			(&API{Store: r.local, Jobs: jobs}).enqueue(w, req, apiIngestJob{Request: ir})
			return
		}
		res, err := RemoteIngest(req.Context(), in, ir)
		if err != nil {
			WriteError(w, statusFor(err), err.Error())
			return
		}
		writeJSON(w, res)
	}
	routes := []route.Route{{Pattern: "POST /v1/memory/ingest", Handler: ingest},
		{Pattern: "GET /v1/memory/ingest/{id}", Handler: (&API{Store: r.local}).ingestJob}}
	for _, p := range []string{"GET /v1/memory/search", "POST /v1/memory/search", "POST /v1/memory/retrieve", "POST /v1/memory/store",
		"POST /v1/memory/forget", "GET /v1/memory/status", "GET /v1/memory/health", "GET /v1/memory/stats",
		"POST /v1/memory/buffer_turn", "POST /v1/memory/flush_session", "GET /v1/memory/list", "GET /v1/memory/{id}", "PATCH /v1/memory/{id}",
		"GET /v1/memory/refused", "DELETE /v1/memory/refused/{id}"} {
		routes = append(routes, route.Route{Pattern: p, Handler: forward})
	}
	return routes
}

// RemoteIngest ingests this host's recorded turns into the remote: one
// session, or all (the JobAPIIngest handler of a host with memory.sidecar_url).
func RemoteIngest(ctx context.Context, in *Ingester, ir IngestRequest) (IngestResponse, error) {
	if ir.SessionID != "" {
		final := ir.Final != nil && *ir.Final
		res, err := in.IngestSession(ctx, ir.SessionID, final)
		if err != nil {
			return IngestResponse{}, err
		}
		return IngestResponse{IngestResult: res, BufferedTurns: res.Turns, Sessions: []string{ir.SessionID}}, nil
	}
	res, ss, err := in.IngestAll(ctx, true)
	if err != nil {
		return IngestResponse{}, err
	}
	if ss == nil {
		ss = []string{}
	}
	return IngestResponse{IngestResult: res, BufferedTurns: res.Turns, Sessions: ss}, nil
}

func statusFor(err error) int {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return http.StatusServiceUnavailable
	}
	return http.StatusBadGateway
}
