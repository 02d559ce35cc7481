// Package openclaw wires OpenClaw (openclaw.json, JSON5) to MetaClaw. The
// default is the plugin: the MetaClaw extension in
// $OPENCLAW_STATE_DIR/extensions/metaclaw, enabled with conversation access
// for the chosen agents (plugins.entries.metaclaw). --via proxy points only
// the chosen agents' own model entries at the proxy, with the original model
// kept as their fallback. Nothing the user enabled is narrowed: no
// allowlist is created, agents that are not chosen keep their models.
// Comments in the JSON5 file are kept (`openclaw config set` would strip them).
package openclaw

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

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

// DefaultVia is the integration path when --via is not given: the plugin.
func (*Adapter) DefaultVia() adapters.Via { return adapters.ViaHooks }

// via is the path a request asks for ("" = the default).
func via(req *adapters.Request) adapters.Via {
	if req.Via == "" {
		return adapters.ViaHooks
	}
	return req.Via
}

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
	v := via(req)
	p := &adapters.Plan{Agents: agents, Via: v, URLs: map[string]string{}}
	format := "json5"
	if doc.Strict() {
		format = "json"
	}
	if v.Proxy() {
		for _, ag := range agents {
			if err := a.wireAgent(env, doc, d, req, p, ag, format); err != nil {
				return nil, err
			}
		}
		expectOthersUntouched(doc, d, p, agents, format)
	}
	if v.Hooks() {
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

// agentPath is where an agent's own settings live.
func agentPath(d *adapters.Detection, agent string, key ...any) edit.Path {
	if d.Schema == "legacy" {
		return append(edit.P("agents", "list", agentIndex(d, agent)), key...)
	}
	return append(edit.P("agents", "entries", agent), key...)
}

// agentModelPath is where an agent's own model lives.
func agentModelPath(d *adapters.Detection, agent string) edit.Path {
	return agentPath(d, agent, "model")
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
