package setup

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/internal/fakellm"
)

func TestPlan(t *testing.T) {
	home := t.TempDir()
	cfg := config.Default(home)
	tests := []struct {
		name    string
		mode    string // the config's mode before ("" = the default, auto)
		env     string // a training key in the environment: TINKER_API_KEY=…
		a       Answers
		want    []string // "key=new"; "key=" means unchanged
		wantErr bool
	}{
		{"rl off keeps the default mode", "", "", Answers{Provider: "openai", APIBase: "https://api.openai.com/v1", API: "openai", APIKey: "sk-abcdefghijk", Model: "gpt-4.1", Memory: true, SkillReview: "auto", RLBackend: "off"},
			[]string{"llm.api_key=sk-abcdefghijk", "llm.api_base=https://api.openai.com/v1", "llm.model_id=gpt-4.1", "llm.provider=openai", "mode="}, false},
		{"rl off keeps auto when no training backend is configured", "", "", Answers{Memory: true, RLBackend: "off"}, []string{"mode=", "rl.enabled="}, false},
		{"rl off turns auto off when a training key is in the environment", "", "TINKER_API_KEY=tml-env-key", Answers{Memory: true, RLBackend: "off"}, []string{"mode=skills_only"}, false},
		{"rl off turns auto off when rl.api_key is set", "", "rl.api_key=tml-file-key", Answers{Memory: true, RLBackend: "off"}, []string{"mode=skills_only"}, false},
		{"rl off keeps skills_only", "skills_only", "TINKER_API_KEY=tml-env-key", Answers{Memory: true, RLBackend: "off"}, []string{"mode="}, false},
		{"rl off turns mode rl off", "rl", "", Answers{Memory: true, RLBackend: "off"}, []string{"mode=skills_only"}, false},
		{"rl tinker", "", "", Answers{Memory: false, RLBackend: "tinker", RLAPIKey: "tk-1234567890", RLModel: "Qwen/Qwen3-8B", SleepStart: "22:00", SleepEnd: "06:30"},
			[]string{"rl.api_key=tk-1234567890", "memory.enabled=false", "rl.backend=tinker", "rl.enabled=true", "rl.model=Qwen/Qwen3-8B", "scheduler.sleep_start=22:00", "scheduler.sleep_end=06:30"}, false},
		{"bad backend", "", "", Answers{RLBackend: "gpu"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, v := range []string{"TINKER_API_KEY", "MINT_API_KEY", "WEAVER_API_KEY", "MINT_BASE_URL", "WEAVER_BASE_URL"} {
				t.Setenv(v, "")
			}
			c := *cfg
			if tt.mode != "" {
				c.Mode = tt.mode
			}
			switch k, v, _ := strings.Cut(tt.env, "="); k {
			case "rl.api_key":
				c.RL.APIKey = v
			case "":
			default:
				t.Setenv(k, v)
			}
			changes, err := Plan(&c, tt.a)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err %v", err)
			}
			got := map[string]string{}
			for _, c := range changes {
				got[c.Key] = c.New
			}
			for _, w := range tt.want {
				k, v, _ := strings.Cut(w, "=")
				if got[k] != v {
					t.Errorf("%s = %q, want %q (plan %v)", k, got[k], v, changes)
				}
			}
			// Secrets come first and are masked when shown.
			for i, c := range changes {
				if c.Secret && i > 0 && !changes[i-1].Secret {
					t.Errorf("secret %s after a plain key", c.Key)
				}
				if c.Secret && strings.Contains(c.String(), c.New) {
					t.Errorf("secret shown: %s", c)
				}
			}
		})
	}
}

// TestPlanWritesWhatTheEnvironmentHolds: a key (and the base URL it
// implies) that the config only has from this shell's environment is
// written, with a note, so that a host started elsewhere has it too.
func TestPlanWritesWhatTheEnvironmentHolds(t *testing.T) {
	home := t.TempDir()
	env := func(k string) (string, bool) {
		if k == "OPENAI_API_KEY" {
			return "sk-env-0123456789", true
		}
		return "", false
	}
	cfg, err := config.LoadWith(home, env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LLM.APIKey == "" || cfg.Source("llm.api_key") != "env OPENAI_API_KEY" {
		t.Fatalf("the environment's key is not in the config: %q from %s", cfg.LLM.APIKey, cfg.Source("llm.api_key"))
	}
	p, _ := PresetByID("openai")
	changes, err := Plan(cfg, Answers{Provider: p.ID, APIBase: p.APIBase, API: p.API, Model: p.Model, APIKey: "sk-env-0123456789", APIKeyEnv: "OPENAI_API_KEY", Memory: true, RLBackend: "off"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Change{}
	for _, c := range changes {
		got[c.Key] = c
	}
	if c, ok := got["llm.api_key"]; !ok || c.New != "sk-env-0123456789" || !strings.Contains(c.String(), "read from $OPENAI_API_KEY, stored in secrets.yaml") || strings.Contains(c.String(), "sk-env-0123456789") {
		t.Fatalf("key change %+v (%s)", c, c)
	}
	if c, ok := got["llm.api_base"]; !ok || c.New != p.APIBase {
		t.Fatalf("base change %+v", c)
	}
	if err := Apply(home, changes); err != nil {
		t.Fatal(err)
	}
	// A host started without the variable has the upstream and the key.
	bare, err := config.LoadWith(home, func(string) (string, bool) { return "", false })
	if err != nil || bare.LLM.APIKey != "sk-env-0123456789" || bare.LLM.APIBase != p.APIBase || bare.UpstreamKeySource() != "secrets" {
		t.Fatalf("after apply, without the variable: %v key %q base %q from %s", err, bare.LLM.APIKey, bare.LLM.APIBase, bare.UpstreamKeySource())
	}
	if len(Warnings(bare)) != 0 {
		t.Fatalf("warnings for a complete config: %v", Warnings(bare))
	}
}

func TestWarnings(t *testing.T) {
	noEnv := func(string) (string, bool) { return "", false }
	tests := []struct {
		name  string
		files map[string]string
		env   map[string]string
		want  []string // substrings, one warning each
	}{
		{"nothing configured", nil, nil, []string{"no upstream LLM is configured: the proxy will answer every request with an error"}},
		{"remote upstream without a key", map[string]string{config.ConfigFile: "llm:\n  api_base: https://api.example.com/v1\n"}, nil,
			[]string{"no API key for https://api.example.com/v1"}},
		{"local upstream without a key", map[string]string{config.ConfigFile: "llm:\n  api_base: http://127.0.0.1:11434/v1\n"}, nil, nil},
		{"key only in the environment", map[string]string{config.ConfigFile: "llm:\n  api_base: https://api.example.com/v1\n"}, map[string]string{"OPENAI_API_KEY": "sk-x"},
			[]string{"llm.api_key comes from $OPENAI_API_KEY in this environment only"}},
		{"key stored", map[string]string{config.ConfigFile: "llm:\n  api_base: https://api.example.com/v1\n", config.SecretsFile: "llm:\n  api_key: sk-stored\n"}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			home := t.TempDir()
			for name, text := range tt.files {
				if err := os.WriteFile(filepath.Join(home, name), []byte(text), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			env := noEnv
			if tt.env != nil {
				env = func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok }
			}
			cfg, err := config.LoadWith(home, env)
			if err != nil {
				t.Fatal(err)
			}
			got := Warnings(cfg)
			if len(got) != len(tt.want) {
				t.Fatalf("warnings %q, want %d", got, len(tt.want))
			}
			for i, w := range tt.want {
				if !strings.Contains(got[i], w) {
					t.Errorf("warning %q lacks %q", got[i], w)
				}
			}
		})
	}
}

func TestApplyThenPlanIsEmpty(t *testing.T) {
	home := t.TempDir()
	a := Answers{Provider: "kimi", APIBase: "https://api.moonshot.cn/v1", API: "openai", APIKey: "sk-kimi-123456789", Model: "kimi-k2", Memory: true, SkillReview: "manual", RLBackend: "off"}
	changes, err := Plan(config.Default(home), a)
	if err != nil {
		t.Fatal(err)
	}
	if err := Apply(home, changes); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadWith(home, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Plan(cfg, a)
	if len(again) != 0 {
		t.Fatalf("plan after apply: %v", again)
	}
	if b, _ := os.ReadFile(filepath.Join(home, config.ConfigFile)); strings.Contains(string(b), "sk-kimi") {
		t.Fatal("secret in config.yaml")
	}
}

func TestProbe(t *testing.T) {
	up := fakellm.New()
	defer up.Close()
	if err := Probe(context.Background(), up.URL+"/v1", "openai", "k", "m"); err != nil {
		t.Fatalf("openai probe: %v", err)
	}
	if err := Probe(context.Background(), up.URL, "anthropic", "k", "m"); err != nil {
		t.Fatalf("anthropic probe: %v", err)
	}
	deny := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, `{"error":"bad key"}`, 401) }))
	defer deny.Close()
	if err := Probe(context.Background(), deny.URL+"/v1", "openai", "k", "m"); err == nil || !strings.Contains(err.Error(), "refused the API key") {
		t.Fatalf("401: %v", err)
	}
	noList := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"p"},"finish_reason":"length"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`))
	}))
	defer noList.Close()
	if err := Probe(context.Background(), noList.URL+"/v1", "openai", "k", "m"); err != nil {
		t.Fatalf("fallback to one token: %v", err)
	}
	if err := Probe(context.Background(), "http://127.0.0.1:1/v1", "openai", "k", "m"); err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Fatalf("unreachable: %v", err)
	}
}

func TestDetectClientsAndPresets(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, ".openclaw"), 0o755)
	os.MkdirAll(filepath.Join(home, ".qwenpaw"), 0o755)
	t.Setenv("HERMES_HOME", filepath.Join(home, "custom-hermes"))
	os.MkdirAll(filepath.Join(home, "custom-hermes"), 0o755)
	got := strings.Join(DetectClients(home), ",")
	if got != "openclaw,copaw,hermes" {
		t.Fatalf("detected %s", got)
	}
	for _, p := range Presets {
		if p.ID != "custom" && (p.APIBase == "" || (p.API != "openai" && p.API != "anthropic")) {
			t.Errorf("preset %s incomplete", p.ID)
		}
	}
	if _, ok := PresetByID("OpenRouter"); !ok {
		t.Fatal("preset lookup is case-insensitive")
	}
}
