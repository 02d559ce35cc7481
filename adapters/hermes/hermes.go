// Package hermes wires Hermes Agent (config.yaml in $HERMES_HOME, default
// ~/.hermes; one config per profile under profiles/<name>/). Each agent is
// a Hermes profile ("default" is $HERMES_HOME itself): a custom_providers
// entry "metaclaw" pointed at the proxy and model.provider: custom:metaclaw;
// --via hooks adds shell hooks (HookEvents) approved in
// shell-hooks-allowlist.json for exactly those commands, and the MetaClaw
// MCP server. hooks_auto_accept is never turned on.
package hermes

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
)

// KnownConfigVersion is the newest _config_version this adapter knows.
const KnownConfigVersion = 50

// ProviderName is the custom provider metaclaw adds.
const ProviderName = "metaclaw"

// HookEvents are the shell-hook events metaclaw registers: context before
// each turn, the turn after it, and the session boundaries.
// on_session_start (a new session's first turn) and on_session_reset (/new,
// /reset: the new id) start a session, so the agent's earlier pending turns
// are ingested before its first retrieval; on_session_finalize ends one.
// on_session_end is not registered: Hermes fires it after every turn.
var HookEvents = []string{"pre_llm_call", "post_llm_call", "on_session_start", "on_session_reset", "on_session_finalize"}

// Adapter is the Hermes adapter.
type Adapter struct{}

// New returns the adapter.
func New() *Adapter { return &Adapter{} }

// Name implements adapters.Adapter.
func (*Adapter) Name() string { return "hermes" }

// Detect implements adapters.Adapter.
func (a *Adapter) Detect(env *adapters.Env, override string) (*adapters.Detection, error) {
	home := env.Get("HERMES_HOME")
	if override != "" {
		home = override
	}
	if home == "" {
		home = filepath.Join(env.Home, ".hermes")
	}
	home = env.Expand(home)
	cfg := filepath.Join(home, "config.yaml")
	d := &adapters.Detection{Client: a.Name(), Home: home, ConfigPath: cfg, Default: []string{"default"}}
	if !env.Exists(cfg) {
		return d, nil
	}
	doc, err := readYAML(env, cfg)
	if err != nil {
		return nil, err
	}
	d.Found = true
	if v, ok := adapters.Num(doc, "_config_version"); ok {
		if v > KnownConfigVersion {
			return nil, adapters.Unsupported("hermes config _config_version %d is newer than this metaclaw knows (%d); update metaclaw", v, KnownConfigVersion)
		}
		d.Version = fmt.Sprintf("_config_version %d", v)
	} else {
		d.Version = "(no _config_version)"
	}
	d.Agents = []string{"default"}
	if ents, err := os.ReadDir(filepath.Join(home, "profiles")); err == nil {
		for _, e := range ents {
			if e.IsDir() && env.Exists(filepath.Join(home, "profiles", e.Name(), "config.yaml")) {
				d.Agents = append(d.Agents, e.Name())
			}
		}
	}
	return d, nil
}

func readYAML(env *adapters.Env, path string) (*edit.YAML, error) {
	b, err := env.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc, err := edit.ParseYAML(b)
	if err != nil {
		return nil, fmt.Errorf("hermes: %s: %w", path, err)
	}
	return doc, nil
}

// profileHome is the HERMES_HOME of a profile.
func profileHome(d *adapters.Detection, agent string) string {
	if agent == "default" {
		return d.Home
	}
	return filepath.Join(d.Home, "profiles", agent)
}

// Plan implements adapters.Adapter.
func (a *Adapter) Plan(env *adapters.Env, d *adapters.Detection, req *adapters.Request) (*adapters.Plan, error) {
	agents := adapters.PickAgents(req, d)
	p := &adapters.Plan{Agents: agents, Via: req.Via, URLs: map[string]string{}}
	for _, ag := range agents {
		if !slices.Contains(d.Agents, ag) {
			return nil, adapters.UnknownAgent("hermes", ag, filepath.Join(d.Home, "profiles"), d.Agents)
		}
		if err := planProfile(env, d, req, p, ag); err != nil {
			return nil, err
		}
	}
	p.Restart = []adapters.Command{{Name: "hermes", Args: []string{"gateway", "restart"}, Why: "the messaging gateway reads the config at start", Optional: true}}
	p.Note("Hermes sessions already running keep their model; new sessions use MetaClaw")
	return p, nil
}

func planProfile(env *adapters.Env, d *adapters.Detection, req *adapters.Request, p *adapters.Plan, agent string) error {
	home := profileHome(d, agent)
	cfg := filepath.Join(home, "config.yaml")
	doc, err := readYAML(env, cfg)
	if err != nil {
		return err
	}
	if req.Via.Proxy() {
		cur := adapters.Str(doc, "model", "default")
		if cur == "" {
			cur = adapters.Str(doc, "model", "model")
		}
		model, err := adapters.ModelOr(req, cur, "hermes", "model.default in "+cfg)
		if err != nil {
			return err
		}
		base := req.OpenAIURL(req.LocalHost(), agent)
		entry := edit.O("name", ProviderName, "base_url", base)
		if req.ProxyKey != "" {
			entry = append(entry, edit.KV{Key: "api_key", Value: req.ProxyKey})
		}
		entry = append(entry, edit.KV{Key: "api_mode", Value: "chat_completions"})
		if err := doc.UpsertSeqItem(edit.P("custom_providers"), "name", entry); err != nil {
			return fmt.Errorf("hermes: %s custom_providers: %w", cfg, err)
		}
		if err := doc.Set(edit.P("model", "provider"), "custom:"+ProviderName); err != nil {
			return fmt.Errorf("hermes: %s model.provider: %w", cfg, err)
		}
		if cur != model || (adapters.Str(doc, "model", "default") == "" && adapters.Str(doc, "model", "model") == "") {
			key := "default"
			if adapters.Str(doc, "model", "default") == "" && adapters.Str(doc, "model", "model") != "" {
				key = "model"
			}
			if err := doc.Set(edit.P("model", key), model); err != nil {
				return err
			}
		}
		p.URLs[agent] = base
		p.Expect = append(p.Expect, adapters.Expect{File: cfg, Format: "yaml", Path: edit.P("model", "provider"), Want: "custom:" + ProviderName,
			What: "profile " + agent + " uses the custom provider " + ProviderName + " (" + base + ")"})
	}
	if req.Via.Hooks() {
		if err := planHooks(env, doc, req, p, agent, home); err != nil {
			return err
		}
	}
	if err := doc.Verify(); err != nil {
		return fmt.Errorf("hermes: %s: %w", cfg, err)
	}
	p.Files = append(p.Files, &adapters.FileChange{Path: cfg, Format: "yaml", After: doc.Bytes(), Mode: 0o600})
	return nil
}

func planHooks(env *adapters.Env, doc *edit.YAML, req *adapters.Request, p *adapters.Plan, agent, home string) error {
	cfg := filepath.Join(home, "config.yaml")
	var approvals []edit.Obj
	stamp := approvalStamp(env, req.Bin())
	for _, ev := range HookEvents {
		cmd := adapters.HookCommand(req.Bin(), "hermes", agent, ev)
		hook := edit.O("command", cmd, "timeout", 10)
		if err := doc.UpsertSeqItem(edit.P("hooks", ev), "command", hook); err != nil {
			return fmt.Errorf("hermes: %s hooks.%s: %w", cfg, ev, err)
		}
		approvals = append(approvals, edit.O("approved_at", stamp, "command", cmd, "event", ev, "script_mtime_at_approval", stamp))
		p.Expect = append(p.Expect, adapters.Expect{File: cfg, Format: "yaml", Path: edit.P("hooks", ev), Want: edit.O("command", cmd, "timeout", 10),
			What: "profile " + agent + " runs the " + ev + " hook"})
	}
	if err := doc.Set(edit.P("mcp_servers", "metaclaw"), edit.O("command", req.Bin(), "args", adapters.MCPArgs(agent))); err != nil {
		return fmt.Errorf("hermes: %s mcp_servers: %w", cfg, err)
	}
	// Consent: approve exactly our (event, command) pairs, as answering the
	// first-use prompt would; hooks_auto_accept stays as it is.
	allow := filepath.Join(home, "shell-hooks-allowlist.json")
	var al *edit.JSON
	if b, err := env.ReadFile(allow); err == nil {
		if al, err = edit.ParseJSON(b); err != nil {
			return fmt.Errorf("hermes: %s: %w", allow, err)
		}
	} else if al, err = edit.ParseJSON([]byte("{\n  \"approvals\": []\n}")); err != nil {
		return err
	}
	existing, _ := al.Get(edit.P("approvals"))
	list, _ := existing.([]any)
	for _, ap := range approvals {
		ev, _ := ap.Get("event")
		cmd, _ := ap.Get("command")
		have := false
		for _, e := range list {
			if m, ok := e.(map[string]any); ok && m["event"] == ev && m["command"] == cmd {
				have = true
			}
		}
		if !have {
			if err := al.Append(edit.P("approvals"), ap); err != nil {
				return fmt.Errorf("hermes: %s: %w", allow, err)
			}
		}
	}
	if err := al.Verify(); err != nil {
		return fmt.Errorf("hermes: %s: %w", allow, err)
	}
	out := al.Bytes()
	if !env.Exists(allow) {
		out = append(out, '\n')
	}
	p.Files = append(p.Files, &adapters.FileChange{Path: allow, Format: "json", After: out, Mode: 0o600})
	if v, _ := doc.Get(edit.P("hooks_auto_accept")); v != true {
		p.Note("shell hooks for profile %s are approved in %s for exactly the metaclaw commands (hooks_auto_accept is left as it is)", agent, allow)
	}
	return nil
}

// approvalStamp is the metaclaw binary's modification time (what Hermes
// records as script_mtime_at_approval), so wiring twice writes the same file.
func approvalStamp(env *adapters.Env, bin string) string {
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if st, err := os.Stat(bin); err == nil {
		t = st.ModTime().UTC()
	} else if env.Now != nil {
		t = env.Now().UTC().Truncate(24 * time.Hour)
	}
	return t.Format("2006-01-02T15:04:05.000000Z")
}
