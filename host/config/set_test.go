package config

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if want := readFile(t, path); got != want {
		t.Errorf("%s mismatch (run go test -update to accept)\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

// TestSetGolden edits a hand-written file the way a user would and compares
// the result byte for byte: comments, blank lines, quoting and order survive.
func TestSetGolden(t *testing.T) {
	home := writeHome(t, map[string]string{
		ConfigFile:  readFile(t, filepath.Join("testdata", "set-golden.in.yaml")),
		SecretsFile: readFile(t, filepath.Join("testdata", "set-golden.secrets.yaml")),
	})
	steps := []struct{ op, key, value string }{
		{"set", "llm.model_id", "gpt-4o"},                     // replace, keeps the line comment
		{"set", "proxy.port", "8080"},                         // replace in a 4-space section
		{"set", "skills.top_k", "8"},                          // replace
		{"set", "skills.evolver.model", "gpt-4o-mini"},        // new subsection inside a section
		{"set", "scheduler.sleep_start", "22:30"},             // keeps double quotes
		{"set", "scheduler.sleep_end", "6:45"},                // keeps single quotes
		{"set", "scheduler.min_window_minutes", "20"},         // append to a section
		{"set", "memory.extractor", "llm"},                    // new section at the end
		{"set", "log.level", "debug"},                         // fills an empty section, keeps its comment
		{"set", "llm.api_key", "sk-new-key-0123456789abcdef"}, // secret: moves to secrets.yaml
		{"set", "openrouter.fallback_models", "a/b, c/d"},     // list
		{"unset", "wechat.enabled", ""},                       // removes the emptied section too
	}
	for _, s := range steps {
		var err error
		if s.op == "set" {
			err = Set(home, s.key, s.value)
		} else {
			err = Unset(home, s.key)
		}
		if err != nil {
			t.Fatalf("%s %s: %v", s.op, s.key, err)
		}
	}
	golden(t, "set-golden.out.yaml", readFile(t, filepath.Join(home, ConfigFile)))
	golden(t, "set-golden.secrets.out.yaml", readFile(t, filepath.Join(home, SecretsFile)))

	c, err := LoadWith(home, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c.LLM.ModelID != "gpt-4o" || c.Proxy.Port != 8080 || c.Skills.Evolver.Model != "gpt-4o-mini" || c.Scheduler.SleepStart != "22:30" ||
		c.Memory.Extractor != "llm" || c.Log.Level != "debug" || c.LLM.APIKey != "sk-new-key-0123456789abcdef" || c.Source("llm.api_key") != "secrets" {
		t.Fatalf("reloaded config differs: %+v", c)
	}
}

func TestSetSecretsRouted(t *testing.T) {
	home := t.TempDir()
	for _, key := range []string{"llm.api_key", "rl.api_key", "skills.evolver.api_key", "opd.teacher_api_key", "proxy.api_key"} {
		if err := Set(home, key, "value-of-"+key); err != nil {
			t.Fatalf("set %s: %v", key, err)
		}
	}
	if _, err := os.Stat(filepath.Join(home, ConfigFile)); !os.IsNotExist(err) {
		t.Fatalf("config.yaml written for secrets only: %v", err)
	}
	sec := filepath.Join(home, SecretsFile)
	if m := mode(t, sec); m != 0o600 {
		t.Fatalf("secrets.yaml mode %v", m)
	}
	c, err := LoadWith(home, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c.RL.APIKey != "value-of-rl.api_key" || c.RL.TinkerAPIKey != "value-of-rl.api_key" || c.Source("opd.teacher_api_key") != "secrets" {
		t.Fatalf("got %+v", c.RL)
	}

	// A secret still in config.yaml is moved out of it.
	home = writeHome(t, map[string]string{ConfigFile: "mode: rl\nrl:\n  tinker_api_key: old\n  lora_rank: 16\n"})
	if err := Set(home, "rl.api_key", "new"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(home, ConfigFile)); got != "mode: rl\nrl:\n  lora_rank: 16\n" {
		t.Fatalf("config.yaml after moving the secret:\n%s", got)
	}
	if got := readFile(t, filepath.Join(home, SecretsFile)); got != "rl:\n  api_key: new\n" {
		t.Fatalf("secrets.yaml:\n%s", got)
	}
}

func TestSetBrokenFileNotOverwritten(t *testing.T) {
	tests := []struct {
		name, content, key, value string
		want                      []string
	}{
		{"syntax error", "mode: auto\nllm:\n  api_base: \"oops\n", "mode", "rl", []string{"config.yaml:", "invalid YAML", "fix the file first"}},
		{"bad indentation", "mode: auto\n  proxy: 1\n", "mode", "rl", []string{"config.yaml:2", "invalid YAML"}},
		{"unknown key", "memory:\n  top_kk: 3\n", "mode", "rl", []string{"config.yaml:2", "`memory.top_kk`", "did you mean `memory.top_k`?", "nothing was written"}},
		{"wrong type elsewhere", "proxy:\n  port: abc\n", "mode", "rl", []string{"config.yaml:2", "`proxy.port`"}},
		{"two documents", "mode: auto\n---\nmode: rl\n", "mode", "rl", []string{"more than one YAML document"}},
		{"top level scalar", "hello\n", "mode", "rl", []string{"top level must be a mapping"}},
		{"bad value not fixed by the edit", "mode: turbo\n", "llm.model_id", "x", []string{"`mode`", "must be one of"}},
		{"secret into broken file", "llm: [\n", "llm.api_key", "k", []string{"invalid YAML"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := writeHome(t, map[string]string{ConfigFile: tt.content})
			err := Set(home, tt.key, tt.value)
			if err == nil {
				t.Fatal("Set succeeded on a broken file")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\nlacks %q", err, w)
				}
			}
			if got := readFile(t, filepath.Join(home, ConfigFile)); got != tt.content {
				t.Fatalf("file changed:\n%s", got)
			}
			if _, err := os.Stat(filepath.Join(home, SecretsFile)); !os.IsNotExist(err) {
				t.Fatal("secrets.yaml written despite the broken config.yaml")
			}
		})
	}
}

// Set and Unset may replace exactly the value that is broken.
func TestEditFixesTheBrokenKey(t *testing.T) {
	tests := []struct{ op, content, key, value, want string }{
		{"set", "proxy:\n  port: abc  # typo\n", "proxy.port", "8080", "proxy:\n  port: 8080  # typo\n"},
		{"set", "mode: turbo\n", "mode", "rl", "mode: rl\n"},
		{"unset", "memory:\n  top_kk: 3\n  top_k: 2\n", "memory.top_kk", "", "memory:\n  top_k: 2\n"},
		{"unset", "llm: openai\nmode: rl\n", "llm", "", "mode: rl\n"},
	}
	for _, tt := range tests {
		t.Run(tt.op+" "+tt.key, func(t *testing.T) {
			home := writeHome(t, map[string]string{ConfigFile: tt.content})
			var err error
			if tt.op == "set" {
				err = Set(home, tt.key, tt.value)
			} else {
				err = Unset(home, tt.key)
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, filepath.Join(home, ConfigFile)); got != tt.want {
				t.Fatalf("got %q want %q", got, tt.want)
			}
		})
	}
}

func TestSetRejectsInvalidValue(t *testing.T) {
	const content = "# keep me\nmode: auto\n"
	tests := []struct {
		key, value string
		want       []string
	}{
		{"proxy.port", "abc", []string{"`proxy.port`", "expected an integer", "metaclaw config set proxy.port 30000"}},
		{"proxy.port", "70000", []string{"`proxy.port`", "between 0 and 65535"}},
		{"mode", "turbo", []string{"`mode`", "auto, rl, skills_only"}},
		{"skills.enabled", "perhaps", []string{"expected a boolean"}},
		{"scheduler.sleep_start", "9pm", []string{"HH:MM"}},
		{"proxy.host", "0.0.0.0", []string{"`proxy.api_key`", "metaclaw config set proxy.api_key"}},
		{"llm.api_base", "localhost:8000", []string{"http(s) URL"}},
		{"memory.top_kk", "3", []string{"unknown key", "did you mean `memory.top_k`?"}},
		{"llm", "x", []string{"is a section", "llm.provider"}},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			home := writeHome(t, map[string]string{ConfigFile: content})
			err := Set(home, tt.key, tt.value)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if got := readFile(t, filepath.Join(home, ConfigFile)); got != content {
				t.Fatalf("file changed: %q", got)
			}
			entries, _ := os.ReadDir(home)
			if len(entries) != 1 {
				t.Fatalf("stray files: %v", entries)
			}
		})
	}
	// Binding to all interfaces is fine once the proxy has a key.
	home := writeHome(t, map[string]string{ConfigFile: content})
	if err := Set(home, "proxy.api_key", "long-random-secret-0123456789"); err != nil {
		t.Fatal(err)
	}
	if err := Set(home, "proxy.host", "0.0.0.0"); err != nil {
		t.Fatal(err)
	}
	if err := Unset(home, "proxy.api_key"); err == nil || !strings.Contains(err.Error(), "proxy.api_key") {
		t.Fatalf("removing the key of a public proxy: %v", err)
	}
}

// TestSetErrorLines: a rejected `config set` names lines of the file as it
// is on disk: the value being set has no line (it was never written), and
// another key's problem keeps its current line even when the edit would
// have moved it.
func TestSetErrorLines(t *testing.T) {
	home := writeHome(t, map[string]string{ConfigFile: "# my config\nmode: auto\nllm:\n  api: openai\n  model_id: gpt\n"})
	err := Set(home, "proxy.port", "70000")
	if err == nil || !strings.Contains(err.Error(), "`proxy.port`: must be between 0 and 65535") || strings.Contains(err.Error(), ConfigFile+":") {
		t.Fatalf("set proxy.port 70000: %v", err)
	}
	const public = "llm:\n  api: openai\nproxy:\n  host: 192.168.1.10\n"
	home = writeHome(t, map[string]string{ConfigFile: public})
	err = Set(home, "llm.model_id", "x") // would be inserted at line 3, moving proxy.host to line 5
	if err == nil || !strings.Contains(err.Error(), ConfigFile+":4: `proxy.host`") {
		t.Fatalf("set with another key broken: %v", err)
	}
	if got := readFile(t, filepath.Join(home, ConfigFile)); got != public {
		t.Fatalf("file changed: %q", got)
	}
}

func TestSetTypes(t *testing.T) {
	tests := []struct{ key, value, line, get string }{
		{"skills.enabled", "no", "enabled: false", "false"},
		{"skills.enabled", "1", "enabled: true", "true"},
		{"rl.learning_rate", "1e-5", "learning_rate: 1.0e-05", "1e-05"},
		{"opd.kl_penalty_coef", "2", "kl_penalty_coef: 2.0", "2"},
		{"memory.top_k", " 7 ", "top_k: 7", "7"},
		{"openrouter.fallback_models", "[x/y, 'z']", "fallback_models: [x/y, z]", "x/y,z"},
		{"openrouter.fallback_models", "a,b", "fallback_models: [a, b]", "a,b"},
		{"llm.model_id", "yes", `model_id: "yes"`, "yes"}, // a string stays a string for PyYAML too
		{"llm.model_id", "123", `model_id: "123"`, "123"},
		{"llm.model_id", "a: b # c", `model_id: 'a: b # c'`, "a: b # c"},
		{"scheduler.sleep_end", "6:30", `sleep_end: "6:30"`, "6:30"},
		{"mode", "RL", "mode: rl", "rl"},
		{"skills.retrieval_mode", "template", "retrieval_mode: keyword", "keyword"},
	}
	for _, tt := range tests {
		t.Run(tt.key+"="+tt.value, func(t *testing.T) {
			home := t.TempDir()
			if err := Set(home, tt.key, tt.value); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, filepath.Join(home, ConfigFile)); !strings.Contains(got, tt.line) {
				t.Fatalf("file %q lacks %q", got, tt.line)
			}
			c, err := LoadWith(home, noEnv)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := c.Get(tt.key); got != tt.get {
				t.Fatalf("Get = %q, want %q", got, tt.get)
			}
		})
	}
}

func TestSetFileModeAndAtomicity(t *testing.T) {
	home := filepath.Join(t.TempDir(), "new-home")
	if err := Set(home, "mode", "rl"); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(home, ConfigFile)
	if m := mode(t, cfg); m != 0o600 {
		t.Fatalf("new config.yaml mode %v", m)
	}
	if err := os.Chmod(cfg, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := Set(home, "log.level", "warn"); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, cfg); m != 0o640 {
		t.Fatalf("mode not kept: %v", m)
	}
	entries, _ := os.ReadDir(home)
	for _, e := range entries {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("temp file left behind: %s", e.Name())
		}
	}

	// A symlinked config.yaml (dotfile managers) stays a symlink.
	real := filepath.Join(t.TempDir(), "real.yaml")
	if err := os.WriteFile(real, []byte("mode: rl\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	home2 := t.TempDir()
	if err := os.Symlink(real, filepath.Join(home2, ConfigFile)); err != nil {
		t.Fatal(err)
	}
	if err := Set(home2, "mode", "auto"); err != nil {
		t.Fatal(err)
	}
	if st, _ := os.Lstat(filepath.Join(home2, ConfigFile)); st.Mode()&os.ModeSymlink == 0 {
		t.Fatal("symlink replaced by a file")
	}
	if got := readFile(t, real); got != "mode: auto\n" {
		t.Fatalf("target %q", got)
	}
}

func TestUnset(t *testing.T) {
	tests := []struct {
		name, content, secrets, key string
		wantCfg, wantSec            string
	}{
		{"leaf", "# c\nmode: rl\nllm:\n  model_id: x  # m\n  provider: kimi\n", "", "llm.model_id", "# c\nmode: rl\nllm:\n  provider: kimi\n", ""},
		{"emptied section goes", "mode: rl\n\nwechat:\n  enabled: true\n# tail\n", "", "wechat.enabled", "mode: rl\n\n# tail\n", ""},
		{"whole section", "mode: rl\nopenrouter:\n  route: price\n  fallback_models:\n    - a\n    - b\nlog:\n  level: debug\n", "", "openrouter", "mode: rl\nlog:\n  level: debug\n", ""},
		{"secret in both files", "llm:\n  api_key: a\n  provider: p\n", "llm:\n  api_key: b\n", "llm.api_key", "llm:\n  provider: p\n", ""},
		{"python name too", "memory:\n  max_injected_units: 4\n  top_k: 5\n  scope: s\n", "", "memory.top_k", "memory:\n  scope: s\n", ""},
		{"absent key is a no-op", "mode: rl\n", "", "llm.model_id", "mode: rl\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{ConfigFile: tt.content}
			if tt.secrets != "" {
				files[SecretsFile] = tt.secrets
			}
			home := writeHome(t, files)
			if err := Unset(home, tt.key); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, filepath.Join(home, ConfigFile)); got != tt.wantCfg {
				t.Errorf("config.yaml = %q, want %q", got, tt.wantCfg)
			}
			if tt.secrets != "" {
				if got := readFile(t, filepath.Join(home, SecretsFile)); got != tt.wantSec {
					t.Errorf("secrets.yaml = %q, want %q", got, tt.wantSec)
				}
			}
		})
	}
	home := t.TempDir()
	if err := Unset(home, "memory.top_kk"); err == nil || !strings.Contains(err.Error(), "did you mean `memory.top_k`?") {
		t.Fatalf("unknown key: %v", err)
	}
	if entries, _ := os.ReadDir(home); len(entries) != 0 {
		t.Fatalf("files created by a no-op: %v", entries)
	}
}

func TestSetReplacesPythonName(t *testing.T) {
	home := writeHome(t, map[string]string{ConfigFile: "memory:\n  max_injected_units: 4  # python\n  scope: work\n"})
	if err := Set(home, "memory.top_k", "8"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(home, ConfigFile)); got != "memory:\n  scope: work\n  top_k: 8\n" {
		t.Fatalf("got %q", got)
	}
}

// TestSetOddShapes: shapes beyond a plain `key: value` line are patched in
// place too (yamledit.Doc never re-encodes the file), and the result
// still means what was asked.
func TestSetOddShapes(t *testing.T) {
	tests := []struct{ name, content, key, value, want string }{
		{"flow section", "llm: {provider: kimi, model_id: a}  # c\n", "llm.model_id", "b", "llm: {provider: kimi, model_id: b}  # c\n"},
		{"new key in a flow section", "llm: {provider: 'kimi'}\n", "llm.model_id", "b", "llm: {provider: 'kimi', model_id: b}\n"},
		{"empty flow section", "openrouter: {}\n", "openrouter.route", "price", "openrouter:\n  route: price\n"},
		{"block list replaced by flow", "openrouter:\n  fallback_models:\n    - a\n    - b\n", "openrouter.fallback_models", "c",
			"openrouter:\n  fallback_models: [c]\n"},
		{"block scalar", "llm:\n  model_id: |\n    multi\n  provider: p\n", "llm.model_id", "one", "llm:\n  model_id: one\n  provider: p\n"},
		{"null section word", "log: ~\n", "log.level", "debug", "log:\n  level: debug\n"},
		{"null section with comment", "log: null  # later\n", "log.level", "debug", "log:  # later\n  level: debug\n"},
		{"empty value", "llm:\n  model_id:\n", "llm.model_id", "m", "llm:\n  model_id: m\n"},
		{"empty value with comment", "llm:\n  model_id:   # fill me\n", "llm.model_id", "m", "llm:\n  model_id: m   # fill me\n"},
		{"no trailing newline", "llm:\n  provider: p", "llm.model_id", "m", "llm:\n  provider: p\n  model_id: m\n"},
		{"comment only", "# just a comment", "mode", "rl", "# just a comment\nmode: rl\n"},
		{"crlf", "mode: auto\r\nllm:\r\n  provider: p\r\n", "llm.model_id", "m", "mode: auto\r\nllm:\r\n  provider: p\r\n  model_id: m\r\n"},
		{"document marker", "---\nmode: auto\n...\n", "llm.model_id", "m", "---\nmode: auto\nllm:\n  model_id: m\n...\n"},
		{"quoted key", "\"llm\":\n  'model_id': a\n", "llm.model_id", "b", "\"llm\":\n  'model_id': b\n"},
		{"unicode before value", "llm:\n  provider: \"ñandú\"\n  model_id: a # é\n", "llm.model_id", "b", "llm:\n  provider: \"ñandú\"\n  model_id: b # é\n"},
		{"tagged value", "llm:\n  model_id: !!str 123\n", "llm.model_id", "b", "llm:\n  model_id: b\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := writeHome(t, map[string]string{ConfigFile: tt.content})
			if err := Set(home, tt.key, tt.value); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, filepath.Join(home, ConfigFile)); got != tt.want {
				t.Fatalf("file %q, want %q", got, tt.want)
			}
			c, err := LoadWith(home, noEnv)
			if err != nil {
				t.Fatalf("result does not load: %v", err)
			}
			if got, _ := c.Get(tt.key); got != tt.value {
				t.Fatalf("%s = %q", tt.key, got)
			}
		})
	}
}

// TestUnsetOddShapes: removing a key from a flow section rewrites only the
// braces; a shape the editor cannot patch as meant is refused, not
// re-encoded, and nothing is written.
func TestUnsetOddShapes(t *testing.T) {
	home := writeHome(t, map[string]string{ConfigFile: "mode: rl  # keep\nllm: {provider: kimi, model_id: a}\n"})
	if err := Unset(home, "llm.model_id"); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(home, ConfigFile)); got != "mode: rl  # keep\nllm: {provider: kimi}\n" {
		t.Fatalf("got %q", got)
	}
	const anchored = "llm: &l\n  provider: kimi\n  model_id: a\nrl:\n  model: x\n"
	home = writeHome(t, map[string]string{ConfigFile: anchored})
	if err := Unset(home, "llm.model_id"); err == nil || !strings.Contains(err.Error(), "anchor") {
		t.Fatalf("unset inside an anchored section: %v", err)
	}
	if got := readFile(t, filepath.Join(home, ConfigFile)); got != anchored {
		t.Fatalf("file changed: %q", got)
	}
}

func TestSetAnchorRefused(t *testing.T) {
	content := "rl:\n  prm_url: &u https://a.example/v1\nopd:\n  teacher_url: *u\n"
	home := writeHome(t, map[string]string{ConfigFile: content})
	if err := Set(home, "rl.prm_url", "https://b.example/v1"); err == nil || !strings.Contains(err.Error(), "anchor") {
		t.Fatalf("got %v", err)
	}
	if got := readFile(t, filepath.Join(home, ConfigFile)); got != content {
		t.Fatal("file changed")
	}
}

func TestSetConcurrent(t *testing.T) {
	home := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			key := []string{"llm.model_id", "llm.provider", "log.level", "memory.scope"}[i%4]
			val := fmt.Sprint("v", i)
			if key == "log.level" {
				val = "debug"
			}
			errs <- Set(home, key, val)
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	c, err := LoadWith(home, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if c.LLM.ModelID == "" || c.LLM.Provider == "custom" || c.Log.Level != "debug" || c.Memory.Scope == "default" {
		t.Fatalf("lost updates: %+v %+v", c.LLM, c.Memory.Scope)
	}
	if !bytes.HasSuffix([]byte(readFile(t, filepath.Join(home, ConfigFile))), []byte("\n")) {
		t.Fatal("no trailing newline")
	}
}
