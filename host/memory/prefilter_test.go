package memory

import (
	"reflect"
	"strings"
	"testing"
	"unicode"
)

// skipsMatch reports a text a guard would skip although its expression
// matches it: a prefilter that changes what is extracted.
func skipsMatch(g *guardedRegexp, s string) bool {
	f := foldString(nil, s)
	present := bytesOf(f)
	return !g.check(string(f), &present) && g.Regexp.MatchString(s)
}

func TestPrefilterLiterals(t *testing.T) {
	tests := []struct {
		pattern    string
		match      []string // texts the expression matches (the guard lets them through)
		reject     []string // texts the guard must skip (so it does something)
		prefixes   bool
		needsCount int
	}{
		{pattern: `(?i)\b(?:wrong|is missing)\b|不对`, match: []string{"That is WRONG", "it iſ miſſing", "这不对"}, reject: []string{"all good here", "对"}, needsCount: 1},
		{pattern: `(?i)^(?:no|nope)\b[\s,]*`, match: []string{"No, it is 9090", "NOPE"}, reject: []string{"I said no", "yes"}, prefixes: true, needsCount: 1},
		{pattern: `(?i)^(?:if|unless)\b|^(?:如果|假如)`, match: []string{"If so", "如果可以"}, reject: []string{"what if", "可以如果"}, prefixes: true, needsCount: 1},
		{pattern: `(?i)(?:,|;)\s+(?:and|but)\s+the\s`, match: []string{"x, and the y", "x;\tBUT THE y"}, reject: []string{"x and the y", "x, or the y"}, needsCount: 3},
		{pattern: `(?i)kelvin`, match: []string{"\u212aelvin"}, reject: []string{"celsius"}, needsCount: 1}, // K (U+212A) folds to k
		{pattern: `^(.{1,20}?)(?:是|为)(.+)`, match: []string{"端口是9090"}, reject: []string{"端口9090"}, needsCount: 1},
		{pattern: `(?i)^(?:the|our)?\s*(\w+)\s+is\s+(.+)`, match: []string{"the port is 9090", "port is 9090"}, reject: []string{"port was 9090"}},
		{pattern: `a*`, match: []string{"", "b"}},              // matches everything: no guard
		{pattern: `(?:x*y*|wrong)`, match: []string{"", "ok"}}, // a branch that needs nothing
		{pattern: `(?:x*,y*|wrong)z`, match: []string{",z"}, reject: []string{"z"}, needsCount: 2},
		{pattern: `(?i).+`, match: []string{"x"}}, // nothing required
	}
	for _, tt := range tests {
		g := compileGuard(tt.pattern)
		if (g.prefixes != nil) != tt.prefixes || tt.needsCount > 0 && len(g.needs) != tt.needsCount {
			t.Errorf("%s: prefixes %q, needs %q", tt.pattern, g.prefixes, g.needs)
		}
		for _, s := range tt.match {
			if !g.Regexp.MatchString(s) {
				t.Fatalf("%s: the test expects %q to match", tt.pattern, s)
			}
			if !g.may(s) || !g.MatchString(s) {
				t.Errorf("%s: %q skipped", tt.pattern, s)
			}
		}
		for _, s := range tt.reject {
			if g.may(s) {
				t.Errorf("%s: %q let through (prefixes %q, needs %q)", tt.pattern, s, g.prefixes, g.needs)
			}
		}
	}
}

func TestPrefilterFold(t *testing.T) {
	for r := rune(0x3000); r <= 0x9fff; r++ { // foldString copies this range as it is
		if unicode.SimpleFold(r) != r {
			t.Fatalf("U+%04X folds to U+%04X", r, unicode.SimpleFold(r))
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"Hello", "HELLO"}, {"ſtraße", "STRASSE"[:2] + "RAßE"}, {"\u212a", "K"}, {"不对，错了", "不对，错了"}, {"bad \xff x", "BAD \xff X"}, {"Éé", "ÉÉ"},
	} {
		if got := string(foldString(nil, tt.in)); got != tt.want {
			t.Errorf("foldString(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestPrefilterMatchesRegexp: on every text of the corpus (messages, their
// sentences and statements) no guard skips a text its expression matches,
// and the heuristic extracts exactly what it extracts unguarded.
func TestPrefilterMatchesRegexp(t *testing.T) {
	if len(guards) < 50 {
		t.Fatalf("%d guarded expressions: the extractor's are not guarded", len(guards))
	}
	convs := extractCorpus(t)
	var texts []string
	for _, conv := range convs {
		for _, tu := range conv {
			texts = append(texts, tu.User)
			for _, st := range statements(tu.User) {
				texts = append(texts, st.text, strings.TrimRight(st.text, ".。!！;；"))
			}
		}
	}
	step := 1
	if testing.Short() {
		step = 8 // every expression on an eighth of the texts
	}
	for i := 0; i < len(texts); i += step {
		s := texts[i]
		for _, g := range guards {
			if skipsMatch(g, s) {
				t.Fatalf("%s skips %q, which it matches", g, s)
			}
		}
	}
	guardAudit.Store(true)
	defer guardAudit.Store(false)
	cands := 0
	for _, conv := range convs {
		got, err := (Heuristic{}).Extract(t.Context(), conv)
		if err != nil {
			t.Fatal(err)
		}
		guardsOff.Store(true)
		want, err := (Heuristic{}).Extract(t.Context(), conv)
		guardsOff.Store(false)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("conversation %+v: guarded\n%+v\nunguarded\n%+v", conv, got, want)
		}
		cands += len(got)
	}
	guardMissMu.Lock()
	defer guardMissMu.Unlock()
	if len(guardMisses) > 0 {
		t.Fatalf("%d skipped matches, first: %s", len(guardMisses), guardMisses[0])
	}
	if cands < len(convs)/4 {
		t.Fatalf("%d candidates from %d conversations: the corpus does not exercise the rules", cands, len(convs))
	}
	t.Logf("%d conversations, %d texts, %d candidates, %d guarded expressions", len(convs), len(texts), cands, len(guards))
}

func FuzzPrefilter(f *testing.F) {
	for _, s := range []string{"That's wrong, it should be 9090.", "不对，应该用tabs", "From now on, reply in English.",
		"The macro has issues: - it doesn't open with the greeting", "\u212aeep it ſhort", "bad \xff utf8, and the rest"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, g := range guards {
			if skipsMatch(g, s) {
				t.Fatalf("%s skips %q, which it matches", g, s)
			}
		}
		if len(s) > 2000 {
			return
		}
		got := ExtractText(s)
		guardsOff.Store(true)
		want := ExtractText(s)
		guardsOff.Store(false)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("ExtractText(%q): guarded %+v, unguarded %+v", s, got, want)
		}
	})
}
