package openclaw

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
)

// ProviderID is the provider metaclaw adds for an agent.
func ProviderID(agent string) string { return "metaclaw-" + agent }

// providerRetries is retry.provider.maxRetries in the settings of each
// proxy-wired agent. OpenClaw counts a refused connection as a transient
// timeout and by default retries the same model up to 8 times over 90 s
// before it tries a fallback; with one retry a stopped host costs about a
// second before the turn goes to the user's own provider.
const providerRetries = 1

// wireAgent points one agent's own model entry at the proxy, keeping the
// model it used as the first fallback so that a stopped host costs one
// failover, not a failed turn. agents.defaults.model is never touched:
// agents that were not chosen keep going where they went.
func (a *Adapter) wireAgent(env *adapters.Env, doc *edit.JSON, d *adapters.Detection, req *adapters.Request, p *adapters.Plan, agent, format string) error {
	known := slices.Contains(d.Agents, agent)
	if !known && (d.Schema == "legacy" || agent != d.Default[0]) {
		where := "agents.entries"
		if d.Schema == "legacy" {
			where = "agents.list"
		}
		return adapters.UnknownAgent("openclaw", agent, d.ConfigPath+" "+where, d.Agents)
	}
	modelPath := agentModelPath(d, agent)
	cur, own := doc.Get(modelPath)
	ref, fallbacks := modelRefAndFallbacks(cur)
	if ref == "" {
		def, _ := doc.Get(edit.P("agents", "defaults", "model"))
		ref, fallbacks = modelRefAndFallbacks(def)
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
	chain := []any{}
	if ref != "" && ref != newRef && strings.Contains(ref, "/") {
		chain = append(chain, ref)
	}
	for _, f := range fallbacks {
		if !slices.Contains(chain, f) && f != newRef {
			chain = append(chain, f)
		}
	}
	if err := setAgentModel(doc, modelPath, cur, own, newRef, chain); err != nil {
		return fmt.Errorf("openclaw: %s: %w", modelPath, err)
	}
	if len(chain) == 0 {
		p.Note("agent %s had no provider/model of its own to fall back to: with the MetaClaw host stopped its turns fail until `metaclaw start`", agent)
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
		adapters.Expect{File: d.ConfigPath, Format: format, Path: append(slices.Clone(modelPath), "primary"), Want: newRef,
			What: fmt.Sprintf("agent %s uses %s", agent, newRef)},
	)
	if len(chain) > 0 {
		p.Expect = append(p.Expect, adapters.Expect{File: d.ConfigPath, Format: format, Path: append(slices.Clone(modelPath), "fallbacks"), Want: chain[0],
			What: fmt.Sprintf("agent %s falls back to %v when the MetaClaw host is stopped", agent, chain[0])})
	}
	return a.fastFailover(env, doc, d, p, agent)
}

// modelRefAndFallbacks reads "provider/model" or {primary, fallbacks}.
func modelRefAndFallbacks(v any) (string, []any) {
	ref := adapters.ModelRef(v)
	m, _ := v.(map[string]any)
	fb, _ := m["fallbacks"].([]any)
	return ref, fb
}

// setAgentModel writes {primary, fallbacks} at the agent's own model path:
// an object keeps its other keys, a string or a missing entry becomes an
// object.
func setAgentModel(doc *edit.JSON, path edit.Path, cur any, own bool, ref string, chain []any) error {
	if _, isObj := cur.(map[string]any); own && isObj {
		if err := doc.Set(append(slices.Clone(path), "primary"), ref); err != nil {
			return err
		}
		if len(chain) == 0 {
			return nil
		}
		return doc.Set(append(slices.Clone(path), "fallbacks"), chain)
	}
	if len(chain) == 0 {
		return doc.Set(path, edit.O("primary", ref))
	}
	return doc.Set(path, edit.O("primary", ref, "fallbacks", chain))
}

// agentDir is where OpenClaw keeps an agent's runtime settings.
func agentDir(env *adapters.Env, doc *edit.JSON, d *adapters.Detection, agent string) string {
	if slices.Contains(d.Agents, agent) {
		if v, _ := doc.Get(agentPath(d, agent, "agentDir")); v != nil {
			if s, ok := v.(string); ok && s != "" {
				return env.Expand(s)
			}
		}
	}
	return filepath.Join(d.Home, "agents", agent, "agent")
}

// fastFailover sets retry.provider.maxRetries in the agent's settings.json
// (unless the user set it), so that a stopped host fails over quickly.
func (a *Adapter) fastFailover(env *adapters.Env, doc *edit.JSON, d *adapters.Detection, p *adapters.Plan, agent string) error {
	dir := agentDir(env, doc, d, agent)
	if !filepath.IsAbs(dir) {
		p.Note("agent %s: agentDir %q is not an absolute path; set retry.provider.maxRetries to %d in its settings.json yourself for a fast failover when the MetaClaw host is stopped", agent, dir, providerRetries)
		return nil
	}
	path := filepath.Join(dir, "settings.json")
	src := []byte("{}\n")
	if env.Exists(path) {
		b, err := env.ReadFile(path)
		if err != nil {
			return err
		}
		src = b
	}
	settings, err := edit.ParseJSON(src)
	if err != nil {
		return fmt.Errorf("openclaw: %s does not parse as JSON: %w", path, err)
	}
	key := edit.P("retry", "provider", "maxRetries")
	if v, ok := settings.Get(key); ok {
		p.Note("agent %s: %s sets retry.provider.maxRetries to %v; with the MetaClaw host stopped each turn retries that often before falling back", agent, path, v)
		return nil
	}
	if err := settings.Set(key, providerRetries); err != nil {
		return fmt.Errorf("openclaw: %s: %w", path, err)
	}
	p.Files = append(p.Files, &adapters.FileChange{Path: path, Format: "json", After: settings.Bytes(), Mode: 0o600})
	p.Expect = append(p.Expect, adapters.Expect{File: path, Format: "json", Path: key, Want: providerRetries,
		What: fmt.Sprintf("agent %s retries a failed provider call once before its fallback (%s)", agent, path)})
	return nil
}

// expectOthersUntouched records, for doctor, that the agents not chosen
// still use the model they used: their own entry, or agents.defaults.model.
func expectOthersUntouched(doc *edit.JSON, d *adapters.Detection, p *adapters.Plan, chosen []string, format string) {
	var inherit []string
	for _, id := range d.Agents {
		if slices.Contains(chosen, id) {
			continue
		}
		mp := agentModelPath(d, id)
		if v, own := doc.Get(mp); own && adapters.ModelRef(v) != "" {
			p.Expect = append(p.Expect, adapters.Expect{File: d.ConfigPath, Format: format, Path: append(slices.Clone(mp), refLeaf(v)...),
				Want: adapters.ModelRef(v), What: fmt.Sprintf("agent %s (not enabled) still uses its own model %s", id, adapters.ModelRef(v))})
			continue
		}
		inherit = append(inherit, id)
	}
	if len(inherit) == 0 {
		return
	}
	def, ok := doc.Get(edit.P("agents", "defaults", "model"))
	if !ok || adapters.ModelRef(def) == "" {
		return
	}
	p.Expect = append(p.Expect, adapters.Expect{File: d.ConfigPath, Format: format, Path: append(edit.P("agents", "defaults", "model"), refLeaf(def)...),
		Want: adapters.ModelRef(def), What: fmt.Sprintf("agents %s (not enabled) inherit agents.defaults.model %s, not MetaClaw", strings.Join(inherit, ", "), adapters.ModelRef(def))})
}

func refLeaf(v any) edit.Path {
	if _, ok := v.(map[string]any); ok {
		return edit.P("primary")
	}
	return nil
}

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
