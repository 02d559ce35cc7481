package memory

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestHeuristicExtract(t *testing.T) {
	tests := []struct {
		in       string
		typ      Type
		subject  string
		value    string
		contains string
		corr     bool
	}{
		// English: preferences, rules, corrections, facts, project state.
		{"I prefer tabs for indentation.", Preference, "pref:indentation", "+tab", "The user prefers tabs", false},
		{"Actually, I prefer spaces for indentation now.", Preference, "pref:indentation", "+space", "prefers spaces for indentation", true},
		{"I'd rather use pnpm than npm.", Preference, "pref:package_manager", "+pnpm", "would rather use pnpm", false},
		{"I hate long explanations.", Preference, "pref:verbosity", "-long", "dislikes long explanations", false},
		{"Please call me Sam from now on.", Preference, "fact:name", "sam", "Call the user Sam", true},
		{"My name is David Chen.", Semantic, "fact:name", "chen david", "The user's name is David Chen", false},
		{"My timezone is UTC+8.", Semantic, "fact:my timezone", "8 utc", "The user's timezone is UTC+8", false},
		{"My favorite editor is Neovim.", Preference, "pref:editor", "neovim", "favorite editor is Neovim", false},
		{"We use PostgreSQL 16 for the main database.", ProjectState, "proj:database", "postgresql", "The team uses PostgreSQL 16", false},
		{"We switched to MySQL last week.", ProjectState, "proj:database", "mysql", "switched to MySQL", true},
		{"We switched the main database to MySQL.", ProjectState, "proj:database", "mysql", "The team switched", true},
		{"Our backend is written in Go.", ProjectState, "proj:backend", "go written", "The team's backend", false},
		{"Always run the tests before committing.", Preference, "rule:before commit run test", "+", "Always run the tests", false},
		{"Never run the tests before committing.", Preference, "rule:before commit run test", "-", "Never run the tests", false},
		{"Don't use emojis in commit messages.", Preference, "rule:commit emojis message", "-", "Do not use emojis", false},
		{"I always write tests first.", Preference, "rule:first test write", "+", "The user always writes tests first", false},
		{"We never deploy on Fridays.", ProjectState, "rule:deploy friday", "-", "The team never deploys on Fridays", false},
		{"You should always run gofmt before showing Go code.", Preference, "", "+", "The assistant should always run gofmt", false},
		{"Make sure to update the CHANGELOG.", Preference, "rule:changelog update", "+", "Make sure to update the CHANGELOG", false},
		{"From now on, reply in English.", Preference, "pref:reply_language", "+english", "Reply in English", true},
		{"I want you to always reply in Chinese.", Preference, "pref:reply_language", "+chinese", "wants the assistant to always reply", false},
		{"The default timeout should be 30 seconds.", Semantic, "fact:default timeout", "30 second", "should be 30 seconds", false},
		{"That's wrong, it should be 9090.", Semantic, "", "", "It should be 9090", true},
		{"No, the staging port is 9090.", Semantic, "fact:port stag", "9090", "The staging port is 9090", true},
		{"Remember that the staging port is 8080.", Semantic, "fact:port stag", "8080", "The staging port is 8080", false},
		{"All PRs must be reviewed by two people.", Preference, "pref:prs", "people review", "must be reviewed", false},
		{"Code must not touch the vendor directory.", Preference, "", "-", "Code must not touch", false},
		{"Keep answers short.", Preference, "pref:verbosity", "+short", "Keep answers short", false},
		{"Today we shipped v2.0 of the billing service.", Episodic, "", "", "the team shipped v2.0", false},
		// Chinese.
		{"我更喜欢用空格缩进。", Preference, "pref:indentation", "+空格", "用户更喜欢用空格缩进", false},
		{"不对，我现在更喜欢用制表符缩进。", Preference, "pref:indentation", "+制表 表符", "用户现在更喜欢用制表符缩进", true},
		{"我不喜欢太长的回答。", Preference, "", "", "用户不喜欢太长的回答", false},
		{"请叫我小王。", Preference, "fact:name", "小王", "称呼用户为小王", false},
		{"我的时区是东八区。", Semantic, "fact:my 时区", "东八 八区", "用户的时区是东八区", false},
		{"永远不要在周五部署。", Preference, "rule:五部 周五 在周 部署", "-", "永远不要在周五部署", false},
		{"总是先写测试。", Preference, "rule:先写 写测 测试", "+", "总是先写测试", false},
		{"我们用PostgreSQL。", ProjectState, "proj:database", "postgresql", "团队用PostgreSQL", false},
		{"我们的数据库现在改用MySQL了。", ProjectState, "proj:database", "mysql", "团队的数据库现在改用MySQL", true},
		{"必须写单元测试。", Preference, "", "+", "必须写单元测试", false},
		{"不对，应该用空格。", Semantic, "pref:indentation", "+空格", "纠正：应该用空格", true},
		{"不对，端口是9090。", Semantic, "fact:端口", "9090", "纠正：端口是9090", true},
		{"以后用英文回答。", Preference, "pref:reply_language", "+英文", "以后用英文回答", true},
		{"记住，我的生日是五月三日。", Semantic, "fact:my 生日", "", "用户的生日是五月三日", false},
	}
	for _, tt := range tests {
		cs := ExtractText(tt.in)
		if len(cs) != 1 {
			t.Errorf("%q: %d candidates %+v", tt.in, len(cs), cs)
			continue
		}
		c := cs[0]
		if c.Type != tt.typ || (tt.subject != "" && c.Subject != tt.subject) || (tt.value != "" && c.Value != tt.value) ||
			!strings.Contains(c.Content, tt.contains) || c.Correction != tt.corr {
			t.Errorf("%q:\n got %s %q subject=%q value=%q corr=%v\nwant %s %q subject=%q value=%q corr=%v",
				tt.in, c.Type, c.Content, c.Subject, c.Value, c.Correction, tt.typ, tt.contains, tt.subject, tt.value, tt.corr)
		}
	}
}

func TestHeuristicSkips(t *testing.T) {
	for _, in := range []string{
		"Should I always use tabs?",
		"Do you prefer tabs?",
		"If I prefer tabs, what then?",
		"It always crashes when I run it.",
		"This must be a bug.",
		"Don't worry about it.",
		"What is the weather like?",
		"如果我喜欢用空格，会怎样？",
		"你喜欢什么颜色吗？",
		"> I prefer tabs (quoting the style guide)",
		"```\n# I prefer tabs\nalways = True\n```",
		"",
		"   ",
	} {
		if cs := ExtractText(in); len(cs) != 0 {
			t.Errorf("%q extracted %+v", in, cs)
		}
	}
}

func TestHeuristicOnlyMinesTheUser(t *testing.T) {
	turns := []Turn{{User: "Please summarise the doc.", Assistant: "Always use tabs. I prefer Python. We use Oracle."}}
	cs, err := Heuristic{}.Extract(context.Background(), turns)
	if err != nil || len(cs) != 0 {
		t.Fatalf("assistant text mined: %+v %v", cs, err)
	}
}

func TestHeuristicCorrectionContext(t *testing.T) {
	turns := []Turn{
		{User: "What's the staging port?", Assistant: "The staging port is 8080."},
		{User: "That's wrong, it should be 9090."},
	}
	cs, _ := Heuristic{}.Extract(context.Background(), turns)
	if len(cs) != 1 || cs[0].Turn != 1 || !strings.Contains(cs[0].Content, "staging port is 8080") {
		t.Fatalf("correction without subject should quote what it corrects: %+v", cs)
	}
}

func TestRewrite(t *testing.T) {
	tests := map[string]string{
		"we use Go":                "the team uses Go",
		"I really prefer my tools": "the user really prefers the user's tools",
		"you should reply briefly": "the assistant should reply briefly",
		"we have two services":     "the team has two services",
		"I don't like it":          "the user doesn't like it",
		"we deploy and we rely on": "the team deploys and the team relies on",
	}
	for in, want := range tests {
		if got := rewrite(in); got != want {
			t.Errorf("rewrite(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestSummarize(t *testing.T) {
	if _, ok, _ := (Heuristic{}).Summarize(context.Background(), []Turn{{User: "one"}}); ok {
		t.Fatal("a one-exchange session needs no summary")
	}
	c, ok, _ := Heuristic{}.Summarize(context.Background(), []Turn{{User: "Fix the login bug"}, {User: "Now add a test", Assistant: "Added TestLogin. Done."}})
	if !ok || c.Type != WorkingSummary || !strings.Contains(c.Content, "Fix the login bug") || !strings.Contains(c.Content, "Added TestLogin") || c.TTL == 0 {
		t.Fatalf("summary %+v", c)
	}
}

// FuzzHeuristicExtractor: any input yields well-formed candidates (valid
// type and UTF-8, bounded, non-empty, in range), deterministically.
func FuzzHeuristicExtractor(f *testing.F) {
	for _, s := range []string{
		"I prefer tabs for indentation.", "Actually, I prefer spaces now.", "我更喜欢用空格缩进。", "不对，应该用制表符。",
		"Call me Sam.", "My timezone is UTC+8.", "We switched the main database to MySQL.", "Always run tests. Never deploy on Fridays!",
		"That's wrong, it should be 9090.", "记住，测试服务器的端口是8080。", "```\ncode\n```\nI hate tabs", "my  is ", "we switched  to ",
		"I'd rather", "请叫我", "我们的", "No, the", "e.g. I prefer x. vs. y.", "\xff\xfe I prefer \x00 tabs",
		"Our reports need: (1) a file name `YYYYMMDD_<desc>.md`, (2) a front-matter block.", "The output has issues: 1. x 2. y",
		"All reports must start with the following header:\n```\nOwner: <team>\n```", "Rules:\n- never a\n- always b\n  continued",
		"You forgot last_updated again: it goes at the top.", "v1.2 should be 2026-03-03T11:00:00+08:00.", "(1) (2) (3)", "```\n```\n:",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		a := ExtractText(in)
		b := ExtractText(in)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("not deterministic for %q", in)
		}
		if len(a) > 8 {
			t.Fatalf("%d candidates", len(a))
		}
		for _, c := range a {
			if _, err := ParseType(string(c.Type)); err != nil || c.Type == WorkingSummary {
				t.Fatalf("type %q", c.Type)
			}
			if len(Terms(c.Content)) == 0 || len(c.Content) > 2*maxSentence+maxBlock+200 {
				t.Fatalf("content %q", c.Content)
			}
			if utf8.ValidString(in) && !utf8.ValidString(c.Content) {
				t.Fatalf("invalid UTF-8 from valid input: %q", c.Content)
			}
			if c.Importance <= 0 || c.Importance > 1 || c.Confidence <= 0 || c.Confidence > 1 {
				t.Fatalf("importance %v confidence %v", c.Importance, c.Confidence)
			}
		}
		_, _, _ = Heuristic{}.Summarize(context.Background(), []Turn{{User: in}, {User: in, Assistant: in}})
	})
}
