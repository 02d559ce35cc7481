package memory

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/internal/fakellm"
	"github.com/metaclaw-go/metaclaw/internal/lessontest"
)

var lesson = lessontest.Lesson

// nextSessionCfg is memory with a catch-up bound the test never hits (the
// default bound is a measured latency, not something a test may assert).
func nextSessionCfg(t *testing.T, mutate func(*config.Memory)) *config.Config {
	return testCfg(t, func(m *config.Memory) {
		m.SessionStartWaitMS = 5000
		if mutate != nil {
			mutate(m)
		}
	})
}

// sdkClient talks to the proxy through an official SDK; say sends one user
// message (after the conversation so far) and returns the system prompt
// the upstream received.
type sdkClient interface {
	say(t *testing.T, session string, history []string, text string) string
}

type openaiSDK struct {
	h    *memHost
	base string
}

func (c openaiSDK) say(t *testing.T, session string, history []string, text string) string {
	t.Helper()
	var opts []option.RequestOption
	if session != "" {
		opts = append(opts, option.WithHeader("X-Session-Id", session))
	}
	client := openai.NewClient(option.WithBaseURL(c.h.URL+c.base), option.WithAPIKey("client-key"), option.WithMaxRetries(0))
	msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a helpful assistant.")}
	for _, m := range history {
		msgs = append(msgs, openai.UserMessage(m), openai.AssistantMessage("FAKE-REPLY-OK"))
	}
	msgs = append(msgs, openai.UserMessage(text))
	if _, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-test", Messages: msgs}, opts...); err != nil {
		t.Fatal(err)
	}
	return systemPrompt(c.h.Upstream.Last().Body)
}

type anthropicSDK struct{ h *memHost }

func (c anthropicSDK) say(t *testing.T, session string, history []string, text string) string {
	t.Helper()
	var opts []aoption.RequestOption
	if session != "" {
		opts = append(opts, aoption.WithHeader("X-Session-Id", session))
	}
	client := anthropic.NewClient(aoption.WithBaseURL(c.h.URL), aoption.WithAPIKey("client-key"), aoption.WithMaxRetries(0))
	var msgs []anthropic.MessageParam
	for _, m := range history {
		msgs = append(msgs, anthropic.NewUserMessage(anthropic.NewTextBlock(m)), anthropic.NewAssistantMessage(anthropic.NewTextBlock("FAKE-REPLY-OK")))
	}
	msgs = append(msgs, anthropic.NewUserMessage(anthropic.NewTextBlock(text)))
	if _, err := client.Messages.New(context.Background(), anthropic.MessageNewParams{
		Model: "claude-test", MaxTokens: 64, System: []anthropic.TextBlockParam{{Text: "You are careful."}}, Messages: msgs,
	}, opts...); err != nil {
		t.Fatal(err)
	}
	return systemPrompt(c.h.Upstream.Last().Body)
}

// teach runs the lesson as one session of three turns.
func teach(t *testing.T, c sdkClient, session string) {
	t.Helper()
	var history []string
	for _, l := range lesson {
		c.say(t, session, history, l.Say)
		history = append(history, l.Say)
	}
}

func missing(block string, wants ...string) []string {
	var out []string
	for _, w := range wants {
		if !strings.Contains(block, w) {
			out = append(out, w)
		}
	}
	return out
}

// TestNewSessionSeesWhatTheLastOneTaught: teach in session A (three turns,
// fewer than the batch of five, session left open), start session B: B's
// first request already carries what A taught. A stays open, and nothing
// is mined twice when A's batch or end comes.
func TestNewSessionSeesWhatTheLastOneTaught(t *testing.T) {
	for _, tc := range []struct {
		name   string
		client func(h *memHost) sdkClient
		a, b   string
	}{
		{"openai-go", func(h *memHost) sdkClient { return openaiSDK{h, "/v1"} }, "chat-a", "chat-b"},
		{"anthropic-sdk-go", func(h *memHost) sdkClient { return anthropicSDK{h} }, "chat-a", "chat-b"},
		// No session id: the proxy derives one per conversation.
		{"openai-go derived sessions", func(h *memHost) sdkClient { return openaiSDK{h, "/v1"} }, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startHost(t, nextSessionCfg(t, nil), AssembleOptions{}, "")
			ctx := context.Background()
			c := tc.client(h)
			teach(t, c, tc.a)
			h.Flush(t)
			if n, _ := h.mem.Ingester.Pending(ctx); n != 3 {
				t.Fatalf("pending after session A: %d", n)
			}
			sys := c.say(t, tc.b, nil, lessontest.NewServiceAsk)
			if m := missing(memoryBlock(sys), lessontest.Wants()...); len(m) > 0 {
				t.Fatalf("B's first request lacks %q; system prompt:\n%s", m, sys)
			}
			sessA := sessionOf(t, h, "I prefer tabs for indentation.")
			if s, err := h.Store.Session(ctx, sessA); err != nil || s.EndedAt != nil {
				t.Fatalf("session A was ended by B's start: %+v %v", s, err)
			}
			// Nothing is mined twice: ingesting A again finds nothing, and
			// ending it only adds its summary.
			res, err := h.mem.Ingester.IngestSession(ctx, sessA, false)
			if err != nil || res.Turns != 0 || res.Added != 0 || res.Reinforced != 0 {
				t.Fatalf("second ingestion of A: %+v %v", res, err)
			}
			if err := h.Core.EndSession(ctx, sessA, "client"); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "A's summary", func() bool {
				us, _ := h.mem.Store.List(ctx, Filter{Type: WorkingSummary, Limit: -1})
				return len(us) == 1
			})
			us, _ := h.mem.Store.List(ctx, Filter{Status: "all", Limit: -1})
			if len(us) != 4 {
				t.Fatalf("units %+v", us)
			}
			for _, u := range us {
				if u.Mentions != 1 || u.Status != StatusActive {
					t.Fatalf("mined twice or superseded: %+v", u)
				}
			}
		})
	}
}

// sessionOf finds the session whose first turn said text.
func sessionOf(t *testing.T, h *memHost, text string) string {
	t.Helper()
	var id string
	if err := h.Store.Reader().QueryRow(`SELECT session_id FROM turns WHERE request_json LIKE ? ORDER BY id LIMIT 1`, "%"+text+"%").Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestNewSessionWithSlowLLMExtractor: with memory.extractor llm behind an
// upstream that answers only when the test says so, B's first turn is not
// held up by the LLM (it completes while the LLM has not answered), B's
// second turn carries the facts (the heuristic's, provisionally), and when
// the LLM answers its memories replace the heuristic's.
func TestNewSessionWithSlowLLMExtractor(t *testing.T) {
	slow := fakellm.New()
	t.Cleanup(slow.Close)
	slow.Reply = `{"memories":[` +
		`{"type":"preference","content":"Indentation: the user wants tabs.","subject":"indentation","value":"tabs","turn":0},` +
		`{"type":"project_state","content":"Main database: PostgreSQL 16.","subject":"database","value":"postgresql 16","turn":1},` +
		`{"type":"semantic","content":"Timezone of the user: UTC+8.","subject":"timezone","value":"utc+8","turn":2}]}`
	release := slow.Hold()
	cfg := nextSessionCfg(t, func(m *config.Memory) { m.Extractor = "llm" })
	cfg.LLM.APIBase, cfg.LLM.ModelID, cfg.LLM.API = slow.URL+"/v1", "fake-model", "openai"
	h := startHost(t, cfg, AssembleOptions{}, "")
	t.Cleanup(release) // before the host closes: its job waits on the LLM
	ctx := context.Background()
	c := openaiSDK{h, "/v1"}

	teach(t, c, "llm-a")
	c.say(t, "llm-b", nil, lessontest.NewServiceAsk) // returns although the LLM holds every call
	waitFor(t, "the LLM extraction of A to be asked", func() bool { return len(slow.Requests()) > 0 })
	// B's first turn waits session_start_wait_ms for A's heuristic units,
	// then lets them land in the background: on a loaded machine they may
	// come after it. The point here is that B's next turn carries them
	// while the LLM still holds, so wait for them, not for a time.
	waitFor(t, "A's provisional units", func() bool {
		us, _ := h.mem.Store.List(ctx, Filter{Limit: -1})
		var text []string
		for _, u := range us {
			text = append(text, u.Content)
		}
		return len(missing(strings.Join(text, "\n"), lessontest.Wants()...)) == 0
	})
	sys := c.say(t, "llm-b", []string{lessontest.NewServiceAsk}, "Which database should it use?")
	if m := missing(memoryBlock(sys), lessontest.Wants()...); len(m) > 0 {
		t.Fatalf("B's second request lacks %q:\n%s", m, sys)
	}
	if n, _ := h.mem.Ingester.Pending(ctx); n < 3 {
		t.Fatalf("A's turns should stay pending until the LLM answers; pending %d", n)
	}

	release()
	waitFor(t, "the LLM's memories", func() bool {
		us, _ := h.mem.Store.List(ctx, Filter{Limit: -1})
		var llm, prov int
		for _, u := range us {
			switch u.Origin {
			case "llm":
				llm++
			case OriginProvisional:
				prov++
			}
		}
		return llm == 3 && prov == 0
	})
	sys = c.say(t, "llm-b", []string{lessontest.NewServiceAsk, "Which database should it use?"}, "And the indentation, in my timezone?")
	block := memoryBlock(sys)
	if m := missing(block, "Indentation: the user wants tabs.", "Main database: PostgreSQL 16.", "Timezone of the user: UTC+8."); len(m) > 0 || strings.Contains(block, "The user prefers tabs") {
		t.Fatalf("the LLM's memories should have replaced the heuristic's (missing %q):\n%s", m, block)
	}
	// The provisional units stay in the audit, superseded; none was counted twice.
	all, _ := h.mem.Store.List(ctx, Filter{Status: "all", Limit: -1})
	withdrawn := 0
	for _, u := range all {
		if u.Mentions != 1 {
			t.Fatalf("counted twice: %+v", u)
		}
		if u.Origin == OriginProvisional && u.Status == StatusSuperseded {
			withdrawn++
		}
	}
	if withdrawn != 3 {
		t.Fatalf("withdrawn provisional units %d: %+v", withdrawn, all)
	}
}

// TestConcurrentAgentsKeepTheirOwnCatchUp: two agents teach at the same
// time in one scope, and one agent has a session in another scope too. A
// new session of one agent ingests that agent's earlier sessions in that
// scope only: the other agent's (and the other scope's) turns stay pending.
func TestConcurrentAgentsKeepTheirOwnCatchUp(t *testing.T) {
	h := startHost(t, nextSessionCfg(t, nil), AssembleOptions{}, "")
	alpha := []string{"I prefer tabs for indentation.", "We use PostgreSQL 16 for the main database."}
	beta := []string{"My favourite editor is Helix.", "Call me Robin."}
	other := []string{"We deploy with Nomad."}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	run := func(agent, session, workspace string, msgs []string) {
		defer wg.Done()
		var history []map[string]any
		for _, m := range msgs {
			if _, err := h.send(m, chatOpts{session: session, agent: agent, user: "u", workspace: workspace, history: history}); err != nil {
				errs <- err
				return
			}
			history = append(history, map[string]any{"role": "user", "content": m}, map[string]any{"role": "assistant", "content": "FAKE-REPLY-OK"})
		}
	}
	wg.Add(3)
	go run("alpha", "alpha-1", "", alpha)
	go run("beta", "beta-1", "", beta)
	go run("alpha", "alpha-w", "acme", other)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(<-errs)
	}
	h.Flush(t)

	sys := h.chat("Start a new project on our main database.", chatOpts{session: "alpha-2", agent: "alpha", user: "u"})
	h.mem.Ingester.waitCatchUps() // what stays pending is said once every catch-up is over
	block := memoryBlock(sys)
	if m := missing(block, "tabs for indentation", "PostgreSQL 16"); len(m) > 0 || strings.Contains(block, "Helix") || strings.Contains(block, "Nomad") {
		t.Fatalf("alpha's new session (missing %q; alpha-1 has %d pending turns):\n%s", m, pendingOf(t, h, "alpha-1"), block)
	}
	for session, want := range map[string]int{"alpha-1": 0, "beta-1": 2, "alpha-w": 1} {
		if n := pendingOf(t, h, session); n != want {
			t.Fatalf("session %s: %d pending turns, want %d", session, n, want)
		}
	}

	// Now both agents start new sessions at the same moment.
	wg.Add(2)
	for _, a := range []string{"beta", "alpha"} {
		go run(a, a+"-3", "", []string{"Anything I should know, " + a + "?"})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(<-errs)
	}
	h.mem.Ingester.waitCatchUps()
	if m := missing(memoryBlock(systemOf(t, h, "Anything I should know, beta?")), "Helix", "Robin"); len(m) > 0 {
		// 0 pending: the catch-up came after the wait; 2: it was skipped or failed.
		t.Fatalf("beta's new session lacks %q; beta-1 has %d pending turns after the catch-ups", m, pendingOf(t, h, "beta-1"))
	}
	if n := pendingOf(t, h, "alpha-w"); n != 1 {
		t.Fatalf("the other scope's session was ingested: %d pending", n)
	}
}

// systemOf is the system prompt of the upstream request whose newest
// message is text.
func systemOf(t *testing.T, h *memHost, text string) string {
	t.Helper()
	for _, r := range h.Upstream.Requests() {
		msgs, _ := r.Body["messages"].([]any)
		if len(msgs) > 0 {
			if m, _ := msgs[len(msgs)-1].(map[string]any); m["content"] == text {
				return systemPrompt(r.Body)
			}
		}
	}
	t.Fatalf("no upstream request said %q", text)
	return ""
}

// pendingOf counts a session's learnable turns after its cursor.
func pendingOf(t *testing.T, h *memHost, session string) int {
	t.Helper()
	cur, err := readCursor(context.Background(), h.Store.Reader(), session)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := h.Store.Reader().QueryRow(`SELECT COUNT(*) FROM turns WHERE session_id = ? AND id > ? AND turn_type = 'main' AND status BETWEEN 200 AND 299`, session, cur.last).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestDurableStatementIsIngestedAtOnce: "from now on …", "never …",
// "remember that …" do not wait for the batch or the session's end.
func TestDurableStatementIsIngestedAtOnce(t *testing.T) {
	h := startHost(t, nextSessionCfg(t, nil), AssembleOptions{}, "")
	ctx := context.Background()
	h.chat("Never run rm -rf without asking.", chatOpts{session: "rules", user: "u"})
	waitFor(t, "the rule to be ingested", func() bool {
		us, _ := h.mem.Store.List(ctx, Filter{Limit: -1})
		return len(us) == 1 && strings.Contains(us[0].Content, "rm -rf")
	})
	if s, _ := h.Store.Session(ctx, "rules"); s.EndedAt != nil {
		t.Fatal("the session was ended")
	}
	// The same session's next turn sees it in the block.
	sys := h.chat("Clean up the build directory.", chatOpts{session: "rules", user: "u", history: []map[string]any{
		{"role": "user", "content": "Never run rm -rf without asking."}, {"role": "assistant", "content": "FAKE-REPLY-OK"}}})
	if !strings.Contains(memoryBlock(sys), "rm -rf") {
		t.Fatalf("block:\n%s", sys)
	}
}

// TestDurableStatementAfterALineBreakIsIngestedAtOnce: the same for
// statements a line break precedes, as OpenClaw's envelopes and any
// multi-line message have them (in the raw body "\n\nFrom now on": the
// per-turn prefilter read "nFrom" and let them wait for their batch).
func TestDurableStatementAfterALineBreakIsIngestedAtOnce(t *testing.T) {
	h := startHost(t, nextSessionCfg(t, nil), AssembleOptions{}, "")
	ctx := context.Background()
	for i, tc := range []struct{ message, want string }{
		{"[Mon 2026-01-05 16:26 PST] Conversation info (untrusted metadata):\n```json\n{\"chat\":\"g1\"}\n```\n\nFrom now on, deploy only from the release branch.", "release branch"},
		{"Thanks, that fixed it.\nRemember that the staging database is on port 6543.", "6543"},
	} {
		h.chat(tc.message, chatOpts{session: fmt.Sprint("lines-", i), user: "u"})
		waitFor(t, "the statement to be ingested", func() bool {
			us, _ := h.mem.Store.List(ctx, Filter{Limit: -1})
			for _, u := range us {
				if strings.Contains(u.Content, tc.want) {
					return true
				}
			}
			return false
		})
	}
}

func TestDurable(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"Remember that the staging port is 9090.", true},
		{"From now on, answer in British English.", true},
		{"Never run rm -rf without asking.", true},
		{"Please always run the tests first.", true},
		{"OK. You should never push to main.", true},
		{"Keep in mind that Alice owns billing.", true},
		{"记住，周五不要部署。", true},
		{"以后请用中文回答。", true},
		{"永远不要在周五部署", true},
		{"I prefer tabs for indentation.", false},
		{"It never works on Mondays, why?", false},
		{"Do you remember the name of that tool?", false},
		{"What is the weather like?", false},
		{"我喜欢用空格缩进", false},
	} {
		if got := Durable(tc.text); got != tc.want {
			t.Errorf("Durable(%q) = %v, want %v", tc.text, got, tc.want)
		}
	}
}

// TestCatchUpIsBoundedThenContinues: with a bound of 0 the first turn does
// not wait; the catch-up still completes in the background.
func TestCatchUpIsBoundedThenContinues(t *testing.T) {
	h := startHost(t, testCfg(t, func(m *config.Memory) { m.SessionStartWaitMS = 0 }), AssembleOptions{}, "")
	ctx := context.Background()
	for i, l := range lesson {
		h.chat(l.Say, chatOpts{session: "bg-a", user: "u", history: historyOf(lesson[:i])})
	}
	h.chat("Hello again.", chatOpts{session: "bg-b", user: "u"})
	h.Flush(t)
	h.mem.Ingester.waitCatchUps()
	if n, _ := h.mem.Store.ActiveCount(ctx); n != 3 || pendingOf(t, h, "bg-a") != 0 {
		t.Fatalf("after the background catch-up: %d units, %d of bg-a's turns pending", n, pendingOf(t, h, "bg-a"))
	}
	c := h.statusCounts()
	if _, ok := c["memory_oldest_pending_seconds"]; !ok || c["memory_pending_turns"] != 1 {
		t.Fatalf("status counts %v", c)
	}
}

func historyOf(ls []lessontest.Fact) []map[string]any {
	var out []map[string]any
	for _, l := range ls {
		out = append(out, map[string]any{"role": "user", "content": l.Say}, map[string]any{"role": "assistant", "content": "FAKE-REPLY-OK"})
	}
	return out
}
