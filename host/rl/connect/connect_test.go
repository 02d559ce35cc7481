package connect

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/backend/tinker"
	"github.com/metaclaw-go/metaclaw/host/rl/backend/weaver"
	"github.com/metaclaw-go/metaclaw/internal/faketinker"
	"github.com/metaclaw-go/metaclaw/internal/fakeweaver"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestDetect(t *testing.T) {
	tests := []struct {
		kind, key, url string
		env            map[string]string
		want           string
	}{
		{"tinker", "sk-mint-x", "", nil, "tinker"},
		{"auto", "tml-x", "", nil, "tinker"},
		{"", "tml-x", "https://tinker.thinkingmachines.dev/services/tinker-prod", nil, "tinker"},
		{"auto", "sk-mint-abc", "", nil, "mint"},
		{"auto", "k", "https://mint.macaron.im", nil, "mint"},
		{"auto", "k", "", map[string]string{"MINT_API_KEY": "x"}, "mint"},
		{"auto", "k", "https://weaver-console.nex-agi.cn", nil, "weaver"},
		{"auto", "sk-mint-abc", "", map[string]string{"WEAVER_BASE_URL": "x"}, "weaver"},
		{"plugin", "", "", nil, "plugin"},
	}
	for _, tc := range tests {
		if got := Detect(tc.kind, tc.key, tc.url, env(tc.env)); got != tc.want {
			t.Errorf("Detect(%q, %q, %q, %v) = %q, want %q", tc.kind, tc.key, tc.url, tc.env, got, tc.want)
		}
	}
}

func TestResolveFallbacks(t *testing.T) {
	r := Resolve(config.RL{Backend: "mint"}, env(map[string]string{"MINT_API_KEY": "sk-mint-1", "TINKER_BASE_URL": "https://t"}))
	if r.APIKey != "sk-mint-1" || r.BaseURL != "https://t" {
		t.Errorf("%+v", r)
	}
	r = Resolve(config.RL{Backend: "tinker", APIKey: "tml-cfg", BaseURL: "https://cfg"}, env(map[string]string{"TINKER_API_KEY": "tml-env"}))
	if r.APIKey != "tml-cfg" || r.BaseURL != "https://cfg" {
		t.Errorf("config must win: %+v", r)
	}
}

func TestOpen(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ft := faketinker.New(faketinker.Options{Flavor: faketinker.MinT, APIKey: "sk-mint-k"})
	ts := httptest.NewServer(ft)
	defer ts.Close()
	defer ft.Close()
	cfg := config.Default(t.TempDir())
	cfg.RL.Backend, cfg.RL.BaseURL, cfg.RL.APIKey, cfg.RL.Model, cfg.RL.LoRARank = "auto", ts.URL, "sk-mint-k", "toy", 8
	b, err := Open(ctx, cfg, Options{Getenv: env(nil), Tinker: tinker.Options{PollDelay: func(string) time.Duration { return time.Millisecond }}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Name() != "mint" {
		t.Errorf("auto with an sk-mint- key opened %s", b.Name())
	}
	tr, err := b.CreateModel(ctx, ModelConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.OptimStep(ctx, Adam(cfg)); err != nil {
		t.Errorf("MinT optim_step with the configured Adam: %v", err)
	}

	fw := fakeweaver.New(fakeweaver.Options{APIKey: "sk-w"})
	ws := httptest.NewServer(fw)
	defer ws.Close()
	defer fw.Close()
	cfg.RL.Backend, cfg.RL.BaseURL, cfg.RL.APIKey = "weaver", ws.URL, "sk-w"
	wb, err := Open(ctx, cfg, Options{Getenv: env(nil), Weaver: weaver.Options{PollBase: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer wb.Close()
	if wb.Name() != "weaver" {
		t.Errorf("opened %s", wb.Name())
	}
	var _ backend.Backend = wb

	cfg.RL.Backend, cfg.RL.APIKey = "tinker", ""
	if _, err := Open(ctx, cfg, Options{Getenv: env(nil)}); err == nil || !strings.Contains(err.Error(), "rl.api_key") {
		t.Errorf("no key: %v", err)
	}
	cfg.RL.Backend, cfg.Plugins.Trainer, cfg.Plugins.Dir = "plugin", "missing", t.TempDir()
	if _, err := Open(ctx, cfg, Options{Getenv: env(nil)}); err == nil || !strings.Contains(err.Error(), "plugins.trainer") {
		t.Errorf("missing plugin: %v", err)
	}
}
