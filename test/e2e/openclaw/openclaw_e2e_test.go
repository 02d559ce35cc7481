//go:build e2e

package openclawe2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/block"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/host/transcript"
)

// The metaclaw tools as OpenClaw must list them.
var ourTools = []string{"metaclaw_memory_search", "metaclaw_memory_store", "metaclaw_memory_forget", "metaclaw_memory_status", "metaclaw_skills_search", "metaclaw_status"}

// facts are taught over two sessions: each line is what the user says and
// what must later come back in MetaClaw's block.
var facts = []struct{ say, want string }{
	{"Never run rm -rf without asking me first.", "rm -rf"},
	{"Our staging host is stg-7.internal.", "stg-7.internal"},
	{"I prefer tabs over spaces for indentation.", "tabs"},
	{"We use PostgreSQL 16 for every service.", "PostgreSQL 16"},
	{"Our deploy day is Tuesday.", "Tuesday"},
}

// ocEnvelope is OpenClaw's timestamp prefix on user messages.
var ocEnvelope = regexp.MustCompile(`^\[[A-Z][a-z]{2} \d{4}-\d{2}-\d{2} \d{2}:\d{2}[^\]]*\] `)

// injectedBlock returns MetaClaw's injected block in a request ("" when none).
func injectedBlock(r upRequest) string {
	if b := core.FindBlock(r.system()); b != "" {
		return b
	}
	for _, u := range r.userTexts() {
		if b := core.FindBlock(u); b != "" {
			return b
		}
	}
	return ""
}

// memories is the Memories section of a block (skills may mention the
// same words).
func memories(block string) string {
	if i := strings.Index(block, "## Memories"); i >= 0 {
		return block[i:]
	}
	return ""
}

var skillHeader = regexp.MustCompile(`(?m)^### ([a-z0-9-]+)$`)

func skillNames(block string) []string {
	var out []string
	for _, m := range skillHeader.FindAllStringSubmatch(block, -1) {
		out = append(out, m[1])
	}
	return out
}

// since returns the requests the upstream got from index n on.
// since is the model requests after the n-th, less OpenClaw's own
// heartbeat turns: a heartbeat tick (see stopGateway) can run a model turn
// on agent:main:main between the test's turns, and the test's checks are
// about the turns it sent.
func (w *world) since(n int) []upRequest {
	var out []upRequest
	for _, r := range w.up.requests()[n:] {
		if !r.heartbeat() {
			out = append(out, r)
		}
	}
	return out
}

// TestOpenClawWithThePlugin is the new user's path: `metaclaw wire openclaw`
// with its defaults (the plugin), OpenClaw's default plugins left on, real
// turns through the gateway over three sessions.
func TestOpenClawWithThePlugin(t *testing.T) {
	w := newWorld(t)
	w.setUp()

	before := w.plugins()
	enabledBefore := map[string]bool{}
	for _, p := range before.Plugins {
		if p.Enabled {
			enabledBefore[p.ID] = true
		}
		for _, tool := range p.ToolNames {
			if slices.Contains(ourTools, tool) {
				t.Fatalf("OpenClaw's plugin %s already has a tool named %s", p.ID, tool)
			}
		}
	}
	files := w.metaclawFiles()
	allowBefore := pluginsAllow(t, files[w.cfg])

	out := w.mustMC("wire", "openclaw", "--yes")
	if !strings.Contains(out, "via hooks") {
		t.Fatalf("wire did not default to the plugin:\n%s", out)
	}
	var summary []string
	for _, l := range strings.Split(out, "\n") {
		if !strings.HasPrefix(l, "+") && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "@@") {
			summary = append(summary, l)
		}
	}
	t.Logf("wire:\n%s", strings.Join(summary, "\n"))

	if b, _ := os.ReadFile(w.cfg); pluginsAllow(t, string(b)) != allowBefore {
		t.Errorf("plugins.allow changed from %s to %s", allowBefore, pluginsAllow(t, string(b)))
	}
	// Nothing the user enabled is turned off; MetaClaw is on, with its tools
	// under names no bundled plugin uses.
	after := w.plugins()
	var ours bool
	for _, p := range after.Plugins {
		if enabledBefore[p.ID] && !p.Enabled {
			t.Errorf("wiring turned off OpenClaw's plugin %s", p.ID)
		}
		if p.ID == "metaclaw" {
			ours = p.Enabled && p.Status == "loaded"
			if !slices.Equal(p.ToolNames, ourTools) {
				t.Errorf("metaclaw tools %v", p.ToolNames)
			}
			continue
		}
		for _, tool := range p.ToolNames {
			if slices.Contains(ourTools, tool) {
				t.Errorf("tool %s collides with OpenClaw's plugin %s", tool, p.ID)
			}
		}
	}
	if !ours {
		t.Fatalf("the metaclaw plugin is not enabled and loaded: %+v", after)
	}
	t.Logf("plugins enabled: %d before wiring, %d after", len(enabledBefore), countEnabled(after))
	inspect := w.mustOC("plugins", "inspect", "metaclaw", "--runtime", "--json")
	if strings.Contains(inspect, "blocked") || strings.Contains(inspect, "conflict") || !strings.Contains(inspect, "before_prompt_build") {
		t.Fatalf("plugin runtime: %s", tail(inspect, 4000))
	}
	if out, err := w.mc(2*time.Minute, "doctor", "openclaw"); err != nil {
		t.Fatalf("doctor after wiring: %v\n%s", err, out)
	}

	w.startGateway()

	// Session 1 (three turns, fewer than memory.ingest_every_turns), then
	// session 2 under a new id: MetaClaw ingests session 1's pending turns
	// when session 2 starts (issue #16), so session 2's FIRST request
	// carries them, with no `metaclaw memory flush`.
	n0 := len(w.up.requests())
	s1 := []string{facts[0].say, "Can you explain what a Makefile does?", facts[1].say}
	for i, m := range s1 {
		if reply, _, _ := w.turn("main", "e2e-s1", m); reply != "FAKE-REPLY-OK" {
			t.Fatalf("session 1 turn %d: %q", i+1, reply)
		}
	}
	// What OpenClaw really sent: its envelope around the user's words.
	first := w.since(n0)[0]
	if u := first.userTexts(); len(u) == 0 || !ocEnvelope.MatchString(u[0]) || !strings.Contains(u[0], facts[0].say) {
		t.Fatalf("the first request does not carry OpenClaw's envelope: %q", u)
	}
	// Session 2 opens with a question about what session 1 taught: facts
	// come to the turns they concern, standing rules to every turn.
	n1 := len(w.up.requests())
	s2 := []string{"What is our staging host called?", facts[2].say, facts[3].say, facts[4].say}
	for i, m := range s2 {
		if reply, _, _ := w.turn("main", "e2e-s2", m); reply != "FAKE-REPLY-OK" {
			t.Fatalf("session 2 turn %d: %q", i+1, reply)
		}
	}
	if m := lacking(memories(injectedBlock(w.since(n1)[0])), facts[:2]); len(m) > 0 {
		t.Errorf("session 2's first request lacks what session 1 taught: %v\n%s", m, injectedBlock(w.since(n1)[0]))
	}

	// The agent that was not enabled gets nothing.
	n2 := len(w.up.requests())
	w.turn("coder", "e2e-coder", "Never deploy on Fridays.")
	for _, r := range w.since(n2) {
		if injectedBlock(r) != "" {
			t.Fatal("the agent that was not enabled got MetaClaw's block")
		}
	}

	// OpenClaw's /new on session 2, then a related task: the first request
	// of the new session carries every fact, once.
	w.slash("main", "e2e-s2", "/new")
	task := "Write a small deploy script for the staging host that cleans the build directory and migrates the database."
	n3 := len(w.up.requests())
	_, _, tookB := w.turn("main", "e2e-s2", task)
	s3 := w.since(n3)
	if len(s3) == 0 {
		t.Fatal("the new session made no upstream request")
	}
	b := injectedBlock(s3[0])
	t.Logf("new session's first request: block of %d bytes, skills %v\n%s", len(b), skillNames(b), memories(b))
	if m := lacking(memories(b), facts); len(m) > 0 {
		mem, _ := w.mc(time.Minute, "memory", "list")
		st, _ := w.mc(time.Minute, "status")
		t.Errorf("the new session's FIRST request does not carry each taught fact once: %v\nmemories:\n%s\nstatus:\n%s", m, mem, st)
	}
	// One block per request, on every request of the enabled agent.
	for i, r := range w.since(n0) {
		if n := strings.Count(r.system(), block.Begin) + strings.Count(strings.Join(r.userTexts(), "\n"), block.Begin); n > 1 {
			t.Errorf("request %d carries the block %d times", i+1, n)
		}
	}
	t.Logf("MEASURED: the new session's first turn through the gateway (catch-up included) took %v", tookB.Round(time.Millisecond))

	// The model calls MetaClaw's memory tool by its name.
	n4 := len(w.up.requests())
	reply, _, _ := w.turn("main", "e2e-s2", "CALL-TOOL metaclaw_memory_search staging host")
	var called string
	for _, r := range w.since(n4) {
		for _, m := range r.messages() {
			if m["role"] == "tool" {
				called = textOf(m["content"])
			}
		}
	}
	if reply != "TOOL-RESULT-OK" || !strings.Contains(called, "metaclaw_memory_search") || !strings.Contains(called, "stg-7") {
		t.Errorf("metaclaw_memory_search through OpenClaw: reply %q, the model saw %s", reply, tail(called, 1500))
	}
	t.Logf("tool result the model saw: %s", tail(called, 800))

	// A rule on a line of its own, as users write them ("Thanks.\nFrom now
	// on …", behind OpenClaw's envelope), is ingested at once: the session
	// has one turn, so neither its batch nor its end would ingest it.
	w.turn("main", "e2e-rule", "Thanks, that works.\nFrom now on, write every shell script for POSIX sh.")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		out, _ := w.mc(time.Minute, "memory", "list")
		if strings.Contains(out, "POSIX sh") {
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("a rule on the message's second line was not ingested within 30 s:\n%s", out)
			break
		}
	}

	// `metaclaw stop` does not fail a turn; the plugin starts the host again.
	w.mustMC("stop")
	if reply, _, _ := w.turn("main", "e2e-s2", "Thanks, that is all."); reply != "FAKE-REPLY-OK" {
		t.Fatalf("turn after metaclaw stop: %q", reply)
	}
	w.waitHost()

	w.stopGateway()
	w.mustMC("stop")
	checkRecorded(t, w)

	// unwire restores every file byte for byte.
	w.mustMC("unwire", "openclaw", "--yes")
	sameFiles(t, "after unwire", files, w.metaclawFiles())
}

// checkRecorded looks into MetaClaw's store: the enabled agent's turns are
// recorded with the user's own words, the other agent's are not.
func checkRecorded(t *testing.T, w *world) {
	t.Helper()
	st, err := store.OpenSQLite(context.Background(), filepath.Join(w.mcHome, store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	coder, err := st.SessionTurns(context.Background(), "e2e-coder")
	if err != nil {
		t.Fatal(err)
	}
	if len(coder) != 0 {
		t.Errorf("%d turns of the agent that was not enabled were recorded", len(coder))
	}
	recent, err := st.RecentTurns(context.Background(), 500)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recent {
		if r.Agent == "coder" {
			t.Errorf("a turn of agent coder was recorded: %+v", r)
		}
	}
	injected := false
	// Session 2 has its four turns, then after /new the task and the tool
	// call (same explicit id), and the turn after metaclaw stop, which the
	// plugin records once it has started the host again or replays later.
	for session, want := range map[string][2]int{"e2e-s1": {3, 3}, "e2e-s2": {6, 7}} {
		turns, err := st.SessionTurns(context.Background(), session)
		if err != nil {
			t.Fatal(err)
		}
		if len(turns) < want[0] || len(turns) > want[1] {
			t.Errorf("session %s: %d turns recorded, want %d to %d", session, len(turns), want[0], want[1])
		}
		for _, tr := range turns {
			if u := transcript.FromTurn(tr).User; ocEnvelope.MatchString(u) || strings.Contains(u, "Runtime: agent=") {
				t.Errorf("learning reads OpenClaw's envelope: %q", u)
			}
			if session == "e2e-s2" && tr.InjectedTokens > 0 && tr.InjectedJSON != "" {
				injected = true
			}
		}
	}
	if !injected {
		t.Error("no session 2 turn records what was injected")
	}
}

// lacking lists the facts not found exactly once in a Memories section.
func lacking(mem string, fs []struct{ say, want string }) []string {
	var missing []string
	for _, f := range fs {
		if n := strings.Count(strings.ToLower(mem), strings.ToLower(f.want)); n != 1 {
			missing = append(missing, f.want+" ("+itoa(n)+"x)")
		}
	}
	return missing
}

// pluginsAllow is plugins.allow in an openclaw.json ("null" when absent).
func pluginsAllow(t *testing.T, cfg string) string {
	t.Helper()
	var c struct {
		Plugins struct {
			Allow json.RawMessage `json:"allow"`
		} `json:"plugins"`
	}
	if err := json.Unmarshal([]byte(cfg), &c); err != nil {
		t.Fatalf("openclaw.json: %v", err)
	}
	if c.Plugins.Allow == nil {
		return "null"
	}
	return string(c.Plugins.Allow)
}

func countEnabled(pl pluginList) int {
	n := 0
	for _, p := range pl.Plugins {
		if p.Enabled {
			n++
		}
	}
	return n
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }
