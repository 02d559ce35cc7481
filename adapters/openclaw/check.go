package openclaw

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/titanous/json5"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
)

// pluginID is the extension's id when the build has no extension to read it from.
const pluginID = "metaclaw"

func (a *Adapter) pluginID() string {
	if a.Extension != nil && a.Extension() != nil {
		if man, err := readManifest(a.Extension()); err == nil {
			return man.ID
		}
	}
	return pluginID
}

// Check implements adapters.Checker: it recognises the MetaClaw extension
// wherever OpenClaw would load it from — also when it was copied there by
// hand rather than wired — and says what keeps it from working, each time
// with the one command that fixes it.
func (a *Adapter) Check(env *adapters.Env, d *adapters.Detection, m *adapters.Manifest) []adapters.Finding {
	id := a.pluginID()
	b, err := os.ReadFile(d.ConfigPath)
	if err != nil {
		return nil
	}
	doc, err := edit.ParseJSON(b)
	if err != nil {
		return nil
	}
	dir := findExtension(doc, d, id)
	if dir == "" {
		return nil
	}
	var out []adapters.Finding
	add := func(ok bool, what, fix string) { out = append(out, adapters.Finding{OK: ok, What: what, Fix: fix}) }
	wiredHooks := m != nil && m.Via.Hooks()
	if !wiredHooks {
		add(true, "MetaClaw extension found at "+dir+" (not installed by `metaclaw wire`)", "")
		out = append(out, a.policyFindings(doc, d, id)...)
	}
	out = append(out, binaryFinding(env, doc, dir, id))
	if !wiredHooks && allOK(out) {
		agents := "every agent"
		if v, _ := doc.Get(edit.P("plugins", "entries", id, "config", "agents")); v != nil {
			if list, ok := v.([]any); ok && len(list) > 0 {
				agents = "agents " + strings.Trim(fmt.Sprint(list), "[]")
			}
		}
		add(true, "hooks-only setup works: OpenClaw runs the MetaClaw extension for "+agents, "")
	}
	return out
}

func allOK(fs []adapters.Finding) bool {
	for _, f := range fs {
		if !f.OK {
			return false
		}
	}
	return true
}

// findExtension returns the folder OpenClaw loads the extension from:
// $OPENCLAW_STATE_DIR/extensions/<id> or a plugins.load.paths entry.
func findExtension(doc *edit.JSON, d *adapters.Detection, id string) string {
	candidates := []string{filepath.Join(d.Home, "extensions", id)}
	if v, _ := doc.Get(edit.P("plugins", "load", "paths")); v != nil {
		if list, ok := v.([]any); ok {
			for _, p := range list {
				if s, ok := p.(string); ok {
					candidates = append(candidates, s)
				}
			}
		}
	}
	for _, c := range candidates {
		raw, err := os.ReadFile(filepath.Join(c, "openclaw.plugin.json"))
		if err != nil {
			continue
		}
		var man pluginManifest
		if json5.Unmarshal(raw, &man) == nil && man.ID == id {
			return c
		}
	}
	return ""
}

// policyFindings checks what OpenClaw's plugin policy lets the extension do.
func (a *Adapter) policyFindings(doc *edit.JSON, d *adapters.Detection, id string) []adapters.Finding {
	var out []adapters.Finding
	add := func(ok bool, what, fix string) { out = append(out, adapters.Finding{OK: ok, What: what, Fix: fix}) }
	if v, _ := doc.Get(edit.P("plugins", "enabled")); v == false {
		add(false, "plugins are turned off (plugins.enabled: false)", "openclaw config set plugins.enabled true")
	}
	if v, _ := doc.Get(edit.P("plugins", "deny")); v != nil {
		if list, ok := v.([]any); ok && slices.Contains(list, any(id)) {
			add(false, "plugins.deny lists "+id, "remove \""+id+"\" from plugins.deny in "+d.ConfigPath)
		}
	}
	if v, ok := doc.Get(edit.P("plugins", "allow")); ok {
		list, _ := v.([]any)
		if !slices.Contains(list, any(id)) {
			b, _ := json.Marshal(append(slices.Clone(list), id))
			add(false, "plugins.allow is an allowlist without "+id+": OpenClaw does not load the extension",
				"openclaw config set plugins.allow '"+string(b)+"' --strict-json")
		}
	}
	if v, _ := doc.Get(edit.P("plugins", "entries", id, "enabled")); v == false {
		add(false, "plugins.entries."+id+".enabled is false", "openclaw plugins enable "+id)
	}
	if v, _ := doc.Get(edit.P("plugins", "entries", id, "hooks", "allowConversationAccess")); v != true {
		add(false, "conversation access is not granted: OpenClaw blocks the extension's hooks, so MetaClaw neither injects nor learns",
			conversationAccessCommand(id))
	} else {
		add(true, "conversation access granted (plugins.entries."+id+".hooks.allowConversationAccess)", "")
	}
	return out
}

// binaryFinding says which metaclaw binary the extension starts: the
// configured one, bin/metaclaw in its folder, else the first one it finds
// (PATH, ~/.local/bin where install.sh puts it).
func binaryFinding(env *adapters.Env, doc *edit.JSON, dir, id string) adapters.Finding {
	if v, _ := doc.Get(edit.P("plugins", "entries", id, "config", "binary")); v != nil {
		s, _ := v.(string)
		p := s
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		if executable(p) {
			return adapters.Finding{OK: true, What: "the extension starts " + p + " (plugins.entries." + id + ".config.binary)"}
		}
		return adapters.Finding{What: "plugins.entries." + id + ".config.binary is " + s + ", which is not an executable file",
			Fix: "openclaw config unset plugins.entries." + id + ".config.binary"}
	}
	local := filepath.Join(dir, "bin", "metaclaw")
	if executable(local) {
		return adapters.Finding{OK: true, What: "the extension starts " + local}
	}
	if env.LookPath != nil {
		if p, err := env.LookPath("metaclaw"); err == nil {
			return adapters.Finding{OK: true, What: "no " + local + "; the extension finds and starts " + p + " (PATH)"}
		}
	}
	for _, c := range binaryCandidates(env) {
		if executable(c) {
			return adapters.Finding{OK: true, What: "no " + local + "; the extension finds and starts " + c}
		}
	}
	return adapters.Finding{What: "the extension finds no metaclaw binary (" + local + ", PATH, ~/.local/bin)",
		Fix: "metaclaw wire openclaw (links bin/metaclaw), or put metaclaw on PATH"}
}

// binaryCandidates are where the extension looks, besides PATH, when its
// folder has no bin/metaclaw (keep in step with findBinary in index.mjs).
func binaryCandidates(env *adapters.Env) []string {
	var out []string
	if p := env.Get("METACLAW_BIN"); p != "" {
		out = append(out, p)
	}
	out = append(out, filepath.Join(env.Home, ".local", "bin", "metaclaw"))
	if h := env.MetaclawHome; h != "" {
		if b, err := os.ReadFile(filepath.Join(h, "install.json")); err == nil {
			var rec struct {
				Binary string `json:"binary"`
			}
			if json.Unmarshal(b, &rec) == nil && rec.Binary != "" {
				out = append(out, rec.Binary)
			}
		}
	}
	return out
}

func executable(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}
