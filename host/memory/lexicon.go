package memory

import (
	"strings"
	"sync"
)

// A category groups the values one preference or fact can take, so that
// "I prefer tabs" and, later, "actually I prefer spaces" land on the same
// slot (pref:indentation) and the newer one supersedes the older.
type category struct {
	name string
	// values are terms (as Terms produces them) naming one choice.
	values []string
	// weak values are only taken when a topic term is also present
	// ("single" means quotes only next to "quotes").
	weak []string
	// topics name the category itself ("indentation", "缩进").
	topics []string
	// related are words of a request the category's memories serve ("an
	// S3 bucket" is about the cloud the team uses): they expand queries.
	related []string

	// The entries split into terms, for query expansion.
	valuesF, topicsF, relatedF [][]string
}

var categories = []category{
	{name: "indentation", values: []string{"tab", "space", "制表", "表符", "空格"}, topics: []string{"indentation", "indent", "缩进"}},
	{name: "quotes", weak: []string{"single", "double", "单引", "双引"}, topics: []string{"quote", "quotes", "quotation", "引号"}},
	{name: "reply_language", values: []string{"english", "chinese", "mandarin", "japanese", "korean", "spanish", "french", "german", "中文", "英文", "汉语", "英语", "日语", "日文", "韩语"},
		topics: []string{"language", "reply", "respond", "answer", "语言", "回复", "回答"}},
	{name: "database", values: []string{"postgresql", "mysql", "sqlite", "mongodb", "mariadb", "oracle", "dynamodb", "cassandra", "supabase", "cockroachdb", "clickhouse", "duckdb"},
		topics: []string{"database", "数据", "据库"}, related: []string{"migration", "migrations", "schema", "迁移", "表结构"}},
	{name: "package_manager", values: []string{"npm", "yarn", "pnpm", "bun", "pip", "poetry", "uv", "conda", "pipenv"}, topics: []string{"package", "包管", "管理"}, related: []string{"dependency", "dependencies", "install", "lockfile", "依赖"}},
	{name: "editor", values: []string{"vim", "neovim", "nvim", "emacs", "vscode", "intellij", "goland", "pycharm", "sublime", "zed", "helix"}, topics: []string{"editor", "ide", "编辑"}, related: []string{"keybinding", "shortcut", "plugin", "快捷键", "插件"}},
	{name: "os", values: []string{"linux", "macos", "windows", "ubuntu", "debian", "fedora", "arch"}, weak: []string{"mac"}, topics: []string{"os", "system", "laptop", "系统"}},
	{name: "shell", values: []string{"bash", "zsh", "fish", "powershell"}, topics: []string{"shell", "terminal"}, related: []string{"script", "alias", "prompt", "脚本"}},
	{name: "test_framework", values: []string{"pytest", "unittest", "jest", "vitest", "mocha", "rspec", "junit", "testify"}, topics: []string{"test", "testing", "测试"}, related: []string{"tests", "unit test", "单元测试"}},
	{name: "cloud", values: []string{"aws", "gcp", "azure", "vercel", "heroku", "netlify", "cloudflare", "阿里", "阿里云", "腾讯"}, topics: []string{"cloud", "hosting", "host", "云上"}, related: []string{"s3", "ec2", "bucket", "lambda", "infrastructure", "infra", "region", "serverless", "云"}},
	{name: "frontend_framework", values: []string{"react", "vue", "svelte", "angular", "nextjs", "nuxt", "solidjs"}, topics: []string{"frontend", "framework", "前端", "框架"}},
	{name: "ci", values: []string{"jenkins", "circleci", "travis", "buildkite", "actions"}, topics: []string{"ci", "pipeline"}, related: []string{"workflow", "流水线"}},
	{name: "verbosity", values: []string{"concise", "brief", "terse", "detailed", "verbose", "thorough", "简洁", "简短", "详细", "简单"}, weak: []string{"short", "long"},
		topics: []string{"answer", "reply", "response", "explanation", "回答", "回复", "解释"}},
	{name: "theme", weak: []string{"dark", "light"}, topics: []string{"mode", "theme", "主题", "模式"}},
	{name: "naming", values: []string{"camelcase", "snake", "kebab", "pascalcase"}, topics: []string{"naming", "name", "命名"}},
	{name: "units", values: []string{"metric", "imperial", "celsius", "fahrenheit", "公制", "英制"}, topics: []string{"unit", "units", "单位"}},
	{name: "timezone", values: []string{"utc", "pst", "pdt", "est", "edt", "cet", "cest", "gmt", "jst", "ist"}, topics: []string{"timezone", "时区"}, related: []string{"time", "schedule", "meeting", "clock", "reminder", "deadline", "时间", "会议", "上午", "下午", "晚上", "几点"}},
	{name: "output_format", values: []string{"markdown", "json", "yaml", "csv"}, weak: []string{"table", "plain", "bullet"}, topics: []string{"format", "output", "格式"}},
	{name: "programming_language", values: []string{"python", "rust", "java", "typescript", "javascript", "ruby", "kotlin", "swift", "csharp", "php", "scala", "elixir", "haskell", "zig"},
		weak: []string{"go"}, topics: []string{"language", "lang", "语言"}},
	{name: "merge_strategy", values: []string{"rebase", "squash"}, weak: []string{"merge"}, topics: []string{"pr", "pull", "branch", "合并"}},
}

// aliases make spellings of one thing meet (applied inside Terms).
var aliases = map[string]string{
	"postgres": "postgresql", "pg": "postgresql", "psql": "postgresql",
	"k8s": "kubernetes", "js": "javascript", "ts": "typescript", "py": "python",
	"db": "database", "repo": "repository", "config": "configuration", "tz": "timezone",
	"mongo":  "mongodb",
	"golang": "go", "macbook": "macos", "osx": "macos",
}

func init() {
	// Lexicon entries are written as words; match them as Terms sees them
	// ("macOS" → "maco", "kubernetes" → "kubernete", "阿里云" → 阿里 里云).
	norm := func(list []string) []string {
		var out []string
		for _, w := range list {
			if ts := Terms(w); len(ts) > 0 {
				out = append(out, strings.Join(ts, " "))
			}
		}
		return out
	}
	for i := range categories {
		c := &categories[i]
		c.values, c.weak, c.topics, c.related = norm(c.values), norm(c.weak), norm(c.topics), norm(c.related)
		split := func(list []string) [][]string {
			out := make([][]string, len(list))
			for i, v := range list {
				out[i] = strings.Fields(v)
			}
			return out
		}
		c.valuesF, c.topicsF, c.relatedF = split(c.values), split(c.topics), split(c.related)
	}
}

// containsAll reports whether every space-separated term of v is in set.
func containsAll(set map[string]struct{}, v string) bool {
	for _, t := range strings.Fields(v) {
		if _, ok := set[t]; !ok {
			return false
		}
	}
	return true
}

// categorize finds the category of a phrase and the values it names. topic
// is the surrounding text, which may name the category ("for indentation").
// Weak values count next to a topic term or in a phrase of at most two terms
// ("we use Go").
func categorize(phrase, topic string) (name string, values []string) {
	terms := TermSet(phrase)
	ctx := TermSet(topic)
	for t := range terms {
		ctx[t] = struct{}{}
	}
	for _, c := range categories {
		hasTopic := false
		for _, t := range c.topics {
			if containsAll(ctx, t) {
				hasTopic = true
				break
			}
		}
		var vals []string
		for _, v := range c.values {
			if containsAll(terms, v) {
				vals = append(vals, v)
			}
		}
		if hasTopic || len(terms) <= 2 {
			for _, v := range c.weak {
				if containsAll(terms, v) {
					vals = append(vals, v)
				}
			}
		}
		if len(vals) > 0 {
			return c.name, vals
		}
	}
	// No value named: a topic alone still names the slot ("for indentation")
	// in a short phrase.
	if len(terms) > 3 {
		return "", nil
	}
	for _, c := range categories {
		if c.name == "reply_language" || c.name == "verbosity" || c.name == "programming_language" {
			continue // their topics ("answer", "language") are too common to name a slot alone
		}
		for _, t := range c.topics {
			if containsAll(terms, t) {
				return c.name, nil
			}
		}
	}
	return "", nil
}

// lexiconEntities returns the category values named in text.
func lexiconEntities(text string) []string {
	terms := TermSet(text)
	var out []string
	for _, c := range categories {
		for _, v := range c.values {
			if containsAll(terms, v) {
				out = append(out, v)
			}
		}
	}
	return out
}

func canonical(w string) string {
	if a, ok := aliases[w]; ok {
		return a
	}
	return w
}

// hasAny reports whether s contains any of the phrases.
func hasAny(s string, phrases ...string) bool {
	for _, p := range phrases {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// maxQueryTerms bounds the terms of a query (before expansion).
const maxQueryTerms = 48

// expansionWeight is how much a term added by expansion counts towards a
// query's coverage.
const expansionWeight = 0.5

// qterm is a query term and its weight.
type qterm struct {
	t string
	w float64
}

// expandQuery returns the distinct terms of the texts (newest text first)
// and their weights; a term naming a category (or a request it serves:
// "database", "an S3 bucket") adds the category's values and names at half
// weight, so "which database should the migrations target?" meets "the team
// switched to MySQL" and a search for "database" finds it. A value adds the
// category's names ("mysql" → "database"), not the other values.
func expandQuery(texts []string) []qterm {
	var x expansion
	return x.expand(texts)
}

// expansion is expandQuery's working space, reused from query to query
// (the request path allocates little).
type expansion struct {
	base []string
	out  []qterm
	seen map[string]struct{}
}

// expand is expandQuery in x's space: the result is valid until the next
// call.
func (x *expansion) expand(texts []string) []qterm {
	base := x.base[:0]
	for i := len(texts) - 1; i >= 0 && len(base) < maxQueryTerms; i-- {
		base = append(base, queryTextTerms(texts[i])...)
	}
	if x.seen == nil {
		x.seen = make(map[string]struct{}, 2*maxQueryTerms)
	}
	seen := x.seen
	clear(seen)
	n := 0
	for _, t := range base { // distinct, in order
		if _, ok := seen[t]; !ok {
			seen[t] = struct{}{}
			base[n] = t
			n++
		}
	}
	clear(base[n:])
	base = base[:n]
	if len(base) > maxQueryTerms {
		for _, t := range base[maxQueryTerms:] {
			delete(seen, t)
		}
		clear(base[maxQueryTerms:])
		base = base[:maxQueryTerms]
	}
	x.base = base
	out := x.out[:0]
	for _, t := range base {
		out = append(out, qterm{t, 1})
	}
	// Which categories the query names (by a topic or related term) or
	// mentions a value of, from the terms alone.
	var named, valued uint64
	for _, t := range base {
		for _, h := range catIndex[t] {
			fields := h.fields
			all := true
			for _, f := range fields {
				if _, ok := seen[f]; !ok {
					all = false
					break
				}
			}
			if !all {
				continue
			}
			if h.value {
				valued |= 1 << h.cat
			} else {
				named |= 1 << h.cat
			}
		}
	}
	add := func(list [][]string) {
		for _, v := range list {
			for _, t := range v {
				if _, ok := seen[t]; !ok && len(out) < maxQueryTerms+16 {
					seen[t] = struct{}{}
					out = append(out, qterm{t, expansionWeight})
				}
			}
		}
	}
	for i := range categories {
		c := &categories[i]
		switch {
		case named&(1<<i) != 0:
			add(c.valuesF)
			add(c.topicsF)
		case valued&(1<<i) != 0:
			add(c.topicsF)
		}
	}
	x.out = out
	return out
}

// catHit is one lexicon entry a term starts: a category's topic, related
// word or value, as its terms.
type catHit struct {
	cat    int
	fields []string
	value  bool
}

// catIndex maps each term to the lexicon entries it is part of.
var catIndex = map[string][]catHit{}

func init() {
	if len(categories) > 64 {
		panic("memory: more than 64 lexicon categories")
	}
	for i := range categories {
		c := &categories[i]
		for _, list := range [][][]string{c.topicsF, c.relatedF} {
			for _, f := range list {
				if len(f) > 0 {
					catIndex[f[0]] = append(catIndex[f[0]], catHit{cat: i, fields: f})
				}
			}
		}
		for _, f := range c.valuesF {
			if len(f) > 0 {
				catIndex[f[0]] = append(catIndex[f[0]], catHit{cat: i, fields: f, value: true})
			}
		}
	}
}

// The terms of recent query texts, and whether each asks to pick up the
// thread: a turn's query holds the user's last three messages, two of which
// the previous turns of the session already read.
var (
	termsCacheMu sync.Mutex
	termsCache   = map[string]queryText{}
)

type queryText struct {
	terms []string
	cue   bool // continuity
}

const termsCacheSize = 4096

func queryTextTerms(text string) []string { return readQueryText(text).terms }

func readQueryText(text string) queryText {
	if len(text) > 4096 {
		return queryText{Terms(text), continuity(text)}
	}
	termsCacheMu.Lock()
	qt, ok := termsCache[text]
	termsCacheMu.Unlock()
	if ok {
		return qt
	}
	qt = queryText{Terms(text), continuity(text)}
	termsCacheMu.Lock()
	if len(termsCache) >= termsCacheSize {
		clear(termsCache)
	}
	termsCache[text] = qt
	termsCacheMu.Unlock()
	return qt
}
