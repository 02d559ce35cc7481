package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/daemon"
	"github.com/metaclaw-go/metaclaw/host/memory"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/fakellm"
	"github.com/metaclaw-go/metaclaw/internal/testhost"
)

func newMemCLI(t *testing.T) *subCLI { return newSubCLI(t, "memory") }

func TestMemoryCLILifecycle(t *testing.T) {
	c := newMemCLI(t)
	var added struct {
		Memory  memory.Unit `json:"memory"`
		Outcome string      `json:"outcome"`
	}
	c.jsonOut(&added, "add", "--user", "alice", "I prefer tabs for indentation.")
	if added.Outcome != memory.OutcomeAdded || added.Memory.Scope != "user:alice" || added.Memory.Type != memory.Preference {
		t.Fatalf("add %+v", added)
	}
	tabs := added.Memory.ID
	c.jsonOut(&added, "add", "--user", "alice", "--tags", "style", "Actually I prefer spaces for indentation.")
	if added.Outcome != memory.OutcomeSuperseded {
		t.Fatalf("change of mind: %+v", added)
	}
	c.jsonOut(&added, "add", "--scope", "team:x", "--type", "project_state", "--expires", "30d", "We deploy with Helm.")
	helm := added.Memory.ID
	if added.Memory.ExpiresAt == nil {
		t.Fatal("expiry not set")
	}

	var list struct {
		Memories []memory.Unit `json:"memories"`
	}
	c.jsonOut(&list, "list")
	if len(list.Memories) != 2 {
		t.Fatalf("list %+v", list)
	}
	c.jsonOut(&list, "list", "--status", "all", "--user", "alice")
	if len(list.Memories) != 2 {
		t.Fatalf("list all alice %+v", list)
	}
	if out := c.ok("list", "--status", "superseded"); !strings.Contains(out, tabs) || !strings.Contains(out, "superseded") {
		t.Fatalf("human list:\n%s", out)
	}

	var found struct {
		Results []memory.Hit `json:"results"`
	}
	c.jsonOut(&found, "search", "--user", "alice", "indentation")
	if len(found.Results) != 1 || !strings.Contains(found.Results[0].Content, "spaces") {
		t.Fatalf("search %+v", found)
	}
	if out := c.ok("search", "--scope", "team:x", "helm", "deploy"); !strings.Contains(out, helm) {
		t.Fatalf("human search:\n%s", out)
	}

	var shown struct {
		Memory memory.Unit    `json:"memory"`
		Events []memory.Event `json:"events"`
	}
	c.jsonOut(&shown, "show", tabs)
	if shown.Memory.Status != memory.StatusSuperseded || len(shown.Events) != 2 || shown.Events[1].Action != "superseded" {
		t.Fatalf("show %+v", shown)
	}
	if out := c.ok("show", tabs); !strings.Contains(out, "superseded by") || !strings.Contains(out, "history:") {
		t.Fatalf("human show:\n%s", out)
	}

	var edited struct {
		Memory memory.Unit `json:"memory"`
	}
	c.jsonOut(&edited, "edit", helm, "--content", "We deploy with Argo CD.", "--importance", "0.9", "--no-expiry")
	if edited.Memory.Content != "We deploy with Argo CD." || edited.Memory.Importance != 0.9 || edited.Memory.ExpiresAt != nil {
		t.Fatalf("edit %+v", edited.Memory)
	}
	if _, _, err := c.run("edit", helm); err == nil {
		t.Fatal("edit without a change should fail")
	}

	// Export, forget, import back.
	exported := filepath.Join(c.home, "mem.jsonl")
	if out := c.ok("export", "-o", exported); !strings.Contains(out, "exported 3") {
		t.Fatalf("export: %s", out)
	}
	if fi, err := os.Stat(exported); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("export file %v %v", fi, err)
	}
	var forgot map[string][]string
	c.jsonOut(&forgot, "forget", helm, "--reason", "test")
	if len(forgot["forgotten"]) != 1 {
		t.Fatalf("forget %v", forgot)
	}
	if _, _, err := c.run("show", helm); err == nil {
		t.Fatal("forgotten memory still shown")
	}
	var imported memory.ImportResult
	c.jsonOut(&imported, "import", exported)
	if imported.Imported != 1 || imported.Skipped != 2 {
		t.Fatalf("import %+v", imported)
	}

	var stats memory.Stats
	c.jsonOut(&stats, "stats")
	if stats.Active != 2 || stats.Superseded != 1 || stats.ByType["preference"] != 1 || stats.ByScope["team:x"] != 1 {
		t.Fatalf("stats %+v", stats)
	}
	if out := c.ok("stats"); !strings.Contains(out, "active memories:   2") {
		t.Fatalf("human stats:\n%s", out)
	}
	if _, _, err := c.run("add", "--type", "gossip", "x y"); err == nil {
		t.Fatal("bad type accepted")
	}
}

// recordTurns writes learnable turns into the home's store, as a host would.
func recordTurns(t *testing.T, home string, session string, texts ...string) {
	t.Helper()
	st, err := store.OpenSQLite(context.Background(), daemon.PathsFor(home).DB)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var turns []*store.Turn
	for _, x := range texts {
		body, _ := json.Marshal(map[string]any{"messages": []map[string]any{{"role": "system", "content": "Always answer in JSON."}, {"role": "user", "content": x}}})
		turns = append(turns, &store.Turn{SessionID: session, Agent: "main", TurnType: core.TurnMain, ClientAPI: "openai", UpstreamAPI: "openai",
			RequestJSON: string(body), ResponseText: "OK", Status: 200, MemoryScope: "user:bob", UserID: "bob"})
	}
	if err := st.RecordTurns(context.Background(), turns); err != nil {
		t.Fatal(err)
	}
}

func TestMemoryCLIFlushLocal(t *testing.T) {
	c := newMemCLI(t)
	// Create the store (migrations) first, then record turns after it, as a host would.
	c.ok("stats")
	recordTurns(t, c.home, "s1", "Never deploy on Fridays.", "My timezone is UTC+8.")
	var stats memory.Stats
	c.jsonOut(&stats, "stats")
	if stats.PendingTurns != 2 {
		t.Fatalf("pending %+v", stats)
	}
	var out struct {
		memory.IngestResponse
		Via string `json:"via"`
	}
	c.jsonOut(&out, "flush")
	if out.Via != "local" || out.Added != 2 || out.Turns != 2 || len(out.Sessions) != 1 {
		t.Fatalf("flush %+v", out)
	}
	c.jsonOut(&stats, "stats")
	if stats.PendingTurns != 0 || stats.Active != 2 {
		t.Fatalf("after flush %+v", stats)
	}
	// The system prompt was not mined.
	var list struct {
		Memories []memory.Unit `json:"memories"`
	}
	c.jsonOut(&list, "list")
	for _, u := range list.Memories {
		if strings.Contains(u.Content, "JSON") {
			t.Fatalf("system prompt mined: %+v", u)
		}
	}
}

func TestMemoryCLIFlushAsksTheRunningHost(t *testing.T) {
	c := newMemCLI(t)
	cfg := config.Default(c.home)
	var mem *memory.Host
	h := testhost.Start(t, testhost.Options{Dir: c.home, Setup: func(co *core.Core, st *store.SQLite) []route.Route {
		m, err := memory.Assemble(context.Background(), cfg, st, co, zerolog.Nop(), memory.AssembleOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mem = m
		return m.Routes
	}})
	recordTurns(t, c.home, "s2", "I prefer pnpm over npm.")
	// Publish the host as the daemon does (this test process is alive, so
	// the pid file passes the liveness check).
	p := daemon.PathsFor(c.home)
	os.MkdirAll(p.RunDir, 0o700)
	info, _ := json.Marshal(daemon.Info{PID: os.Getpid(), Addr: strings.TrimPrefix(h.URL, "http://"), Mode: "auto", StartedAt: time.Now()})
	if err := os.WriteFile(p.Info, info, 0o600); err != nil {
		t.Fatal(err)
	}
	var out struct {
		memory.IngestResponse
		Via string `json:"via"`
	}
	c.jsonOut(&out, "flush", "--session", "s2")
	if out.Via != "host" || out.Added != 1 {
		t.Fatalf("flush %+v", out)
	}
	if n, _ := mem.Store.ActiveCount(context.Background()); n != 1 {
		t.Fatalf("host store holds %d", n)
	}
	if got := fmt.Sprint(out.Sessions); got != "[s2]" {
		t.Fatalf("sessions %s", got)
	}
}

// The real binary: turns through the daemon are pending until ingested,
// `metaclaw status --json` reports both counts, `memory flush` asks the
// running host, and the next session's prompt carries the memory.
func TestMemoryThroughTheRealBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	up := fakellm.New()
	defer up.Close()
	c := newCLI(t, "OPENAI_BASE_URL="+up.URL+"/v1", "OPENAI_API_KEY=sk-test")
	if out, code := c.run("start", "--port", "0"); code != 0 {
		t.Fatalf("start: %d %s", code, out)
	}
	st := c.status()
	send := func(session, text string) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+st.Listen+"/v1/chat/completions",
			strings.NewReader(`{"model":"m","messages":[{"role":"system","content":"Always answer in JSON."},{"role":"user","content":`+strconv.Quote(text)+`}]}`))
		req.Header.Set("X-Session-Id", session)
		req.Header.Set("X-User-Id", "carol")
		req.Header.Set("Authorization", "Bearer "+c.proxyKey())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("turn: HTTP %d", resp.StatusCode)
		}
	}
	send("e2e", "I prefer tabs for indentation.")
	send("e2e", "We use PostgreSQL 16 for the main database.") // plain statements wait ("never …" would not)
	type counts struct {
		Counts struct {
			Memories           int  `json:"memories"`
			MemoryPendingTurns int  `json:"memory_pending_turns"`
			OldestPending      *int `json:"memory_oldest_pending_seconds"`
		} `json:"counts"`
		Providers []string `json:"context_providers"`
	}
	status := func() counts {
		out, _ := c.run("status", "--json")
		var s counts
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatalf("status: %v\n%s", err, out)
		}
		return s
	}
	deadline := time.Now().Add(10 * time.Second)
	s := status()
	for s.Counts.MemoryPendingTurns != 2 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
		s = status()
	}
	if s.Counts.MemoryPendingTurns != 2 || s.Counts.Memories != 0 || s.Counts.OldestPending == nil || !strings.Contains(strings.Join(s.Providers, ","), "memory") {
		t.Fatalf("before flush: %+v", s)
	}
	if out, _ := c.run("status"); !strings.Contains(out, "2 turns waiting to be ingested, the oldest for") {
		t.Fatalf("status text:\n%s", out)
	}
	out, code := c.run("memory", "flush", "--json")
	if code != 0 || !strings.Contains(out, `"via": "host"`) {
		t.Fatalf("flush: %d %s", code, out)
	}
	if s = status(); s.Counts.MemoryPendingTurns != 0 || s.Counts.Memories != 2 {
		t.Fatalf("after flush: %+v", s)
	}
	// A fact comes to the turns it serves; the standing preference to every turn.
	send("later", "Which database does the hotfix migration target, and can we ship it on Friday?")
	if sys := fmt.Sprint(up.Last().Body["messages"]); !strings.Contains(sys, "PostgreSQL 16") || !strings.Contains(sys, "tabs") {
		t.Fatalf("prompt lacks the memories: %s", sys)
	}
	// The CLI reads the same store while the host runs.
	if out, code := c.run("memory", "search", "--user", "carol", "postgresql"); code != 0 || !strings.Contains(out, "PostgreSQL") {
		t.Fatalf("search while running: %d %s", code, out)
	}
}

// A search for a slot's category finds the memory in that slot: "database"
// finds "we switched to MySQL" although the word is not in it.
func TestMemoryCLISearchFindsSlotCategory(t *testing.T) {
	c := newMemCLI(t)
	var added struct {
		Memory memory.Unit `json:"memory"`
	}
	c.jsonOut(&added, "add", "--user", "alice", "We switched to MySQL last month.")
	c.jsonOut(&added, "add", "--user", "alice", "I prefer tabs for indentation.")
	var found struct {
		Results []memory.Hit `json:"results"`
	}
	c.jsonOut(&found, "search", "--user", "alice", "database")
	if len(found.Results) != 1 || !strings.Contains(found.Results[0].Content, "MySQL") {
		t.Fatalf("search database: %+v", found)
	}
}
