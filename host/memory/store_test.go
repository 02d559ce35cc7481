package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/tokens"
)

func ingestTexts(t *testing.T, s *Store, scope, agent string, at time.Time, texts ...string) IngestResult {
	t.Helper()
	var turns []Turn
	for _, x := range texts {
		turns = append(turns, Turn{User: x, At: at})
	}
	res, err := s.Ingest(context.Background(), Batch{SessionID: "s", Scope: scope, Agent: agent, Turns: turns})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func active(t *testing.T, s *Store, scope string) []Unit {
	t.Helper()
	us, err := s.List(context.Background(), Filter{Scope: scope})
	if err != nil {
		t.Fatal(err)
	}
	return us
}

func TestConsolidation(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, Options{})
	t0 := time.Now().Add(-time.Hour)

	// Repeats merge into one unit (reinforced), nothing is duplicated.
	ingestTexts(t, s, "u", "a", t0, "I prefer tabs for indentation.")
	res := ingestTexts(t, s, "u", "a", t0.Add(time.Minute), "I really prefer tabs for indentation in every project!", "Always run the linter before pushing.")
	if res.Reinforced != 1 || res.Added != 1 {
		t.Fatalf("result %+v", res)
	}
	ingestTexts(t, s, "u", "a", t0.Add(2*time.Minute), "Always run the linter before pushing.")
	us := active(t, s, "u")
	if len(us) != 2 {
		t.Fatalf("active %d: %+v", len(us), us)
	}
	for _, u := range us {
		if u.Mentions != 2 {
			t.Errorf("%q mentions %d, want 2", u.Content, u.Mentions)
		}
	}
	tabs := us[1]
	if !strings.Contains(tabs.Content, "tabs") {
		tabs = us[0]
	}
	ev, _ := s.Events(ctx, tabs.ID)
	if len(ev) != 2 || ev[1].Action != "reinforced" || !strings.Contains(string(ev[1].Detail), "every project") {
		t.Fatalf("the merged wording must be kept in the audit log: %+v", ev)
	}

	// A change of mind supersedes; the old unit is kept, never injected.
	res = ingestTexts(t, s, "u", "a", t0.Add(3*time.Minute), "Actually I prefer spaces for indentation.")
	if res.Superseded != 1 {
		t.Fatalf("result %+v", res)
	}
	old, err := s.Get(ctx, tabs.ID)
	if err != nil || old.Status != StatusSuperseded || old.SupersededBy == "" {
		t.Fatalf("old unit %+v %v", old, err)
	}
	r, _ := s.Retrieve(ctx, Query{Scope: "u", Agent: "a", Texts: []string{"which indentation, tabs or spaces?"}})
	if strings.Contains(r.Section.Body, "tabs") || !strings.Contains(r.Section.Body, "spaces") {
		t.Fatalf("block:\n%s", r.Section.Body)
	}

	// An older statement ingested late (sessions end in any order) does not
	// override the newer one: it is stored as superseded.
	res = ingestTexts(t, s, "u", "a", t0.Add(-time.Hour), "I prefer tabs with width 8 for indentation.")
	if res.Added != 1 {
		t.Fatalf("result %+v", res)
	}
	r, _ = s.Retrieve(ctx, Query{Scope: "u", Agent: "a", Texts: []string{"indentation"}})
	if strings.Contains(r.Section.Body, "tabs") {
		t.Fatalf("stale statement injected:\n%s", r.Section.Body)
	}

	// A correction without a subject supersedes the most similar older unit.
	ingestTexts(t, s, "u", "a", t0.Add(4*time.Minute), "Remember that the build server runs on node seven.")
	ingestTexts(t, s, "u", "a", t0.Add(5*time.Minute), "Correction: the build server runs on node nine.")
	r, _ = s.Retrieve(ctx, Query{Scope: "u", Agent: "a", Texts: []string{"where does the build server run"}})
	if strings.Contains(r.Section.Body, "seven") || !strings.Contains(r.Section.Body, "nine") {
		t.Fatalf("block:\n%s", r.Section.Body)
	}
}

func TestNoConsolidate(t *testing.T) {
	s, _ := openStore(t, Options{NoConsolidate: true})
	t0 := time.Now()
	ingestTexts(t, s, "u", "a", t0, "I prefer tabs for indentation.")
	ingestTexts(t, s, "u", "a", t0.Add(time.Second), "I prefer tabs for indentation.")
	ingestTexts(t, s, "u", "a", t0.Add(2*time.Second), "Actually I prefer spaces for indentation.")
	// Exact repeats still merge; the same slot with another value is kept
	// beside (memory.auto_consolidate false).
	us := active(t, s, "u")
	if len(us) != 3-1 {
		t.Fatalf("active %+v", us)
	}
}

func TestForgetWritesAudit(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, Options{})
	u, out, err := s.Add(ctx, NewUnit{Content: "My locker code is in the blue notebook.", Scope: "u"})
	if err != nil || out != OutcomeAdded {
		t.Fatal(err, out)
	}
	if err := s.Forget(ctx, u.ID, "user asked"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, u.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("still there: %v", err)
	}
	ev, _ := s.Events(ctx, u.ID)
	last := ev[len(ev)-1]
	if last.Action != "forgotten" || strings.Contains(string(last.Detail), "notebook") || !strings.Contains(string(last.Detail), "content_sha256") {
		t.Fatalf("audit %+v", ev)
	}
	if err := s.Forget(ctx, u.ID, ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("forget unknown: %v", err)
	}
	// Nothing else deletes: superseded units stay.
	s.Add(ctx, NewUnit{Content: "I prefer tabs for indentation.", Scope: "u"})
	s.Add(ctx, NewUnit{Content: "I prefer spaces for indentation.", Scope: "u"})
	all, _ := s.List(ctx, Filter{Scope: "u", Status: "all"})
	if len(all) != 2 {
		t.Fatalf("units %+v", all)
	}
}

func TestScopesDoNotLeak(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, Options{})
	now := time.Now()
	ingestTexts(t, s, "user:alice", "main", now, "I prefer tabs for indentation.", "My timezone is UTC+8.")
	ingestTexts(t, s, "user:bob", "main", now, "I prefer spaces for indentation.", "My timezone is UTC-5.")
	ingestTexts(t, s, "user:alice|workspace:acme", "main", now, "We use Kubernetes for deployments.")
	// Agent-private: an episode with agent "coder" in alice's scope.
	ingestTexts(t, s, "user:alice", "coder", now, "Today I finished the payment refactor.")

	get := func(scope, agent, q string) string {
		r, err := s.Retrieve(ctx, Query{Scope: scope, Agent: agent, Texts: []string{q}})
		if err != nil {
			t.Fatal(err)
		}
		return r.Section.Body
	}
	a := get("user:alice", "main", "indentation timezone deployments payment refactor")
	if !strings.Contains(a, "tabs") || strings.Contains(a, "spaces") || strings.Contains(a, "UTC-5") || strings.Contains(a, "Kubernetes") || strings.Contains(a, "payment") {
		t.Fatalf("alice (main) sees:\n%s", a)
	}
	if c := get("user:alice", "coder", "what did I finish, payment refactor?"); !strings.Contains(c, "payment refactor") || !strings.Contains(c, "tabs") {
		t.Fatalf("alice (coder) sees:\n%s", c)
	}
	b := get("user:bob", "main", "indentation timezone payment refactor")
	if strings.Contains(b, "tabs") || strings.Contains(b, "UTC+8") || strings.Contains(b, "payment") {
		t.Fatalf("bob sees:\n%s", b)
	}
	w := get("user:alice|workspace:acme", "main", "deployments indentation")
	if !strings.Contains(w, "Kubernetes") || strings.Contains(w, "tabs") {
		t.Fatalf("alice@acme sees:\n%s", w)
	}
	if d := get("default", "main", "indentation timezone deployments"); d != "" {
		t.Fatalf("default scope sees:\n%s", d)
	}
	hits, _ := s.Search(ctx, SearchQuery{Scope: "user:bob", Agent: "main", Text: "tabs spaces indentation UTC"})
	for _, h := range hits {
		if h.Scope != "user:bob" {
			t.Fatalf("search leaked %+v", h)
		}
	}
}

func TestDecayAndExpiryAtReadTime(t *testing.T) {
	ctx := context.Background()
	clk := &fakeClock{}
	s, _ := openStore(t, Options{Now: clk.Now})
	now := time.Now()
	ingestTexts(t, s, "u", "a", now, "Yesterday I fixed the login timeout bug.", "We use Redis for the login sessions.")
	q := Query{Scope: "u", Agent: "a", Texts: []string{"login bug sessions"}}
	r1, _ := s.Retrieve(ctx, q)
	if !strings.Contains(r1.Section.Body, "fixed the login") {
		t.Fatalf("block:\n%s", r1.Section.Body)
	}
	genBefore, _ := generation(ctx, s.r)
	r2, _ := s.Retrieve(ctx, q)
	if genAfter, _ := generation(ctx, s.r); genAfter != genBefore {
		t.Fatal("retrieval wrote to the store")
	}
	// Idempotent: reading twice gives the same scores.
	if len(r1.Hits) != len(r2.Hits) || r1.Hits[0].Score != r2.Hits[0].Score {
		t.Fatalf("scores changed between reads: %+v %+v", r1.Hits, r2.Hits)
	}
	clk.Advance(60 * day)
	r3, _ := s.Retrieve(ctx, q)
	if len(r3.Hits) == 0 || r3.Hits[0].Score >= r1.Hits[0].Score {
		t.Fatalf("no decay after 60 days: %+v vs %+v", r3.Hits, r1.Hits)
	}
	clk.Advance(40 * day) // episodes expire 90 days after they were said
	r4, _ := s.Retrieve(ctx, q)
	if strings.Contains(r4.Section.Body, "fixed the login") || !strings.Contains(r4.Section.Body, "Redis") {
		t.Fatalf("after 100 days:\n%s", r4.Section.Body)
	}
	// Expiry filters at read time; the unit is still stored.
	all, _ := s.List(ctx, Filter{Scope: "u"})
	if len(all) != 2 {
		t.Fatalf("units %d", len(all))
	}
	// Importance decays from timestamps, so it never compounds.
	u := all[0]
	at := clk.Now()
	effective := func() float64 { w := weightsOf(&u); return w.importance(w.ageDays(at)) }
	a, b := effective(), effective()
	if a != b {
		t.Fatal("decay is not idempotent")
	}
}

func TestBudgetAndRendering(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, Options{TopK: 6, MaxTokens: 120})
	now := time.Now()
	for i, x := range []string{
		"I prefer tabs for indentation.", "Never deploy on Fridays.", "My timezone is UTC+8.",
		"Always write a detailed explanation of every change in the pull request description so reviewers can follow along easily.",
		"We use PostgreSQL 16 for the main database.", "Call me Sam.", "I prefer pytest over unittest.", "Keep answers short.",
	} {
		ingestTexts(t, s, "u", "a", now.Add(time.Duration(i)*time.Second), x)
	}
	r, err := s.Retrieve(ctx, Query{Scope: "u", Agent: "a", Texts: []string{"deploy the database change"}})
	if err != nil {
		t.Fatal(err)
	}
	sec := r.Section
	if sec.Title != "Memories" || tokens.Count(sec.Body) > sec.Tokens || sec.Tokens > 120 || len(sec.IDs) > 6 || len(sec.IDs) == 0 {
		t.Fatalf("section %d tokens, %d ids:\n%s", sec.Tokens, len(sec.IDs), sec.Body)
	}
	// Grouped in a fixed order; stable across calls.
	again, _ := s.Retrieve(ctx, Query{Scope: "u", Agent: "a", Texts: []string{"deploy the database change"}})
	if again.Section.Body != sec.Body {
		t.Fatal("rendering is not stable")
	}
	if i, j := strings.Index(sec.Body, "### Preferences"), strings.Index(sec.Body, "### Project state"); i < 0 || j >= 0 && j < i {
		t.Fatalf("groups out of order:\n%s", sec.Body)
	}
	// A budget too small for any unit yields no section at all.
	tiny, _ := s.Retrieve(ctx, Query{Scope: "u", Agent: "a", Texts: []string{"database"}, MaxTokens: 5})
	if tiny.Section.Body != "" {
		t.Fatalf("tiny budget: %q", tiny.Section.Body)
	}
}

func TestEditExportImport(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, Options{})
	u, _, _ := s.Add(ctx, NewUnit{Content: "We deploy with Helm charts.", Scope: "u", Tags: []string{"infra"}})
	content := "We deploy with Argo CD."
	imp := 0.9
	e, err := s.Edit(ctx, u.ID, Patch{Content: &content, Importance: &imp})
	if err != nil || e.Content != content || e.Importance != 0.9 {
		t.Fatalf("edit %+v %v", e, err)
	}
	if hits, _ := s.Search(ctx, SearchQuery{Scope: "u", Text: "argo"}); len(hits) != 1 {
		t.Fatal("edited content is not indexed")
	}
	if hits, _ := s.Search(ctx, SearchQuery{Scope: "u", Text: "helm"}); len(hits) != 0 {
		t.Fatal("old content still indexed")
	}
	ev, _ := s.Events(ctx, u.ID)
	if ev[len(ev)-1].Action != "edited" || !strings.Contains(string(ev[len(ev)-1].Detail), "Helm") {
		t.Fatalf("edit audit %+v", ev)
	}
	s.Add(ctx, NewUnit{Content: "I prefer tabs for indentation.", Scope: "u"})
	s.Add(ctx, NewUnit{Content: "I prefer spaces for indentation.", Scope: "u"})

	var buf bytes.Buffer
	n, err := s.Export(ctx, &buf, Filter{Status: "all"})
	if err != nil || n != 3 {
		t.Fatalf("export %d %v", n, err)
	}
	s2, _ := openStore(t, Options{})
	res, err := s2.Import(ctx, bytes.NewReader(buf.Bytes()))
	if err != nil || res.Imported != 3 {
		t.Fatalf("import %+v %v", res, err)
	}
	// Importing again adds nothing.
	if res, _ := s2.Import(ctx, bytes.NewReader(buf.Bytes())); res.Imported != 0 || res.Skipped != 3 {
		t.Fatalf("reimport %+v", res)
	}
	got, _ := s2.List(ctx, Filter{Status: "all", Limit: -1})
	if len(got) != 3 {
		t.Fatalf("imported %d", len(got))
	}
	r, _ := s2.Retrieve(ctx, Query{Scope: "u", Agent: "x", Texts: []string{"indentation"}})
	if strings.Contains(r.Section.Body, "tabs") || !strings.Contains(r.Section.Body, "spaces") {
		t.Fatalf("statuses not kept:\n%s", r.Section.Body)
	}
	// MetaClaw's field names, secrets redacted on the way in.
	py := `{"memory_id":"py-1","scope_id":"u","memory_type":"procedural_observation","content":"Workflow: export OPENAI_API_KEY=sk-abcdefghijklmnopqrstuvwx before running","importance":0.8}` + "\n" + `{"memory_id":"py-2","memory_type":"nope","content":"x"}` + "\n"
	res, err = s2.Import(ctx, strings.NewReader(py))
	if err != nil || res.Imported != 1 || len(res.Errors) != 1 {
		t.Fatalf("python import %+v %v", res, err)
	}
	p, _ := s2.Get(ctx, "py-1")
	if p.Type != Preference || strings.Contains(p.Content, "sk-abc") {
		t.Fatalf("python unit %+v", p)
	}
	var one Unit
	if err := json.Unmarshal(bytes.Split(buf.Bytes(), []byte("\n"))[0], &one); err != nil || one.ID == "" {
		t.Fatalf("export line: %v", err)
	}
}

func TestStoredContentIsRedacted(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, Options{})
	res := ingestTexts(t, s, "u", "a", time.Now(),
		"My API key is sk-proj-abcdefghijklmnopqrstuvwxyz123456.",
		"Remember that the deploy password: hunter2hunter2 is for staging.",
		"I prefer tabs. My card is 4111 1111 1111 1111.")
	all, _ := s.List(ctx, Filter{Status: "all", Limit: -1})
	for _, u := range all {
		if strings.Contains(u.Content, "sk-proj") || strings.Contains(u.Content, "hunter2") || strings.Contains(u.Content, "4111") || strings.Contains(u.Content, RedactedPrefix) {
			t.Fatalf("secret stored: %q", u.Content)
		}
	}
	if res.Added != 1 { // only the tabs preference
		t.Fatalf("result %+v: %+v", res, all)
	}
	u, _, err := s.Add(ctx, NewUnit{Content: "The staging DB is postgres://app:pa55w0rd@db:5432/app", Scope: "u"})
	if err != nil || strings.Contains(u.Content, "pa55w0rd") {
		t.Fatalf("manual add %+v %v", u, err)
	}
}

// The size estimate used for the budget never undercounts the real tokenizer.
func TestBodyTokensBoundsTheTokenizer(t *testing.T) {
	c := newCorpus(9)
	now := time.Now()
	zh := []string{"用户更喜欢用空格缩进", "规则：永远不要在周五部署", "团队用飞书沟通。", "称呼用户为小王"}
	for i := 0; i < 300; i++ {
		var hits []Hit
		for j := 0; j < 1+i%8; j++ {
			u := c.unit("s", now)
			if j%3 == 1 {
				u.Content = zh[(i+j)%len(zh)] + " " + c.phrase(2)
			}
			if j%4 == 2 {
				u.Content += " (see `make test`, 100% — “quoted”)"
			}
			if j%5 == 3 {
				u.Content += ":\n```\nOwner: <team>\nData-Sources: <tables>\n```" // an attached block
			}
			hits = append(hits, Hit{Unit: u})
		}
		items := hitItems(hits)
		if got, bound := tokens.Count(renderBody(items)), bodyTokens(items); got > bound {
			t.Fatalf("estimate %d < real %d for:\n%s", bound, got, renderBody(items))
		}
	}
}
