// Package plugintest runs an in-process host for plugin tests: a SQLite
// store, the learning core with a fixed context provider, and the JSON-RPC
// socket server at $METACLAW_HOME/run/metaclaw.sock, exactly as the daemon
// assembles them (minus the proxy).
package plugintest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/rpc"
	"github.com/metaclaw-go/metaclaw/host/rpc/protocol"
	"github.com/metaclaw-go/metaclaw/host/store"
)

// Memory is the fixed text the test provider injects.
const Memory = "The user's favourite tea is genmaicha."

// Provider answers every query with Memory and remembers the queries.
type Provider struct {
	mu      sync.Mutex
	Queries []core.Query
}

func (p *Provider) Name() string { return "memory" }

func (p *Provider) Context(_ context.Context, q core.Query) (core.Section, error) {
	p.mu.Lock()
	p.Queries = append(p.Queries, q)
	p.mu.Unlock()
	return core.Section{Title: "Memories", Body: "- " + Memory, IDs: []string{"mem:tea"}}, nil
}

// All returns a copy of every query so far.
func (p *Provider) All() []core.Query {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]core.Query(nil), p.Queries...)
}

// Last returns the newest query.
func (p *Provider) Last() core.Query {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.Queries) == 0 {
		return core.Query{}
	}
	return p.Queries[len(p.Queries)-1]
}

// Host is a running in-process host.
type Host struct {
	Home     string
	Core     *core.Core
	Store    *store.SQLite
	RPC      *rpc.Server
	Provider *Provider
	closed   bool
}

// Home makes a short state dir (unix socket paths must stay under 108 bytes).
func Home(t testing.TB) string {
	t.Helper()
	d, err := os.MkdirTemp("", "mcp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// Start runs a host for home until the test ends (or Stop). It registers a
// metaclaw_memory_search tool on the core besides the rpc server's metaclaw_status.
func Start(t testing.TB, home string) *Host {
	t.Helper()
	return StartWith(t, home, nil)
}

// StartWith is Start with setup connecting the core in place of the fixed
// provider and tool (e.g. the real memory layer, as the daemon assembles it).
func StartWith(t testing.TB, home string, setup func(c *core.Core, st *store.SQLite)) *Host {
	t.Helper()
	st, err := store.OpenSQLite(context.Background(), filepath.Join(home, store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	h := &Host{Home: home, Store: st, Provider: &Provider{}}
	// A generous provider window: these tests assert what is injected on a
	// loaded machine; the 500 ms overrun is tested in host/core.
	h.Core = core.New(core.Options{Store: st, Log: zerolog.Nop(), Window: time.Minute})
	if setup != nil {
		setup(h.Core, st)
		return h.listen(t)
	}
	h.Core.AddProvider(h.Provider)
	h.Core.RegisterTool(core.Tool{
		Name: core.ToolMemorySearch, Description: "Search the user's long-term memory.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`),
		Call: func(ctx context.Context, q core.Query, args json.RawMessage) (any, error) {
			var a struct {
				Query string `json:"query"`
			}
			if err := json.Unmarshal(args, &a); err != nil {
				return nil, err
			}
			hits := []string{}
			if strings.Contains(strings.ToLower(Memory), strings.ToLower(a.Query)) {
				hits = append(hits, Memory)
			}
			return map[string]any{"agent": q.Agent, "results": hits}, nil
		},
	})
	return h.listen(t)
}

// listen serves the rpc socket until the test ends.
func (h *Host) listen(t testing.TB) *Host {
	t.Helper()
	home := h.Home
	h.RPC = rpc.New(rpc.Options{Core: h.Core, Log: zerolog.Nop(), Version: "test"})
	if err := h.RPC.Listen(protocol.SocketPath(home)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Stop)
	return h
}

// Stop closes the socket, the core and the store.
func (h *Host) Stop() {
	if h.closed {
		return
	}
	h.closed = true
	h.RPC.Close()
	h.Core.Close()
	h.Store.Close()
}

// Turns flushes the core and returns a session's turns.
func (h *Host) Turns(t testing.TB, session string) []store.Turn {
	t.Helper()
	if err := h.Core.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	turns, err := h.Store.SessionTurns(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	return turns
}

// Session returns a session row.
func (h *Host) Session(t testing.TB, id string) store.Session {
	t.Helper()
	// Turns observed before the call must be persisted first: a turn reopens an ended session.
	if err := h.Core.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	s, err := h.Store.Session(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
