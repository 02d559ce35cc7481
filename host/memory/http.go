package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/internal/sqlconn"
	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// API serves the memory HTTP routes (behind the proxy's auth, each also
// under /a/<agent>/). Route names and bodies follow MetaClaw's proxy and
// sidecar so existing tools keep working; docs/memory.md lists them.
type API struct {
	Store    *Store
	Ingester *Ingester
	// Jobs, when set, makes POST /v1/memory/ingest durable and asynchronous
	// (202 with a job id; ingestjob.go); nil runs it inside the request.
	Jobs JobQueue
	// Every flushes a buffer_turn session every N turns (memory.ingest_every_turns).
	Every int
	Log   zerolog.Logger
}

// Routes returns the endpoints.
func (a *API) Routes() []route.Route {
	return []route.Route{
		{Pattern: "GET /v1/memory/search", Handler: a.search},
		{Pattern: "POST /v1/memory/search", Handler: a.search},
		{Pattern: "POST /v1/memory/retrieve", Handler: a.retrieve},
		{Pattern: "POST /v1/memory/store", Handler: a.store},
		{Pattern: "POST /v1/memory/forget", Handler: a.forget},
		{Pattern: "GET /v1/memory/status", Handler: a.status},
		{Pattern: "GET /v1/memory/health", Handler: a.status},
		{Pattern: "GET /v1/memory/stats", Handler: a.stats},
		{Pattern: "POST /v1/memory/ingest", Handler: a.ingest},
		{Pattern: "GET /v1/memory/ingest/{id}", Handler: a.ingestJob},
		{Pattern: "POST /v1/memory/buffer_turn", Handler: a.bufferTurn},
		{Pattern: "POST /v1/memory/flush_session", Handler: a.flushSession},
		{Pattern: "GET /v1/memory/list", Handler: a.list},
		{Pattern: "GET /v1/memory/refused", Handler: a.refused},
		{Pattern: "DELETE /v1/memory/refused/{id}", Handler: a.dismissRefused},
		{Pattern: "GET /v1/memory/{id}", Handler: a.get},
		{Pattern: "PATCH /v1/memory/{id}", Handler: a.patch},
	}
}

// maxBody bounds request bodies.
const maxBody = 8 << 20

// WriteError answers with an OpenAI-style error object.
func WriteError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(apiformat.ErrorBody(apiformat.OpenAI, status, msg))
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// decode reads a JSON body into v; an empty body leaves v as it is.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			WriteError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", maxBody))
			return false
		}
		WriteError(w, http.StatusBadRequest, "could not read request body: "+err.Error())
		return false
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		return true
	}
	if err := json.Unmarshal(body, v); err != nil {
		WriteError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return false
	}
	return true
}

// scopeOf is the request's scope: an explicit scope_id/scope wins, else the
// proxy's identity headers (X-Memory-Scope, X-User-Id, X-Workspace-Id).
func scopeOf(r *http.Request, explicit string) string {
	if explicit = strings.TrimSpace(explicit); explicit != "" {
		return explicit
	}
	if q := r.URL.Query().Get("scope"); q != "" {
		return q
	}
	if q := r.URL.Query().Get("scope_id"); q != "" {
		return q
	}
	return core.Scope{
		UserID: strings.TrimSpace(r.Header.Get("X-User-Id")), WorkspaceID: strings.TrimSpace(r.Header.Get("X-Workspace-Id")),
		Explicit: strings.TrimSpace(r.Header.Get("X-Memory-Scope")),
	}.Key()
}

// agentOf is /a/<agent>/…, X-Agent-Id, the body's agent, else "default".
func agentOf(r *http.Request, body string) string {
	for _, a := range []string{r.PathValue("agent"), r.Header.Get("X-Agent-Id"), body, r.URL.Query().Get("agent")} {
		if a = strings.TrimSpace(a); a != "" {
			return a
		}
	}
	return "default"
}

func (a *API) fail(w http.ResponseWriter, err error) {
	switch {
	case IsRefused(err):
		WriteError(w, http.StatusUnprocessableEntity, err.Error())
	case errors.Is(err, ErrNotFound):
		WriteError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		WriteError(w, http.StatusServiceUnavailable, "memory: "+err.Error())
	default:
		a.Log.Error().Err(err).Msg("memory API")
		WriteError(w, http.StatusInternalServerError, err.Error())
	}
}

// SearchRequest is POST /v1/memory/search.
type SearchRequest struct {
	Query     string `json:"query"`
	ScopeID   string `json:"scope_id,omitempty"`
	Limit     int    `json:"limit,omitempty"`
	Agent     string `json:"agent,omitempty"`
	AllAgents bool   `json:"all_agents,omitempty"`
}

// SearchResult is one flat result (MetaClaw's sidecar shape, plus fields).
type SearchResult struct {
	MemoryID     string    `json:"memory_id"`
	Type         Type      `json:"type"`
	Score        float64   `json:"score"`
	Content      string    `json:"content"`
	Importance   float64   `json:"importance"`
	Mentions     int       `json:"mentions"`
	AccessCount  int       `json:"access_count"` // times injected
	MatchedTerms []string  `json:"matched_terms"`
	Scope        string    `json:"scope"`
	Agent        string    `json:"agent,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
}

func (a *API) search(w http.ResponseWriter, r *http.Request) {
	var req SearchRequest
	if r.Method == http.MethodGet {
		q := r.URL.Query()
		req.Query = q.Get("q")
		if req.Query == "" {
			req.Query = q.Get("query")
		}
		req.Limit, _ = strconv.Atoi(q.Get("limit"))
		req.AllAgents = q.Get("all_agents") == "true" || q.Get("all_agents") == "1"
	} else if !decode(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.Query) == "" {
		WriteError(w, http.StatusBadRequest, "query is required (GET ?q=…, or POST {\"query\": …})")
		return
	}
	if req.Limit <= 0 || req.Limit > 200 {
		req.Limit = 20
	}
	hits, err := a.Store.Search(r.Context(), SearchQuery{
		Scope: scopeOf(r, req.ScopeID), Agent: agentOf(r, req.Agent), AllAgents: req.AllAgents, Text: req.Query, Limit: req.Limit,
	})
	if err != nil {
		a.fail(w, err)
		return
	}
	out := make([]SearchResult, 0, len(hits))
	for _, h := range hits {
		out = append(out, SearchResult{
			MemoryID: h.ID, Type: h.Type, Score: h.Score, Content: h.Content, Importance: h.Importance, Mentions: h.Mentions,
			AccessCount: h.InjectedCount, MatchedTerms: h.Matched, Scope: h.Scope, Agent: h.Agent, CreatedAt: h.CreatedAt,
		})
	}
	writeJSON(w, map[string]any{"results": out})
}

// RetrieveRequest is POST /v1/memory/retrieve: the injected section for a
// turn (what a host with memory.sidecar_url asks).
type RetrieveRequest struct {
	TaskDescription string   `json:"task_description,omitempty"` // MetaClaw's sidecar field
	UserTexts       []string `json:"user_texts,omitempty"`
	ScopeID         string   `json:"scope_id,omitempty"`
	Agent           string   `json:"agent,omitempty"`
	TopK            int      `json:"top_k,omitempty"`
	StandingTopK    int      `json:"standing_top_k,omitempty"` // standing rules and preferences; default memory.standing_top_k
	MaxTokens       int      `json:"max_tokens,omitempty"`
}

// RetrieveResponse answers it.
type RetrieveResponse struct {
	RenderedPrompt string   `json:"rendered_prompt"`
	UnitCount      int      `json:"unit_count"`
	Title          string   `json:"title"`
	IDs            []string `json:"ids"`
	Tokens         int      `json:"tokens"`
}

func (a *API) retrieve(w http.ResponseWriter, r *http.Request) {
	var req RetrieveRequest
	if !decode(w, r, &req) {
		return
	}
	texts := req.UserTexts
	if len(texts) == 0 && req.TaskDescription != "" {
		texts = []string{req.TaskDescription}
	}
	res, err := a.Store.Retrieve(r.Context(), Query{
		Scope: scopeOf(r, req.ScopeID), Agent: agentOf(r, req.Agent), Texts: texts, TopK: min(req.TopK, 50), StandingK: min(req.StandingTopK, 64), MaxTokens: min(req.MaxTokens, 8000),
	})
	if err != nil {
		a.fail(w, err)
		return
	}
	ids := res.Section.IDs
	if ids == nil {
		ids = []string{}
	}
	writeJSON(w, RetrieveResponse{RenderedPrompt: res.Section.Body, UnitCount: len(res.Hits), Title: "Memories", IDs: ids, Tokens: res.Section.Tokens})
}

// StoreRequest is POST /v1/memory/store.
type StoreRequest struct {
	Content    string     `json:"content"`
	MemoryType string     `json:"memory_type,omitempty"`
	ScopeID    string     `json:"scope_id,omitempty"`
	Tags       []string   `json:"tags,omitempty"`
	Importance float64    `json:"importance,omitempty"`
	Agent      string     `json:"agent,omitempty"` // set to make the unit private to that agent
	ExpiresAt  *time.Time `json:"expires_at,omitempty"`
}

func (a *API) store(w http.ResponseWriter, r *http.Request) {
	var req StoreRequest
	if !decode(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.Content) == "" {
		WriteError(w, http.StatusBadRequest, "content is required")
		return
	}
	var typ Type
	if req.MemoryType != "" {
		t, err := ParseType(req.MemoryType)
		if err != nil {
			WriteError(w, http.StatusBadRequest, err.Error())
			return
		}
		typ = t
	}
	if req.Importance < 0 || req.Importance > 1 {
		WriteError(w, http.StatusBadRequest, "importance must be between 0 and 1")
		return
	}
	u, outcome, err := a.Store.Add(r.Context(), NewUnit{
		Content: req.Content, Type: typ, Scope: scopeOf(r, req.ScopeID), Agent: strings.TrimSpace(req.Agent),
		Importance: req.Importance, Tags: req.Tags, ExpiresAt: req.ExpiresAt,
	})
	if err != nil {
		if strings.Contains(err.Error(), "empty") || strings.Contains(err.Error(), "limit") {
			WriteError(w, http.StatusBadRequest, err.Error())
			return
		}
		a.fail(w, err)
		return
	}
	writeJSON(w, map[string]any{"memory_id": u.ID, "outcome": outcome, "unit": u})
}

func (a *API) forget(w http.ResponseWriter, r *http.Request) {
	var req struct {
		MemoryID string `json:"memory_id"`
		Reason   string `json:"reason,omitempty"`
	}
	if !decode(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.MemoryID) == "" {
		WriteError(w, http.StatusBadRequest, "memory_id is required")
		return
	}
	if err := a.Store.Forget(r.Context(), req.MemoryID, nonEmpty(req.Reason, "api")); err != nil {
		a.fail(w, err)
		return
	}
	writeJSON(w, map[string]any{"ok": true, "memory_id": req.MemoryID})
}

func nonEmpty(s, def string) string {
	if strings.TrimSpace(s) == "" {
		return def
	}
	return s
}

// StatusResponse is GET /v1/memory/status.
type StatusResponse struct {
	Status        string `json:"status"`
	Memories      int    `json:"memories"`
	PendingTurns  int    `json:"pending_turns"`
	BufferedTurns int    `json:"buffered_turns"`
	Scope         string `json:"scope"`
	Extractor     string `json:"extractor"`
	RetrievalMode string `json:"retrieval_mode"`
	Embeddings    bool   `json:"embeddings"`
	Refused       int    `json:"refused"` // candidates refused by the injection guard (GET /v1/memory/refused)
}

func (a *API) status(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	n, err := a.Store.ActiveCount(ctx)
	if err != nil {
		a.fail(w, err)
		return
	}
	pending := 0
	if a.Ingester != nil {
		pending, err = a.Ingester.Pending(ctx)
	} else {
		pending, err = a.Store.pendingTurns(ctx)
	}
	if err != nil {
		a.fail(w, err)
		return
	}
	var buffered int
	_ = a.Store.r.QueryRowContext(ctx, `SELECT COUNT(*) FROM memory_buffer b WHERE `+unflushedSQL).Scan(&buffered)
	refused, _ := a.Store.RefusedCount(ctx)
	o := a.Store.Options()
	writeJSON(w, StatusResponse{Status: "ok", Memories: n, PendingTurns: pending, BufferedTurns: buffered, Scope: scopeOf(r, ""),
		Extractor: o.Extractor.Name(), RetrievalMode: o.Mode, Embeddings: o.Embedder != nil, Refused: refused})
}

func (a *API) stats(w http.ResponseWriter, r *http.Request) {
	st, err := a.Store.Stats(r.Context(), r.URL.Query().Get("scope"))
	if err != nil {
		a.fail(w, err)
		return
	}
	writeJSON(w, st)
}

func (a *API) get(w http.ResponseWriter, r *http.Request) {
	u, err := a.Store.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		a.fail(w, err)
		return
	}
	ev, err := a.Store.Events(r.Context(), u.ID)
	if err != nil {
		a.fail(w, err)
		return
	}
	writeJSON(w, map[string]any{"memory": u, "events": ev})
}

// list is GET /v1/memory/list?scope=&agent=&type=&status=&limit=&offset= (no
// scope: every scope).
func (a *API) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := Filter{Scope: q.Get("scope"), Status: q.Get("status")}
	if v, ok := q["agent"]; ok {
		agent := v[0]
		f.Agent = &agent
	}
	if t := q.Get("type"); t != "" {
		typ, err := ParseType(t)
		if err != nil {
			WriteError(w, http.StatusBadRequest, err.Error())
			return
		}
		f.Type = typ
	}
	f.Limit, _ = strconv.Atoi(q.Get("limit"))
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	f.Offset, _ = strconv.Atoi(q.Get("offset"))
	units, err := a.Store.List(r.Context(), f)
	if err != nil {
		a.fail(w, err)
		return
	}
	if units == nil {
		units = []Unit{}
	}
	writeJSON(w, map[string]any{"memories": units})
}

// PatchRequest is PATCH /v1/memory/{id}.
type PatchRequest struct {
	Content      *string    `json:"content,omitempty"`
	Type         *string    `json:"memory_type,omitempty"`
	Importance   *float64   `json:"importance,omitempty"`
	Tags         *[]string  `json:"tags,omitempty"`
	ExpiresAt    *time.Time `json:"expires_at,omitempty"`
	ClearExpires bool       `json:"clear_expires,omitempty"`
}

func (a *API) patch(w http.ResponseWriter, r *http.Request) {
	var req PatchRequest
	if !decode(w, r, &req) {
		return
	}
	p := Patch{Content: req.Content, Importance: req.Importance, Tags: req.Tags, ExpiresAt: req.ExpiresAt, ClearExpires: req.ClearExpires}
	if req.Type != nil {
		t, err := ParseType(*req.Type)
		if err != nil {
			WriteError(w, http.StatusBadRequest, err.Error())
			return
		}
		p.Type = &t
	}
	u, err := a.Store.Edit(r.Context(), r.PathValue("id"), p)
	if err != nil {
		if !errors.Is(err, ErrNotFound) && (strings.Contains(err.Error(), "empty") || strings.Contains(err.Error(), "between")) {
			WriteError(w, http.StatusBadRequest, err.Error())
			return
		}
		a.fail(w, err)
		return
	}
	writeJSON(w, map[string]any{"memory": u})
}

// IngestRequest is POST /v1/memory/ingest in either of MetaClaw's shapes:
// with turns (the sidecar's {session_id, turns:[{prompt_text,
// response_text}], scope_id}), or without (the proxy's {session_id?}: ingest
// the recorded turns and buffers now; no session = all).
type IngestRequest struct {
	SessionID    string `json:"session_id,omitempty"`
	ScopeID      string `json:"scope_id,omitempty"`
	Scope        string `json:"scope,omitempty"`
	Agent        string `json:"agent,omitempty"`
	Turns        []Turn `json:"turns,omitempty"`
	SummaryTurns []Turn `json:"summary_turns,omitempty"`
	Final        *bool  `json:"final,omitempty"`
}

// IngestResponse answers it.
type IngestResponse struct {
	IngestResult
	BufferedTurns int      `json:"buffered_turns"`
	Sessions      []string `json:"sessions"`
}

func (a *API) ingest(w http.ResponseWriter, r *http.Request) {
	var req IngestRequest
	if !decode(w, r, &req) {
		return
	}
	if len(req.Turns) > 1000 {
		WriteError(w, http.StatusBadRequest, "at most 1000 turns per request")
		return
	}
	if len(req.Turns) == 0 && len(req.SummaryTurns) == 0 && a.Ingester == nil {
		WriteError(w, http.StatusServiceUnavailable, "this host does not record turns (memory ingestion runs elsewhere)")
		return
	}
	scope, agent := scopeOf(r, nonEmpty(req.ScopeID, req.Scope)), agentOf(r, req.Agent)
	capTurns(req.Turns)
	capTurns(req.SummaryTurns)
	if a.Jobs != nil && !wantsWait(r) {
		a.enqueue(w, r, apiIngestJob{Request: req, Scope: scope, Agent: agent})
		return
	}
	// ?wait=1: inside the request, cancelled (and rolled back) if the client goes away.
	res, err := a.runIngest(r.Context(), req, scope, agent)
	if err != nil {
		a.fail(w, err)
		return
	}
	writeJSON(w, res)
}

// runIngest does what POST /v1/memory/ingest asks: mine the given turns, or
// the recorded turns and buffers (one session, or all).
func (a *API) runIngest(ctx context.Context, req IngestRequest, scope, agent string) (IngestResponse, error) {
	if len(req.Turns) > 0 || len(req.SummaryTurns) > 0 {
		final := req.Final != nil && *req.Final
		if req.Final == nil && req.SessionID != "" && len(req.SummaryTurns) == 0 {
			final = true // MetaClaw's one-shot /ingest summarises the session
		}
		res, err := a.Store.Ingest(ctx, Batch{SessionID: req.SessionID, Scope: scope, Agent: agent,
			Turns: req.Turns, Final: final, SummaryTurns: req.SummaryTurns})
		if err != nil {
			return IngestResponse{}, err
		}
		return IngestResponse{IngestResult: res, BufferedTurns: res.Turns, Sessions: []string{req.SessionID}}, nil
	}
	if a.Ingester == nil {
		return IngestResponse{}, errors.New("this host does not record turns (memory ingestion runs elsewhere)")
	}
	var total IngestResult
	var sessions []string
	if req.SessionID != "" {
		final := req.Final != nil && *req.Final
		if req.Final == nil {
			if sess, err := a.Ingester.st.Session(ctx, req.SessionID); err == nil && sess.EndedAt != nil {
				final = true
			}
		}
		res, err := a.Ingester.IngestSession(ctx, req.SessionID, final)
		if err != nil {
			return IngestResponse{}, err
		}
		total.add(res)
		sessions = []string{req.SessionID}
		bres, err := a.flushBuffer(ctx, req.SessionID, final)
		if err != nil {
			return IngestResponse{}, err
		}
		total.add(bres)
	} else {
		res, ss, err := a.Ingester.IngestAll(ctx, true)
		if err != nil {
			return IngestResponse{}, err
		}
		total.add(res)
		sessions = ss
		bs, err := a.bufferedSessions(ctx)
		if err != nil {
			return IngestResponse{}, err
		}
		for _, s := range bs {
			if err := ctx.Err(); err != nil {
				return IngestResponse{}, err
			}
			bres, err := a.flushBuffer(ctx, s, false)
			if err != nil {
				return IngestResponse{}, err
			}
			total.add(bres)
			if !contains(sessions, s) {
				sessions = append(sessions, s)
			}
		}
	}
	if sessions == nil {
		sessions = []string{}
	}
	return IngestResponse{IngestResult: total, BufferedTurns: total.Turns, Sessions: sessions}, nil
}

// BufferTurnRequest is POST /v1/memory/buffer_turn.
type BufferTurnRequest struct {
	SessionID string `json:"session_id"`
	Turn      struct {
		PromptText   string `json:"prompt_text"`
		ResponseText string `json:"response_text"`
	} `json:"turn"`
	ScopeID string `json:"scope_id,omitempty"`
	Agent   string `json:"agent,omitempty"`
}

// bufferTurn keeps the turn durably (memory_buffer) and flushes the session
// every N turns: {flushed, added}.
func (a *API) bufferTurn(w http.ResponseWriter, r *http.Request) {
	var req BufferTurnRequest
	if !decode(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.SessionID) == "" || strings.TrimSpace(req.Turn.PromptText) == "" {
		WriteError(w, http.StatusBadRequest, "session_id and turn.prompt_text are required")
		return
	}
	ctx := r.Context()
	prompt, _ := Redact(textclip.Prefix(req.Turn.PromptText, maxTurnText))
	resp, _ := Redact(textclip.Prefix(req.Turn.ResponseText, maxTurnText))
	var n int
	err := a.Store.writeTx(ctx, func(tx *sqlconn.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO memory_buffer (session_id, scope, agent, prompt_text, response_text, at) VALUES (?, ?, ?, ?, ?, ?)`,
			req.SessionID, a.Store.ScopeKey(scopeOf(r, req.ScopeID)), agentOf(r, req.Agent), prompt, resp, ms(time.Now())); err != nil {
			return fmt.Errorf("memory: buffer: %w", err)
		}
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM memory_buffer b WHERE b.session_id = ? AND `+unflushedSQL, req.SessionID).Scan(&n)
	})
	if err != nil {
		a.fail(w, err)
		return
	}
	every := a.Every
	if every <= 0 {
		every = 5
	}
	if n < every {
		writeJSON(w, map[string]any{"flushed": false, "added": nil})
		return
	}
	res, err := a.flushBuffer(ctx, req.SessionID, false)
	if err != nil {
		a.fail(w, err)
		return
	}
	writeJSON(w, map[string]any{"flushed": true, "added": res.Added})
}

func (a *API) flushSession(w http.ResponseWriter, r *http.Request) {
	var req struct {
		SessionID string `json:"session_id"`
		ScopeID   string `json:"scope_id,omitempty"`
		Final     *bool  `json:"final,omitempty"`
	}
	if !decode(w, r, &req) {
		return
	}
	if strings.TrimSpace(req.SessionID) == "" {
		WriteError(w, http.StatusBadRequest, "session_id is required")
		return
	}
	final := req.Final == nil || *req.Final
	res, err := a.flushBuffer(r.Context(), req.SessionID, final)
	if err != nil {
		a.fail(w, err)
		return
	}
	writeJSON(w, map[string]any{"added": res.Added, "reinforced": res.Reinforced, "superseded": res.Superseded})
}

func (a *API) bufferedSessions(ctx context.Context) ([]string, error) {
	rows, err := a.Store.r.QueryContext(ctx, `SELECT DISTINCT b.session_id FROM memory_buffer b WHERE `+unflushedSQL+` LIMIT 10000`)
	if err != nil {
		return nil, fmt.Errorf("memory: buffer: %w", err)
	}
	return scanStrings(rows)
}

// Buffered turns (buffer_turn) stay in memory_buffer until their session's
// final flush: a partial flush mines the new ones and moves the buffer's
// cursor (memory_cursors row "buf:<session>"); the final one also summarises
// the whole buffered session and clears it.

func bufferCursor(session string) string { return "buf:" + session }

// unflushedSQL selects buffer rows b past their session's cursor.
const unflushedSQL = `b.id > COALESCE((SELECT c.last_turn_id FROM memory_cursors c WHERE c.session_id = 'buf:' || b.session_id), 0)`

// flushBuffer ingests a session's buffered turns; final also summarises the
// session and clears its buffer.
func (a *API) flushBuffer(ctx context.Context, session string, final bool) (IngestResult, error) {
	host, err := a.Store.HostID(ctx)
	if err != nil {
		return IngestResult{}, err
	}
	var flushedUpTo int64
	if err := a.Store.r.QueryRowContext(ctx, `SELECT COALESCE((SELECT last_turn_id FROM memory_cursors WHERE session_id = ?), 0)`,
		bufferCursor(session)).Scan(&flushedUpTo); err != nil {
		return IngestResult{}, fmt.Errorf("memory: buffer: %w", err)
	}
	rows, err := a.Store.r.QueryContext(ctx, `SELECT id, scope, agent, prompt_text, response_text, at FROM memory_buffer
WHERE session_id = ? ORDER BY id LIMIT 5000`, session)
	if err != nil {
		return IngestResult{}, fmt.Errorf("memory: buffer: %w", err)
	}
	var b Batch
	b.SessionID = session
	var all []Turn
	var maxID int64
	for rows.Next() {
		var id, at int64
		var t Turn
		if err := rows.Scan(&id, &t.Scope, &t.Agent, &t.User, &t.Assistant, &at); err != nil {
			rows.Close()
			return IngestResult{}, err
		}
		t.SessionID, t.At = session, time.UnixMilli(at)
		maxID = id
		all = append(all, t)
		if id > flushedUpTo {
			t.Source = "buf/" + host + "/" + strconv.FormatInt(id, 10)
			b.Turns = append(b.Turns, t)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return IngestResult{}, err
	}
	if len(b.Turns) == 0 && !final {
		return IngestResult{}, nil
	}
	if final {
		b.Final = true
		if len(all) > 30 {
			all = all[len(all)-30:]
		}
		b.SummaryTurns = all
	}
	now := ms(time.Now())
	b.after = func(ctx context.Context, tx *sqlconn.Tx) error {
		if final {
			if _, err := tx.ExecContext(ctx, `DELETE FROM memory_buffer WHERE session_id = ? AND id <= ?`, session, maxID); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `DELETE FROM memory_cursors WHERE session_id = ?`, bufferCursor(session))
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO memory_cursors (session_id, last_turn_id, updated_at) VALUES (?, ?, ?)
ON CONFLICT(session_id) DO UPDATE SET last_turn_id = MAX(last_turn_id, excluded.last_turn_id), updated_at = excluded.updated_at`,
			bufferCursor(session), maxID, now)
		return err
	}
	return a.Store.Ingest(ctx, b)
}
