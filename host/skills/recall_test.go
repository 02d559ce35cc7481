package skills

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"slices"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/core"
)

type labelled struct {
	Texts  []string `json:"texts"`
	Agent  string   `json:"agent"`
	Expect []string `json:"expect"`
}

func loadLabelled(t testing.TB, file string) []labelled {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []labelled
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var c labelled
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s line %d: %v", file, len(out)+1, err)
		}
		out = append(out, c)
	}
	return out
}

type recallResult struct {
	recall, top1, injected float64
	misses                 []string
}

func evalRecall(t testing.TB, lib *Library, cases []labelled, o ProviderOptions) recallResult {
	t.Helper()
	for _, c := range cases {
		for _, e := range c.Expect {
			if _, ok := lib.Get(e); !ok {
				t.Fatalf("labelled skill %q is not in the bank", e)
			}
		}
	}
	p := NewProvider(lib, o)
	var r recallResult
	var sum float64
	var injected, top1 int
	for i, c := range cases {
		hits, err := p.Select(context.Background(), core.Query{Agent: c.Agent, UserTexts: c.Texts})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, h := range hits {
			names = append(names, h.Skill.Name)
		}
		found := 0
		for _, e := range c.Expect {
			if slices.Contains(names, e) {
				found++
			}
		}
		if len(names) > 0 && slices.Contains(c.Expect, names[0]) {
			top1++
		}
		injected += len(names)
		sum += float64(found) / float64(len(c.Expect))
		if found < len(c.Expect) {
			r.misses = append(r.misses, fmtMiss(i+1, c, names))
		}
	}
	n := float64(len(cases))
	r.recall, r.top1, r.injected = sum/n, float64(top1)/n, float64(injected)/n
	return r
}

func fmtMiss(i int, c labelled, got []string) string {
	b, _ := json.Marshal(map[string]any{"case": i, "text": c.Texts[len(c.Texts)-1], "want": c.Expect, "got": got})
	return string(b)
}

// TestRecallAt6 is the retrieval-quality gate: on the built-in bank, the
// skills labelled for each realistic user turn in testdata/retrieval.jsonl
// must be among the (at most) 6 injected ones. retrieval_holdout.jsonl was
// written after the bank's tags were tuned on the first set and never used
// for tuning; it is reported and held to a lower bar.
func TestRecallAt6(t *testing.T) {
	lib, _ := bankLib(t)
	o := ProviderOptions{TopK: 6, MaxTokens: 1500}
	for _, set := range []struct {
		file string
		min  float64
		n    int
	}{
		{"testdata/retrieval.jsonl", 0.9, 60},
		{"testdata/retrieval_holdout.jsonl", 0.8, 30},
	} {
		cases := loadLabelled(t, set.file)
		if len(cases) < set.n {
			t.Fatalf("%s: only %d labelled turns; want at least %d", set.file, len(cases), set.n)
		}
		r := evalRecall(t, lib, cases, o)
		for _, m := range r.misses {
			t.Logf("%s miss: %s", set.file, m)
		}
		t.Logf("%s: recall@6 = %.3f over %d labelled turns (top-1 precision %.3f, %.1f skills injected per turn)",
			set.file, r.recall, len(cases), r.top1, r.injected)
		if r.recall < set.min {
			t.Errorf("%s: recall@6 = %.3f, want >= %.2f", set.file, r.recall, set.min)
		}
	}
}

// TestRelevanceFloor: the floor keeps skills out of greetings, small talk,
// personal facts and unrelated questions (testdata/offtopic.jsonl: no skill
// on at least 90% of them) without costing recall on the labelled turns.
func TestRelevanceFloor(t *testing.T) {
	lib, _ := bankLib(t)
	off := loadLabelled(t, "testdata/offtopic.jsonl")
	if len(off) < 60 {
		t.Fatalf("only %d off-topic turns", len(off))
	}
	with := NewProvider(lib, ProviderOptions{TopK: 6, MaxTokens: 1500})
	without := NewProvider(lib, ProviderOptions{TopK: 6, MaxTokens: 1500, NoFloor: true})
	count := func(p *Provider) (turns, skills int) {
		for _, c := range off {
			hits, err := p.Select(context.Background(), core.Query{Agent: "main", UserTexts: c.Texts})
			if err != nil {
				t.Fatal(err)
			}
			if len(hits) > 0 {
				turns++
				skills += len(hits)
			}
		}
		return turns, skills
	}
	gotT, gotS := count(with)
	wasT, wasS := count(without)
	t.Logf("off-topic turns that get a skill: %d of %d with the floor (%d skills), %d (%d skills) without",
		gotT, len(off), gotS, wasT, wasS)
	if float64(len(off)-gotT) < 0.9*float64(len(off)) {
		t.Errorf("%d of %d off-topic turns get a skill; want none on at least 90%%", gotT, len(off))
	}
	for _, file := range []string{"testdata/retrieval.jsonl", "testdata/retrieval_holdout.jsonl"} {
		cases := loadLabelled(t, file)
		a := evalRecall(t, lib, cases, ProviderOptions{TopK: 6, MaxTokens: 1500})
		b := evalRecall(t, lib, cases, ProviderOptions{TopK: 6, MaxTokens: 1500, NoFloor: true})
		t.Logf("%s: recall@6 %.3f with the floor, %.3f without", file, a.recall, b.recall)
		if a.recall < b.recall {
			t.Errorf("%s: the floor costs recall (%.3f < %.3f): %v", file, a.recall, b.recall, a.misses)
		}
	}
	// The turns of the OpenClaw issue: a durable rule and a greeting get no
	// skill, a destructive command still gets its safety skill.
	for text, want := range map[string]string{
		"From now on always answer in British English.": "",
		"hi, how are you?":                          "",
		"Never run rm -rf without asking me first.": "destructive-operations-safety",
	} {
		hits, _ := with.Select(context.Background(), core.Query{Agent: "main", UserTexts: []string{text}})
		var names []string
		for _, h := range hits {
			names = append(names, h.Skill.Name)
		}
		if want == "" && len(names) > 0 {
			t.Errorf("%q got skills %v", text, names)
		}
		if want != "" && !slices.Contains(names, want) {
			t.Errorf("%q: %v lacks %s", text, names, want)
		}
	}
}
