// Package testhost runs the real request path for tests: a SQLite store, the
// core, the proxy on a loopback httptest server, and a fake upstream. Skills,
// memory and other parts plug in through Setup, exactly as the daemon assembles them.
package testhost

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/fakellm"
	"github.com/metaclaw-go/metaclaw/internal/testwait"
)

// Options configure a test host.
type Options struct {
	UpstreamAPI apiformat.API // default openai
	// Dir holds the store; default t.TempDir().
	Dir string
	// Setup registers providers, listeners and jobs on the core and returns
	// extra routes for the proxy (as the daemon does).
	Setup func(c *core.Core, st *store.SQLite) []route.Route
	// Mutate adjusts the proxy options last.
	Mutate      func(*proxy.Options)
	SessionIdle time.Duration
	// ContextWindow bounds how long the core waits for its providers
	// (default 60 s, not the daemon's 500 ms: these tests assert what is
	// injected, on machines loaded enough that a retrieval can overrun the
	// real window; the overrun itself is tested in host/core).
	ContextWindow time.Duration
	// Wrap, if set, wraps the proxy's handler (as the daemon does with the
	// scheduler's activity hook).
	Wrap func(http.Handler) http.Handler
	// Upstream, if set, is the fake upstream to use (a test that points
	// the layer's own LLM calls at the same one); default a new one.
	Upstream *fakellm.Server
}

// Host is a running test host.
type Host struct {
	Upstream *fakellm.Server
	Proxy    *httptest.Server
	URL      string // proxy base URL (no trailing slash)
	Core     *core.Core
	Store    *store.SQLite
	Dir      string
}

// Start runs a host until the test ends.
func Start(t testing.TB, o Options) *Host {
	t.Helper()
	if o.UpstreamAPI == "" {
		o.UpstreamAPI = apiformat.OpenAI
	}
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	h := &Host{Upstream: o.Upstream, Dir: o.Dir}
	if h.Upstream == nil {
		h.Upstream = fakellm.New()
		t.Cleanup(h.Upstream.Close)
	}
	st, err := store.OpenSQLite(context.Background(), filepath.Join(o.Dir, store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	h.Store = st
	if o.ContextWindow <= 0 {
		o.ContextWindow = 60 * time.Second
	}
	h.Core = core.New(core.Options{Store: st, Log: zerolog.Nop(), SessionIdle: o.SessionIdle, Window: o.ContextWindow})
	var routes []route.Route
	if o.Setup != nil {
		routes = o.Setup(h.Core, st)
	}
	base := h.Upstream.URL + "/v1"
	if o.UpstreamAPI == apiformat.Anthropic {
		base = h.Upstream.URL
	}
	po := proxy.Options{
		Core: h.Core, Log: zerolog.Nop(), UpstreamAPI: o.UpstreamAPI, UpstreamBase: base,
		// The fake upstream answers at once, but a loaded 2-core machine
		// running -race can take many seconds to move a multi-megabyte
		// body: the test's own bound, not a tight one, is what fails it.
		UpstreamKey: "sk-upstream-test", UpstreamTimeout: testwait.Deadline, Routes: routes,
	}
	// The daemon's status shape, from the core (testhost cannot import the
	// daemon: the daemon imports the packages whose tests use testhost).
	po.Status = func(ctx context.Context) any {
		st, err := h.Core.Stats(ctx)
		out := map[string]any{
			"ok": err == nil, "running": true, "version": "test", "mode": "auto", "uptime_seconds": 0,
			"counts": map[string]any{
				"turns": st.Turns, "sessions": st.Sessions, "open_sessions": st.OpenSessions, "injected_tokens": st.InjectedTokens,
				"skills": st.Learned["skills"], "memories": st.Learned["memories"], "memory_pending_turns": st.Learned["memory_pending_turns"],
				"memory_oldest_pending_seconds": st.Learned["memory_oldest_pending_seconds"],
				"memories_refused":              st.Learned["memories_refused"],
				"pending_turns":                 st.QueuedTurns,
			},
			"jobs":              map[string]any{"pending": st.PendingJobs, "failed": st.FailedJobs},
			"rl":                map[string]any{"state": "inactive", "reason": "test host"},
			"context_providers": st.Providers,
			"llm_usage":         st.Usage,
		}
		return out
	}
	if o.Mutate != nil {
		o.Mutate(&po)
	}
	px, err := proxy.New(po)
	if err != nil {
		t.Fatal(err)
	}
	var handler http.Handler = px.Handler()
	if o.Wrap != nil {
		handler = o.Wrap(handler)
	}
	h.Proxy = httptest.NewServer(handler)
	h.URL = h.Proxy.URL
	t.Cleanup(func() {
		h.Proxy.Close()
		h.Core.Close()
		st.Close()
	})
	return h
}

// Flush waits until every observed turn is persisted.
func (h *Host) Flush(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.Core.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}
