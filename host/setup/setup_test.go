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
		a       Answers
		want    []string // "key=new"
		wantErr bool
	}{
		{"rl off", Answers{Provider: "openai", APIBase: "https://api.openai.com/v1", API: "openai", APIKey: "sk-abcdefghijk", Model: "gpt-4.1", Memory: true, SkillReview: "auto", RLBackend: "off"},
			[]string{"llm.api_key=sk-abcdefghijk", "llm.api_base=https://api.openai.com/v1", "llm.model_id=gpt-4.1", "llm.provider=openai", "mode=skills_only"}, false},
		{"rl tinker", Answers{Memory: false, RLBackend: "tinker", RLAPIKey: "tk-1234567890", RLModel: "Qwen/Qwen3-8B", SleepStart: "22:00", SleepEnd: "06:30"},
			[]string{"rl.api_key=tk-1234567890", "memory.enabled=false", "rl.backend=tinker", "rl.enabled=true", "rl.model=Qwen/Qwen3-8B", "scheduler.sleep_start=22:00", "scheduler.sleep_end=06:30"}, false},
		{"bad backend", Answers{RLBackend: "gpu"}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes, err := Plan(cfg, tt.a)
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
