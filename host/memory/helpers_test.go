package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/block"
	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/testhost"
)

// fakeClock is the package clock for tests: real time shifted by an offset
// that tests move forward to simulate days passing.
type fakeClock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.off)
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

const day = 24 * time.Hour

// openStore opens a fresh database and a memory store on it.
func openStore(t testing.TB, o Options) (*Store, *store.SQLite) {
	t.Helper()
	st, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return Open(st, o), st
}

// testCfg is a default config with memory on.
func testCfg(t testing.TB, mutate func(*config.Memory)) *config.Config {
	cfg := config.Default(t.TempDir())
	cfg.Memory.Enabled = true
	if mutate != nil {
		mutate(&cfg.Memory)
	}
	return cfg
}

// memHost is a real host (store, core, proxy, fake upstream) with memory assembled
// exactly as the daemon assembles it.
type memHost struct {
	*testhost.Host
	mem *Host
	t   testing.TB
}

func startHost(t testing.TB, cfg *config.Config, wo AssembleOptions, dir string) *memHost {
	t.Helper()
	mh := &memHost{t: t}
	mh.Host = startWith(t, cfg, wo, dir, mh, 0)
	return mh
}

func startIdleHost(t testing.TB, cfg *config.Config, mh *memHost, idle time.Duration) *testhost.Host {
	return startWith(t, cfg, AssembleOptions{}, "", mh, idle)
}

func startAuthHost(t testing.TB, cfg *config.Config, mh *memHost, key string) *testhost.Host {
	return startWithKey(t, cfg, AssembleOptions{}, "", mh, 0, key)
}

func coreQuery(user, agent string) core.Query {
	return core.Query{Agent: agent, Scope: core.Scope{UserID: user}}
}

func startWith(t testing.TB, cfg *config.Config, wo AssembleOptions, dir string, mh *memHost, idle time.Duration) *testhost.Host {
	return startWithKey(t, cfg, wo, dir, mh, idle, "")
}

func startWithKey(t testing.TB, cfg *config.Config, wo AssembleOptions, dir string, mh *memHost, idle time.Duration, key string) *testhost.Host {
	t.Helper()
	return testhost.Start(t, testhost.Options{
		Dir: dir, SessionIdle: idle,
		Mutate: func(o *proxy.Options) {
			if key != "" {
				o.APIKey = key
			}
		},
		Setup: func(c *core.Core, st *store.SQLite) []route.Route {
			h, err := Assemble(context.Background(), cfg, st, c, zerolog.Nop(), wo)
			if err != nil {
				t.Fatal(err)
			}
			mh.mem = h
			if h.Store != nil {
				t.Cleanup(h.Store.StopIndex)
			}
			return h.Routes
		},
	})
}

// chat sends one user message (after history) in a session and returns the
// system prompt the upstream received.
type chatOpts struct {
	session, user, workspace, scope, agent string
	done                                   bool
	history                                []map[string]any
}

func (h *memHost) chat(text string, o chatOpts) string {
	h.t.Helper()
	sys, err := h.send(text, o)
	if err != nil {
		h.t.Fatal(err)
	}
	return sys
}

// send is chat for other goroutines than the test's: it returns the error.
func (h *memHost) send(text string, o chatOpts) (string, error) {
	msgs := []map[string]any{{"role": "system", "content": "You are a helpful assistant. Always be polite."}}
	msgs = append(msgs, o.history...)
	msgs = append(msgs, map[string]any{"role": "user", "content": text})
	return h.sendBody(map[string]any{"model": "gpt-test", "messages": msgs}, o)
}

// sendBody posts a whole chat request (o's history is not used).
func (h *memHost) sendBody(b map[string]any, o chatOpts) (string, error) {
	body, _ := json.Marshal(b)
	path := "/v1/chat/completions"
	if o.agent != "" {
		path = "/a/" + o.agent + path
	}
	req, _ := http.NewRequest(http.MethodPost, h.URL+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if o.session != "" {
		req.Header.Set("X-Session-Id", o.session)
	}
	if o.user != "" {
		req.Header.Set("X-User-Id", o.user)
	}
	if o.workspace != "" {
		req.Header.Set("X-Workspace-Id", o.workspace)
	}
	if o.scope != "" {
		req.Header.Set("X-Memory-Scope", o.scope)
	}
	if o.done {
		req.Header.Set("X-Session-Done", "1")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return "", fmt.Errorf("chat: HTTP %d: %s", resp.StatusCode, raw)
	}
	return systemPrompt(h.Upstream.Last().Body), nil
}

func systemPrompt(body map[string]any) string {
	msgs, _ := body["messages"].([]any)
	for _, m := range msgs {
		mm, _ := m.(map[string]any)
		if mm["role"] == "system" {
			if s, ok := mm["content"].(string); ok {
				return s
			}
		}
	}
	return ""
}

// memoryBlock is the injected block's Memories section.
func memoryBlock(system string) string {
	i := strings.Index(system, block.Begin)
	if i < 0 {
		return ""
	}
	injected := system[i:]
	j := strings.Index(injected, "## Memories")
	if j < 0 {
		return ""
	}
	injected = injected[j:]
	if k := strings.Index(injected, block.End); k >= 0 {
		injected = injected[:k]
	}
	if k := strings.Index(injected[3:], "\n## "); k >= 0 {
		injected = injected[:k+3]
	}
	return strings.TrimRight(injected, "\n")
}

// session runs a conversation (each message a turn, history replayed) and
// ends it with X-Session-Done on the last message.
func (h *memHost) session(id string, o chatOpts, msgs ...string) {
	h.t.Helper()
	o.session = id
	var history []map[string]any
	for i, m := range msgs {
		o.history = history
		o.done = i == len(msgs)-1
		h.chat(m, o)
		history = append(history, map[string]any{"role": "user", "content": m}, map[string]any{"role": "assistant", "content": "FAKE-REPLY-OK"})
	}
}

// settle waits until every recorded turn is ingested and no job is pending.
func (h *memHost) settle() {
	h.t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(20 * time.Second)
	for {
		h.Flush(h.t)
		pending, err := h.mem.Ingester.Pending(ctx)
		if err != nil {
			h.t.Fatal(err)
		}
		counts, _ := h.Store.Counts(ctx)
		if pending == 0 && counts.PendingJobs == 0 && counts.OpenSessions == 0 {
			return
		}
		if time.Now().After(deadline) {
			var errs []string
			rows, _ := h.Store.Reader().Query(`SELECT kind, last_error FROM jobs WHERE last_error != ''`)
			for rows != nil && rows.Next() {
				var k, e string
				rows.Scan(&k, &e)
				errs = append(errs, k+": "+e)
			}
			if rows != nil {
				rows.Close()
			}
			h.t.Fatalf("memory did not settle: %d pending turns, %d jobs, %d open sessions; job errors %q", pending, counts.PendingJobs, counts.OpenSessions, errs)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// api calls a memory route on the host.
func (h *memHost) api(method, path string, body any, out any) int {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(mustJSON(h.t, body))
	}
	req, _ := http.NewRequest(method, h.URL+path, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			h.t.Fatalf("%s %s: %v: %s", method, path, err, raw)
		}
	}
	return resp.StatusCode
}

// awaitJob polls GET /v1/memory/ingest/{id} until the job is done or failed.
func (h *memHost) awaitJob(id int64) IngestJobStatus {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var js IngestJobStatus
		if code := h.api(http.MethodGet, fmt.Sprintf("/v1/memory/ingest/%d", id), nil, &js); code != 200 {
			h.t.Fatalf("job %d: HTTP %d", id, code)
		}
		if js.Status == "done" || js.Status == "failed" || time.Now().After(deadline) {
			return js
		}
		time.Sleep(10 * time.Millisecond)
	}
}
