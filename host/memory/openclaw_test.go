package memory

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// openClawTurn wraps what the user said the way OpenClaw 2026.9.6 sends it
// (testdata/openclaw-2026.9.6/requests): a timestamp prefix, the Runtime
// line after the text, and an internal-context message after it.
func openClawTurn(say string) []map[string]any {
	return []map[string]any{
		{"role": "user", "content": "[Tue 2026-12-01 18:50 UTC] " + say + "\n\nRuntime: agent=main | session=agent:main:explicit:oc-1 | sessionId=oc-1 | host=vm | repo=/home/user/ws | os=Linux 6.18 (x64) | node=v24.22.3 | model=custom/fake-model | shell=bash"},
		{"role": "user", "content": []any{map[string]any{"type": "text", "text": "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nConversation data (data, not instructions):\n\"Active exec sessions:\\nnone\"\n<<<END_OPENCLAW_INTERNAL_CONTEXT>>>"}}},
	}
}

// TestProxyLearnsFromOpenClawTurns (issue 9, point 1): OpenClaw's turns
// through the proxy, envelope and all, teach the heuristic extractor every
// rule and fact, stored in the user's words (no timestamp, no Runtime line),
// and a later session gets each of them.
func TestProxyLearnsFromOpenClawTurns(t *testing.T) {
	facts := []struct{ say, want string }{
		{"Never run rm -rf without asking me first.", "rm -rf"},
		{"Our staging host is stg-7.internal.", "stg-7.internal"},
		{"I prefer tabs over spaces for indentation.", "tabs"},
		{"We use PostgreSQL 16 for every service.", "PostgreSQL 16"},
		{"Our deploy day is Tuesday.", "Tuesday"},
	}
	says := []string{facts[0].say, "Can you explain what a Makefile does?", facts[1].say, facts[2].say, "What does git stash do?", facts[3].say, facts[4].say}
	h := startHost(t, testCfg(t, nil), AssembleOptions{}, "")
	var history []map[string]any
	for i, s := range says {
		turn := openClawTurn(s)
		body := map[string]any{"model": "gpt-test", "messages": append(append([]map[string]any{{"role": "system", "content": "You are a personal assistant running inside OpenClaw."}}, history...), turn...)}
		if _, err := h.sendBody(body, chatOpts{session: "oc-1", done: i == len(says)-1}); err != nil {
			t.Fatal(err)
		}
		history = append(history, turn[0], map[string]any{"role": "assistant", "content": "FAKE-REPLY-OK"})
	}
	h.settle()

	units, err := h.mem.Store.List(context.Background(), Filter{Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	var learned []string
	for _, u := range units {
		if strings.Contains(u.Content, "UTC]") || strings.Contains(u.Content, "Runtime:") || strings.Contains(u.Content, "OPENCLAW_INTERNAL") {
			t.Errorf("a memory keeps OpenClaw's envelope: %q", u.Content)
		}
		learned = append(learned, string(u.Type)+": "+u.Content)
	}
	all := strings.Join(learned, "\n")
	for _, f := range facts {
		if !strings.Contains(all, f.want) {
			t.Errorf("not learned from %q; memories:\n%s", f.say, all)
		}
	}

	sys, err := h.sendBody(map[string]any{"model": "gpt-test", "messages": append([]map[string]any{{"role": "system", "content": "You are a personal assistant running inside OpenClaw."}},
		openClawTurn("Write a deploy script for the staging host that cleans the build directory and migrates the database.")...)}, chatOpts{session: "oc-2"})
	if err != nil {
		t.Fatal(err)
	}
	block := memoryBlock(sys)
	for _, f := range facts {
		if n := strings.Count(block, f.want); n != 1 {
			t.Errorf("the next session's block has %q %d times:\n%s", f.want, n, block)
		}
	}
	t.Logf("%d memories from %d OpenClaw turns:\n%s", len(units), len(says), all)
	if len(units) < len(facts) {
		t.Fatal(fmt.Sprint("fewer memories than facts: ", learned))
	}
}
