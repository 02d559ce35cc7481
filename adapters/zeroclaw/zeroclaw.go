// Package zeroclaw wires ZeroClaw (config.toml). Schema 3: a provider slot
// per agent ([providers.models.custom.metaclaw-<agent>], or the anthropic
// family for Anthropic agents) and [agents.<alias>].model_provider; --via
// hooks adds the MetaClaw MCP server, granted per agent through an MCP
// bundle. Files without schema_version are V1: default_provider becomes
// custom:<proxy URL>.
package zeroclaw

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
)

// KnownSchema is the newest schema_version this adapter knows.
const KnownSchema = 3

// Adapter is the ZeroClaw adapter.
type Adapter struct{}

// New returns the adapter.
func New() *Adapter { return &Adapter{} }

// Name implements adapters.Adapter.
func (*Adapter) Name() string { return "zeroclaw" }

// Detect implements adapters.Adapter.
func (a *Adapter) Detect(env *adapters.Env, override string) (*adapters.Detection, error) {
	home := filepath.Join(env.Home, ".zeroclaw")
	cfg := override
	if cfg == "" {
		cfg = env.Get("ZEROCLAW_CONFIG_PATH")
	}
	if cfg == "" && env.Get("ZEROCLAW_WORKSPACE") != "" {
		cfg = filepath.Join(env.Expand(env.Get("ZEROCLAW_WORKSPACE")), "config.toml")
	}
	if cfg == "" {
		cfg = filepath.Join(home, "config.toml")
	}
	cfg = env.Expand(cfg)
	d := &adapters.Detection{Client: a.Name(), Home: filepath.Dir(cfg), ConfigPath: cfg}
	if !env.Exists(cfg) {
		return d, nil
	}
	doc, err := read(env, cfg)
	if err != nil {
		return nil, err
	}
	d.Found = true
	v, ok := adapters.Num(doc, "schema_version")
	switch {
	case !ok || v == 1:
		d.Version, d.Schema = "V1 (no schema_version)", "v1"
		d.Agents = append([]string{"main"}, adapters.Keys(doc, "agents")...)
		d.Default = []string{"main"}
	case v == KnownSchema:
		d.Version, d.Schema = "schema_version 3", "v3"
		d.Agents = adapters.Keys(doc, "agents")
		d.Default = slices.Clone(d.Agents)
	case v > KnownSchema:
		return nil, adapters.Unsupported("zeroclaw config schema_version %d is newer than this metaclaw knows (%d); update metaclaw", v, KnownSchema)
	default:
		return nil, adapters.Unsupported("zeroclaw config schema_version %d is not one this metaclaw knows (V1 or 3)", v)
	}
	return d, nil
}

func read(env *adapters.Env, path string) (*edit.TOML, error) {
	b, err := env.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc, err := edit.ParseTOML(b)
	if err != nil {
		return nil, fmt.Errorf("zeroclaw: %s: %w", path, err)
	}
	return doc, nil
}

// Alias is the provider alias metaclaw adds for an agent.
func Alias(agent string) string { return "metaclaw-" + strings.ReplaceAll(agent, ".", "_") }

// Plan implements adapters.Adapter.
func (a *Adapter) Plan(env *adapters.Env, d *adapters.Detection, req *adapters.Request) (*adapters.Plan, error) {
	doc, err := read(env, d.ConfigPath)
	if err != nil {
		return nil, err
	}
	agents := adapters.PickAgents(req, d)
	if len(agents) == 0 {
		return nil, fmt.Errorf("zeroclaw: %s defines no [agents.<alias>]; create one (zeroclaw quickstart) and wire again", d.ConfigPath)
	}
	p := &adapters.Plan{Agents: agents, Via: req.Via, URLs: map[string]string{}}
	for _, ag := range agents {
		if !slices.Contains(d.Agents, ag) {
			return nil, adapters.UnknownAgent("zeroclaw", ag, d.ConfigPath+" [agents]", d.Agents)
		}
	}
	if req.Via.Proxy() {
		for _, ag := range agents {
			if d.Schema == "v1" {
				err = wireV1(doc, d, req, p, ag)
			} else {
				err = wireV3(doc, d, req, p, ag)
			}
			if err != nil {
				return nil, err
			}
		}
	}
	if req.Via.Hooks() {
		if err := wireMCP(doc, d, req, p, agents); err != nil {
			return nil, err
		}
	}
	if err := doc.Verify(); err != nil {
		return nil, fmt.Errorf("zeroclaw: %s: %w", d.ConfigPath, err)
	}
	p.Files = []*adapters.FileChange{{Path: d.ConfigPath, Format: "toml", After: doc.Bytes(), Mode: 0o600}}
	p.Restart = []adapters.Command{{Name: "zeroclaw", Args: []string{"service", "restart"}, Why: "load the new config", Optional: true}}
	return p, nil
}

func wireV3(doc *edit.TOML, d *adapters.Detection, req *adapters.Request, p *adapters.Plan, agent string) error {
	ref := adapters.Str(doc, "agents", agent, "model_provider")
	family, alias, _ := strings.Cut(ref, ".")
	model := adapters.Str(doc, "providers", "models", family, alias, "model")
	model, err := adapters.ModelOr(req, model, "zeroclaw", "agents."+agent+".model_provider and its provider's model")
	if err != nil {
		return err
	}
	ours := Alias(agent)
	slot, base := "custom", req.OpenAIURL(req.LocalHost(), agent)
	if family == "anthropic" {
		slot, base = "anthropic", req.AnthropicURL(req.LocalHost(), agent)
	}
	table := []string{"providers", "models", slot, ours}
	for _, kv := range []edit.KV{{Key: "uri", Value: base}, {Key: "model", Value: model}, {Key: "api_key", Value: req.Key()}} {
		if err := doc.Set(table, kv.Key, kv.Value); err != nil {
			return fmt.Errorf("zeroclaw: [%s]: %w", strings.Join(table, "."), err)
		}
	}
	// keep sampling settings the agent relied on (some models reject temperature)
	for _, k := range []string{"temperature", "max_tokens"} {
		if v, ok := doc.Get(edit.P("providers", "models", family, alias, k)); ok && family != "" {
			if err := doc.Set(table, k, v); err != nil {
				return err
			}
		}
	}
	newRef := slot + "." + ours
	if err := doc.Set([]string{"agents", agent}, "model_provider", newRef); err != nil {
		return fmt.Errorf("zeroclaw: [agents.%s]: %w", agent, err)
	}
	p.URLs[agent] = base
	p.Expect = append(p.Expect,
		adapters.Expect{File: d.ConfigPath, Format: "toml", Path: edit.P("providers", "models", slot, ours, "uri"), Want: base, What: "provider " + newRef + " points at the proxy (" + base + ")"},
		adapters.Expect{File: d.ConfigPath, Format: "toml", Path: edit.P("agents", agent, "model_provider"), Want: newRef, What: "agent " + agent + " uses " + newRef},
	)
	return nil
}

func wireV1(doc *edit.TOML, d *adapters.Detection, req *adapters.Request, p *adapters.Plan, agent string) error {
	var table []string
	providerKey, modelKey := "default_provider", "default_model"
	if agent != "main" {
		table = []string{"agents", agent}
		providerKey, modelKey = "provider", "model"
	}
	get := func(k string) string {
		return adapters.Str(doc, append(pathOf(table), k)...)
	}
	model, err := adapters.ModelOr(req, get(modelKey), "zeroclaw", strings.Join(append(slices.Clone(table), modelKey), "."))
	if err != nil {
		return err
	}
	prov := "custom:" + req.OpenAIURL(req.LocalHost(), agent)
	base := req.OpenAIURL(req.LocalHost(), agent)
	if strings.HasPrefix(get(providerKey), "anthropic") {
		base = req.AnthropicURL(req.LocalHost(), agent)
		prov = "anthropic-custom:" + base
	}
	if err := doc.Set(table, providerKey, prov); err != nil {
		return fmt.Errorf("zeroclaw: %s: %w", providerKey, err)
	}
	if err := doc.Set(table, modelKey, model); err != nil {
		return err
	}
	if err := doc.Set(table, "api_key", req.Key()); err != nil {
		return err
	}
	if agent == "main" && get("api_url") != "" {
		p.Note("api_url (%s) is left as it was; ZeroClaw uses the URL inside default_provider for custom: providers", get("api_url"))
	}
	p.URLs[agent] = base
	p.Expect = append(p.Expect, adapters.Expect{File: d.ConfigPath, Format: "toml", Path: append(pathOf(table), providerKey), Want: prov,
		What: fmt.Sprintf("%s points at the proxy (%s)", strings.Join(append(slices.Clone(table), providerKey), "."), base)})
	return nil
}

func pathOf(s []string) edit.Path {
	p := make(edit.Path, len(s))
	for i, x := range s {
		p[i] = x
	}
	return p
}

// wireMCP adds the MetaClaw MCP server and grants it to the agents through
// a bundle (schema 3); V1 has no bundles, the server is global there.
func wireMCP(doc *edit.TOML, d *adapters.Detection, req *adapters.Request, p *adapters.Plan, agents []string) error {
	server := edit.O("name", "metaclaw", "transport", "stdio", "command", req.Bin(), "args", adapters.MCPArgs(""))
	if err := doc.AppendArrayTable([]string{"mcp", "servers"}, server); err != nil {
		return fmt.Errorf("zeroclaw: mcp.servers: %w", err)
	}
	if v, ok := doc.Get(edit.P("mcp", "enabled")); ok && v == false {
		p.Note("MCP is off in ZeroClaw ([mcp] enabled = false): the metaclaw server is configured but stays off until you enable MCP")
	}
	if d.Schema == "v1" {
		p.Note("ZeroClaw V1 has no per-agent MCP bundles: the metaclaw MCP server is available to every agent")
		return nil
	}
	if err := doc.Set([]string{"mcp_bundles", "metaclaw"}, "servers", []string{"metaclaw"}); err != nil {
		return fmt.Errorf("zeroclaw: [mcp_bundles.metaclaw]: %w", err)
	}
	for _, ag := range agents {
		if err := doc.AppendToArray([]string{"agents", ag}, "mcp_bundles", "metaclaw"); err != nil {
			return fmt.Errorf("zeroclaw: agents.%s.mcp_bundles: %w", ag, err)
		}
		p.Expect = append(p.Expect, adapters.Expect{File: d.ConfigPath, Format: "toml", Path: edit.P("agents", ag, "mcp_bundles"), Want: "metaclaw",
			What: "agent " + ag + " is granted the metaclaw MCP bundle"})
	}
	return nil
}
