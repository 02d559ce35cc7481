// Package openclaw wires OpenClaw (openclaw.json, JSON5) to MetaClaw:
// a provider per agent pointed at the proxy, and (--via hooks) the MetaClaw
// extension in $OPENCLAW_STATE_DIR/extensions with plugins.allow,
// plugins.entries.<id> and hooks.allowConversationAccess. Comments in the
// JSON5 file are kept (`openclaw config set` would strip them).
package openclaw

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/titanous/json5"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
)

// Known versions: meta.lastTouchedVersion up to this year.month.
const (
	knownYear, knownMonth = 2026, 9
	// hooks.allowConversationAccess exists from 2026.4.24; the extension
	// targets 2026.5 and later.
	hooksYear, hooksMonth = 2026, 5
)

// Adapter is the OpenClaw adapter.
type Adapter struct {
	// Extension returns the OpenClaw extension files (package.json,
	// openclaw.plugin.json, index.mjs); nil when this build has none.
	Extension func() fs.FS
}

// New returns the adapter.
func New(ext func() fs.FS) *Adapter { return &Adapter{Extension: ext} }

// Name implements adapters.Adapter.
func (*Adapter) Name() string { return "openclaw" }

// StateDir is $OPENCLAW_STATE_DIR or ~/.openclaw.
func StateDir(env *adapters.Env) string {
	if d := env.Get("OPENCLAW_STATE_DIR"); d != "" {
		return env.Expand(d)
	}
	return filepath.Join(env.Home, ".openclaw")
}

var versionRe = regexp.MustCompile(`^(\d{4})\.(\d{1,2})\.(\d{1,2})`)

// Detect implements adapters.Adapter.
func (a *Adapter) Detect(env *adapters.Env, override string) (*adapters.Detection, error) {
	state := StateDir(env)
	cfg := override
	if cfg == "" {
		cfg = env.Get("OPENCLAW_CONFIG_PATH")
	}
	if cfg == "" {
		cfg = filepath.Join(state, "openclaw.json")
	}
	cfg = env.Expand(cfg)
	d := &adapters.Detection{Client: a.Name(), Home: state, ConfigPath: cfg}
	if !env.Exists(cfg) {
		return d, nil
	}
	b, err := env.ReadFile(cfg)
	if err != nil {
		return nil, err
	}
	doc, err := edit.ParseJSON(b)
	if err != nil {
		return nil, fmt.Errorf("openclaw: %s does not parse as JSON5: %w", cfg, err)
	}
	d.Found = true
	v := adapters.Str(doc, "meta", "lastTouchedVersion")
	d.Version = v
	if v == "" {
		d.Version = "(no meta.lastTouchedVersion)"
	} else {
		m := versionRe.FindStringSubmatch(v)
		if m == nil {
			return nil, adapters.Unsupported("openclaw: %s has meta.lastTouchedVersion %q, which this metaclaw cannot read; update metaclaw", cfg, v)
		}
		y, _ := strconv.Atoi(m[1])
		mo, _ := strconv.Atoi(m[2])
		if y > knownYear || (y == knownYear && mo > knownMonth) {
			return nil, adapters.Unsupported("openclaw %s (%s) is newer than this metaclaw knows (%d.%d.x); update metaclaw", v, cfg, knownYear, knownMonth)
		}
		if y < 2026 {
			return nil, adapters.Unsupported("openclaw %s (%s) is older than this metaclaw supports (2026.1 or later); update OpenClaw", v, cfg)
		}
	}
	if _, legacy := doc.Get(edit.P("agents", "list")); legacy {
		d.Schema = "legacy"
		for i := 0; ; i++ {
			id := adapters.Str(doc, "agents", "list", i, "id")
			if _, ok := doc.Get(edit.P("agents", "list", i)); !ok {
				break
			}
			d.Agents = append(d.Agents, id)
		}
	} else {
		d.Schema = "current"
		d.Agents = adapters.Keys(doc, "agents", "entries")
	}
	d.Default = []string{defaultAgent(doc, d)}
	return d, nil
}

// defaultAgent is the agent marked default: true, else the first legacy
// list entry, else "main".
func defaultAgent(doc *edit.JSON, d *adapters.Detection) string {
	if d.Schema == "legacy" {
		for i, id := range d.Agents {
			if v, _ := doc.Get(edit.P("agents", "list", i, "default")); v == true {
				return id
			}
		}
		if len(d.Agents) > 0 && d.Agents[0] != "" {
			return d.Agents[0]
		}
		return "main"
	}
	for _, id := range d.Agents {
		if v, _ := doc.Get(edit.P("agents", "entries", id, "default")); v == true {
			return id
		}
	}
	return "main"
}

// ProviderID is the provider metaclaw adds for an agent.
func ProviderID(agent string) string { return "metaclaw-" + agent }

// Plan implements adapters.Adapter.
func (a *Adapter) Plan(env *adapters.Env, d *adapters.Detection, req *adapters.Request) (*adapters.Plan, error) {
	b, err := env.ReadFile(d.ConfigPath)
	if err != nil {
		return nil, err
	}
	doc, err := edit.ParseJSON(b)
	if err != nil {
		return nil, fmt.Errorf("openclaw: %s: %w", d.ConfigPath, err)
	}
	agents := adapters.PickAgents(req, d)
	p := &adapters.Plan{Agents: agents, Via: req.Via, URLs: map[string]string{}}
	format := "json5"
	if doc.Strict() {
		format = "json"
	}
	def := d.Default[0]
	if req.Via.Proxy() {
		for _, ag := range agents {
			if err := a.wireAgent(doc, d, req, p, ag, ag == def, format); err != nil {
				return nil, err
			}
		}
		var inherit []string
		for _, id := range d.Agents {
			if id == def || slices.Contains(agents, id) {
				continue
			}
			if _, own := doc.Get(agentModelPath(d, id)); !own && slices.Contains(agents, def) {
				inherit = append(inherit, id)
			}
		}
		if len(inherit) > 0 {
			p.Note("agents %s have no model of their own: they use agents.defaults.model and now also go through MetaClaw, counted as agent %q; pass --agent for each to count them separately",
				strings.Join(inherit, ", "), def)
		}
	}
	if req.Via.Hooks() {
		if err := a.wireHooks(env, doc, d, req, p, agents, format); err != nil {
			return nil, err
		}
	}
	if err := doc.Verify(); err != nil {
		return nil, fmt.Errorf("openclaw: %s: %w", d.ConfigPath, err)
	}
	p.Files = append([]*adapters.FileChange{{Path: d.ConfigPath, Format: format, After: doc.Bytes(), Mode: 0o600}}, p.Files...)
	return p, nil
}

func agentIndex(d *adapters.Detection, agent string) int {
	return slices.Index(d.Agents, agent)
}

// agentModelPath is where an agent's own model lives.
func agentModelPath(d *adapters.Detection, agent string) edit.Path {
	if d.Schema == "legacy" {
		return edit.P("agents", "list", agentIndex(d, agent), "model")
	}
	return edit.P("agents", "entries", agent, "model")
}

func (a *Adapter) wireAgent(doc *edit.JSON, d *adapters.Detection, req *adapters.Request, p *adapters.Plan, agent string, isDefault bool, format string) error {
	var modelPath edit.Path
	if isDefault {
		modelPath = edit.P("agents", "defaults", "model")
		if _, own := doc.Get(agentModelPath(d, agent)); own && slices.Contains(d.Agents, agent) {
			modelPath = agentModelPath(d, agent)
		}
	} else {
		if !slices.Contains(d.Agents, agent) {
			where := "agents.entries"
			if d.Schema == "legacy" {
				where = "agents.list"
			}
			return adapters.UnknownAgent("openclaw", agent, d.ConfigPath+" "+where, d.Agents)
		}
		modelPath = agentModelPath(d, agent)
	}
	cur, _ := doc.Get(modelPath)
	ref := adapters.ModelRef(cur)
	if ref == "" {
		v, _ := doc.Get(edit.P("agents", "defaults", "model"))
		ref = adapters.ModelRef(v)
	}
	provider, model, _ := strings.Cut(ref, "/")
	if model == "" {
		provider, model = "", ref
	}
	model, err := adapters.ModelOr(req, model, "openclaw", "agents.defaults.model.primary")
	if err != nil {
		return err
	}
	orig, _ := doc.Get(edit.P("models", "providers", provider))
	origMap, _ := orig.(map[string]any)
	api, _ := origMap["api"].(string)
	var srcDef edit.Obj
	if list, ok := origMap["models"].([]any); ok {
		for i, m := range list {
			if mm, ok := m.(map[string]any); ok && mm["id"] == model {
				v, _ := doc.GetOrdered(edit.P("models", "providers", provider, "models", i))
				srcDef, _ = v.(edit.Obj)
			}
		}
	}
	if api == "" {
		api = "openai-completions"
		if provider == "anthropic" {
			api = "anthropic-messages"
		}
	}
	if api != "anthropic-messages" && api != "openai-completions" {
		p.Note("agent %s used api %q; the MetaClaw provider speaks openai-completions (the proxy translates to your upstream)", agent, api)
		api = "openai-completions"
	}
	base := req.OpenAIURL(req.LocalHost(), agent)
	if api == "anthropic-messages" {
		base = req.AnthropicURL(req.LocalHost(), agent)
	}
	pid := ProviderID(agent)
	prov := edit.O("baseUrl", base, "apiKey", req.Key(), "api", api, "models", []any{modelDef(srcDef, model, req.ContextWindow)})
	if err := doc.Set(edit.P("models", "providers", pid), prov); err != nil {
		return fmt.Errorf("openclaw: models.providers.%s: %w", pid, err)
	}
	newRef := pid + "/" + model
	if err := adapters.SetModelRef(doc, modelPath, newRef, true); err != nil {
		return fmt.Errorf("openclaw: %s: %w", modelPath, err)
	}
	// A model allowlist (agents.defaults.models) that lists the old model
	// gets ours too, so /model and the policy accept it.
	if allow, ok := doc.Get(edit.P("agents", "defaults", "models")); ok {
		if m, ok := allow.(map[string]any); ok && len(m) > 0 {
			if _, listed := m[ref]; listed {
				if _, have := m[newRef]; !have {
					if err := doc.Set(edit.P("agents", "defaults", "models", newRef), edit.Obj{}); err != nil {
						return err
					}
				}
			}
		}
	}
	p.URLs[agent] = base
	p.Expect = append(p.Expect,
		adapters.Expect{File: d.ConfigPath, Format: format, Path: edit.P("models", "providers", pid, "baseUrl"), Want: base,
			What: fmt.Sprintf("provider %s points at the proxy (%s)", pid, base)},
		adapters.Expect{File: d.ConfigPath, Format: format, Path: append(slices.Clone(modelPath), refLeaf(doc, modelPath)...), Want: newRef,
			What: fmt.Sprintf("agent %s uses %s", agent, newRef)},
	)
	return nil
}

func refLeaf(doc *edit.JSON, p edit.Path) edit.Path {
	if v, _ := doc.Get(p); isMap(v) {
		return edit.P("primary")
	}
	return nil
}

func isMap(v any) bool { _, ok := v.(map[string]any); return ok }

// modelDef is the model entry of the metaclaw provider: the original
// definition when the provider had one (without per-model baseUrl/api
// overrides, which would bypass the proxy), else a plain default.
func modelDef(src edit.Obj, model string, window int) edit.Obj {
	if src == nil {
		cw := window
		if cw <= 0 {
			cw = 128000
		}
		return edit.O("id", model, "name", model, "reasoning", false, "input", []string{"text"},
			"cost", edit.O("input", 0, "output", 0, "cacheRead", 0, "cacheWrite", 0),
			"contextWindow", cw, "maxTokens", 8192)
	}
	out := edit.Obj{}
	set := false
	for _, kv := range src {
		switch kv.Key {
		case "baseUrl", "api":
			continue
		case "contextWindow":
			if window > 0 {
				kv.Value, set = window, true
			}
		}
		out = append(out, kv)
	}
	if window > 0 && !set {
		out = append(out, edit.KV{Key: "contextWindow", Value: window})
	}
	return out
}

// pluginAPIFloor reads ">=2026.9.6" from package.json openclaw.compat.pluginApi.
func pluginAPIFloor(ext fs.FS) string {
	b, err := fs.ReadFile(ext, "package.json")
	if err != nil {
		return ""
	}
	var pj struct {
		OpenClaw struct {
			Compat struct {
				PluginAPI string `json:"pluginApi"`
			} `json:"compat"`
		} `json:"openclaw"`
	}
	if json.Unmarshal(b, &pj) != nil {
		return ""
	}
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(pj.OpenClaw.Compat.PluginAPI), ">="))
}

// versionLess compares OpenClaw calendar versions (year.month.day).
func versionLess(a, b string) bool {
	pa, pb := versionRe.FindStringSubmatch(a), versionRe.FindStringSubmatch(b)
	if pa == nil || pb == nil {
		return false
	}
	for i := 1; i <= 3; i++ {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x < y
		}
	}
	return false
}

// pluginManifest is the part of openclaw.plugin.json the installer reads.
type pluginManifest struct {
	ID           string `json:"id"`
	ConfigSchema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	} `json:"configSchema"`
}

func (a *Adapter) wireHooks(env *adapters.Env, doc *edit.JSON, d *adapters.Detection, req *adapters.Request, p *adapters.Plan, agents []string, format string) error {
	if a.Extension == nil || a.Extension() == nil {
		return errors.New("openclaw: this metaclaw was built without the OpenClaw extension (package extensions); wire with --via proxy")
	}
	if v := d.Version; versionRe.MatchString(v) {
		m := versionRe.FindStringSubmatch(v)
		y, _ := strconv.Atoi(m[1])
		mo, _ := strconv.Atoi(m[2])
		if y < hooksYear || (y == hooksYear && mo < hooksMonth) {
			return fmt.Errorf("openclaw %s predates hooks.allowConversationAccess, which the MetaClaw extension needs (%d.%d or later); update OpenClaw or wire with --via proxy", v, hooksYear, hooksMonth)
		}
	}
	ext := a.Extension()
	if floor := pluginAPIFloor(ext); floor != "" && versionRe.MatchString(d.Version) && versionLess(d.Version, floor) {
		return fmt.Errorf("openclaw %s is older than the MetaClaw extension needs (%s, package.json openclaw.compat.pluginApi); update OpenClaw or wire with --via proxy", d.Version, floor)
	}
	raw, err := fs.ReadFile(ext, "openclaw.plugin.json")
	if err != nil {
		return fmt.Errorf("openclaw: the built-in extension has no openclaw.plugin.json: %w", err)
	}
	var man pluginManifest
	if err := json5.Unmarshal(raw, &man); err != nil || man.ID == "" {
		return fmt.Errorf("openclaw: the built-in extension's openclaw.plugin.json has no id (%v)", err)
	}
	id := man.ID
	if v, ok := doc.Get(edit.P("plugins", "enabled")); ok && v == false {
		return errors.New("openclaw: plugins are turned off (plugins.enabled: false); metaclaw does not turn them back on. Enable plugins yourself, or wire with --via proxy")
	}
	if deny, ok := doc.Get(edit.P("plugins", "deny")); ok {
		if list, ok := deny.([]any); ok && slices.Contains(list, any(id)) {
			return fmt.Errorf("openclaw: plugins.deny lists %q; metaclaw does not remove it. Remove it yourself, or wire with --via proxy", id)
		}
	}
	extDir := filepath.Join(d.Home, "extensions", id)
	err = fs.WalkDir(ext, ".", func(name string, de fs.DirEntry, err error) error {
		if err != nil || de.IsDir() {
			return err
		}
		data, err := fs.ReadFile(ext, name)
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if info, err := de.Info(); err == nil && info.Mode()&0o111 != 0 {
			mode = 0o755
		}
		ff := ""
		if path.Ext(name) == ".json" {
			ff = "json5"
		}
		p.Files = append(p.Files, &adapters.FileChange{Path: filepath.Join(extDir, filepath.FromSlash(name)), Format: ff, After: data, Mode: mode, Owned: true})
		p.Expect = append(p.Expect, adapters.Expect{File: filepath.Join(extDir, filepath.FromSlash(name)), What: "extension file " + name + " installed"})
		return nil
	})
	if err != nil {
		return fmt.Errorf("openclaw: reading the built-in extension: %w", err)
	}
	if req.MetaclawBin != "" {
		p.Files = append(p.Files, &adapters.FileChange{Path: filepath.Join(extDir, "bin", "metaclaw"), Link: req.MetaclawBin, Owned: true})
	}
	// plugins.allow: append our id, never remove anything. An allowlist that
	// does not exist yet would become exclusive, so it starts with the
	// plugins the user already enabled.
	if allow, ok := doc.Get(edit.P("plugins", "allow")); ok {
		list, _ := allow.([]any)
		if !slices.Contains(list, any(id)) {
			if err := doc.Append(edit.P("plugins", "allow"), id); err != nil {
				return fmt.Errorf("openclaw: plugins.allow: %w", err)
			}
		}
	} else {
		var ids []any
		for _, other := range adapters.Keys(doc, "plugins", "entries") {
			if v, _ := doc.Get(edit.P("plugins", "entries", other, "enabled")); v != false && other != id {
				ids = append(ids, other)
			}
		}
		ids = append(ids, id)
		if err := doc.Set(edit.P("plugins", "allow"), ids); err != nil {
			return err
		}
		p.Note("plugins.allow was not set; it now lists %v. OpenClaw treats it as an exclusive allowlist: add any other plugin you load with `openclaw plugins enable <id>`", ids)
	}
	if err := doc.Set(edit.P("plugins", "entries", id, "enabled"), true); err != nil {
		return fmt.Errorf("openclaw: plugins.entries.%s: %w", id, err)
	}
	if err := doc.Set(edit.P("plugins", "entries", id, "hooks", "allowConversationAccess"), true); err != nil {
		return err
	}
	if _, ok := man.ConfigSchema.Properties["agents"]; ok {
		if err := doc.Set(edit.P("plugins", "entries", id, "config", "agents"), agents); err != nil {
			return err
		}
	} else {
		p.Note("the extension's config schema has no \"agents\" filter: its hooks see every OpenClaw agent")
	}
	p.Expect = append(p.Expect,
		adapters.Expect{File: d.ConfigPath, Format: format, Path: edit.P("plugins", "allow"), Want: id, What: "plugins.allow lists " + id},
		adapters.Expect{File: d.ConfigPath, Format: format, Path: edit.P("plugins", "entries", id, "enabled"), Want: true, What: "plugins.entries." + id + ".enabled"},
		adapters.Expect{File: d.ConfigPath, Format: format, Path: edit.P("plugins", "entries", id, "hooks", "allowConversationAccess"), Want: true,
			What: "plugins.entries." + id + ".hooks.allowConversationAccess (without it OpenClaw silently blocks the conversation hooks)"},
	)
	p.Restart = append(p.Restart, adapters.Command{Name: "openclaw", Args: []string{"gateway", "restart"}, Why: "load the extension", Optional: true})
	return nil
}
