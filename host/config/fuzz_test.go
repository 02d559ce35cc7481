package config

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoad feeds arbitrary bytes as config.yaml: Load must never panic, a
// config it accepts must validate and render, and Set on it must either
// refuse or leave a file that still loads.
func FuzzLoad(f *testing.F) {
	seeds := []string{
		"",
		"mode: auto\n",
		"# comment only\n",
		"~\n",
		"llm:\n  api_base: https://api.openai.com/v1\n  api_key: sk-x\n",
		"memory:\n  top_kk: 3\n",
		"proxy:\n  port: abc\n",
		"proxy: {host: 0.0.0.0, port: 30000}\n",
		"mode: auto\n---\nmode: rl\n",
		"a: &a [*a]\n",
		"llm: &x\n  provider: p\nskills:\n  evolver:\n    <<: *x\n",
		"scheduler:\n  sleep_start: 25:00\n",
		"openrouter:\n  fallback_models:\n    - a\n    - {b: c}\n",
		"llm:\n  model_id: |\n    multi\n    line\n",
		"\"llm\":\n  'model_id': \"a\\\"b\" # c\n",
		"\xef\xbb\xbfmode: rl\n",
		"mode: auto\r\nlog:\r\n  level: debug\r\n",
		"log: null  # x\nmemory:\n",
		"- 1\n- 2\n",
		"{",
		"mode: [\n",
		"\t mode: auto",
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	for _, name := range []string{"python-head-config.yaml", "python-old-config.yaml", "set-golden.in.yaml"} {
		if b, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		home := t.TempDir()
		cfg := filepath.Join(home, ConfigFile)
		if err := os.WriteFile(cfg, data, 0o600); err != nil {
			t.Fatal(err)
		}
		c, err := LoadWith(home, noEnv)
		if err != nil {
			if c != nil {
				t.Fatal("config returned with an error")
			}
			if Set(home, "llm.provider", "fuzz") == nil {
				// Set may fix only the key it sets; the result must load.
				if _, err := LoadWith(home, noEnv); err != nil {
					t.Fatalf("Set wrote a broken file: %v", err)
				}
			} else if b, _ := os.ReadFile(cfg); string(b) != string(data) {
				t.Fatal("a refused Set changed the file")
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("loaded config does not validate: %v", err)
		}
		if _, err := c.ShowYAML(); err != nil {
			t.Fatal(err)
		}
		for _, kv := range [][2]string{{"skills.evolver.model", "m"}, {"llm.api_key", "k"}, {"mode", "rl"}} {
			if err := Set(home, kv[0], kv[1]); err != nil {
				continue // e.g. anchors; the file must be untouched then, checked below by reloading
			}
			c2, err := LoadWith(home, noEnv)
			if err != nil {
				t.Fatalf("after Set %s: %v\n%q", kv[0], err, readFileOrEmpty(cfg))
			}
			if got, _ := c2.Get(kv[0]); got != kv[1] {
				t.Fatalf("after Set %s = %q\n%q", kv[0], got, readFileOrEmpty(cfg))
			}
		}
		if err := Unset(home, "mode"); err == nil {
			if _, err := LoadWith(home, noEnv); err != nil {
				t.Fatalf("after Unset: %v", err)
			}
		}
	})
}

func readFileOrEmpty(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
