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
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/llm"
	"github.com/metaclaw-go/metaclaw/host/rl/connect"
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

	// The environment variables APIKey and RLAPIKey were read from, if any
	// (the plan says the keys are stored).
	APIKeyEnv, RLAPIKeyEnv string
}

// Change is one config key the plan sets.
type Change struct {
	Key    string
	Old    string
	New    string
	Secret bool
	Note   string // said after the change, e.g. where a secret came from and where it goes
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
	s := fmt.Sprintf("%s: %s -> %s", c.Key, old, nu)
	if c.Note != "" {
		s += "  (" + c.Note + ")"
	}
	return s
}

// RLStatus says what choosing an RL backend does in this build; the wizard,
// `setup --help` and the plan show it. Keep it true as RL lands.
const RLStatus = "With a backend, main turns are answered by your LoRA of the chosen model on it (its tokenizer: metaclaw rl fetch-tokenizer), " +
	"every answer is stored as a sample scored by the judge, and the LoRA trains on the samples in the scheduler's windows " +
	"(sleep hours, idle); each step is swapped into serving. It needs a judge (or nothing trains) and is tested against fakes of " +
	"these services, not the live ones (docs/rl.md)"

// storedNote explains a secret read from an environment variable: it is
// copied into secrets.yaml, so a host started anywhere has it.
func storedNote(env string) string {
	if env == "" {
		return ""
	}
	return "read from $" + env + ", stored in " + config.SecretsFile + " (0600) so a host started from another shell, systemd or a client's plugin has it"
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
	notes := map[string]string{"llm.api_key": storedNote(a.APIKeyEnv), "rl.api_key": storedNote(a.RLAPIKeyEnv)}
	switch a.RLBackend {
	case "", "off":
		// The mode is the user's: auto (the default) and skills_only both
		// learn skills and memories, and auto runs no RL without a training
		// backend. rl asks for RL, and auto with a backend configured (a key
		// in the files or the environment) would run it: both are turned off.
		want["rl.enabled"] = "false"
		switch {
		case cfg.Mode == "rl":
			want["mode"] = "skills_only"
		case cfg.Mode == "auto" && connect.Configured(cfg, os.Getenv):
			want["mode"] = "skills_only"
			notes["mode"] = "RL off: in mode auto the training backend configured here (rl.api_key or its environment variable) would answer main turns"
		}
	case "tinker", "mint", "weaver":
		notes["rl.backend"] = RLStatus
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
		// A value that only came from the environment is not in the file:
		// it is written, so that a host started elsewhere (systemd, a
		// client's plugin, another shell) has it too.
		if src := cfg.Source(key); strings.HasPrefix(src, "env ") {
			old = ""
		}
		if old == nu {
			continue
		}
		changes = append(changes, Change{Key: key, Old: old, New: nu, Secret: secret[key], Note: notes[key]})
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

// Warnings lists what a saved configuration will not do, so that setup says
// it before a client finds out: no upstream (the proxy answers every request
// with an error), no key for a remote upstream, or an upstream that only
// this shell's environment holds.
func Warnings(cfg *config.Config) []string {
	if !cfg.UpstreamConfigured() {
		var ids []string
		for _, p := range Presets {
			ids = append(ids, p.ID)
		}
		return []string{"no upstream LLM is configured: the proxy will answer every request with an error, so nothing will answer your agent. " +
			"Choose one: metaclaw setup --provider <" + strings.Join(ids, "|") + "> --api-key-env VAR --yes"}
	}
	var w []string
	for _, key := range []string{"llm.api_base", "llm.api_key"} {
		if src := cfg.Source(key); strings.HasPrefix(src, "env ") {
			name := strings.TrimPrefix(src, "env ")
			w = append(w, fmt.Sprintf("%s comes from $%s in this environment only: a host started elsewhere (another shell, systemd, a client's plugin) needs it set too, "+
				"or save it: metaclaw config set %s \"$%s\"", key, name, key, name))
		}
	}
	if cfg.LLM.APIKey == "" && !isLocalURL(cfg.LLM.APIBase) {
		w = append(w, fmt.Sprintf("no API key for %s: it will most likely refuse every request (HTTP 401). "+
			"Save one: metaclaw setup --api-key-env VAR --yes (stored in %s, 0600)", cfg.LLM.APIBase, config.SecretsFile))
	}
	return w
}

// isLocalURL reports whether u points at this machine (a local model server
// usually needs no key).
func isLocalURL(u string) bool {
	pu, err := url.Parse(u)
	if err != nil {
		return false
	}
	h := pu.Hostname()
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}
