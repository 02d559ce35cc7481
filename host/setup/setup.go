// Package setup is the first-run logic behind `metaclaw setup`: provider
// presets, the plan of config changes an answer set implies, the endpoint
// probe, and applying the plan without clobbering the user's file. The CLI
// asks the questions; this package decides and writes.
package setup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/llm"
)

// Preset is a known LLM provider.
type Preset struct {
	ID      string
	Name    string
	APIBase string
	API     string // openai | anthropic
	Model   string // a sensible default
	KeyEnv  string // the environment variable users usually keep its key in
	Local   bool   // runs on this machine; no key needed
}

// Presets lists the providers the wizard offers, in display order.
var Presets = []Preset{
	{ID: "openai", Name: "OpenAI", APIBase: "https://api.openai.com/v1", API: "openai", Model: "gpt-4.1", KeyEnv: "OPENAI_API_KEY"},
	{ID: "anthropic", Name: "Anthropic", APIBase: "https://api.anthropic.com", API: "anthropic", Model: "claude-sonnet-4-5", KeyEnv: "ANTHROPIC_API_KEY"},
	{ID: "kimi", Name: "Kimi (Moonshot)", APIBase: "https://api.moonshot.cn/v1", API: "openai", Model: "kimi-k2-0905-preview", KeyEnv: "MOONSHOT_API_KEY"},
	{ID: "qwen", Name: "Qwen (DashScope)", APIBase: "https://dashscope.aliyuncs.com/compatible-mode/v1", API: "openai", Model: "qwen-plus", KeyEnv: "DASHSCOPE_API_KEY"},
	{ID: "minimax", Name: "MiniMax", APIBase: "https://api.minimax.chat/v1", API: "openai", Model: "MiniMax-M2", KeyEnv: "MINIMAX_API_KEY"},
	{ID: "novita", Name: "Novita", APIBase: "https://api.novita.ai/v3/openai", API: "openai", Model: "moonshotai/kimi-k2-instruct", KeyEnv: "NOVITA_API_KEY"},
	{ID: "openrouter", Name: "OpenRouter", APIBase: "https://openrouter.ai/api/v1", API: "openai", Model: "anthropic/claude-sonnet-4.5", KeyEnv: "OPENROUTER_API_KEY"},
	{ID: "volcengine", Name: "Volcano Engine (Ark)", APIBase: "https://ark.cn-beijing.volces.com/api/v3", API: "openai", Model: "doubao-seed-1-6-250615", KeyEnv: "ARK_API_KEY"},
	{ID: "ollama", Name: "Ollama (local)", APIBase: "http://127.0.0.1:11434/v1", API: "openai", Model: "qwen3:8b", Local: true},
	{ID: "vllm", Name: "vLLM (local)", APIBase: "http://127.0.0.1:8000/v1", API: "openai", Model: "", Local: true},
	{ID: "lmstudio", Name: "LM Studio (local)", APIBase: "http://127.0.0.1:1234/v1", API: "openai", Model: "", Local: true},
	{ID: "custom", Name: "Custom endpoint", API: "openai"},
}

// PresetByID finds a preset.
func PresetByID(id string) (Preset, bool) {
	for _, p := range Presets {
		if p.ID == strings.ToLower(id) {
			return p, true
		}
	}
	return Preset{}, false
}

// Clients the wizard can wire, in display order.
var Clients = []string{"openclaw", "copaw", "ironclaw", "picoclaw", "zeroclaw", "nanoclaw", "nemoclaw", "hermes", "none"}

// clientHomes are where each client keeps its state (relative to $HOME),
// with the environment variable that overrides it.
var clientHomes = map[string]struct{ env, dir string }{
	"openclaw": {"OPENCLAW_STATE_DIR", ".openclaw"},
	"copaw":    {"COPAW_WORKING_DIR", ".copaw"},
	"ironclaw": {"IRONCLAW_HOME", ".ironclaw"},
	"picoclaw": {"PICOCLAW_HOME", ".picoclaw"},
	"zeroclaw": {"ZEROCLAW_HOME", ".zeroclaw"},
	"nanoclaw": {"NANOCLAW_DIR", "nanoclaw"},
	"nemoclaw": {"NEMOCLAW_HOME", ".nemoclaw"},
	"hermes":   {"HERMES_HOME", ".hermes"},
}

// DetectClients returns the clients that look installed for this user,
// first in the wizard's list. QwenPaw counts as copaw.
func DetectClients(home string) []string {
	var found []string
	for _, c := range Clients {
		h, ok := clientHomes[c]
		if !ok {
			continue
		}
		dir := os.Getenv(h.env)
		if dir == "" {
			dir = filepath.Join(home, h.dir)
		}
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			found = append(found, c)
			continue
		}
		if c == "copaw" {
			if fi, err := os.Stat(filepath.Join(home, ".qwenpaw")); err == nil && fi.IsDir() {
				found = append(found, c)
			}
		}
	}
	return found
}

// Answers are everything the wizard asks.
type Answers struct {
	Client string
	Agents []string

	Provider string
	APIBase  string
	API      string
	APIKey   string
	Model    string

	Memory      bool
	InstallBank bool
	SkillReview string // auto | manual

	RLBackend  string // off | tinker | mint | weaver
	RLAPIKey   string
	RLModel    string
	JudgeURL   string
	JudgeModel string
	JudgeKey   string
	SleepStart string
	SleepEnd   string

	Port int // 0 = keep
}

// Change is one config key the plan sets.
type Change struct {
	Key    string
	Old    string
	New    string
	Secret bool
}

// String renders a change for the diff the user confirms (secrets masked).
func (c Change) String() string {
	old, nu := c.Old, c.New
	if c.Secret {
		old, nu = mask(old), mask(nu)
	}
	if old == "" {
		old = `""`
	}
	return fmt.Sprintf("%s: %s -> %s", c.Key, old, nu)
}

func mask(s string) string {
	if s == "" {
		return `""`
	}
	if len(s) <= 8 {
		return "****"
	}
	return s[:4] + "…(masked)"
}

// Plan lists the changes a set of answers makes to cfg (only keys whose
// value differs), secrets first so the file is valid after every step.
func Plan(cfg *config.Config, a Answers) ([]Change, error) {
	want := map[string]string{}
	if a.Client != "" {
		want["claw_type"] = a.Client
	}
	if a.APIBase != "" {
		want["llm.api_base"] = a.APIBase
	}
	if a.Provider != "" {
		want["llm.provider"] = a.Provider
	}
	if a.API != "" {
		want["llm.api"] = a.API
	}
	if a.APIKey != "" {
		want["llm.api_key"] = a.APIKey
	}
	if a.Model != "" {
		want["llm.model_id"] = a.Model
	}
	want["memory.enabled"] = strconv.FormatBool(a.Memory)
	if a.SkillReview != "" {
		want["skills.review"] = a.SkillReview
	}
	switch a.RLBackend {
	case "", "off":
		want["mode"] = "skills_only"
		want["rl.enabled"] = "false"
	case "tinker", "mint", "weaver":
		want["mode"] = "auto"
		want["rl.enabled"] = "true"
		want["rl.backend"] = a.RLBackend
		if a.RLAPIKey != "" {
			want["rl.api_key"] = a.RLAPIKey
		}
		if a.RLModel != "" {
			want["rl.model"] = a.RLModel
		}
		if a.JudgeURL != "" {
			want["rl.prm_url"] = a.JudgeURL
		}
		if a.JudgeModel != "" {
			want["rl.prm_model"] = a.JudgeModel
		}
		if a.JudgeKey != "" {
			want["rl.prm_api_key"] = a.JudgeKey
		}
		if a.SleepStart != "" {
			want["scheduler.sleep_start"] = a.SleepStart
		}
		if a.SleepEnd != "" {
			want["scheduler.sleep_end"] = a.SleepEnd
		}
	default:
		return nil, fmt.Errorf("unknown RL backend %q: use off, tinker, mint or weaver", a.RLBackend)
	}
	if a.Port != 0 {
		want["proxy.port"] = strconv.Itoa(a.Port)
	}
	secret := map[string]bool{}
	for _, k := range config.Keys() {
		secret[k.Path] = k.Secret
	}
	var changes []Change
	for key, nu := range want {
		old, err := cfg.Get(key)
		if err != nil {
			return nil, err
		}
		if old == nu {
			continue
		}
		// A value that only came from the environment is not in the file: show it as unset.
		if src := cfg.Source(key); strings.HasPrefix(src, "env ") {
			old = ""
		}
		changes = append(changes, Change{Key: key, Old: old, New: nu, Secret: secret[key]})
	}
	sort.Slice(changes, func(i, j int) bool {
		if changes[i].Secret != changes[j].Secret {
			return changes[i].Secret
		}
		return changes[i].Key < changes[j].Key
	})
	return changes, nil
}

// Apply writes the plan with config.Set, key by key (each write validates
// the whole config and keeps the user's comments; secrets go to secrets.yaml).
func Apply(home string, changes []Change) error {
	for _, c := range changes {
		if err := config.Set(home, c.Key, c.New); err != nil {
			return fmt.Errorf("set %s: %w", c.Key, err)
		}
	}
	return nil
}

// Probe checks that the endpoint answers with the key: GET {base}/models for
// OpenAI-compatible endpoints (falling back to a one-token request when the
// listing is not offered), a one-token request for Anthropic. The error says
// what failed in words a user can act on.
func Probe(ctx context.Context, base, api, key, model string) error {
	if base == "" {
		return errors.New("no base URL")
	}
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if api != "anthropic" {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/models", nil)
		if err != nil {
			return fmt.Errorf("bad base URL %q: %w", base, err)
		}
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("cannot reach %s: %v (check the URL and your network)", base, err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
		resp.Body.Close()
		switch {
		case resp.StatusCode == http.StatusOK:
			return nil
		case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
			return fmt.Errorf("%s refused the API key (HTTP %d): check the key", base, resp.StatusCode)
		case resp.StatusCode != http.StatusNotFound && resp.StatusCode != http.StatusMethodNotAllowed:
			return fmt.Errorf("%s/models answered HTTP %d: %.200s", strings.TrimRight(base, "/"), resp.StatusCode, body)
		}
		// No model listing here: try one token instead.
	}
	c := llm.New(config.Endpoint{APIBase: base, APIKey: key, Model: model, API: api}, "probe", nil, 20*time.Second)
	if _, err := c.Complete(ctx, llm.Request{Messages: []llm.Message{{Role: "user", Content: "ping"}}, MaxTokens: 1}); err != nil {
		msg := err.Error()
		switch {
		case strings.Contains(msg, "HTTP 401"), strings.Contains(msg, "HTTP 403"):
			return fmt.Errorf("%s refused the API key: %s", base, msg)
		case strings.Contains(msg, "HTTP 404"):
			return fmt.Errorf("%s does not serve this API or model %q: %s", base, model, msg)
		}
		return fmt.Errorf("one-token test request failed: %s", msg)
	}
	return nil
}
