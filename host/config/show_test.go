package config

import (
	"strings"
	"testing"
)

func TestShowYAMLMasksSecrets(t *testing.T) {
	env := map[string]string{}
	var secrets []string
	for _, k := range Keys() {
		if k.Secret {
			v := "SECRET-" + strings.ToUpper(strings.ReplaceAll(k.Path, ".", "-")) + "-0123456789"
			env[k.Env] = v
			secrets = append(secrets, v)
		}
	}
	env["METACLAW_PROXY_API_KEY"] = "short" // short secrets are fully hidden
	secrets = append(secrets, "short")
	c, err := LoadWith(t.TempDir(), envMap(env))
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.ShowYAML()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets {
		if strings.Contains(string(out), s) {
			t.Errorf("secret %q visible in:\n%s", s, out)
		}
	}
	if !strings.Contains(string(out), "SECR…(masked)") || !strings.Contains(string(out), "api_key: '****'") {
		t.Errorf("masks missing:\n%s", out)
	}
	m := c.Masked()
	if got, _ := m.Get("llm"); strings.Contains(got, env["METACLAW_LLM_API_KEY"]) {
		t.Errorf("Masked().Get(llm) leaks: %s", got)
	}
	// Masking must not touch the original.
	if c.LLM.APIKey != env["METACLAW_LLM_API_KEY"] || c.Proxy.APIKey != "short" {
		t.Fatalf("original changed: %q %q", c.LLM.APIKey, c.Proxy.APIKey)
	}
	// ShowYAML output is itself a loadable config.yaml (with masks as values).
	if _, err := loadYAML(t, strings.ReplaceAll(string(out), c.Home, "/tmp/x")); err != nil {
		t.Fatalf("ShowYAML output does not load: %v", err)
	}
}

func TestMask(t *testing.T) {
	tests := map[string]string{"": "", "abc": "****", "sk-abcdefghijklmnop": "sk-a…(masked)", "ключ-ключ-ключ-ключ": "ключ…(masked)"}
	for in, want := range tests {
		if got := mask(in); got != want {
			t.Errorf("mask(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestGet(t *testing.T) {
	c := mustLoad(t, "llm:\n  api_base: https://x.example/v1\n  api_key: k\nopenrouter:\n  fallback_models: [a, b]\n")
	tests := []struct {
		key  string
		want string
		err  string
	}{
		{"mode", "auto", ""},
		{"proxy.port", "30000", ""},
		{"skills.enabled", "true", ""},
		{"rl.learning_rate", "0.0001", ""},
		{"llm.api_key", "k", ""},
		{"openrouter.fallback_models", "a,b", ""},
		{"scheduler.calendar", "enabled: false\ncredentials_path: \"\"\ntoken_path: " + c.Scheduler.Calendar.TokenPath + "\ntoken_store: auto\ncalendar_id: primary\napi_base: https://www.googleapis.com/calendar/v3\nics_url: \"\"\nrefresh_minutes: 15\n", ""},
		{"llm.api_bse", "", "did you mean `llm.api_base`?"},
		{"", "", "unknown key"},
	}
	for _, tt := range tests {
		got, err := c.Get(tt.key)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Get(%q) error %v, want %q", tt.key, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Get(%q) = %q, %v; want %q", tt.key, got, err, tt.want)
		}
	}
	sec, _ := c.Get("llm")
	if !strings.Contains(sec, "api_base: https://x.example/v1\n") || !strings.Contains(sec, "timeout_seconds: 600\n") {
		t.Errorf("Get(llm) =\n%s", sec)
	}
}

func TestAddr(t *testing.T) {
	tests := []struct {
		host string
		port int
		want string
	}{
		{"127.0.0.1", 30000, "127.0.0.1:30000"},
		{"::1", 8080, "[::1]:8080"},
		{"[::1]", 8080, "[::1]:8080"},
		{"localhost", 0, "localhost:0"},
	}
	for _, tt := range tests {
		c := Default(t.TempDir())
		c.Proxy.Host, c.Proxy.Port = tt.host, tt.port
		if got := c.Addr(); got != tt.want {
			t.Errorf("Addr() = %q, want %q", got, tt.want)
		}
	}
}

func TestEvolverEndpoint(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       Endpoint
	}{
		{"all from llm", "llm:\n  api_base: https://up.example/v1\n  api_key: k\n  model_id: m\n",
			Endpoint{"https://up.example/v1", "k", "m", "openai"}},
		{"own model", "llm:\n  api_base: https://up.example/v1\n  api_key: k\n  model_id: m\nskills:\n  evolver:\n    model: small\n",
			Endpoint{"https://up.example/v1", "k", "small", "openai"}},
		{"other host does not get the llm key", "llm:\n  api_base: https://up.example/v1\n  api_key: k\nskills:\n  evolver:\n    api_base: https://other.example/v1\n    api: anthropic\n",
			Endpoint{"https://other.example/v1", "", "", "anthropic"}},
		{"python rl.evolver_*", "llm:\n  api_base: https://up.example/v1\nrl:\n  evolver_api_base: https://ev.example/v1\n  evolver_api_key: ek\n  evolver_model: gpt-5.2\n",
			Endpoint{"https://ev.example/v1", "ek", "gpt-5.2", "openai"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustLoad(t, tt.yaml).EvolverEndpoint(); got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
