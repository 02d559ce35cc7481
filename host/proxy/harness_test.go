package proxy_test

import (
	"context"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/fakellm"
)

// contextProvider is the test provider of context: it returns a fixed
// section and remembers the queries it saw.
type contextProvider struct {
	mu      sync.Mutex
	queries []core.Query
	body    string
}

func (p *contextProvider) Name() string { return "test" }
func (p *contextProvider) Context(_ context.Context, q core.Query) (core.Section, error) {
	p.mu.Lock()
	p.queries = append(p.queries, q)
	p.mu.Unlock()
	return core.Section{Title: "Test context", Body: p.body, IDs: []string{"test:1"}}, nil
}
func (p *contextProvider) last() core.Query {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queries) == 0 {
		return core.Query{}
	}
	return p.queries[len(p.queries)-1]
}

type harness struct {
	up       *fakellm.Server
	proxy    *httptest.Server
	core     *core.Core
	store    *store.SQLite
	provider *contextProvider
}

// newHarness runs store + core + proxy against a fake upstream of the given format.
func newHarness(t testing.TB, upstream apiformat.API, mutate ...func(*proxy.Options)) *harness {
	t.Helper()
	h := &harness{up: fakellm.New(), provider: &contextProvider{body: "INJECTED-SKILL: always write tests first."}}
	t.Cleanup(h.up.Close)
	st, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	h.store = st
	h.core = core.New(core.Options{Store: st, Log: zerolog.Nop()})
	h.core.AddProvider(h.provider)
	base := h.up.URL + "/v1"
	if upstream == apiformat.Anthropic {
		base = h.up.URL
	}
	o := proxy.Options{
		Core: h.core, Log: zerolog.Nop(), UpstreamAPI: upstream, UpstreamBase: base, UpstreamKey: "sk-upstream-SECRET",
		UpstreamTimeout: 5 * time.Second,
	}
	for _, m := range mutate {
		m(&o)
	}
	px, err := proxy.New(o)
	if err != nil {
		t.Fatal(err)
	}
	h.proxy = httptest.NewServer(px.Handler())
	t.Cleanup(func() {
		h.proxy.Close()
		h.core.Close()
		st.Close()
	})
	return h
}

// turns flushes the core and returns the session's recorded turns.
func (h *harness) turns(t testing.TB, session string) []store.Turn {
	t.Helper()
	if err := h.core.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	turns, err := h.store.SessionTurns(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	return turns
}

// awaitTurns returns the session's turns once n are recorded (a turn is
// handed to the core as its handler returns, which may be after the client
// has read the whole answer).
func (h *harness) awaitTurns(t *testing.T, session string, n int) []store.Turn {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		turns := h.turns(t, session)
		if len(turns) >= n || time.Now().After(deadline) {
			return turns
		}
		time.Sleep(5 * time.Millisecond)
	}
}
