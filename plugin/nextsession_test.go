package plugin_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/memory"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/fakellm"
	"github.com/metaclaw-go/metaclaw/internal/lessontest"
	"github.com/metaclaw-go/metaclaw/plugin"
	"github.com/metaclaw-go/metaclaw/plugin/plugintest"
)

// What the user teaches in the first OpenClaw session: plain statements
// that would otherwise wait for a batch of five or the session's end.
var ocLesson = lessontest.Says()

// memoryHost is an in-process host with the real memory layer behind the
// rpc socket, and `plugin serve --client openclaw` in front of it.
type memoryHost struct {
	*plugintest.Host
	mem *memory.Host
	oc  *served
}

func startMemoryHost(t testing.TB, mutate func(*config.Config)) *memoryHost {
	t.Helper()
	home := plugintest.Home(t)
	cfg := config.Default(t.TempDir())
	cfg.Memory.Enabled = true
	cfg.Memory.SessionStartWaitMS = 5000 // a bound the test never hits (see docs/memory.md for the measured latency)
	if mutate != nil {
		mutate(cfg)
	}
	mh := &memoryHost{}
	mh.Host = plugintest.StartWith(t, home, func(c *core.Core, st *store.SQLite) {
		h, err := memory.Assemble(context.Background(), cfg, st, c, zerolog.Nop(), memory.AssembleOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mh.mem = h
	})
	mh.oc = serve(t, home, plugin.ClientOpenClaw, false)
	mh.oc.relay.ContextTimeout = 10 * time.Second
	mh.oc.call(t, plugin.MethodInitialize, map[string]any{"client": "openclaw", "config": map[string]any{}}, nil)
	return mh
}

func ocCtx(session, runID string) map[string]any {
	return map[string]any{"runId": runID, "agentId": "main", "sessionId": session, "sessionKey": "agent:main:explicit:" + session, "trigger": "user"}
}

func ocText(role, text string) map[string]any {
	return map[string]any{"role": role, "content": []map[string]any{{"type": "text", "text": text}}}
}

// turn drives one OpenClaw turn the way the extension does: before_prompt_build
// (whose answer is the injected block) and agent_end with the run's messages.
func (h *memoryHost) turn(t testing.TB, session string, history []string, prompt string) string {
	t.Helper()
	runID := session + "-" + time.Now().Format("150405.000000000")
	var msgs []map[string]any
	for _, m := range history {
		msgs = append(msgs, ocText("user", m), ocText("assistant", "FAKE-REPLY-OK"))
	}
	var ret map[string]string
	h.oc.call(t, plugin.MethodOCBeforePromptBuild, map[string]any{"event": map[string]any{"prompt": prompt, "messages": msgs}, "ctx": ocCtx(session, runID)}, &ret)
	msgs = append(msgs, ocText("user", prompt), ocText("assistant", "FAKE-REPLY-OK"))
	h.oc.call(t, plugin.MethodOCAgentEnd, map[string]any{"event": map[string]any{"messages": msgs, "success": true, "runId": runID}, "ctx": ocCtx(session, runID)}, nil)
	return ret["appendSystemContext"]
}

func (h *memoryHost) teach(t testing.TB, session string) {
	t.Helper()
	for i, m := range ocLesson {
		h.turn(t, session, ocLesson[:i], m)
	}
}

func lacks(block string, wants ...string) []string {
	var out []string
	for _, w := range wants {
		if !strings.Contains(block, w) {
			out = append(out, w)
		}
	}
	return out
}

// TestOpenClawNewSessionSeesWhatTheLastOneTaught: three turns in one
// OpenClaw session, then a new session — a new session id, one announced
// by session_start, or /new on an explicit id (before_reset, session_end
// and session_start for the same id) — and the new session's first
// before_prompt_build returns the taught facts.
func TestOpenClawNewSessionSeesWhatTheLastOneTaught(t *testing.T) {
	for _, tc := range []struct {
		name     string
		a, b     string
		announce func(t *testing.T, h *memoryHost)
	}{
		{"new session id", "oc-a", "oc-b", nil},
		{"session_start", "oc-a", "oc-b", func(t *testing.T, h *memoryHost) {
			h.oc.call(t, plugin.MethodOCSessionStart, map[string]any{"event": map[string]any{"sessionId": "oc-b", "sessionKey": "agent:main:explicit:oc-b"},
				"ctx": map[string]any{"agentId": "main", "sessionId": "oc-b", "sessionKey": "agent:main:explicit:oc-b"}}, nil)
		}},
		{"/new on an explicit session id", "gw-1", "gw-1", func(t *testing.T, h *memoryHost) {
			ctx := map[string]any{"agentId": "main", "sessionId": "gw-1", "sessionKey": "agent:main:explicit:gw-1"}
			h.oc.call(t, plugin.MethodOCBeforeReset, map[string]any{"event": map[string]any{"reason": "new"}, "ctx": ctx}, nil)
			h.oc.call(t, plugin.MethodOCSessionEnd, map[string]any{"event": map[string]any{"sessionId": "gw-1", "reason": "new", "nextSessionId": "gw-1"}, "ctx": ctx}, nil)
			h.oc.call(t, plugin.MethodOCSessionStart, map[string]any{"event": map[string]any{"sessionId": "gw-1", "resumedFrom": "gw-1"}, "ctx": ctx}, nil)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startMemoryHost(t, nil)
			h.teach(t, tc.a)
			if tc.announce != nil {
				tc.announce(t, h)
			}
			block := h.turn(t, tc.b, nil, lessontest.NewServiceAsk)
			if m := lacks(block, lessontest.Wants()...); len(m) > 0 {
				t.Fatalf("the new session's first prompt lacks %q:\n%s", m, block)
			}
			if tc.a != tc.b {
				if s := h.Session(t, tc.a); s.EndedAt != nil {
					t.Fatalf("the earlier session was ended: %+v", s)
				}
			}
		})
	}
}

// TestOpenClawNewSessionWithSlowLLMExtractor: the same over the hooks with
// memory.extractor llm behind an upstream that answers only when released.
func TestOpenClawNewSessionWithSlowLLMExtractor(t *testing.T) {
	slow := fakellm.New()
	t.Cleanup(slow.Close)
	slow.Reply = `{"memories":[{"type":"preference","content":"Indentation: the user wants tabs.","subject":"indentation","value":"tabs","turn":0},` +
		`{"type":"project_state","content":"Main database: PostgreSQL 16.","subject":"database","value":"postgresql 16","turn":1},` +
		`{"type":"preference","content":"Timezone of the user: UTC+8.","subject":"timezone","value":"utc+8","turn":2}]}`
	release := slow.Hold()
	h := startMemoryHost(t, func(cfg *config.Config) {
		cfg.Memory.Extractor = "llm"
		cfg.LLM.APIBase, cfg.LLM.ModelID, cfg.LLM.API = slow.URL+"/v1", "fake-model", "openai"
	})
	t.Cleanup(release) // before the host stops: its job waits on the LLM
	h.teach(t, "llm-a")
	first := "Set up a new service for me."
	h.turn(t, "llm-b", nil, first) // completes while the LLM holds every call
	block := h.turn(t, "llm-b", []string{first}, "Which database should it use, and which timezone for its cron jobs?")
	if m := lacks(block, lessontest.Wants()...); len(m) > 0 {
		t.Fatalf("B's second prompt lacks %q:\n%s", m, block)
	}
	release()
	deadline := time.Now().Add(15 * time.Second)
	for {
		us, _ := h.mem.Store.List(context.Background(), memory.Filter{Limit: -1})
		origins := map[string]int{}
		for _, u := range us {
			origins[u.Origin]++
		}
		if origins["llm"] == 3 && origins[memory.OriginProvisional] == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the LLM's memories did not replace the heuristic's: %v", origins)
		}
		time.Sleep(10 * time.Millisecond)
	}
	block = h.turn(t, "llm-b", []string{first}, "And the indentation of the code that talks to the database?")
	if m := lacks(block, "Indentation: the user wants tabs.", "Main database: PostgreSQL 16.", "Timezone of the user: UTC+8."); len(m) > 0 || strings.Contains(block, "The user prefers tabs") {
		t.Fatalf("the LLM's memories should have replaced the heuristic's (missing %q):\n%s", m, block)
	}
}

// BenchmarkOpenClawNewSessionFirstPrompt times before_prompt_build through
// `plugin serve` and the socket: the first prompt of a new session after an
// earlier session left three pending turns (catch-up included), and a
// later prompt of the same session. docs/memory.md quotes the figures:
//
//	go test -run '^$' -bench OpenClawNewSession -benchtime 100x ./plugin/
func BenchmarkOpenClawNewSessionFirstPrompt(b *testing.B) {
	h := startMemoryHost(b, func(cfg *config.Config) { cfg.Memory.IngestEveryTurns = 100 })
	var first, later []time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		h.teach(b, fmt.Sprintf("a%d", i))
		b.StartTimer()
		start := time.Now()
		h.turn(b, fmt.Sprintf("b%d", i), nil, "Set up a new service for me.")
		first = append(first, time.Since(start))
		start = time.Now()
		h.turn(b, fmt.Sprintf("b%d", i), []string{"Set up a new service for me."}, "Which database?")
		later = append(later, time.Since(start))
	}
	for name, took := range map[string][]time.Duration{"first": first, "later": later} {
		sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
		b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, name+"-p50-ms")
		b.ReportMetric(float64(took[len(took)*99/100].Microseconds())/1000, name+"-p99-ms")
	}
}
