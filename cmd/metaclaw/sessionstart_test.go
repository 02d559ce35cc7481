package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/memory"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/lessontest"
	"github.com/metaclaw-go/metaclaw/plugin/plugintest"
)

// Three plain statements of a first session: fewer than
// memory.ingest_every_turns, and nothing that marks them durable, so only a
// session start (or the session's end) ingests them.
var hookLesson = lessontest.Says()

// hookMemoryHost is a host with the real memory layer (heuristic extractor)
// behind the rpc socket that `metaclaw plugin hook` reaches.
func hookMemoryHost(t testing.TB) (*plugintest.Host, *memory.Host, string) {
	t.Helper()
	home := plugintest.Home(t)
	cfg := config.Default(t.TempDir())
	cfg.Memory.Enabled = true
	// Below the hook's 3 s call deadline, far above the heuristic's catch-up
	// (docs/memory.md); the default is 150 ms.
	cfg.Memory.SessionStartWaitMS = 2500
	var mem *memory.Host
	h := plugintest.StartWith(t, home, func(c *core.Core, st *store.SQLite) {
		m, err := memory.Assemble(context.Background(), cfg, st, c, zerolog.Nop(), memory.AssembleOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mem = m
	})
	return h, mem, home
}

func memoryContents(t testing.TB, mem *memory.Host) string {
	t.Helper()
	us, err := mem.Store.List(context.Background(), memory.Filter{Limit: -1})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, u := range us {
		b.WriteString(u.Content + "\n")
	}
	return b.String()
}

func missing(text string, wants ...string) []string {
	var out []string
	for _, w := range wants {
		if !strings.Contains(text, w) {
			out = append(out, w)
		}
	}
	return out
}

// hookClient drives one command-hook protocol through the real binary.
type hookClient struct {
	name  string
	teach func(t testing.TB, home, session string, i int, user, assistant string)
	start func(t testing.TB, home, prev, session string) // the client's session-start signal(s)
	ask   func(t testing.TB, home, session, prompt string) string
}

var hermesClient = hookClient{
	name: "hermes",
	teach: func(t testing.TB, home, session string, i int, user, assistant string) {
		hook(t, home, "hermes", "post_llm_call", hermesPayload("post_llm_call", session, map[string]any{
			"task_id": session, "turn_id": fmt.Sprintf("t%d", i), "user_message": user, "assistant_response": assistant,
			"model": "m", "platform": "cli",
			"conversation_history": []map[string]any{{"role": "user", "content": user}, {"role": "assistant", "content": assistant}},
		}))
	},
	ask: func(t testing.TB, home, session, prompt string) string {
		out, _ := hook(t, home, "hermes", "pre_llm_call", hermesPayload("pre_llm_call", session, map[string]any{
			"task_id": session, "turn_id": "t0", "user_message": prompt, "conversation_history": []map[string]any{},
			"is_first_turn": true, "model": "m", "platform": "cli", "sender_id": "",
		}))
		s, _ := out["context"].(string)
		return s
	},
}

// claudeClient is Claude Code's command hooks (NanoClaw's agent runner):
// turns come from the transcript at Stop.
var claudeClient = hookClient{
	name: "claude",
	teach: func(t testing.TB, home, session string, i int, user, assistant string) {
		tr := filepath.Join(home, session+".jsonl")
		f, err := os.OpenFile(tr, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(f, `{"type":"user","uuid":"u%d","message":{"role":"user","content":%q}}`+"\n", i, user)
		fmt.Fprintf(f, `{"type":"assistant","uuid":"a%d","message":{"role":"assistant","model":"claude-x","content":[{"type":"text","text":%q}]}}`+"\n", i, assistant)
		f.Close()
		hook(t, home, "claude", "Stop", map[string]any{"session_id": session, "transcript_path": tr, "hook_event_name": "Stop", "stop_hook_active": false})
	},
	ask: func(t testing.TB, home, session, prompt string) string {
		out, _ := hook(t, home, "claude", "UserPromptSubmit", map[string]any{
			"session_id": session, "transcript_path": filepath.Join(home, session+".jsonl"), "cwd": "/workspace/group",
			"hook_event_name": "UserPromptSubmit", "prompt": prompt,
		})
		hso, _ := out["hookSpecificOutput"].(map[string]any)
		s, _ := hso["additionalContext"].(string)
		return s
	},
}

func (c hookClient) with(start func(t testing.TB, home, prev, session string)) hookClient {
	c.start = start
	return c
}

// TestHookSessionStartCatchesUp: three turns taught in session A through a
// client's command hooks, then the client's session-start signal for B. The
// signal alone ingests A's pending turns (before B's first retrieval, within
// memory.session_start_wait_ms, without ending A), and B's first context
// carries the taught facts. No manual flush.
func TestHookSessionStartCatchesUp(t *testing.T) {
	hermesStart := func(event string, extra map[string]any) func(t testing.TB, home, prev, session string) {
		return func(t testing.TB, home, prev, session string) {
			if out, _ := hook(t, home, "hermes", event, hermesPayload(event, session, extra)); len(out) != 0 {
				t.Fatalf("%s answered %v", event, out)
			}
		}
	}
	for _, tc := range []struct {
		name   string
		client hookClient
		endsA  bool
	}{
		{"hermes on_session_start", hermesClient.with(hermesStart("on_session_start", map[string]any{"model": "m", "platform": "cli"})), false},
		{"hermes on_session_reset (cli /new)", hermesClient.with(hermesStart("on_session_reset", map[string]any{"platform": "cli", "reason": "new_session"})), false},
		{"hermes gateway /new: finalize A, reset to B", hermesClient.with(func(t testing.TB, home, prev, session string) {
			hook(t, home, "hermes", "on_session_finalize", hermesPayload("on_session_finalize", prev, map[string]any{"platform": "telegram", "reason": "new"}))
			hook(t, home, "hermes", "on_session_reset", hermesPayload("on_session_reset", session, map[string]any{
				"platform": "telegram", "reason": "new", "old_session_id": prev, "new_session_id": session}))
		}), true},
		{"claude SessionStart", claudeClient.with(func(t testing.TB, home, prev, session string) {
			out, _ := hook(t, home, "claude", "SessionStart", map[string]any{"session_id": session, "transcript_path": filepath.Join(home, session+".jsonl"),
				"cwd": "/workspace/group", "hook_event_name": "SessionStart", "source": "startup"})
			if len(out) != 0 {
				t.Fatalf("SessionStart answered %v", out)
			}
		}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, mem, home := hookMemoryHost(t)
			a, b := "sess-a-"+tc.client.name, "sess-b-"+tc.client.name
			for i, m := range hookLesson {
				tc.client.teach(t, home, a, i, m, "Noted.")
			}
			if n := len(h.Turns(t, a)); n != len(hookLesson) {
				t.Fatalf("session A has %d turns", n)
			}
			if got := memoryContents(t, mem); got != "" {
				t.Fatalf("A's turns were ingested before any session start:\n%s", got)
			}
			tc.client.start(t, home, a, b)
			// The signal did the catch-up: before B's first retrieval.
			if m := missing(memoryContents(t, mem), lessontest.Wants()...); len(m) > 0 {
				t.Fatalf("after the session-start signal the memory lacks %q", m)
			}
			block := tc.client.ask(t, home, b, lessontest.NewServiceAsk)
			if m := missing(block, lessontest.Wants()...); len(m) > 0 {
				t.Fatalf("B's first context lacks %q:\n%s", m, block)
			}
			if s := h.Session(t, a); (s.EndedAt != nil) != tc.endsA {
				t.Fatalf("session A: ended %v, want %v (%+v)", s.EndedAt != nil, tc.endsA, s)
			}
		})
	}
}

// BenchmarkHermesNewSessionHooks times the hook processes of a new Hermes
// session after an earlier one left three pending turns: on_session_start
// (the catch-up included), B's first pre_llm_call, and on_session_start of
// a session with nothing pending. Each is a process start, the socket and
// the call. docs/memory.md quotes the figures:
//
//	go test -run '^$' -bench HermesNewSession -benchtime 30x ./cmd/metaclaw/
func BenchmarkHermesNewSessionHooks(b *testing.B) {
	_, _, home := hookMemoryHost(b)
	var start, first, idle []time.Duration
	for i := range b.N {
		a, s, c := fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i), fmt.Sprintf("c%d", i)
		for j, m := range hookLesson {
			hermesClient.teach(b, home, a, j, m, "Noted.")
		}
		_, el := hook(b, home, "hermes", "on_session_start", hermesPayload("on_session_start", s, map[string]any{"model": "m", "platform": "cli"}))
		start = append(start, el)
		t0 := time.Now()
		if blk := hermesClient.ask(b, home, s, lessontest.NewServiceAsk); len(missing(blk, lessontest.Wants()...)) > 0 {
			b.Fatalf("B's first context lacks the lesson:\n%s", blk)
		}
		first = append(first, time.Since(t0))
		_, el = hook(b, home, "hermes", "on_session_start", hermesPayload("on_session_start", c, map[string]any{"model": "m", "platform": "cli"}))
		idle = append(idle, el)
	}
	for name, took := range map[string][]time.Duration{"start": start, "first-pre_llm_call": first, "start-nothing-pending": idle} {
		slices.Sort(took)
		b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, name+"-p50-ms")
		b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, name+"-p99-ms")
	}
}
