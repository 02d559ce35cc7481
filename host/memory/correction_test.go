package memory

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// The failures listed in issue 10, each driven through the proxy with the
// official openai-go client as OpenClaw 2026.9.6 sends its turns
// (openclawEnvelope: timestamp prefix, runtime paragraph, internal-context
// message), with the reminder the client appends to feedback, one session a
// day; checked in what a later day's first turn receives and in what the
// memory API lists.
func TestCorrectionPointsThroughProxy(t *testing.T) {
	clk := &fakeClock{}
	h := startHost(t, testCfg(t, nil), AssembleOptions{Now: clk.Now}, "")
	client := openai.NewClient(option.WithBaseURL(h.URL+"/v1"), option.WithAPIKey("client-key"), option.WithMaxRetries(0),
		option.WithHeader("X-User-Id", "dana"))
	const reminder = "\n\nKeep this in mind as you continue with the next task."
	// runDay runs one session and returns the Memories section of its first turn.
	runDay := func(session string, msgs ...string) string {
		t.Helper()
		var history []openai.ChatCompletionMessageParamUnion
		var first string
		for i, m := range msgs {
			history = append(history, openclawEnvelope.wrap(clk.Now(), session, i == 0, m))
			h.Upstream.SetReply("Here is the revised version.")
			opts := []option.RequestOption{option.WithHeader("X-Session-Id", session)}
			if i == len(msgs)-1 {
				opts = append(opts, option.WithHeader("X-Session-Done", "1"))
			}
			sent := append([]openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a helpful assistant.")}, history...)
			sent = append(sent, openclawEnvelope.tail()...)
			resp, err := client.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-test", Messages: sent}, opts...)
			if err != nil {
				t.Fatalf("%s turn %d: %v", session, i, err)
			}
			history = append(history, resp.Choices[0].Message.ToParam())
			if i == 0 {
				first = memoryBlock(systemPrompt(h.Upstream.Last().Body))
			}
		}
		h.settle()
		clk.Advance(day)
		return first
	}

	runDay("d1",
		"Write today's CI build report.",
		"The report is wrong. The report needs: (1) a file name of the form `YYYYMMDD_<desc>.md`, (2) a front-matter block with owner, state and reviewed_at."+reminder,
		"Still not right. All reports must start with the following header:\n```\n# Report: <title>\nOwner: <team>\nData-Sources: <tables>\n```"+reminder,
		"v1.2 should be 2026-03-18T11:00:00+08:00, and the file name should be 20260323_ci_build_report.json."+reminder,
		"The top-level last_updated field to."+reminder,
		"All timestamps must carry the +08:00 offset."+reminder)
	for i, p := range []string{
		"The time fields are incorrect: every time field needs date, time and offset +08:00.",
		"Timestamps need the +08:00 offset, as always.",
		"The output has issues: the timestamps must carry the +08:00 offset.",
	} {
		runDay("d"+itoa(i+2), "Summarise the nightly load for the data team.", p+reminder)
	}

	// A later day's first turn, on a task none of the rules is about.
	block := runDay("d5", "Draft a poem about autumn leaves.")
	bs := bullets(block)
	has := func(s string) int {
		n := 0
		for _, b := range bs {
			if strings.Contains(b, s) {
				n++
			}
		}
		return n
	}
	// Enumerations: one rule each, each with its subject.
	if has("YYYYMMDD_") != 1 || has("front-matter block with owner, state and reviewed_at") != 1 ||
		slices.ContainsFunc(bs, func(b string) bool { return strings.Contains(b, "YYYYMMDD_") && strings.Contains(b, "front-matter") }) {
		t.Errorf("enumeration not split into two rules:\n%s", block)
	}
	// An attached block stays with its rule.
	if has("Data-Sources: <tables>") != 1 || has("must start with the following header") != 1 {
		t.Errorf("the header rule lost its block:\n%s", block)
	}
	// Paraphrases are one unit.
	if n := has("+08:00"); n != 1 {
		t.Errorf("the +08:00 rule is in %d injected memories:\n%s", n, block)
	}
	// Instance values, fragments and the reminder are not injected.
	for _, bad := range []string{"2026-03-18", "20260323_ci_build_report", "last_updated field to", "Keep this in mind"} {
		if strings.Contains(block, bad) {
			t.Errorf("%q injected:\n%s", bad, block)
		}
	}
	// Standing rules only: nothing else on a turn no memory serves.
	if len(bs) != 4 {
		t.Errorf("%d memories on an unrelated turn, want the 4 standing rules:\n%s", len(bs), block)
	}

	var list struct {
		Memories []Unit `json:"memories"`
	}
	if code := h.api(http.MethodGet, "/v1/memory/list?scope=user:dana&status=all&limit=1000", nil, &list); code != 200 {
		t.Fatalf("list: HTTP %d", code)
	}
	for _, u := range list.Memories {
		switch {
		case strings.Contains(u.Content, "Keep this in mind"), strings.Contains(u.Content, "last_updated field to"):
			t.Errorf("stored: %+v", u)
		case strings.Contains(u.Content, "2026-03-18") || strings.Contains(u.Content, "20260323_ci_build_report"):
			if u.Type != Episodic || u.ExpiresAt == nil || u.ExpiresAt.Sub(u.CreatedAt) > 14*day {
				t.Errorf("an instance value is not a short-lived episode: %+v", u)
			}
		case strings.Contains(u.Content, "+08:00") && u.Status == StatusActive && u.Type != WorkingSummary:
			if u.Mentions < 4 {
				t.Errorf("paraphrases merged with %d mentions: %+v", u.Mentions, u)
			}
		}
	}
	// The block's key names are searchable.
	var found struct {
		Results []SearchResult `json:"results"`
	}
	if code := h.api(http.MethodPost, "/v1/memory/search", SearchRequest{Query: "Data-Sources", ScopeID: "user:dana"}, &found); code != 200 ||
		len(found.Results) == 0 || !strings.Contains(found.Results[0].Content, "following header") {
		t.Errorf("search by a key name of the block: HTTP %d %+v", code, found.Results)
	}
}

// Fifteen standing rules, one of them said three ways, all reach a turn no
// fact serves with the defaults (memory.standing_top_k, memory.max_tokens),
// each once; a relevant fact still gets its own place.
func TestFifteenStandingRulesWithinBudget(t *testing.T) {
	clk := &fakeClock{}
	h := startHost(t, testCfg(t, nil), AssembleOptions{Now: clk.Now}, "")
	rules := []struct{ say, sig string }{
		{"Never deploy on Fridays.", "Fridays"},
		{"Always write tests before the code.", "tests before"},
		{"I prefer tabs for indentation in Go files.", "tabs"},
		{"Every report must name its owner.", "owner"},
		{"All timestamps must carry the +08:00 offset.", "+08:00"},
		{"Never use SELECT * in views.", "SELECT *"},
		{"Every pull request needs a linked ticket.", "linked ticket"},
		{"Always answer in British English.", "British English"},
		{"Every migration must be reversible.", "reversible"},
		{"Never commit secrets to the repository.", "secrets"},
		{"Always squash commits before merging.", "squash"},
		{"Every dashboard must show its data source.", "data source"},
		{"Our file names must use ISO 8601 dates.", "ISO 8601"},
		{"Always run the linter before pushing.", "linter"},
		{"Every API change needs a changelog entry.", "changelog"},
	}
	var msgs []string
	for _, r := range rules {
		msgs = append(msgs, r.say)
	}
	msgs = append(msgs, "The team switched from Postgres to MySQL last month.")
	h.session("r1", chatOpts{user: "erin"}, msgs...)
	h.settle()
	clk.Advance(day)
	h.session("r2", chatOpts{user: "erin"}, "Timestamps need the +08:00 offset, as always.", "Every time field needs the +08:00 offset.")
	h.settle()
	clk.Advance(day)

	block := memoryBlock(h.chat("Draft a poem about autumn leaves.", chatOpts{user: "erin", session: "r3"}))
	for _, r := range rules {
		n := strings.Count(block, r.sig)
		if n != 1 {
			t.Errorf("rule %q appears %d times", r.sig, n)
		}
	}
	if strings.Contains(block, "MySQL") {
		t.Errorf("a fact on a turn it does not serve:\n%s", block)
	}
	t.Logf("15 standing rules: %d characters", len(block))
	if len(block) > 800*4 {
		t.Errorf("block of %d characters exceeds memory.max_tokens:\n%s", len(block), block)
	}
	block = memoryBlock(h.chat("Which database should the migrations target?", chatOpts{user: "erin", session: "r4"}))
	if !strings.Contains(block, "MySQL") || !strings.Contains(block, "reversible") {
		t.Errorf("the database question lost its fact or a rule:\n%s", block)
	}
	if t.Failed() {
		t.Logf("block:\n%s", block)
	}
}
