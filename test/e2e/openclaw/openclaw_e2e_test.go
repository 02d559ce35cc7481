//go:build e2e

package openclawe2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

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

// block returns MetaClaw's injected block in a request ("" when none).
func block(r upRequest) string {
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
func (w *world) since(n int) []upRequest { return w.up.requests()[n:] }

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

	// Session 1 (five turns: MetaClaw ingests every five) and session 2
	// (three turns: ingested only when a new session starts, issue #16):
	// rules and facts among ordinary tasks.
	n0 := len(w.up.requests())
	s1 := []string{facts[0].say, facts[1].say, "Can you explain what a Makefile does?", facts[2].say, "What does git stash do?"}
	s2 := []string{facts[3].say, "Please explain the difference between TCP and UDP.", facts[4].say}
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
	for i, m := range s2 {
		if reply, _, _ := w.turn("main", "e2e-s2", m); reply != "FAKE-REPLY-OK" {
			t.Fatalf("session 2 turn %d: %q", i+1, reply)
		}
	}

	// The agent that was not enabled gets nothing.
	n1 := len(w.up.requests())
	w.turn("coder", "e2e-coder", "Never deploy on Fridays.")
	for _, r := range w.since(n1) {
		if block(r) != "" {
			t.Fatal("the agent that was not enabled got MetaClaw's block")
		}
	}

	// Session 3: a related task. Each fact is in MetaClaw's block, once
	// (by the second turn at the latest: issue #16).
	task := "Write a small deploy script for the staging host that cleans the build directory and migrates the database."
	n2 := len(w.up.requests())
	w.turn("main", "e2e-s3", task)
	w.turn("main", "e2e-s3", "Which indentation should the script use?")
	s3 := w.since(n2)
	if len(s3) < 2 {
		t.Fatalf("session 3 made %d upstream requests", len(s3))
	}
	for i, r := range s3 {
		if n := strings.Count(r.system(), core.BeginMarker) + strings.Count(strings.Join(r.userTexts(), "\n"), core.BeginMarker); n > 1 {
			t.Fatalf("session 3 request %d carries the block %d times", i+1, n)
		}
		b := block(r)
		t.Logf("session 3 request %d: block of %d bytes, skills %v\n%s", i+1, len(b), skillNames(b), memories(b))
	}
	last := memories(block(s3[len(s3)-1]))
	var missing []string
	for _, f := range facts {
		if n := strings.Count(strings.ToLower(last), strings.ToLower(f.want)); n != 1 {
			missing = append(missing, f.want+" ("+itoa(n)+"x)")
		}
	}
	if len(missing) > 0 {
		mem, _ := w.mc(time.Minute, "memory", "list")
		st, _ := w.mc(time.Minute, "status")
		t.Errorf("session 3 does not see what sessions 1-2 taught, each once: %v\nmemories:\n%s\nstatus:\n%s", missing, mem, st)
	}

	// The model calls MetaClaw's memory tool by its name.
	n3 := len(w.up.requests())
	reply, _, _ := w.turn("main", "e2e-s3", "CALL-TOOL metaclaw_memory_search staging host")
	var called string
	for _, r := range w.since(n3) {
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

	// `metaclaw stop` does not fail a turn; the plugin starts the host again.
	w.mustMC("stop")
	if reply, _, _ := w.turn("main", "e2e-s3", "Thanks, that is all."); reply != "FAKE-REPLY-OK" {
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
	for session, want := range map[string]int{"e2e-s1": 5, "e2e-s2": 3, "e2e-s3": 0} {
		turns, err := st.SessionTurns(context.Background(), session)
		if err != nil {
			t.Fatal(err)
		}
		if want > 0 && len(turns) != want {
			t.Errorf("session %s: %d turns recorded, want %d", session, len(turns), want)
		}
		for _, tr := range turns {
			if u := transcript.FromTurn(tr).User; ocEnvelope.MatchString(u) || strings.Contains(u, "Runtime: agent=") {
				t.Errorf("learning reads OpenClaw's envelope: %q", u)
			}
			if session == "e2e-s3" && tr.InjectedTokens > 0 && tr.InjectedJSON != "" {
				injected = true
			}
		}
	}
	if !injected {
		t.Error("no session 3 turn records what was injected")
	}
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
