package config

import (
	"strings"
	"testing"
)

func TestEnvOverrides(t *testing.T) {
	tests := []struct {
		env, value, key, want string
	}{
		{"METACLAW_LLM_API_BASE", "https://env.example/v1", "llm.api_base", "https://env.example/v1"},
		{"METACLAW_PROXY_PORT", "8080", "proxy.port", "8080"},
		{"METACLAW_SKILLS_EVOLVER_MODEL", "gpt-4o-mini", "skills.evolver.model", "gpt-4o-mini"},
		{"METACLAW_SCHEDULER_CALENDAR_ENABLED", "yes", "scheduler.calendar.enabled", "true"},
		{"METACLAW_OPENROUTER_FALLBACK_MODELS", "a, b", "openrouter.fallback_models", "a,b"},
		{"METACLAW_RL_LEARNING_RATE", "2e-4", "rl.learning_rate", "0.0002"},
		{"METACLAW_MODE", "skills_only", "mode", "skills_only"},
		{"METACLAW_MEMORY_TOP_K", "9", "memory.max_injected_units", "9"}, // Python name follows ours
	}
	for _, tt := range tests {
		t.Run(tt.env, func(t *testing.T) {
			t.Setenv(tt.env, tt.value)
			// The file sets the same keys; env must win.
			home := writeHome(t, map[string]string{ConfigFile: "mode: rl\nproxy:\n  port: 1234\nllm:\n  api_base: https://file.example/v1\n"})
			c, err := Load(home)
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.Get(tt.key)
			if err != nil || got != tt.want {
				t.Fatalf("%s = %q, %v; want %q", tt.key, got, err, tt.want)
			}
			if src := c.Source(tt.key); src != "env "+tt.env {
				t.Errorf("source %q", src)
			}
		})
	}
}

func TestEnvEmptyIsUnset(t *testing.T) {
	t.Setenv("METACLAW_PROXY_PORT", "")
	c, err := Load(writeHome(t, map[string]string{ConfigFile: "proxy:\n  port: 1234\n"}))
	if err != nil || c.Proxy.Port != 1234 {
		t.Fatalf("port %v err %v", c, err)
	}
}

func TestEnvBadValues(t *testing.T) {
	tests := []struct{ env, value, want string }{
		{"METACLAW_PROXY_PORT", "abc", "env METACLAW_PROXY_PORT: `proxy.port`: expected an integer"},
		{"METACLAW_SKILLS_ENABLED", "maybe", "env METACLAW_SKILLS_ENABLED"},
		{"METACLAW_MODE", "turbo", "env METACLAW_MODE: `mode`: must be one of"},
		{"METACLAW_SCHEDULER_SLEEP_START", "25:00", "env METACLAW_SCHEDULER_SLEEP_START"},
		{"METACLAW_PROXY_PORT", "99999", "env METACLAW_PROXY_PORT: `proxy.port`: must be between 0 and 65535"},
	}
	for _, tt := range tests {
		t.Run(tt.env+"="+tt.value, func(t *testing.T) {
			t.Setenv(tt.env, tt.value)
			_, err := Load(t.TempDir())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestUpstreamFallback(t *testing.T) {
	tests := []struct {
		name                   string
		yaml, secrets          string
		env                    map[string]string
		wantAPI, wantBase      string
		wantKey, wantSource    string
		wantKeySource          string
		wantConfiguredUpstream bool
		wantWarning            string
	}{
		{
			name: "openai key only", env: map[string]string{"OPENAI_API_KEY": "sk-o"},
			wantAPI: "openai", wantBase: "https://api.openai.com/v1", wantKey: "sk-o",
			wantSource: "env OPENAI_API_KEY", wantKeySource: "env OPENAI_API_KEY", wantConfiguredUpstream: true,
		},
		{
			name: "openai base and key", env: map[string]string{"OPENAI_API_KEY": "sk-o", "OPENAI_BASE_URL": "https://gw.example/v1"},
			wantAPI: "openai", wantBase: "https://gw.example/v1", wantKey: "sk-o",
			wantSource: "env OPENAI_BASE_URL", wantKeySource: "env OPENAI_API_KEY", wantConfiguredUpstream: true,
		},
		{
			name: "anthropic key only", env: map[string]string{"ANTHROPIC_API_KEY": "sk-ant"},
			wantAPI: "anthropic", wantBase: "https://api.anthropic.com", wantKey: "sk-ant",
			wantSource: "env ANTHROPIC_API_KEY", wantKeySource: "env ANTHROPIC_API_KEY", wantConfiguredUpstream: true,
		},
		{
			name: "anthropic base only", env: map[string]string{"ANTHROPIC_BASE_URL": "https://claude.example"},
			wantAPI: "anthropic", wantBase: "https://claude.example", wantKey: "",
			wantSource: "env ANTHROPIC_BASE_URL", wantKeySource: "default", wantConfiguredUpstream: true,
		},
		{
			name: "openai preferred when both", env: map[string]string{"OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-ant"},
			wantAPI: "openai", wantBase: "https://api.openai.com/v1", wantKey: "sk-o",
			wantSource: "env OPENAI_API_KEY", wantKeySource: "env OPENAI_API_KEY", wantConfiguredUpstream: true,
		},
		{
			name: "explicit llm.api anthropic prefers ANTHROPIC_*", yaml: "llm:\n  api: anthropic\n",
			env:     map[string]string{"OPENAI_API_KEY": "sk-o", "ANTHROPIC_API_KEY": "sk-ant", "ANTHROPIC_BASE_URL": "https://claude.example"},
			wantAPI: "anthropic", wantBase: "https://claude.example", wantKey: "sk-ant",
			wantSource: "env ANTHROPIC_BASE_URL", wantKeySource: "env ANTHROPIC_API_KEY", wantConfiguredUpstream: true,
		},
		{
			name: "explicit llm.api anthropic ignores OPENAI_*", yaml: "llm:\n  api: anthropic\n",
			env:     map[string]string{"OPENAI_API_KEY": "sk-o"},
			wantAPI: "anthropic", wantBase: "", wantKey: "", wantSource: "", wantKeySource: "default",
		},
		{
			name: "config base wins, key from env", yaml: "llm:\n  api_base: https://api.openai.com/v1\n",
			env:     map[string]string{"OPENAI_API_KEY": "sk-o", "OPENAI_BASE_URL": "https://ignored.example/v1"},
			wantAPI: "openai", wantBase: "https://api.openai.com/v1", wantKey: "sk-o",
			wantSource: "config", wantKeySource: "env OPENAI_API_KEY", wantConfiguredUpstream: true,
		},
		{
			name: "config key wins", yaml: "llm:\n  api_base: https://x.example/v1\n  api_key: from-file\n",
			env:     map[string]string{"OPENAI_API_KEY": "sk-o"},
			wantAPI: "openai", wantBase: "https://x.example/v1", wantKey: "from-file",
			wantSource: "config", wantKeySource: "config", wantConfiguredUpstream: true,
		},
		{
			name: "METACLAW_ override wins", env: map[string]string{"METACLAW_LLM_API_BASE": "https://mc.example/v1", "OPENAI_BASE_URL": "https://o.example/v1"},
			wantAPI: "openai", wantBase: "https://mc.example/v1", wantKey: "",
			wantSource: "env METACLAW_LLM_API_BASE", wantKeySource: "default", wantConfiguredUpstream: true,
		},
		{
			name: "nothing configured", env: map[string]string{},
			wantAPI: "openai", wantSource: "", wantKeySource: "default",
		},
		{
			name: "the variables `metaclaw env` sets point at the proxy itself", secrets: "proxy:\n  api_key: pk-proxy-key-123456\n",
			env: map[string]string{"OPENAI_API_KEY": "pk-proxy-key-123456", "OPENAI_BASE_URL": "http://127.0.0.1:30000/v1",
				"ANTHROPIC_API_KEY": "pk-proxy-key-123456", "ANTHROPIC_BASE_URL": "http://localhost:30000"},
			wantAPI: "openai", wantSource: "", wantKeySource: "default",
			wantWarning: "OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL hold this proxy's own address or key",
		},
		{
			name: "the proxy key is never sent upstream", yaml: "llm:\n  api_base: https://api.openai.com/v1\n", secrets: "proxy:\n  api_key: pk-proxy-key-123456\n",
			env:     map[string]string{"OPENAI_API_KEY": "pk-proxy-key-123456"},
			wantAPI: "openai", wantBase: "https://api.openai.com/v1", wantSource: "config", wantKeySource: "default", wantConfiguredUpstream: true,
			wantWarning: "OPENAI_API_KEY holds this proxy's own address or key",
		},
		{
			name: "a local model server on another port is an upstream", env: map[string]string{"OPENAI_BASE_URL": "http://127.0.0.1:11434/v1"},
			wantAPI: "openai", wantBase: "http://127.0.0.1:11434/v1", wantSource: "env OPENAI_BASE_URL", wantKeySource: "default", wantConfiguredUpstream: true,
		},
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
			c, err := LoadWith(writeHome(t, files), envMap(tt.env))
			if err != nil {
				t.Fatal(err)
			}
			warnings := strings.Join(c.Warnings, "\n")
			if (tt.wantWarning == "") != (warnings == "") || !strings.Contains(warnings, tt.wantWarning) {
				t.Errorf("warnings %q, want %q", warnings, tt.wantWarning)
			}
			if strings.Contains(warnings, "pk-proxy-key") {
				t.Errorf("a warning shows the key: %q", warnings)
			}
			if c.LLM.API != tt.wantAPI || c.LLM.APIBase != tt.wantBase || c.LLM.APIKey != tt.wantKey {
				t.Errorf("api=%q base=%q key=%q", c.LLM.API, c.LLM.APIBase, c.LLM.APIKey)
			}
			if got := c.UpstreamSource(); got != tt.wantSource {
				t.Errorf("UpstreamSource() = %q, want %q", got, tt.wantSource)
			}
			if got := c.Source("llm.api_key"); got != tt.wantKeySource {
				t.Errorf("key source %q, want %q", got, tt.wantKeySource)
			}
			if c.UpstreamConfigured() != tt.wantConfiguredUpstream {
				t.Errorf("UpstreamConfigured() = %v", c.UpstreamConfigured())
			}
		})
	}
}

// The real process environment goes through Load (t.Setenv), not only LoadWith.
func TestUpstreamFallbackProcessEnv(t *testing.T) {
	for _, k := range []string{"OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "METACLAW_LLM_API_BASE", "METACLAW_LLM_API_KEY", "METACLAW_LLM_API"} {
		t.Setenv(k, "")
	}
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-env")
	c, err := Load(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if c.LLM.API != "anthropic" || c.LLM.APIBase != "https://api.anthropic.com" || c.LLM.APIKey != "sk-ant-env" || c.UpstreamSource() != "env ANTHROPIC_API_KEY" {
		t.Fatalf("got %+v from %q", c.LLM, c.UpstreamSource())
	}
	if c.Source("llm.api") != "env ANTHROPIC_API_KEY" {
		t.Fatalf("llm.api source %q", c.Source("llm.api"))
	}
}
