package memory

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
)

type apiError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
}

func TestHTTPRoutes(t *testing.T) {
	h := startHost(t, testCfg(t, func(m *config.Memory) { m.IngestEveryTurns = 2 }), AssembleOptions{}, "")

	// store → search (GET and POST) → get → patch → list → forget.
	var stored struct {
		MemoryID string `json:"memory_id"`
		Outcome  string `json:"outcome"`
	}
	if code := h.api("POST", "/v1/memory/store", map[string]any{"content": "The release train leaves every Tuesday.", "memory_type": "project_state", "scope_id": "team:x", "tags": []string{"release"}}, &stored); code != 200 || stored.MemoryID == "" || stored.Outcome != OutcomeAdded {
		t.Fatalf("store %d %+v", code, stored)
	}
	var found struct {
		Results []SearchResult `json:"results"`
	}
	if code := h.api("GET", "/v1/memory/search?q=release+tuesday&scope=team:x", nil, &found); code != 200 || len(found.Results) != 1 || found.Results[0].MemoryID != stored.MemoryID {
		t.Fatalf("GET search %d %+v", code, found)
	}
	if code := h.api("POST", "/v1/memory/search", map[string]any{"query": "release", "scope_id": "other"}, &found); code != 200 || len(found.Results) != 0 {
		t.Fatalf("search in another scope %d %+v", code, found)
	}
	var got struct {
		Memory Unit    `json:"memory"`
		Events []Event `json:"events"`
	}
	if code := h.api("GET", "/v1/memory/"+stored.MemoryID, nil, &got); code != 200 || got.Memory.Type != ProjectState || len(got.Events) != 1 {
		t.Fatalf("get %d %+v", code, got)
	}
	if code := h.api("PATCH", "/v1/memory/"+stored.MemoryID, map[string]any{"content": "The release train leaves every Wednesday."}, &got); code != 200 || !strings.Contains(got.Memory.Content, "Wednesday") {
		t.Fatalf("patch %d %+v", code, got)
	}
	var list struct {
		Memories []Unit `json:"memories"`
	}
	if code := h.api("GET", "/v1/memory/list?scope=team:x", nil, &list); code != 200 || len(list.Memories) != 1 {
		t.Fatalf("list %d %+v", code, list)
	}
	var retrieved RetrieveResponse
	if code := h.api("POST", "/v1/memory/retrieve", map[string]any{"task_description": "when does the release train leave?", "scope_id": "team:x"}, &retrieved); code != 200 || retrieved.UnitCount != 1 || !strings.Contains(retrieved.RenderedPrompt, "Wednesday") {
		t.Fatalf("retrieve %d %+v", code, retrieved)
	}
	var ok map[string]any
	if code := h.api("POST", "/v1/memory/forget", map[string]any{"memory_id": stored.MemoryID}, &ok); code != 200 || ok["ok"] != true {
		t.Fatalf("forget %d %v", code, ok)
	}

	// Errors: OpenAI-style objects with the right status.
	var e apiError
	for _, c := range []struct {
		method, path string
		body         any
		status       int
	}{
		{"POST", "/v1/memory/forget", map[string]any{"memory_id": stored.MemoryID}, 404},
		{"POST", "/v1/memory/forget", map[string]any{}, 400},
		{"GET", "/v1/memory/mem_doesnotexist", nil, 404},
		{"POST", "/v1/memory/store", map[string]any{"content": "x y z", "memory_type": "gossip"}, 400},
		{"POST", "/v1/memory/store", map[string]any{"content": "  "}, 400},
		{"GET", "/v1/memory/search", nil, 400},
		{"POST", "/v1/memory/buffer_turn", map[string]any{"session_id": "b"}, 400},
		{"PATCH", "/v1/memory/mem_nope", map[string]any{"content": "a b"}, 404},
		{"GET", "/v1/memory/list?type=gossip", nil, 400},
	} {
		e = apiError{}
		if code := h.api(c.method, c.path, c.body, &e); code != c.status || e.Error.Message == "" || e.Error.Type == "" {
			t.Errorf("%s %s: %d %+v, want %d with an error object", c.method, c.path, code, e, c.status)
		}
	}
	req, _ := http.NewRequest("POST", h.URL+"/v1/memory/store", strings.NewReader("{not json"))
	resp, _ := http.DefaultClient.Do(req)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 400 || !strings.Contains(string(b), `"error"`) {
		t.Fatalf("bad json: %d %s", resp.StatusCode, b)
	}

	// MetaClaw's incremental API: buffer_turn flushes every N turns,
	// flush_session ingests the rest (durably buffered in between).
	var bt map[string]any
	h.api("POST", "/v1/memory/buffer_turn", map[string]any{"session_id": "b1", "scope_id": "team:x", "turn": map[string]any{"prompt_text": "I prefer tabs for indentation.", "response_text": "Noted."}}, &bt)
	if bt["flushed"] != false {
		t.Fatalf("buffer_turn 1: %v", bt)
	}
	h.api("POST", "/v1/memory/buffer_turn", map[string]any{"session_id": "b1", "scope_id": "team:x", "turn": map[string]any{"prompt_text": "Never deploy on Fridays.", "response_text": "OK."}}, &bt)
	if bt["flushed"] != true || bt["added"] != float64(2) {
		t.Fatalf("buffer_turn 2: %v", bt)
	}
	h.api("POST", "/v1/memory/buffer_turn", map[string]any{"session_id": "b1", "scope_id": "team:x", "turn": map[string]any{"prompt_text": "My timezone is UTC+8.", "response_text": "Got it."}}, &bt)
	var fl map[string]any
	if code := h.api("POST", "/v1/memory/flush_session", map[string]any{"session_id": "b1", "scope_id": "team:x"}, &fl); code != 200 || fl["added"] != float64(2) { // the fact + the session summary
		t.Fatalf("flush_session %d %v", code, fl)
	}
	// The sidecar's one-shot /ingest with turns.
	var acc IngestAccepted
	if code := h.api("POST", "/v1/memory/ingest", map[string]any{"session_id": "one", "scope_id": "team:y", "turns": []map[string]any{
		{"prompt_text": "Call me Kim.", "response_text": "Hi Kim."}, {"prompt_text": "We use Bazel to build.", "response_text": "OK."}}}, &acc); code != http.StatusAccepted || acc.JobID == 0 {
		t.Fatalf("ingest with turns %d %+v", code, acc)
	}
	if js := h.awaitJob(acc.JobID); js.Status != "done" {
		t.Fatalf("ingest job %+v", js)
	}
	var ing IngestResponse // ?wait=1: MetaClaw's synchronous answer
	if code := h.api("POST", "/v1/memory/ingest?wait=1", map[string]any{"session_id": "one", "scope_id": "team:y", "turns": []map[string]any{
		{"prompt_text": "Call me Kim.", "response_text": "Hi Kim.", "source": "again"}}}, &ing); code != 200 || ing.Reinforced != 1 {
		t.Fatalf("ingest ?wait=1 %d %+v", code, ing)
	}
	var st StatusResponse
	if code := h.api("GET", "/v1/memory/status", nil, &st); code != 200 || st.Status != "ok" || st.Memories != 7 || st.Extractor != "heuristic" {
		t.Fatalf("status %d %+v", code, st)
	}
	var stats Stats
	if code := h.api("GET", "/v1/memory/stats?scope=team:x", nil, &stats); code != 200 || stats.Active != 4 {
		t.Fatalf("stats %d %+v", code, stats)
	}
	// Routes also under /a/<agent>/: a unit stored there is the agent's.
	if code := h.api("POST", "/a/coder/v1/memory/store", map[string]any{"content": "Today I finished the parser.", "memory_type": "episodic", "scope_id": "team:x", "agent": "coder"}, &stored); code != 200 {
		t.Fatalf("agent store %d", code)
	}
	if h.api("GET", "/a/coder/v1/memory/search?q=parser&scope=team:x", nil, &found); len(found.Results) != 1 {
		t.Fatalf("coder search %+v", found)
	}
	if h.api("GET", "/a/writer/v1/memory/search?q=parser&scope=team:x", nil, &found); len(found.Results) != 0 {
		t.Fatalf("writer sees coder's unit %+v", found)
	}
}

func TestHTTPBehindProxyAuth(t *testing.T) {
	cfg := testCfg(t, nil)
	mh := &memHost{t: t}
	mh.Host = startAuthHost(t, cfg, mh, "proxy-secret")
	var e apiError
	if code := mh.api("GET", "/v1/memory/status", nil, &e); code != 401 || e.Error.Message == "" {
		t.Fatalf("unauthenticated: %d %+v", code, e)
	}
}

func TestMemoryDisabled(t *testing.T) {
	h := startHost(t, testCfg(t, func(m *config.Memory) { m.Enabled = false }), AssembleOptions{}, "")
	var e apiError
	if code := h.api("GET", "/v1/memory/status", nil, &e); code != 503 || !strings.Contains(e.Error.Message, "memory.enabled") {
		t.Fatalf("%d %+v", code, e)
	}
	if sys := h.chat("I prefer tabs.", chatOpts{session: "d", done: true}); strings.Contains(sys, "Memories") {
		t.Fatal("disabled memory injected")
	}
}

func TestTools(t *testing.T) {
	h := startHost(t, testCfg(t, nil), AssembleOptions{}, "")
	ctx := context.Background()
	names := map[string]bool{}
	for _, tl := range h.Core.Tools() {
		names[tl.Name] = true
	}
	for _, n := range []string{core.ToolMemorySearch, core.ToolMemoryStore, core.ToolMemoryForget, core.ToolMemoryStatus} {
		if !names[n] {
			t.Fatalf("tool %s not registered: %v", n, names)
		}
	}
	alice := coreQuery("alice", "main")
	out, err := h.Core.CallTool(ctx, "memory_store", alice, []byte(`{"content":"I prefer tabs for indentation."}`))
	if err != nil {
		t.Fatal(err)
	}
	id := out.(map[string]any)["memory_id"].(string)
	res, err := h.Core.CallTool(ctx, "memory_search", alice, []byte(`{"query":"indentation"}`))
	if err != nil || len(res.(map[string]any)["results"].([]SearchResult)) != 1 {
		t.Fatalf("search %v %v", res, err)
	}
	if res, _ := h.Core.CallTool(ctx, "memory_search", coreQuery("bob", "main"), []byte(`{"query":"indentation"}`)); len(res.(map[string]any)["results"].([]SearchResult)) != 0 {
		t.Fatal("bob found alice's memory")
	}
	if _, err := h.Core.CallTool(ctx, "memory_forget", coreQuery("bob", "main"), []byte(`{"memory_id":"`+id+`"}`)); err == nil {
		t.Fatal("bob forgot alice's memory")
	}
	if _, err := h.Core.CallTool(ctx, "memory_forget", alice, []byte(`{"memory_id":"`+id+`"}`)); err != nil {
		t.Fatal(err)
	}
	st, err := h.Core.CallTool(ctx, "memory_status", alice, nil)
	if err != nil || st.(map[string]any)["memories"] != 0 {
		t.Fatalf("status %v %v", st, err)
	}
}
