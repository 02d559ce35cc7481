// Package copaw wires CoPaw and its successor QwenPaw. Providers live in
// the secret dir (<working dir>.secret), not in config.json:
//   - QwenPaw (providers/ directory): a custom provider file per agent
//     (providers/custom/metaclaw-<agent>.json) and that agent's
//     workspaces/<agent>/agent.json active_model; --via hooks adds the
//     MetaClaw MCP client to the agent's mcp.clients.
//   - CoPaw (single providers.json): custom_providers.metaclaw-<agent> and
//     active_llm (one agent).
package copaw

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
)

// Adapter is the CoPaw/QwenPaw adapter.
type Adapter struct{}

// New returns the adapter.
func New() *Adapter { return &Adapter{} }

// Name implements adapters.Adapter.
func (*Adapter) Name() string { return "copaw" }

// WorkingDir is $QWENPAW_WORKING_DIR, $COPAW_WORKING_DIR, ~/.copaw when it
// exists (legacy), else ~/.qwenpaw.
func WorkingDir(env *adapters.Env) string {
	for _, k := range []string{"QWENPAW_WORKING_DIR", "COPAW_WORKING_DIR"} {
		if v := env.Get(k); v != "" {
			return env.Expand(v)
		}
	}
	legacy := filepath.Join(env.Home, ".copaw")
	if st, err := os.Stat(legacy); err == nil && st.IsDir() {
		return legacy
	}
	return filepath.Join(env.Home, ".qwenpaw")
}

// Detect implements adapters.Adapter.
func (a *Adapter) Detect(env *adapters.Env, override string) (*adapters.Detection, error) {
	wd := WorkingDir(env)
	if override != "" {
		wd = env.Expand(override)
	}
	cfg := filepath.Join(wd, "config.json")
	d := &adapters.Detection{Client: a.Name(), Home: wd, ConfigPath: cfg}
	if !env.Exists(cfg) {
		return d, nil
	}
	doc, err := readJSON(env, cfg)
	if err != nil {
		return nil, err
	}
	d.Found = true
	name := "CoPaw"
	if filepath.Base(wd) == ".qwenpaw" || len(adapters.Keys(doc, "agents", "profiles")) > 0 {
		name = "QwenPaw"
	}
	secret := wd + ".secret"
	st, err := os.Stat(filepath.Join(secret, "providers"))
	switch {
	case err == nil && st.IsDir():
		d.Schema, d.Version = "providers-dir", name+" (providers in "+filepath.Join(secret, "providers")+")"
	case env.Exists(filepath.Join(secret, "providers.json")):
		d.Schema, d.Version = "providers-file", name+" (providers in "+filepath.Join(secret, "providers.json")+")"
	default:
		return nil, adapters.Unsupported("copaw: no provider store at %s (neither providers/ nor providers.json); start %s once so it creates it, then wire again", secret, name)
	}
	d.Agents = adapters.Keys(doc, "agents", "profiles")
	def := adapters.Str(doc, "agents", "active_agent")
	if def == "" {
		def = "default"
	}
	d.Default = []string{def}
	return d, nil
}

func readJSON(env *adapters.Env, path string) (*edit.JSON, error) {
	b, err := env.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc, err := edit.ParseJSON(b)
	if err != nil {
		return nil, fmt.Errorf("copaw: %s does not parse: %w", path, err)
	}
	return doc, nil
}

// ProviderID is the custom provider metaclaw adds for an agent.
func ProviderID(agent string) string { return "metaclaw-" + agent }

func secretDir(d *adapters.Detection) string { return d.Home + ".secret" }

// Plan implements adapters.Adapter.
func (a *Adapter) Plan(env *adapters.Env, d *adapters.Detection, req *adapters.Request) (*adapters.Plan, error) {
	agents := adapters.PickAgents(req, d)
	p := &adapters.Plan{Agents: agents, Via: req.Via, URLs: map[string]string{}}
	if d.Schema == "providers-file" {
		if err := planFile(env, d, req, p, agents); err != nil {
			return nil, err
		}
	} else {
		for _, ag := range agents {
			if err := planAgent(env, d, req, p, ag); err != nil {
				return nil, err
			}
		}
	}
	p.Note("CoPaw/QwenPaw loads providers when it starts: restart it (stop the app, then `qwenpaw app` or `copaw app`); `daemon restart` only prints instructions")
	return p, nil
}

// planAgent: QwenPaw's providers/ directory and the agent's agent.json.
func planAgent(env *adapters.Env, d *adapters.Detection, req *adapters.Request, p *adapters.Plan, agent string) error {
	if len(d.Agents) > 0 && !slices.Contains(d.Agents, agent) {
		return adapters.UnknownAgent("copaw", agent, d.ConfigPath+" agents.profiles", d.Agents)
	}
	agentFile := filepath.Join(d.Home, "workspaces", agent, "agent.json")
	if !env.Exists(agentFile) {
		return fmt.Errorf("copaw: %s not found: open agent %q once in the app so it writes its agent.json, then wire again", agentFile, agent)
	}
	doc, err := readJSON(env, agentFile)
	if err != nil {
		return err
	}
	format := "json5"
	if doc.Strict() {
		format = "json"
	}
	if req.Via.Proxy() {
		model := adapters.Str(doc, "active_model", "model")
		if model == "" {
			if g, err := readJSON(env, filepath.Join(secretDir(d), "providers", "active_model.json")); err == nil {
				model = adapters.Str(g, "model")
			}
		}
		if model == "" {
			// the legacy single file QwenPaw migrates at its next start
			if g, err := readJSON(env, filepath.Join(secretDir(d), "providers.json")); err == nil {
				model = adapters.Str(g, "active_llm", "model")
			}
		}
		model, err := adapters.ModelOr(req, model, "copaw", "active_model in "+agentFile+" and providers/active_model.json")
		if err != nil {
			return err
		}
		base := req.OpenAIURL(req.LocalHost(), agent)
		pid := ProviderID(agent)
		prov := edit.O("id", pid, "name", "MetaClaw ("+agent+")", "base_url", base, "api_key", req.Key(),
			"chat_model", "OpenAIChatModel", "models", []any{edit.O("id", model, "name", model)}, "is_custom", true)
		pf, err := newJSON(prov)
		if err != nil {
			return err
		}
		provPath := filepath.Join(secretDir(d), "providers", "custom", pid+".json")
		// Owned: QwenPaw re-encrypts api_key when it loads the file.
		p.Files = append(p.Files, &adapters.FileChange{Path: provPath, Format: "json", After: pf, Mode: 0o600, Owned: true})
		if err := doc.Set(edit.P("active_model"), edit.O("provider_id", pid, "model", model)); err != nil {
			return fmt.Errorf("copaw: %s: %w", agentFile, err)
		}
		p.URLs[agent] = base
		p.Expect = append(p.Expect,
			adapters.Expect{File: provPath, Format: "json", Path: edit.P("base_url"), Want: base, What: "provider " + pid + " points at the proxy (" + base + ")"},
			adapters.Expect{File: agentFile, Format: format, Path: edit.P("active_model", "provider_id"), Want: pid, What: "agent " + agent + " uses provider " + pid},
		)
	}
	if req.Via.Hooks() {
		client := edit.O("name", "MetaClaw", "description", "MetaClaw memory and skills", "enabled", true, "transport", "stdio",
			"command", req.Bin(), "args", adapters.MCPArgs(agent))
		if err := doc.Set(edit.P("mcp", "clients", "metaclaw"), client); err != nil {
			return fmt.Errorf("copaw: %s mcp.clients: %w", agentFile, err)
		}
		p.Expect = append(p.Expect, adapters.Expect{File: agentFile, Format: format, Path: edit.P("mcp", "clients", "metaclaw", "enabled"), Want: true, What: "agent " + agent + " has the MetaClaw MCP client"})
	}
	if err := doc.Verify(); err != nil {
		return fmt.Errorf("copaw: %s: %w", agentFile, err)
	}
	p.Files = append(p.Files, &adapters.FileChange{Path: agentFile, Format: format, After: doc.Bytes(), Mode: 0o600})
	return nil
}

// newJSON renders a new JSON file (two-space indent, as QwenPaw writes).
func newJSON(v edit.Obj) ([]byte, error) {
	doc, err := edit.ParseJSON([]byte("{}"))
	if err != nil {
		return nil, err
	}
	for _, kv := range v {
		if err := doc.Set(edit.P(kv.Key), kv.Value); err != nil {
			return nil, err
		}
	}
	if err := doc.Verify(); err != nil {
		return nil, err
	}
	return append(doc.Bytes(), '\n'), nil
}

// planFile: CoPaw's single providers.json (custom_providers + active_llm).
func planFile(env *adapters.Env, d *adapters.Detection, req *adapters.Request, p *adapters.Plan, agents []string) error {
	if len(agents) != 1 {
		return fmt.Errorf("copaw with a single providers.json has one active model for every agent: wire one agent")
	}
	if req.Via.Hooks() {
		return fmt.Errorf("copaw: this CoPaw keeps no per-agent agent.json for MCP clients; wire with --via proxy")
	}
	agent := agents[0]
	path := filepath.Join(secretDir(d), "providers.json")
	doc, err := readJSON(env, path)
	if err != nil {
		return err
	}
	model, err := adapters.ModelOr(req, adapters.Str(doc, "active_llm", "model"), "copaw", "active_llm.model in "+path)
	if err != nil {
		return err
	}
	base := req.OpenAIURL(req.LocalHost(), agent)
	pid := ProviderID(agent)
	prov := edit.O("id", pid, "name", "MetaClaw ("+agent+")", "default_base_url", base, "models", []any{edit.O("id", model, "name", model)},
		"base_url", base, "api_key", req.Key(), "chat_model", "OpenAIChatModel")
	if err := doc.Set(edit.P("custom_providers", pid), prov); err != nil {
		return fmt.Errorf("copaw: %s: %w", path, err)
	}
	if err := doc.Set(edit.P("active_llm"), edit.O("provider_id", pid, "model", model)); err != nil {
		return err
	}
	if err := doc.Verify(); err != nil {
		return fmt.Errorf("copaw: %s: %w", path, err)
	}
	p.Files = []*adapters.FileChange{{Path: path, Format: "json", After: doc.Bytes(), Mode: 0o600}}
	p.URLs[agent] = base
	p.Expect = []adapters.Expect{
		{File: path, Format: "json", Path: edit.P("custom_providers", pid, "base_url"), Want: base, What: "provider " + pid + " points at the proxy (" + base + ")"},
		{File: path, Format: "json", Path: edit.P("active_llm", "provider_id"), Want: pid, What: "the active model uses " + pid},
	}
	return nil
}
