package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// writeHome creates a state dir holding the given files (name → content).
func writeHome(t *testing.T, files map[string]string) string {
	t.Helper()
	home := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(home, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// envMap is a deterministic environment for LoadWith.
func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func loadYAML(t *testing.T, content string) (*Config, error) {
	t.Helper()
	return LoadWith(writeHome(t, map[string]string{ConfigFile: content}), noEnv)
}

func mustLoad(t *testing.T, content string) *Config {
	t.Helper()
	c, err := loadYAML(t, content)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return c
}

func TestSchemaInvariants(t *testing.T) {
	keys := Keys()
	if len(keys) < 100 {
		t.Fatalf("only %d keys", len(keys))
	}
	seenPath, seenEnv := map[string]bool{}, map[string]bool{}
	for _, k := range keys {
		if seenPath[k.Path] || seenEnv[k.Env] {
			t.Errorf("duplicate key or env name: %s %s", k.Path, k.Env)
		}
		seenPath[k.Path], seenEnv[k.Env] = true, true
		if k.Env == "METACLAW_HOME" {
			t.Errorf("%s collides with METACLAW_HOME", k.Path)
		}
		if k.Description == "" || k.Type == "" {
			t.Errorf("%s: missing description or type", k.Path)
		}
		last := k.Path[strings.LastIndex(k.Path, ".")+1:]
		if (strings.HasSuffix(last, "api_key") || strings.HasSuffix(last, "token") || last == "ics_url") != k.Secret {
			t.Errorf("%s: secret flag %v does not match its name", k.Path, k.Secret)
		}
		f := schema().lookup(k.Path)
		if f.sameAs != "" && schema().lookup(f.sameAs) == nil {
			t.Errorf("%s: sameas names unknown key %s", k.Path, f.sameAs)
		}
		if k.Allowed != nil && k.Default != "" {
			if !f.allowed(k.Default) {
				t.Errorf("%s: default %q not in %v", k.Path, k.Default, k.Allowed)
			}
		}
	}
	if err := Default(t.TempDir()).Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
	for _, want := range []string{"mode", "claw_type", "llm.api", "llm.timeout_seconds", "proxy.max_body_mb", "skills.evolver.api_key",
		"memory.sidecar_url", "memory.flush_every", "rl.tinker_base_url", "rl.loss_fn", "opd.kl_penalty_coef",
		"scheduler.calendar.token_path", "wechat.enabled", "openrouter.route", "log.max_backups", "max_context_tokens", "context_window"} {
		if !seenPath[want] {
			t.Errorf("missing key %s", want)
		}
	}
}

func TestKeysDefaults(t *testing.T) {
	byPath := map[string]KeyInfo{}
	for _, k := range Keys() {
		byPath[k.Path] = k
	}
	tests := map[string]string{
		"mode":                          "auto",
		"claw_type":                     "none",
		"llm.api":                       "openai",
		"llm.timeout_seconds":           "600",
		"proxy.host":                    "127.0.0.1",
		"proxy.port":                    "30000",
		"max_context_tokens":            "0",
		"skills.dir":                    "$METACLAW_HOME/skills",
		"skills.retrieval_mode":         "keyword",
		"memory.store_path":             filepath.FromSlash("$METACLAW_HOME/memory/memory.db"),
		"memory.extractor":              "heuristic",
		"rl.learning_rate":              "0.0001",
		"scheduler.sleep_start":         "23:00",
		"scheduler.calendar.token_path": "$METACLAW_HOME/calendar_token.json",
		"log.level":                     "info",
	}
	for path, want := range tests {
		if got := byPath[path].Default; got != want {
			t.Errorf("%s default = %q, want %q", path, got, want)
		}
	}
	if !strings.Contains(byPath["memory.auto_upgrade_enabled"].Description, "Accepted for compatibility") {
		t.Errorf("compat key not documented as such: %q", byPath["memory.auto_upgrade_enabled"].Description)
	}
}

func TestHome(t *testing.T) {
	user := t.TempDir()
	t.Setenv("HOME", user)
	t.Setenv("USERPROFILE", user)
	tests := []struct{ env, want string }{
		{"", filepath.Join(user, ".metaclaw")},
		{"~/mc", filepath.Join(user, "mc")},
		{"~", user},
		{filepath.Join(user, "abs"), filepath.Join(user, "abs")},
	}
	for _, tt := range tests {
		t.Setenv("METACLAW_HOME", tt.env)
		got, err := Home()
		if err != nil || got != tt.want {
			t.Errorf("METACLAW_HOME=%q: Home() = %q, %v; want %q", tt.env, got, err, tt.want)
		}
	}
}

func TestLoadMissingFileGivesDefaults(t *testing.T) {
	home := t.TempDir()
	c, err := LoadWith(home, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c.Mode != "auto" || c.Proxy.Port != 30000 || c.Skills.Dir != filepath.Join(home, "skills") || len(c.Warnings) != 0 {
		t.Fatalf("unexpected defaults: %+v warnings=%v", c, c.Warnings)
	}
	if c.Home != home || c.Addr() != "127.0.0.1:30000" || c.UpstreamConfigured() {
		t.Fatalf("home=%q addr=%q upstream=%v", c.Home, c.Addr(), c.UpstreamConfigured())
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		secrets string
		want    []string // substrings that must all appear
	}{
		{"unknown key with suggestion", "memory:\n  top_kk: 3\n", "", []string{"config.yaml:2", "`memory.top_kk`", "unknown key", "did you mean `memory.top_k`?"}},
		{"misplaced key", "mode: auto\nport: 8080\n", "", []string{"config.yaml:2", "did you mean `proxy.port`?"}},
		{"unknown key no suggestion", "zzzqqq: 1\n", "", []string{"`zzzqqq`", "metaclaw config keys"}},
		{"wrong type int", "proxy:\n  port: abc\n", "", []string{"config.yaml:2", "`proxy.port`", "expected an integer", `string "abc"`, "port: 30000"}},
		{"wrong type bool", "skills:\n  enabled: maybe\n", "", []string{"`skills.enabled`", "expected a boolean", "enabled: true"}},
		{"wrong type float", "rl:\n  learning_rate: fast\n", "", []string{"`rl.learning_rate`", "expected a number"}},
		{"list for string", "llm:\n  model_id: [a, b]\n", "", []string{"`llm.model_id`", "expected a string, got a list"}},
		{"section as scalar", "llm: openai\n", "", []string{"config.yaml:1", "`llm`", "must be a section", "provider: custom"}},
		{"bad enum", "mode: turbo\n", "", []string{"config.yaml:1", "`mode`", "auto, rl, skills_only", `"turbo"`}},
		{"bad enum nested", "memory:\n  extractor: magic\n", "", []string{"`memory.extractor`", "heuristic, llm, hybrid"}},
		{"port range", "proxy:\n  port: 70000\n", "", []string{"`proxy.port`", "between 0 and 65535"}},
		{"niceness range", "runtime:\n  background_nice: 20\n", "", []string{"config.yaml:2", "`runtime.background_nice`", "between 0 and 19"}},
		{"positive int", "llm:\n  timeout_seconds: 0\n", "", []string{"`llm.timeout_seconds`", "at least 1"}},
		{"positive float", "rl:\n  learning_rate: 0\n", "", []string{"`rl.learning_rate`", "greater than 0"}},
		{"bad url", "llm:\n  api_base: api.openai.com/v1\n", "", []string{"`llm.api_base`", "http(s) URL"}},
		{"non-loopback without key", "proxy:\n  host: 192.168.1.10\n", "", []string{"config.yaml:2", "`proxy.host`", "not a loopback", "`proxy.api_key`", "metaclaw config set proxy.api_key", "proxy.host 127.0.0.1"}},
		{"lora rank not a power of two", "rl:\n  lora_rank: 24\n", "", []string{"config.yaml:2", "`rl.lora_rank`", "power of two", "got 24", "config set rl.lora_rank 32"}},
		{"plugin backend without plugin", "rl:\n  backend: plugin\n", "", []string{"config.yaml:2", "`rl.backend`", "`plugins.trainer` is empty", "config set plugins.trainer"}},
		{"weaver without ppo", "rl:\n  backend: weaver\n  loss_fn: ppo\n", "", []string{"config.yaml:3", "`rl.loss_fn`", "Weaver", "importance_sampling"}},
		{"bad advantage", "rl:\n  advantage: median\n", "", []string{"`rl.advantage`", "grpo, batch, raw"}},
		{"opd without teacher", "opd:\n  enabled: true\n", "", []string{"config.yaml:2", "`opd.enabled`", "teacher is not set", "opd.teacher_url", "opd.teacher_model"}},
		{"tokenizer dir missing", "rl:\n  tokenizer_path: /nonexistent/tok\n", "", []string{"config.yaml:2", "`rl.tokenizer_path`", "does not exist", "metaclaw rl fetch-tokenizer --dir /nonexistent/tok"}},
		{"tokenizer dir without files", "rl:\n  tokenizer_path: .\n", "", []string{"`rl.tokenizer_path`", "has no tokenizer.json", "metaclaw rl fetch-tokenizer --dir"}},
		{"bad HH:MM", "scheduler:\n  sleep_start: \"25:00\"\n", "", []string{"config.yaml:2", "`scheduler.sleep_start`", "HH:MM"}},
		{"yaml syntax error", "mode: auto\nllm:\n  api_base: \"unterminated\n", "", []string{"config.yaml:", "invalid YAML"}},
		{"yaml bad indent", "mode: auto\n  llm: x\n", "", []string{"config.yaml:2", "invalid YAML"}},
		{"duplicate key", "mode: auto\nmode: rl\n", "", []string{"config.yaml:2", "defined twice (first at line 1)"}},
		{"top level list", "- a\n- b\n", "", []string{"top level must be a mapping"}},
		{"two documents", "mode: auto\n---\nmode: rl\n", "", []string{"more than one YAML document"}},
		{"non-secret in secrets.yaml", "", "llm:\n  model_id: gpt-4o\n", []string{"secrets.yaml:2", "`llm.model_id`", "not a secret"}},
		{"several errors at once", "memory:\n  top_kk: 3\nproxy:\n  port: abc\nmode: turbo\n", "", []string{"`memory.top_kk`", "`proxy.port`", "`mode`"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{}
			if tt.yaml != "" {
				files[ConfigFile] = tt.yaml
			}
			if tt.secrets != "" {
				files[SecretsFile] = tt.secrets
			}
			c, err := LoadWith(writeHome(t, files), noEnv)
			if err == nil {
				t.Fatalf("no error; config %+v", c)
			}
			if c != nil {
				t.Error("config returned together with an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
			var ce *Error
			if !errors.As(err, &ce) {
				t.Errorf("error is not a *config.Error: %T", err)
			}
		})
	}
}

func TestErrorFields(t *testing.T) {
	_, err := loadYAML(t, "mode: auto\nmemory:\n  top_kk: 3\n")
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("not an *Error: %v", err)
	}
	if ce.Key != "memory.top_kk" || ce.Line != 3 || filepath.Base(ce.File) != ConfigFile {
		t.Fatalf("got %+v", ce)
	}
}

// TestYAMLSyntaxErrorLine: a syntax error names the line to fix, not the
// line before it (the YAML library counts a construct's start from 0).
func TestYAMLSyntaxErrorLine(t *testing.T) {
	tests := []struct {
		name, yaml string
		line       int
	}{
		{"unclosed flow list", "mode: auto\nllm:\n  model_id: [unclosed\n  api: openai\n", 3},
		{"unclosed flow list at the end", "mode: auto\nllm:\n  model_id: [unclosed\n", 3},
		{"tab indent", "mode: auto\nllm:\n  api: openai\n\tmodel_id: x\n", 4},
		{"bad indent", "mode: auto\n  llm: x\n", 2},
		{"unterminated quote", "mode: auto\nllm:\n  api_base: \"unterminated\n", 3},
		{"mapping in a plain value", "mode: auto\nllm:\n  model_id: a: b\n", 3},
		{"a valid multi-line list before the error", "skills:\n  dir: [\n    a,\n    b]\nmode: auto\n\tx: 1\n", 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := loadYAML(t, tt.yaml)
			var ce *Error
			if !errors.As(err, &ce) || !strings.Contains(ce.Msg, "invalid YAML") {
				t.Fatalf("want an invalid-YAML error, got %v", err)
			}
			if ce.Line != tt.line {
				t.Fatalf("line %d, want %d: %v", ce.Line, tt.line, err)
			}
		})
	}
}

func TestHHMM(t *testing.T) {
	tests := []struct {
		in string
		ok bool
	}{
		{"23:00", true}, {"07:00", true}, {"7:05", true}, {"00:00", true}, {"23:59", true},
		{"24:00", false}, {"12:60", false}, {"7:5", false}, {"ab:cd", false}, {"", false},
		{"1200", false}, {"12:00:00", false}, {"-1:00", false}, {"+1:00", false}, {"12:+5", false},
	}
	for _, tt := range tests {
		if got := validHHMM(tt.in); got != tt.ok {
			t.Errorf("validHHMM(%q) = %v, want %v", tt.in, got, tt.ok)
		}
		_, err := loadYAML(t, "scheduler:\n  sleep_end: \""+tt.in+"\"\n")
		if (err == nil) != tt.ok {
			t.Errorf("sleep_end %q: load error %v, want ok=%v", tt.in, err, tt.ok)
		}
	}
}

func TestLenientScalars(t *testing.T) {
	// What Python MetaClaw accepted must keep working.
	c := mustLoad(t, `
proxy:
  port: "30001"
skills:
  enabled: yes
  auto_evolve: off
  top_k: 4.0
memory:
  use_embeddings: 1
rl:
  learning_rate: 1e-5
openrouter:
  fallback_models: a/b, c/d
`)
	if c.Proxy.Port != 30001 || !c.Skills.Enabled || c.Skills.AutoEvolve || c.Skills.TopK != 4 || !c.Memory.UseEmbeddings || c.RL.LearningRate != 1e-5 {
		t.Fatalf("got %+v %+v %+v %+v", c.Proxy, c.Skills, c.Memory, c.RL)
	}
	if got := strings.Join(c.OpenRouter.FallbackModels, "|"); got != "a/b|c/d" {
		t.Fatalf("fallback_models = %q", got)
	}
	c = mustLoad(t, "openrouter:\n  fallback_models:\n    - x\n    - y\n")
	if got := strings.Join(c.OpenRouter.FallbackModels, "|"); got != "x|y" {
		t.Fatalf("fallback_models list = %q", got)
	}
}

func TestNullAndEmptyMeanDefault(t *testing.T) {
	c := mustLoad(t, "llm:\n  timeout_seconds: null\n  provider: ~\nmemory:\nclaw_type: \"\"\nskills: {}\n")
	if c.LLM.TimeoutSeconds != 600 || c.LLM.Provider != "custom" || !c.Memory.Enabled || c.ClawType != "none" || c.Skills.TopK != 6 {
		t.Fatalf("got %+v %+v", c.LLM, c.Memory)
	}
	c = mustLoad(t, "# only a comment\n")
	if c.Mode != "auto" {
		t.Fatal(c.Mode)
	}
}

func TestAnchorsAndMergeKeys(t *testing.T) {
	c := mustLoad(t, "rl:\n  prm_url: &u https://judge.example.com/v1\nopd:\n  teacher_url: *u\nskills:\n  evolver:\n    <<: {api_base: https://ev.example.com/v1, model: m1}\n    model: m2\n")
	if c.Skills.Evolver.APIBase != "https://ev.example.com/v1" || c.Skills.Evolver.Model != "m2" || c.OPD.TeacherURL != "https://judge.example.com/v1" {
		t.Fatalf("got %+v %+v", c.Skills.Evolver, c.OPD)
	}
}

func TestPythonConfigsLoad(t *testing.T) {
	for _, name := range []string{"python-head-config.yaml", "python-old-config.yaml"} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", name))
			if err != nil {
				t.Fatal(err)
			}
			c, err := loadYAML(t, string(data))
			if err != nil {
				t.Fatalf("Python config rejected: %v", err)
			}
			if c.Mode != "auto" || c.Skills.RetrievalMode != "keyword" || c.LLM.APIKey == "" {
				t.Errorf("mode=%q retrieval=%q", c.Mode, c.Skills.RetrievalMode)
			}
			if c.Skills.Evolver.Model != "gpt-5.2" {
				t.Errorf("rl.evolver_model not used for skills.evolver.model: %+v", c.Skills.Evolver)
			}
			switch name {
			case "python-head-config.yaml":
				if c.Memory.TopK != 4 || c.Memory.MaxInjectedUnits != 4 || c.Memory.MaxTokens != 1200 {
					t.Errorf("memory aliases: %+v", c.Memory)
				}
				if c.RL.APIKey != "tml-0123456789abcdef0123456789" || c.Source("rl.api_key") != "config" {
					t.Errorf("rl.tinker_api_key not used for rl.api_key: %q (%s)", c.RL.APIKey, c.Source("rl.api_key"))
				}
				if c.Proxy.Host != "127.0.0.1" || !hasWarning(c, "proxy.host") {
					t.Errorf("Python 0.0.0.0 bind not downgraded: %q %v", c.Proxy.Host, c.Warnings)
				}
				if c.Scheduler.SleepEnd != "07:00" || !c.Scheduler.Calendar.Enabled {
					t.Errorf("scheduler: %+v", c.Scheduler)
				}
				if home, _ := os.UserHomeDir(); c.Memory.Dir != filepath.Join(home, ".metaclaw", "memory") {
					t.Errorf("memory.dir not ~-expanded: %q", c.Memory.Dir)
				}
			case "python-old-config.yaml":
				if c.Proxy.Host != "0.0.0.0" || c.ClawType != "openclaw" || c.RL.BaseURL != "https://mint.macaron.xin/" {
					t.Errorf("got host=%q claw=%q base=%q", c.Proxy.Host, c.ClawType, c.RL.BaseURL)
				}
				for _, w := range []string{"wechat.enabled", "openrouter.route", "bedrock_region", "llm.bedrock_region"} {
					if !hasWarning(c, "`"+w+"` is accepted for compatibility and ignored") {
						t.Errorf("no legacy warning for %s: %q", w, c.Warnings)
					}
				}
			}
		})
	}
}

func hasWarning(c *Config, sub string) bool {
	for _, w := range c.Warnings {
		if strings.Contains(w, sub) {
			return true
		}
	}
	return false
}

func TestAliasesAndLegacy(t *testing.T) {
	tests := []struct {
		name  string
		yaml  string
		check func(c *Config) bool
		warn  string
	}{
		{"template is keyword", "skills:\n  retrieval_mode: template\n", func(c *Config) bool { return c.Skills.RetrievalMode == "keyword" }, ""},
		{"madmax is auto", "mode: madmax\n", func(c *Config) bool { return c.Mode == "auto" }, ""},
		{"enum case-insensitive", "mode: RL\nlog:\n  level: WARNING\n", func(c *Config) bool { return c.Mode == "rl" && c.Log.Level == "warn" }, ""},
		{"semantic memory retrieval", "memory:\n  retrieval_mode: semantic\n", func(c *Config) bool { return c.Memory.RetrievalMode == "embedding" }, ""},
		{"python name fills ours", "memory:\n  flush_every: 3\n", func(c *Config) bool { return c.Memory.IngestEveryTurns == 3 && c.Memory.FlushEvery == 3 }, ""},
		{"ours wins over python name", "memory:\n  top_k: 8\n  max_injected_units: 4\n", func(c *Config) bool { return c.Memory.TopK == 8 && c.Memory.MaxInjectedUnits == 8 }, "`memory.max_injected_units` (4) is ignored because `memory.top_k` (8)"},
		{"legacy wechat", "wechat:\n  enabled: true\n", func(c *Config) bool { return c.WeChat.Enabled }, "config.yaml:2: `wechat.enabled` is accepted for compatibility and ignored"},
		{"legacy at default is quiet", "wechat:\n  enabled: false\n", func(c *Config) bool { return len(c.Warnings) == 0 }, ""},
		{"legacy configure_openclaw", "configure_openclaw: false\n", func(c *Config) bool { return c.ClawType == "none" }, "`configure_openclaw` is accepted for compatibility and ignored"},
		{"legacy oauth", "llm:\n  auth_method: oauth_token\n", func(c *Config) bool { return true }, "`llm.auth_method` is accepted for compatibility and ignored"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := mustLoad(t, tt.yaml)
			if !tt.check(c) {
				t.Errorf("check failed: warnings %q", c.Warnings)
			}
			if tt.warn != "" && !hasWarning(c, tt.warn) {
				t.Errorf("missing warning %q in %q", tt.warn, c.Warnings)
			}
		})
	}
}

func TestPaths(t *testing.T) {
	user := t.TempDir()
	t.Setenv("HOME", user)
	t.Setenv("USERPROFILE", user)
	home := writeHome(t, map[string]string{ConfigFile: "skills:\n  dir: ~/my-skills\nmemory:\n  dir: mem\nscheduler:\n  calendar:\n    credentials_path: ~/secrets.json\n"})
	c, err := LoadWith(home, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]string{
		"skills.dir":                          filepath.Join(user, "my-skills"),
		"memory.dir":                          filepath.Join(home, "mem"),
		"memory.store_path":                   filepath.Join(home, "mem", "memory.db"),
		"memory.policy_path":                  filepath.Join(home, "mem", "policy.json"),
		"scheduler.calendar.credentials_path": filepath.Join(user, "secrets.json"),
		"scheduler.calendar.token_path":       filepath.Join(home, "calendar_token.json"),
	}
	for key, want := range tests {
		if got, _ := c.Get(key); got != want {
			t.Errorf("%s = %q, want %q", key, got, want)
		}
	}
}

func TestWildcardHost(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string
		env      map[string]string
		wantHost string
		wantErr  string
	}{
		{"python default downgraded", map[string]string{ConfigFile: "proxy:\n  host: 0.0.0.0\n"}, nil, "127.0.0.1", ""},
		{"with key kept", map[string]string{ConfigFile: "proxy:\n  host: 0.0.0.0\n", SecretsFile: "proxy:\n  api_key: s3cr3t-s3cr3t-s3cr3t\n"}, nil, "0.0.0.0", ""},
		{"with env key kept", map[string]string{ConfigFile: "proxy:\n  host: 0.0.0.0\n"}, map[string]string{"METACLAW_PROXY_API_KEY": "k"}, "0.0.0.0", ""},
		{"explicit LAN address is an error", map[string]string{ConfigFile: "proxy:\n  host: 10.0.0.5\n"}, nil, "", "`proxy.api_key`"},
		{"env wildcard is an error", nil, map[string]string{"METACLAW_PROXY_HOST": "0.0.0.0"}, "", "env METACLAW_PROXY_HOST: `proxy.host`"},
		{"localhost ok", map[string]string{ConfigFile: "proxy:\n  host: localhost\n"}, nil, "localhost", ""},
		{"ipv6 loopback ok", map[string]string{ConfigFile: "proxy:\n  host: \"::1\"\n"}, nil, "::1", ""},
		{"127/8 ok", map[string]string{ConfigFile: "proxy:\n  host: 127.0.0.2\n"}, nil, "127.0.0.2", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := LoadWith(writeHome(t, tt.files), envMap(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Proxy.Host != tt.wantHost {
				t.Fatalf("host %q, want %q", c.Proxy.Host, tt.wantHost)
			}
		})
	}
	c := Default(t.TempDir())
	c.Proxy.Host = "0.0.0.0"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "proxy.api_key") {
		t.Fatalf("Validate accepted an unauthenticated wildcard bind: %v", err)
	}
}

func TestPermissionsTightened(t *testing.T) {
	home := writeHome(t, nil)
	cfg := filepath.Join(home, ConfigFile)
	if err := os.WriteFile(cfg, []byte("llm:\n  api_base: https://x.example/v1\n  api_key: sk-secret-value-1234567890\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := LoadWith(home, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(cfg)
	if st.Mode().Perm() != 0o600 || !hasWarning(c, "changed it to 0600") || !hasWarning(c, "llm.api_key") {
		t.Fatalf("mode %v warnings %q", st.Mode().Perm(), c.Warnings)
	}

	// No secrets: the user's mode is left alone.
	home2 := writeHome(t, nil)
	cfg2 := filepath.Join(home2, ConfigFile)
	if err := os.WriteFile(cfg2, []byte("mode: rl\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(cfg2, 0o644)
	c, err = LoadWith(home2, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Stat(cfg2); st.Mode().Perm() != 0o644 || len(c.Warnings) != 0 {
		t.Fatalf("mode %v warnings %q", st.Mode().Perm(), c.Warnings)
	}
}

func TestSecretsOverlay(t *testing.T) {
	home := writeHome(t, map[string]string{
		ConfigFile:  "llm:\n  api_base: https://x.example/v1\n  api_key: from-config\n",
		SecretsFile: "llm:\n  api_key: from-secrets\n",
	})
	c, err := LoadWith(home, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c.LLM.APIKey != "from-secrets" || c.Source("llm.api_key") != "secrets" || c.Source("llm.api_base") != "config" || c.Source("mode") != "default" {
		t.Fatalf("key %q sources %v", c.LLM.APIKey, c.Sources)
	}
}

func TestAliasBombIsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("x0: &a0 {provider: p}\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&b, "x%d: &a%d {<<: [*a%d, *a%d, *a%d, *a%d]}\n", i, i, i-1, i-1, i-1, i-1)
	}
	b.WriteString("llm:\n  <<: *a12\n")
	done := make(chan error, 1)
	go func() { _, err := loadYAML(t, b.String()); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("accepted")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Load did not finish")
	}
}

func TestWarningsDoNotLeakSecrets(t *testing.T) {
	c := mustLoad(t, "rl:\n  api_key: new-secret-0123456789abcdef\n  tinker_api_key: old-secret-0123456789abcdef\n")
	if !hasWarning(c, "`rl.tinker_api_key` (old-…(masked)) is ignored") {
		t.Fatalf("warnings %q", c.Warnings)
	}
	for _, w := range c.Warnings {
		if strings.Contains(w, "secret-0123456789") {
			t.Fatalf("secret in warning %q", w)
		}
	}
}

func TestTokenizerPathAccepted(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := mustLoad(t, "rl:\n  tokenizer_path: "+dir+"\n")
	if c.RL.TokenizerPath != dir {
		t.Fatalf("rl.tokenizer_path = %q", c.RL.TokenizerPath)
	}
}
