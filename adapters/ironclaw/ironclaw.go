// Package ironclaw wires IronClaw. v1 ("Reborn", config.toml with
// api_version = "ironclaw.runtime/v1"): the [llm.default] slot becomes the
// openai_compatible provider pointed at the proxy. v0 (~/.ironclaw/.env):
// LLM_BACKEND/LLM_BASE_URL/LLM_MODEL/LLM_API_KEY. IronClaw runs one agent
// per home; MCP over stdio is rejected by IronClaw, so there is no hooks path.
package ironclaw

import (
	"fmt"
	"path/filepath"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
)

// KnownAPIVersion is the config api_version this adapter knows.
const KnownAPIVersion = "ironclaw.runtime/v1"

// KeyEnv names the variable IronClaw reads the proxy key from: IronClaw
// rejects inline secrets in config.toml.
const KeyEnv = "METACLAW_PROXY_API_KEY"

// Adapter is the IronClaw adapter.
type Adapter struct{}

// New returns the adapter.
func New() *Adapter { return &Adapter{} }

// Name implements adapters.Adapter.
func (*Adapter) Name() string { return "ironclaw" }

// Detect implements adapters.Adapter.
func (a *Adapter) Detect(env *adapters.Env, override string) (*adapters.Detection, error) {
	reborn := env.Get("IRONCLAW_REBORN_HOME")
	if reborn == "" {
		reborn = filepath.Join(env.Home, ".ironclaw", "reborn")
	}
	reborn = env.Expand(reborn)
	cfg := filepath.Join(reborn, "config.toml")
	if override != "" {
		cfg = env.Expand(override)
		reborn = filepath.Dir(cfg)
	}
	d := &adapters.Detection{Client: a.Name(), Home: reborn, ConfigPath: cfg, Default: []string{"main"}}
	if env.Exists(cfg) {
		doc, err := readTOML(env, cfg)
		if err != nil {
			return nil, err
		}
		v := adapters.Str(doc, "api_version")
		if v != KnownAPIVersion {
			if v == "" {
				v = "(none)"
			}
			return nil, adapters.Unsupported("ironclaw config api_version %s in %s is not one this metaclaw knows (%s); update metaclaw", v, cfg, KnownAPIVersion)
		}
		d.Found, d.Version, d.Schema = true, "v1 Reborn ("+v+")", "v1"
		return d, nil
	}
	if override == "" {
		envFile := filepath.Join(env.Home, ".ironclaw", ".env")
		if env.Exists(envFile) {
			d.Found, d.Version, d.Schema, d.ConfigPath, d.Home = true, "v0 (~/.ironclaw/.env)", "v0", envFile, filepath.Dir(envFile)
		}
	}
	return d, nil
}

func readTOML(env *adapters.Env, path string) (*edit.TOML, error) {
	b, err := env.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc, err := edit.ParseTOML(b)
	if err != nil {
		return nil, fmt.Errorf("ironclaw: %s: %w", path, err)
	}
	return doc, nil
}

// Plan implements adapters.Adapter.
func (a *Adapter) Plan(env *adapters.Env, d *adapters.Detection, req *adapters.Request) (*adapters.Plan, error) {
	agents := adapters.PickAgents(req, d)
	if len(agents) != 1 {
		return nil, fmt.Errorf("ironclaw runs one agent per home: wire one agent here, and another IronClaw home with IRONCLAW_REBORN_HOME=<dir> metaclaw wire ironclaw --agent <id>")
	}
	if req.Via.Hooks() {
		return nil, fmt.Errorf("ironclaw has no hook or stdio MCP point metaclaw can use (hooks are WASM, stdio MCP is rejected); wire with --via proxy")
	}
	agent := agents[0]
	base := req.OpenAIURL(req.LocalHost(), agent)
	p := &adapters.Plan{Agents: agents, Via: adapters.ViaProxy, URLs: map[string]string{agent: base}}
	if d.Schema == "v0" {
		return planV0(env, d, req, p, base)
	}
	doc, err := readTOML(env, d.ConfigPath)
	if err != nil {
		return nil, err
	}
	model, err := adapters.ModelOr(req, adapters.Str(doc, "llm", "default", "model"), "ironclaw", "[llm.default] model")
	if err != nil {
		return nil, err
	}
	slot := []string{"llm", "default"}
	for _, kv := range []edit.KV{{Key: "provider_id", Value: "openai_compatible"}, {Key: "base_url", Value: base}, {Key: "model", Value: model}} {
		if err := doc.Set(slot, kv.Key, kv.Value); err != nil {
			return nil, fmt.Errorf("ironclaw: [llm.default]: %w", err)
		}
	}
	if req.ProxyKey != "" {
		if err := doc.Set(slot, "api_key_env", KeyEnv); err != nil {
			return nil, err
		}
		p.Note("IronClaw reads the proxy key from $%s (it rejects keys written in config.toml): add %s=<proxy.api_key> to the environment of the IronClaw service", KeyEnv, KeyEnv)
	} else if err := doc.Remove(slot, "api_key_env"); err != nil {
		// the old provider's key variable must not be sent to the proxy
		return nil, err
	}
	if err := doc.Verify(); err != nil {
		return nil, fmt.Errorf("ironclaw: %s: %w", d.ConfigPath, err)
	}
	p.Files = []*adapters.FileChange{{Path: d.ConfigPath, Format: "toml", After: doc.Bytes(), Mode: 0o600}}
	p.Restart = []adapters.Command{{Name: "ironclaw", Args: []string{"service", "restart"}, Why: "IronClaw reads config.toml at start", Optional: true}}
	p.Expect = []adapters.Expect{
		{File: d.ConfigPath, Format: "toml", Path: edit.P("llm", "default", "base_url"), Want: base, What: "[llm.default] points at the proxy (" + base + ")"},
		{File: d.ConfigPath, Format: "toml", Path: edit.P("llm", "default", "provider_id"), Want: "openai_compatible", What: "[llm.default] uses the openai_compatible provider"},
	}
	return p, nil
}

// planV0 edits ~/.ironclaw/.env (IronClaw 0.x).
func planV0(env *adapters.Env, d *adapters.Detection, req *adapters.Request, p *adapters.Plan, base string) (*adapters.Plan, error) {
	b, err := env.ReadFile(d.ConfigPath)
	if err != nil {
		return nil, err
	}
	e, err := edit.ParseEnv(b)
	if err != nil {
		return nil, fmt.Errorf("ironclaw: %s: %w", d.ConfigPath, err)
	}
	cur, _ := e.Get("LLM_MODEL")
	if cur == "" {
		backend, _ := e.Get("LLM_BACKEND")
		if backend == "" {
			backend = "nearai"
		}
		cur, _ = e.Get(map[string]string{"nearai": "NEARAI_MODEL", "ollama": "OLLAMA_MODEL", "anthropic": "ANTHROPIC_MODEL",
			"openai": "OPENAI_MODEL", "minimax": "MINIMAX_MODEL", "gemini_oauth": "GEMINI_MODEL", "github_copilot": "GITHUB_COPILOT_MODEL"}[backend])
	}
	model, err := adapters.ModelOr(req, cur, "ironclaw", "LLM_MODEL in "+d.ConfigPath)
	if err != nil {
		return nil, err
	}
	for _, kv := range [][2]string{{"LLM_BACKEND", "openai_compatible"}, {"LLM_BASE_URL", base}, {"LLM_MODEL", model}, {"LLM_API_KEY", req.Key()}} {
		if err := e.Set(kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	if err := e.Verify(); err != nil {
		return nil, fmt.Errorf("ironclaw: %s: %w", d.ConfigPath, err)
	}
	p.Files = []*adapters.FileChange{{Path: d.ConfigPath, Format: "env", After: e.Bytes(), Mode: 0o600}}
	p.Note("IronClaw 0.x: a backend chosen during onboarding is stored in its database and wins over LLM_BACKEND; if turns do not reach MetaClaw, run `ironclaw onboard` and pick openai_compatible")
	p.Note("IronClaw 0.x has no `service restart`: restart IronClaw yourself")
	p.Expect = []adapters.Expect{{File: d.ConfigPath, Format: "env", Path: edit.P("LLM_BASE_URL"), Want: base, What: "LLM_BASE_URL points at the proxy (" + base + ")"}}
	return p, nil
}
