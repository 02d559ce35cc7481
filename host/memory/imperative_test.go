package memory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStandaloneImperatives: a durable instruction sent alone ("Use tabs for
// indentation.") is learned as a standing rule, a request for work now
// ("Fix the failing test.", "Use the attached file to answer.") is not, on
// the labelled set in testdata/imperatives (written before the extractor was
// tuned on it; figures in the README), and on a held-out set written after
// that tuning (its first-run figures are in the README too).
func TestStandaloneImperatives(t *testing.T) {
	for _, set := range []string{"labelled.tsv", "heldout.tsv"} {
		t.Run(set, func(t *testing.T) { imperativeSet(t, set) })
	}
}

func imperativeSet(t *testing.T, file string) {
	raw, err := os.ReadFile(filepath.Join("testdata", "imperatives", file))
	if err != nil {
		t.Fatal(err)
	}
	var tp, fp, fn, tn int
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		label, text, ok := strings.Cut(line, "\t")
		if !ok || label != "rule" && label != "task" {
			t.Fatalf("bad line %q", line)
		}
		var got []string
		for _, c := range ExtractText(text) {
			u := Unit{Type: c.Type, Subject: c.Subject, Tags: c.Tags}
			if standingKind(&u) {
				got = append(got, c.Content)
			}
		}
		switch {
		case label == "rule" && len(got) > 0:
			tp++
		case label == "rule":
			fn++
			t.Logf("missed rule: %s", text)
		case len(got) > 0:
			fp++
			t.Logf("task learned as a rule: %s → %q", text, got)
		default:
			tn++
		}
	}
	precision := float64(tp) / float64(max(1, tp+fp))
	recall := float64(tp) / float64(max(1, tp+fn))
	t.Logf("standalone imperatives: %d rules, %d tasks; precision %.3f, recall %.3f (tp %d, fp %d, fn %d, tn %d)",
		tp+fn, fp+tn, precision, recall, tp, fp, fn, tn)
	if precision < 0.95 || recall < 0.95 {
		t.Errorf("%s: precision %.3f, recall %.3f; want both ≥ 0.95", file, precision, recall)
	}
}
