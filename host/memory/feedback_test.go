package memory

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Corrective feedback: what each shape of it is learned as.
func TestFeedbackExtraction(t *testing.T) {
	type want struct {
		typ      Type
		contains []string
	}
	tests := []struct {
		in   string
		want []want
	}{
		// Enumerated requirements: one rule each, with the lead's subject.
		{"The report has issues. Our reports need: (1) a file name of the form `YYYYMMDD_<desc>.md`, (2) a front-matter block with owner, state and reviewed_at.",
			[]want{{Preference, []string{"reports need a file name of the form `YYYYMMDD_<desc>.md`"}}, {Preference, []string{"reports need a front-matter block with owner, state and reviewed_at"}}}},
		{"The output has issues: 1. never use SELECT * in views or reports, list the columns explicitly 2. the region join should be a LEFT JOIN.",
			[]want{{Preference, []string{"Never use SELECT *", "list the columns explicitly"}}, {Semantic, []string{"region join should be a LEFT JOIN"}}}},
		{"Every report must include:\n- an owner line\n- a reviewed_at date",
			[]want{{Preference, []string{"Every report must include an owner line"}}, {Preference, []string{"Every report must include a reviewed_at date"}}}},
		{"The report needs: (a) a summary table and (b) a link to the dashboard.",
			[]want{{Preference, []string{"Every report needs a summary table"}}, {Preference, []string{"Every report needs a link to the dashboard"}}}},
		// Defects read as the rules they imply.
		{"The report has issues:\n- the header is missing the Data-Sources line\n- the file name does not start with the date",
			[]want{{Preference, []string{"Every header must include the Data-Sources line"}}, {Preference, []string{"Every file name must start with the date"}}}},
		{"The output is missing the top-level last_updated field.", []want{{Preference, []string{"Every output must include the top-level last_updated field"}}}},
		{"You forgot last_updated again: it goes at the top level of every JSON we publish.",
			[]want{{Preference, []string{"last_updated goes at the top level of every JSON the team publishes"}}}},
		// A defect named on the same line as its lead.
		{"The output has issues: the timestamps must carry the +08:00 offset.", []want{{Preference, []string{"The timestamps must carry the +08:00 offset"}}}},
		{"The time fields are incorrect: every time field needs date, time and offset +08:00.", []want{{Preference, []string{"Every time field needs date, time and offset +08:00"}}}},
		{"The report has issues: it is missing the Data-Sources line.", []want{{Preference, []string{"Every report must include the Data-Sources line"}}}},
		{"The spec only requires a date and an offset.", []want{{Preference, []string{"The spec only requires a date and an offset"}}}},
		// A rule pointing at what follows keeps the block.
		{"Not quite. All reports must start with the following header:\n```\n# Report: <title>\nOwner: <team>\nData-Sources: <tables>\n```",
			[]want{{Preference, []string{"All reports must start with the following header:\n```\n# Report: <title>\nOwner: <team>\nData-Sources: <tables>\n```"}}}},
		{"Use this format for tickets:\n- Summary: one line\n- Impact: high|medium|low",
			[]want{{Preference, []string{"Use this format for tickets:\n- Summary: one line\n- Impact: high|medium|low"}}}},
		// Task-instance values: short-lived episodes; as examples in a rule: kept.
		{"v1.2 should be 2026-03-03T11:00:00+08:00, not 10:00.", []want{{Episodic, []string{"2026-03-03T11:00:00+08:00"}}}},
		{"Still wrong. The file name should be 20260303_ci_build_report.md, and the front-matter is missing reviewed_at.",
			[]want{{Episodic, []string{"20260303_ci_build_report.md"}}, {Preference, []string{"Every front-matter must include reviewed_at"}}}},
		{"All timestamps must carry the +08:00 offset, written in full like 2026-03-02T09:30:00+08:00.", []want{{Preference, []string{"All timestamps must carry the +08:00 offset"}}}},
		{"My birthday is 1990-05-03.", []want{{Semantic, []string{"birthday is 1990-05-03"}}}},
		// Fragments and reminders that name nothing are not memories.
		{"The top-level last_updated field to.", nil},
		{"The assistant's should be the 4th.", nil},
		{"Keep this in mind as you continue with the next task.", nil},
		{"Never do that again.", nil},
		{"Remember this.", nil},
		// The options of a question are not a list of rules.
		{"Which name is right? (a) report.md (b) 20260306_report.md", nil},
	}
	for _, tt := range tests {
		got := ExtractText(tt.in)
		if len(got) != len(tt.want) {
			t.Errorf("%q: %d candidates, want %d: %+v", tt.in, len(got), len(tt.want), got)
			continue
		}
		for i, w := range tt.want {
			c := got[i]
			ok := c.Type == w.typ
			for _, s := range w.contains {
				ok = ok && strings.Contains(c.Content, s)
			}
			if !ok {
				t.Errorf("%q #%d: got %s %q, want %s containing %q", tt.in, i, c.Type, c.Content, w.typ, w.contains)
			}
			if c.Type == Episodic && c.TTL != instanceTTL {
				t.Errorf("%q: instance TTL %v", tt.in, c.TTL)
			}
		}
	}
}

func TestAttachedBlockBounded(t *testing.T) {
	block := strings.Repeat("field_name: a value that goes on for a while\n", 60)
	got := ExtractText("Every config must use the following layout:\n```\n" + block + "```")
	if len(got) != 1 {
		t.Fatalf("%d candidates", len(got))
	}
	_, b := splitContent(got[0].Content)
	if len(b) > maxBlock || !strings.HasPrefix(b, "```\n") || !strings.HasSuffix(b, "\n```") || !strings.Contains(b, "…") {
		t.Fatalf("block of %d bytes:\n%s", len(b), b)
	}
	if !contains(got[0].Entities, "field_name") {
		t.Fatalf("key names not among the entities: %v", got[0].Entities)
	}
	// The key names are searchable once stored.
	s, _ := openStore(t, Options{})
	ingestTexts(t, s, "u", "a", time.Now(), "All reports must start with the following header:\n```\n# Report: <title>\nData-Sources: <tables>\nSLA-Impact: yes|no\n```")
	hits, err := s.Search(context.Background(), SearchQuery{Scope: "u", Agent: "a", Text: "SLA impact"})
	if err != nil || len(hits) != 1 || !strings.Contains(hits[0].Content, "Data-Sources") {
		t.Fatalf("search by a key name: %+v %v", hits, err)
	}
	r, _ := s.Retrieve(context.Background(), Query{Scope: "u", Agent: "a", Texts: []string{"hello"}})
	if !strings.Contains(r.Section.Body, "\n  Data-Sources: <tables>\n") {
		t.Fatalf("the block is rendered indented under its rule:\n%s", r.Section.Body)
	}
}

// A sentence the client appends to every message is not learned, even when
// it reads like a rule.
func TestBoilerplateNotLearned(t *testing.T) {
	s, _ := openStore(t, Options{})
	const tail = " Always double-check every number against the source table before you reply."
	msgs := []string{"We use Airflow for scheduling.", "My timezone is UTC+8.", "Never deploy on Fridays.", "I prefer tabs for indentation.", "Reports must include a summary."}
	for i := range msgs {
		msgs[i] += tail
	}
	ingestTexts(t, s, "u", "a", time.Now(), msgs...)
	us := active(t, s, "u")
	if len(us) != len(msgs) {
		t.Errorf("%d units, want %d", len(us), len(msgs))
	}
	for _, u := range us {
		if strings.Contains(u.Content, "double-check") {
			t.Errorf("boilerplate learned: %q", u.Content)
		}
	}
	// Learned from a first short session, then found to be boilerplate:
	// retracted (kept, superseded, never injected).
	s3, _ := openStore(t, Options{})
	ingestTexts(t, s3, "u", "a", time.Now(), msgs[:2]...)
	if n := len(active(t, s3, "u")); n != 3 {
		t.Fatalf("first session: %d units", n)
	}
	ingestTexts(t, s3, "u", "a", time.Now(), msgs[2:]...)
	for _, u := range active(t, s3, "u") {
		if strings.Contains(u.Content, "double-check") {
			t.Errorf("boilerplate not retracted: %q", u.Content)
		}
	}
	if n := len(active(t, s3, "u")); n != len(msgs) {
		t.Errorf("%d units after retraction, want %d", n, len(msgs))
	}

	// Said now and then, a rule is not boilerplate.
	s2, _ := openStore(t, Options{})
	var turns []string
	for i := 0; i < 30; i++ {
		turns = append(turns, "Can you look at ticket number "+itoa(i)+" for me?")
		if i%10 == 0 {
			turns[i] += " Always run the unit tests before committing."
		}
	}
	ingestTexts(t, s2, "u", "a", time.Now(), turns...)
	us = active(t, s2, "u")
	if len(us) != 1 || us[0].Mentions != 3 {
		t.Fatalf("a rule restated 3 times in 30 turns: %+v", us)
	}
}

// Paraphrases of one rule are one unit with its mentions counted and every
// wording in its history; other rules and other values stay apart.
func TestParaphraseMerge(t *testing.T) {
	ctx := context.Background()
	s, _ := openStore(t, Options{})
	t0 := time.Now().Add(-time.Hour)
	for i, w := range []string{
		"All timestamps must carry the +08:00 offset.",
		"Every time field in the output needs the date, the time and the +08:00 offset.",
		"Timestamps need the +08:00 offset, as always.",
	} {
		ingestTexts(t, s, "u", "a", t0.Add(time.Duration(i)*time.Minute), w)
	}
	ingestTexts(t, s, "u", "a", t0.Add(5*time.Minute), "Every JSON file we publish must have a top-level last_updated field.")
	ingestTexts(t, s, "u", "a", t0.Add(6*time.Minute), "Never use SELECT * in views.")
	us := active(t, s, "u")
	if len(us) != 3 {
		t.Fatalf("%d units: %+v", len(us), us)
	}
	var tz Unit
	for _, u := range us {
		if strings.Contains(u.Content, "+08:00") {
			tz = u
		}
	}
	if tz.Mentions != 3 || !strings.HasPrefix(tz.Content, "Every time field") && !strings.HasPrefix(tz.Content, "All timestamps") {
		t.Fatalf("merged unit %+v", tz)
	}
	ev, _ := s.Events(ctx, tz.ID)
	var history strings.Builder
	for _, e := range ev {
		history.Write(e.Detail)
	}
	for _, w := range []string{"Every time field", "as always"} {
		if !strings.Contains(history.String(), w) && !strings.Contains(tz.Content, w) {
			t.Errorf("wording %q lost: content %q, history %s", w, tz.Content, history.String())
		}
	}

	// Opposite rules and different values are not paraphrases.
	for _, pair := range [][2]string{
		{"Always squash commits before merging.", "Never squash commits before merging."},
		{"The build server runs on node seven.", "Correction: the build server runs on node nine."},
	} {
		s, _ := openStore(t, Options{})
		ingestTexts(t, s, "u", "a", t0, pair[0])
		ingestTexts(t, s, "u", "a", t0.Add(time.Minute), pair[1])
		us := active(t, s, "u")
		if len(us) != 1 || us[0].Mentions != 1 || !strings.Contains(us[0].Content, strings.Fields(pair[1])[len(strings.Fields(pair[1]))-1]) {
			t.Errorf("%q then %q: %+v", pair[0], pair[1], us)
		}
	}
}

// With embeddings on, nearly parallel vectors merge wordings that share few
// words.
func TestParaphraseMergeByCosine(t *testing.T) {
	same := func(text string) []float32 {
		if strings.Contains(text, "finance") {
			return conceptVector("car car car")
		}
		return conceptVector(text)
	}
	s, _ := openStore(t, Options{Embedder: funcEmbedder(same), Mode: "hybrid"})
	t0 := time.Now().Add(-time.Hour)
	ingestTexts(t, s, "u", "a", t0, "Always post the weekly report in the finance channel on Mondays.")
	ingestTexts(t, s, "u", "a", t0.Add(time.Minute), "Make sure weekly summaries reach the finance room every Monday.")
	if us := active(t, s, "u"); len(us) != 1 || us[0].Mentions != 2 {
		t.Fatalf("with embeddings: %+v", us)
	}
	plain, _ := openStore(t, Options{})
	ingestTexts(t, plain, "u", "a", t0, "Always post the weekly report in the finance channel on Mondays.")
	ingestTexts(t, plain, "u", "a", t0.Add(time.Minute), "Make sure weekly summaries reach the finance room every Monday.")
	if us := active(t, plain, "u"); len(us) != 2 {
		t.Fatalf("without embeddings they stay apart: %+v", us)
	}
}

type funcEmbedder func(string) []float32

func (funcEmbedder) Name() string { return "func" }
func (f funcEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = f(t)
	}
	return out, nil
}
