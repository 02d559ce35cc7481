package skills

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/block"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/tokens"
)

func ids(t *testing.T, p *Provider, agent string, texts ...string) []string {
	t.Helper()
	sec, err := p.Context(context.Background(), core.Query{Agent: agent, UserTexts: texts})
	if err != nil {
		t.Fatal(err)
	}
	return sec.IDs
}

func TestAgentScopingAndStatus(t *testing.T) {
	lib, _ := newLib(t)
	dir := lib.Dir()
	writeSkill(t, dir, "deploy-work", skillFile("deploy-work", "Use when deploying the payment service", "1. Deploy carefully.", "agents: [work]"))
	writeSkill(t, dir, "deploy-any", skillFile("deploy-any", "Use when deploying any service", "1. Deploy."))
	writeSkill(t, dir, "deploy-pending", skillFile("deploy-pending", "Use when deploying with a pending procedure", "1. Pending.", "status: pending"))
	writeSkill(t, dir, "deploy-disabled", skillFile("deploy-disabled", "Use when deploying with a disabled procedure", "1. Disabled.", "status: disabled"))
	writeSkill(t, dir, "deploy-star", skillFile("deploy-star", "Use when deploying for every agent", "1. Star.", "agents: ['*']"))
	if _, err := lib.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	p := NewProvider(lib, ProviderOptions{TopK: 10, MaxTokens: 0, MinRelative: -1})
	for agent, want := range map[string][]string{
		"work":    {"deploy-any", "deploy-star", "deploy-work"},
		"home":    {"deploy-any", "deploy-star"},
		"":        {"deploy-any", "deploy-star"}, // no agent = "default"
		"default": {"deploy-any", "deploy-star"},
	} {
		got := ids(t, p, agent, "deploying the payment service")
		var names []string
		for _, id := range got {
			names = append(names, strings.Split(strings.TrimPrefix(id, "skill:"), "@")[0])
			if strings.Contains(id, "pending") || strings.Contains(id, "disabled") {
				t.Fatalf("agent %q got %s: pending/disabled skills are never injected", agent, id)
			}
		}
		for _, w := range want {
			found := false
			for _, n := range names {
				found = found || n == w
			}
			if !found {
				t.Errorf("agent %q: %v lacks %s", agent, names, w)
			}
		}
		if len(names) != len(want) {
			t.Errorf("agent %q: got %v, want %v", agent, names, want)
		}
	}
	// Search with All still finds them (CLI), agent-agnostic.
	hits, err := lib.Search(context.Background(), SearchOptions{Texts: []string{"deploying"}, All: true, Limit: 10})
	if err != nil || len(hits) != 5 {
		t.Fatalf("search all = %d hits, %v", len(hits), err)
	}
}

func TestBudgetTopKAndOrder(t *testing.T) {
	lib, _ := newLib(t)
	dir := lib.Dir()
	long := func(tag string) string {
		var b strings.Builder
		for i := 1; i <= 60; i++ {
			fmt.Fprintf(&b, "%d. For %s run the check number %d and compare the output with the expected baseline.\n", i, tag, i)
		}
		return b.String()
	}
	for i := 0; i < 8; i++ {
		name := fmt.Sprintf("ledger-%d", i)
		writeSkill(t, dir, name, skillFile(name, "Use when reconciling the ledger export", long(name)))
	}
	if _, err := lib.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int{300, 800, 1500} {
		p := NewProvider(lib, ProviderOptions{TopK: 6, MaxTokens: budget})
		sec, err := p.Context(context.Background(), core.Query{Agent: "a", UserTexts: []string{"reconcile the ledger export"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(sec.IDs) == 0 || len(sec.IDs) > 6 {
			t.Fatalf("budget %d: %d skills", budget, len(sec.IDs))
		}
		if n := tokens.Count(sec.Body); n > budget {
			t.Fatalf("budget %d: section is %d tokens (estimate %d)", budget, n, sec.Tokens)
		}
		if sec.Tokens > budget {
			t.Fatalf("budget %d: estimated %d tokens", budget, sec.Tokens)
		}
		if !strings.Contains(sec.Body, "…") {
			t.Fatalf("budget %d: bodies should have been trimmed:\n%s", budget, sec.Body)
		}
		// Equal scores: deterministic order by name.
		for i := 1; i < len(sec.IDs); i++ {
			if sec.IDs[i-1] > sec.IDs[i] {
				t.Fatalf("order not deterministic by name on equal scores: %v", sec.IDs)
			}
		}
		again, _ := p.Context(context.Background(), core.Query{Agent: "a", UserTexts: []string{"reconcile the ledger export"}})
		if again.Body != sec.Body {
			t.Fatal("same query, different rendering")
		}
	}
	// Unlimited budget renders full bodies.
	p := NewProvider(lib, ProviderOptions{TopK: 2, MaxTokens: 0})
	sec, _ := p.Context(context.Background(), core.Query{UserTexts: []string{"reconcile the ledger export"}})
	if len(sec.IDs) != 2 || strings.Contains(sec.Body, "…") || sec.IDs[0] != "skill:ledger-0@1" {
		t.Fatalf("top_k 2, no budget: %v\n%s", sec.IDs, sec.Body)
	}
	// top_k 0 injects nothing; a tiny budget that cannot hold one header neither.
	if got := ids(t, NewProvider(lib, ProviderOptions{TopK: 0, MaxTokens: 1500}), "", "reconcile the ledger"); len(got) != 0 {
		t.Fatalf("top_k 0 injected %v", got)
	}
	if got := ids(t, NewProvider(lib, ProviderOptions{TopK: 6, MaxTokens: 10}), "", "reconcile the ledger"); len(got) != 0 {
		t.Fatalf("budget 10 injected %v", got)
	}
}

func TestNoQueryNoInjection(t *testing.T) {
	lib, _ := bankLib(t)
	p := NewProvider(lib, ProviderOptions{TopK: 6, MaxTokens: 1500})
	for _, texts := range [][]string{nil, {""}, {"thanks!"}, {"ok", "yes please"}, {`"" OR * AND( ) : ^`}} {
		if got := ids(t, p, "", texts...); len(got) != 0 {
			t.Errorf("%q injected %v", texts, got)
		}
	}
	// FTS syntax in user text is just words.
	ids(t, p, "", `"unterminated NEAR(a b) col:x {a}: ^b *`)
}

func TestRenderShape(t *testing.T) {
	lib, _ := bankLib(t)
	p := NewProvider(lib, ProviderOptions{TopK: 6, MaxTokens: 1500})
	sec, err := p.Context(context.Background(), core.Query{UserTexts: []string{"my test fails randomly in CI, flaky"}})
	if err != nil {
		t.Fatal(err)
	}
	if sec.Title != "Skills" || !strings.HasPrefix(sec.Body, preamble) || !strings.Contains(sec.Body, "### flaky-test-triage\n") {
		t.Fatalf("section:\n%s", sec.Body)
	}
	if sec.IDs[0] != "skill:flaky-test-triage@1" {
		t.Fatalf("ids = %v", sec.IDs)
	}
	if strings.Count(sec.Body, "```")%2 != 0 {
		t.Fatal("a trimmed body left a code fence open")
	}
	inj := core.Render([]core.Section{sec})
	if !strings.HasPrefix(inj.Block, block.Begin) || !strings.HasSuffix(inj.Block, block.End) {
		t.Fatal("core.Render should wrap the section in the markers")
	}
}

// FuzzMatchExpr: whatever the user writes, the MATCH expression is valid FTS5.
func FuzzMatchExpr(f *testing.F) {
	lib, _ := newLib(f)
	writeSkill(f, lib.Dir(), "x", skillFile("x", "Use when fuzzing", "body"))
	if _, err := lib.Sync(context.Background()); err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{`"unterminated`, `a OR b AND NOT c`, `NEAR(a b, 2)`, `col:term`, `^start *`, `{a b}: c`, `'; DROP TABLE skills; --`, "ünïcödé ✓ 中文", "a\x00b", `""""`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		m := BuildMatch([]string{text})
		if m == "" {
			return
		}
		var n int
		if err := lib.r.QueryRow(`SELECT COUNT(*) FROM skills_fts WHERE skills_fts MATCH ?`, m).Scan(&n); err != nil {
			t.Fatalf("MATCH %q from %q: %v", m, text, err)
		}
	})
}
