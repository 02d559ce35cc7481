// Package picoclaw wires PicoClaw (config.json, "version": 3; older files
// without a version use singular api_key): a model_list entry per agent
// pointed at the proxy, the agent's model set to it, and (--via hooks) a
// JSON-RPC process hook plus an MCP server.
package picoclaw

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
)

// KnownVersion is the newest config version this adapter knows.
const KnownVersion = 3

// Adapter is the PicoClaw adapter.
type Adapter struct{}

// New returns the adapter.
func New() *Adapter { return &Adapter{} }

// Name implements adapters.Adapter.
func (*Adapter) Name() string { return "picoclaw" }

// Home is $PICOCLAW_HOME or ~/.picoclaw.
func Home(env *adapters.Env) string {
	if h := env.Get("PICOCLAW_HOME"); h != "" {
		return env.Expand(h)
	}
	return filepath.Join(env.Home, ".picoclaw")
}

// Detect implements adapters.Adapter.
func (a *Adapter) Detect(env *adapters.Env, override string) (*adapters.Detection, error) {
	home := Home(env)
	cfg := override
	if cfg == "" {
		cfg = env.Get("PICOCLAW_CONFIG")
	}
	if cfg == "" {
		cfg = filepath.Join(home, "config.json")
	}
	cfg = env.Expand(cfg)
	d := &adapters.Detection{Client: a.Name(), Home: home, ConfigPath: cfg}
	if !env.Exists(cfg) {
		return d, nil
	}
	doc, err := read(env, cfg)
	if err != nil {
		return nil, err
	}
	d.Found = true
	v, ok := adapters.Num(doc, "version")
	switch {
	case !ok:
		d.Version, d.Schema = "config without version (v0, March 2026)", "v0"
	case v > KnownVersion:
		return nil, adapters.Unsupported("picoclaw config version %d is newer than this metaclaw knows (%d); update metaclaw", v, KnownVersion)
	case v < 0:
		return nil, adapters.Unsupported("picoclaw config version %d is not one this metaclaw knows", v)
	default:
		d.Version, d.Schema = fmt.Sprintf("config version %d", v), "v"+strconv.FormatInt(v, 10)
	}
	for i := 0; ; i++ {
		if _, ok := doc.Get(edit.P("agents", "list", i)); !ok {
			break
		}
		d.Agents = append(d.Agents, adapters.Str(doc, "agents", "list", i, "id"))
	}
	d.Default = []string{"main"}
	return d, nil
}

func read(env *adapters.Env, path string) (*edit.JSON, error) {
	b, err := env.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc, err := edit.ParseJSON(b)
	if err != nil {
		return nil, fmt.Errorf("picoclaw: %s does not parse: %w", path, err)
	}
	return doc, nil
}

// ModelName is the model_list alias metaclaw adds for an agent.
func ModelName(agent string) string { return "metaclaw-" + agent }

// Plan implements adapters.Adapter.
func (a *Adapter) Plan(env *adapters.Env, d *adapters.Detection, req *adapters.Request) (*adapters.Plan, error) {
	doc, err := read(env, d.ConfigPath)
	if err != nil {
		return nil, err
	}
	agents := adapters.PickAgents(req, d)
	p := &adapters.Plan{Agents: agents, Via: req.Via, URLs: map[string]string{}}
	format := "json5"
	if doc.Strict() {
		format = "json"
	}
	if req.Via.Proxy() {
		for _, ag := range agents {
			if err := wireAgent(doc, d, req, p, ag, format); err != nil {
				return nil, err
			}
		}
		if slices.Contains(agents, "main") {
			var inherit []string
			for i, id := range d.Agents {
				if _, own := doc.Get(edit.P("agents", "list", i, "model")); !own && id != "main" && !slices.Contains(agents, id) {
					inherit = append(inherit, id)
				}
			}
			if len(inherit) > 0 {
				p.Note("agents %s use agents.defaults.model_name and now also go through MetaClaw, counted as agent \"main\"; pass --agent for each to count them separately", strings.Join(inherit, ", "))
			}
		}
	}
	if req.Via.Hooks() {
		if err := wireHooks(doc, d, req, p, agents, format); err != nil {
			return nil, err
		}
	}
	if err := doc.Verify(); err != nil {
		return nil, fmt.Errorf("picoclaw: %s: %w", d.ConfigPath, err)
	}
	p.Files = []*adapters.FileChange{{Path: d.ConfigPath, Format: format, After: doc.Bytes(), Mode: 0o600}}
	if hot, _ := doc.Get(edit.P("gateway", "hot_reload")); hot == true {
		p.Note("gateway.hot_reload is on: a running gateway picks the change up by itself")
	}
	return p, nil
}

func modelIndex(doc *edit.JSON, name string) int {
	found := -1
	for i := 0; ; i++ {
		if _, ok := doc.Get(edit.P("model_list", i)); !ok {
			return found
		}
		if adapters.Str(doc, "model_list", i, "model_name") == name && found < 0 {
			found = i
		}
	}
}

func wireAgent(doc *edit.JSON, d *adapters.Detection, req *adapters.Request, p *adapters.Plan, agent, format string) error {
	idx := slices.Index(d.Agents, agent)
	if idx < 0 && agent != "main" {
		return adapters.UnknownAgent("picoclaw", agent, d.ConfigPath+" agents.list", d.Agents)
	}
	var modelPath edit.Path
	if idx >= 0 {
		if _, own := doc.Get(edit.P("agents", "list", idx, "model")); own {
			modelPath = edit.P("agents", "list", idx, "model")
		}
	}
	if modelPath == nil {
		if agent != "main" {
			modelPath = edit.P("agents", "list", idx, "model")
		} else {
			modelPath = edit.P("agents", "defaults", "model_name")
		}
	}
	cur, _ := doc.Get(modelPath)
	alias := adapters.ModelRef(cur)
	if alias == "" {
		alias = adapters.Str(doc, "agents", "defaults", "model_name")
		if alias == "" {
			alias = adapters.Str(doc, "agents", "defaults", "model")
		}
	}
	proto, model := "openai", ""
	if i := modelIndex(doc, alias); i >= 0 {
		ref := adapters.Str(doc, "model_list", i, "model")
		pr, id, ok := strings.Cut(ref, "/")
		if ok {
			model = id
			if pr == "anthropic-messages" {
				proto = pr
			}
		} else {
			model = ref
		}
	}
	model, err := adapters.ModelOr(req, model, "picoclaw", "agents.defaults.model_name and its model_list entry")
	if err != nil {
		return err
	}
	base := req.OpenAIURL(req.LocalHost(), agent)
	if proto == "anthropic-messages" {
		base = req.AnthropicURL(req.LocalHost(), agent)
	}
	name := ModelName(agent)
	entry := edit.O("model_name", name, "model", proto+"/"+model, "api_base", base)
	if d.Schema == "v3" {
		entry = append(entry, edit.KV{Key: "api_keys", Value: []string{req.Key()}})
	} else {
		entry = append(entry, edit.KV{Key: "api_key", Value: req.Key()})
	}
	if i := modelIndex(doc, name); i >= 0 {
		if err := doc.Set(edit.P("model_list", i), entry); err != nil {
			return err
		}
	} else if err := doc.Append(edit.P("model_list"), entry); err != nil {
		return fmt.Errorf("picoclaw: model_list: %w", err)
	}
	if err := adapters.SetModelRef(doc, modelPath, name, false); err != nil {
		return fmt.Errorf("picoclaw: %s: %w", modelPath, err)
	}
	leaf := modelPath
	if v, _ := doc.Get(modelPath); isMap(v) {
		leaf = append(slices.Clone(modelPath), "primary")
	}
	p.URLs[agent] = base
	p.Expect = append(p.Expect,
		adapters.Expect{File: d.ConfigPath, Format: format, Path: edit.P("model_list", modelIndex(doc, name), "api_base"), Want: base, What: "model " + name + " points at the proxy (" + base + ")"},
		adapters.Expect{File: d.ConfigPath, Format: format, Path: leaf, Want: name, What: "agent " + agent + " uses " + name},
	)
	return nil
}

func isMap(v any) bool { _, ok := v.(map[string]any); return ok }

func wireHooks(doc *edit.JSON, d *adapters.Detection, req *adapters.Request, p *adapters.Plan, agents []string, format string) error {
	if v, ok := doc.Get(edit.P("hooks", "enabled")); ok && v == false {
		return fmt.Errorf("picoclaw: hooks are turned off (hooks.enabled: false in %s); metaclaw does not turn them on. Enable them yourself, or wire with --via proxy", d.ConfigPath)
	}
	hook := edit.O(
		"enabled", true,
		"priority", 100,
		"transport", "stdio",
		"command", adapters.ServeArgv(req.Bin(), "picoclaw"),
		"observe", []string{"agent.turn.start", "agent.turn.end", "agent.llm.response"},
		"intercept", []string{"before_llm", "after_llm"},
	)
	if err := doc.Set(edit.P("hooks", "processes", "metaclaw"), hook); err != nil {
		return fmt.Errorf("picoclaw: hooks.processes: %w", err)
	}
	mcp := edit.O("enabled", true, "type", "stdio", "command", req.Bin(), "args", adapters.MCPArgs(""))
	if err := doc.Set(edit.P("tools", "mcp", "servers", "metaclaw"), mcp); err != nil {
		return fmt.Errorf("picoclaw: tools.mcp.servers: %w", err)
	}
	p.Note("PicoClaw hooks are global: the plugin counts each turn under the AgentID PicoClaw sends (%s wired for the proxy path)", strings.Join(agents, ", "))
	if v, _ := doc.Get(edit.P("tools", "mcp", "enabled")); v != true {
		p.Note("MCP is off in PicoClaw (tools.mcp.enabled is not true): the metaclaw MCP server is configured but stays off until you enable MCP")
	}
	p.Expect = append(p.Expect,
		adapters.Expect{File: d.ConfigPath, Format: format, Path: edit.P("hooks", "processes", "metaclaw", "enabled"), Want: true, What: "process hook metaclaw is enabled"},
		adapters.Expect{File: d.ConfigPath, Format: format, Path: edit.P("hooks", "processes", "metaclaw", "command", 0), Want: req.Bin(), What: "process hook runs " + req.Bin()},
	)
	return nil
}

// pidFile is what a running gateway writes to $PICOCLAW_HOME/.picoclaw.pid.
type pidFile struct {
	PID   int    `json:"pid"`
	Token string `json:"token"`
	Host  string `json:"host"`
	Port  int    `json:"port"`
}

// Reload asks a running gateway to reload its config (POST /reload with the
// token from its pid file). No pid file: nothing is running.
func (a *Adapter) Reload(ctx context.Context, env *adapters.Env) (string, error) {
	b, err := os.ReadFile(filepath.Join(Home(env), ".picoclaw.pid"))
	if err != nil {
		return "", nil
	}
	var pf pidFile
	if err := json.Unmarshal(b, &pf); err != nil || pf.Port == 0 {
		return "", fmt.Errorf("picoclaw: cannot read %s; restart the gateway yourself so it loads the change", filepath.Join(Home(env), ".picoclaw.pid"))
	}
	host := pf.Host
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	url := "http://" + net.JoinHostPort(host, strconv.Itoa(pf.Port)) + "/reload"
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, url, nil)
	if err != nil {
		return "", err
	}
	r.Header.Set("Authorization", "Bearer "+pf.Token)
	hc := env.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(r)
	if err != nil {
		return "", fmt.Errorf("picoclaw: the gateway did not answer POST %s (%v); restart it yourself so it loads the change", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return "", fmt.Errorf("picoclaw: POST %s answered %s; restart the gateway yourself so it loads the change", url, resp.Status)
	}
	return "picoclaw gateway reloaded its config", nil
}
