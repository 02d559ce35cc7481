package skills

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    *Skill // compared field by field when set
		wantErr string // substring
		warn    string // substring of a warning
	}{
		{
			name: "minimal",
			in:   "---\nname: my-skill\ndescription: Use when testing.\n---\n\n# Body\n\nStep 1.\n",
			want: &Skill{Name: "my-skill", Description: "Use when testing.", Category: "general", Status: StatusActive, Generation: 1, Body: "# Body\n\nStep 1."},
		},
		{
			name: "all fields, lists as flow and block",
			in: "---\nname: deploy\ndescription: \"Use when deploying: staging first.\"\ncategory: devops\ntags: [ship, release]\nagents:\n  - work\n  - home\n" +
				"status: pending\ngeneration: 4\nsource: evolver\ncreated: 2024-05-01\nupdated: 2024-05-02T10:00:00Z\nlicense: MIT\n---\nBody",
			want: &Skill{Name: "deploy", Description: "Use when deploying: staging first.", Category: "devops", Tags: []string{"ship", "release"},
				Agents: []string{"work", "home"}, Status: StatusPending, Generation: 4, Source: "evolver",
				Created: time.Date(2024, 5, 1, 0, 0, 0, 0, time.UTC), Updated: time.Date(2024, 5, 2, 10, 0, 0, 0, time.UTC),
				Body: "Body", Extra: map[string]any{"license": "MIT"}},
		},
		{
			name: "comma-separated tags, CRLF, BOM, leading blank line",
			in:   "\ufeff\r\n---\r\nname: a1\r\ndescription: d\r\ntags: x, y ,x\r\n---\r\nB\r\n",
			want: &Skill{Name: "a1", Description: "d", Category: "general", Tags: []string{"x", "y"}, Status: StatusActive, Generation: 1, Body: "B"},
		},
		{
			name: "python metaclaw frontmatter with an unquoted colon",
			in:   "---\nname: debug-it\ndescription: Use when: the test fails\ncategory: coding\n---\n\n# Debug\n",
			want: &Skill{Name: "debug-it", Description: "Use when: the test fails", Category: "coding", Status: StatusActive, Generation: 1, Body: "# Debug"},
			warn: "not valid YAML",
		},
		{
			name: "python metaclaw quoted description",
			in:   "---\nname: debug-systematically\ndescription: \"Use this skill when a test is failing.\"\n---\n\n# Debug Systematically\n",
			want: &Skill{Name: "debug-systematically", Description: "Use this skill when a test is failing.", Category: "general", Status: StatusActive, Generation: 1, Body: "# Debug Systematically"},
		},
		{name: "closing dots", in: "---\nname: x\ndescription: y\n...\nbody", want: &Skill{Name: "x", Description: "y", Category: "general", Status: StatusActive, Generation: 1, Body: "body"}},
		{name: "no frontmatter", in: "# Just markdown\n", wantErr: "no frontmatter"},
		{name: "unterminated", in: "---\nname: x\ndescription: y\n", wantErr: "not closed"},
		{name: "missing name", in: "---\ndescription: y\n---\n", wantErr: "no name"},
		{name: "missing description", in: "---\nname: x\n---\n", wantErr: "no description"},
		{name: "bad status", in: "---\nname: x\ndescription: y\nstatus: live\n---\n", wantErr: "status"},
		{name: "path traversal name", in: "---\nname: ../../etc\ndescription: y\n---\n", wantErr: "name"},
		{name: "slash in name", in: "---\nname: a/b\ndescription: y\n---\n", wantErr: "name"},
		{name: "name too long", in: "---\nname: " + strings.Repeat("a", 65) + "\ndescription: y\n---\n", wantErr: "longer"},
		{name: "negative generation", in: "---\nname: x\ndescription: y\ngeneration: -1\n---\n", wantErr: "negative"},
		{name: "generation not a number", in: "---\nname: x\ndescription: y\ngeneration: three\n---\n", wantErr: "not valid YAML"},
		{name: "name is a list", in: "---\nname: [a, b]\ndescription: y\n---\n", wantErr: "not valid YAML"},
		{name: "bad date", in: "---\nname: x\ndescription: y\ncreated: yesterday\n---\n", wantErr: "not valid YAML"},
		{name: "bad agent", in: "---\nname: x\ndescription: y\nagents: [\"a b\"]\n---\n", wantErr: "agent"},
		{name: "yaml aliases", in: "---\nname: &a x\ndescription: *a\n---\n", wantErr: "aliases"},
		{name: "frontmatter is a list", in: "---\n- a\n- b\n---\n", wantErr: "mapping"},
		{name: "not utf-8", in: "---\nname: x\ndescription: \xff\n---\n", wantErr: "UTF-8"},
		{name: "continuation line folds into the name", in: "---\nname: x\n  - [\ndescription: y\n---\n", wantErr: "name"},
		{name: "yaml syntax error that is not the python colon case", in: "---\nname: [x\ndescription: y\n---\n", wantErr: "not valid YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			warnings := got.Warnings
			got.Warnings = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tt.want)
			}
			if tt.warn != "" && (len(warnings) == 0 || !strings.Contains(warnings[0], tt.warn)) {
				t.Fatalf("warnings = %v, want one about %q", warnings, tt.warn)
			}
			if tt.warn == "" && len(warnings) > 0 {
				t.Fatalf("unexpected warnings %v", warnings)
			}
		})
	}
}

func TestFormatRoundTrip(t *testing.T) {
	s := &Skill{Name: "round-trip", Description: "Use when: quoting matters # and hashes", Category: "data", Tags: []string{"a", "b c"},
		Agents: []string{"work"}, Status: StatusDisabled, Generation: 3, Source: "user",
		Created: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC), Updated: time.Date(2024, 2, 3, 4, 5, 6, 0, time.UTC),
		Body: "# Title\n\n1. Step: one\n---\n2. Step two", Extra: map[string]any{"license": "MIT", "metadata": map[string]any{"k": "v"}}}
	data, err := Format(s)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(data)
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	if !reflect.DeepEqual(got, s) {
		t.Fatalf("round trip changed the skill:\n%s\ngot  %+v\nwant %+v", data, got, s)
	}
	if !strings.HasPrefix(string(data), "---\nname: round-trip\ndescription: ") {
		t.Fatalf("known keys should come first:\n%s", data)
	}
}

func TestSlugify(t *testing.T) {
	for in, want := range map[string]string{
		"Debug Flaky Tests!": "debug-flaky-tests", "  --x--  ": "x", "2fa setup": "s-2fa-setup", "Ünïcode ok": "n-code-ok",
		strings.Repeat("ab ", 40): strings.TrimRight(strings.Repeat("ab-", 21), "-"),
	} {
		if got := Slugify(in); got != want {
			t.Errorf("Slugify(%q) = %q, want %q", in, got, want)
		}
		if got := Slugify(in); got != "" && !SlugRe.MatchString(got) {
			t.Errorf("Slugify(%q) = %q is not a slug", in, got)
		}
	}
}

// FuzzParseSkill: Parse never panics, and whatever it accepts formats and
// parses back to the same skill.
func FuzzParseSkill(f *testing.F) {
	for _, s := range []string{
		"---\nname: x\ndescription: y\n---\nbody",
		"---\nname: a\ndescription: \"b: c\"\ntags: [p, q]\nagents: w\nstatus: pending\ngeneration: 2\ncreated: 2024-01-01\n---\n# T\n",
		"---\nname: debug-it\ndescription: Use when: x\n---\n",
		"---\nname: &a x\ndescription: *a\n---\n",
		"---\n- list\n---\n",
		"---\nname: x\ndescription: y\nextra: {a: [1, 2, {b: c}]}\n---\n",
		"no frontmatter",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			return
		}
		if ValidName(s.Name) != nil || s.Description == "" {
			t.Fatalf("accepted an invalid skill: %+v", s)
		}
		out, err := Format(s)
		if err != nil {
			return // e.g. extra keys clashing with known ones after case folding
		}
		back, err := Parse(out)
		if err != nil {
			t.Fatalf("formatted skill does not parse: %v\n%q", err, out)
		}
		back.Warnings, s.Warnings = nil, nil
		if back.Name != s.Name || back.Description != s.Description || back.Body != s.Body || back.Status != s.Status ||
			back.Generation != s.Generation || !reflect.DeepEqual(back.Tags, s.Tags) || !reflect.DeepEqual(back.Agents, s.Agents) {
			t.Fatalf("round trip changed the skill:\n%+v\n%+v", s, back)
		}
	})
}
