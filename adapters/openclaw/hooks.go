package openclaw

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/titanous/json5"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
)

// pluginManifest is the part of openclaw.plugin.json the installer reads.
type pluginManifest struct {
	ID           string `json:"id"`
	ConfigSchema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	} `json:"configSchema"`
}

// conversationAccessCommand is the one command that lets OpenClaw deliver
// the conversation hooks to a plugin that is not bundled with it.
func conversationAccessCommand(id string) string {
	return "openclaw config set plugins.entries." + id + ".hooks.allowConversationAccess true"
}

// wireHooks installs the extension (the embedded files plus bin/metaclaw)
// and enables it with conversation access for the chosen agents. It never
// creates plugins.allow: an allowlist that did not exist would turn off
// every other plugin the user runs. An existing allowlist gets our id.
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
	man, err := readManifest(ext)
	if err != nil {
		return err
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
	if err := installFiles(ext, extDir, p); err != nil {
		return err
	}
	if req.MetaclawBin != "" {
		p.Files = append(p.Files, &adapters.FileChange{Path: filepath.Join(extDir, "bin", "metaclaw"), Link: req.MetaclawBin, Owned: true})
	}
	if allow, ok := doc.Get(edit.P("plugins", "allow")); ok {
		list, _ := allow.([]any)
		if !slices.Contains(list, any(id)) {
			if err := doc.Append(edit.P("plugins", "allow"), id); err != nil {
				return fmt.Errorf("openclaw: plugins.allow: %w", err)
			}
		}
		p.Expect = append(p.Expect, adapters.Expect{File: d.ConfigPath, Format: format, Path: edit.P("plugins", "allow"), Want: id,
			What: "plugins.allow (your allowlist) lists " + id})
	}
	entry := edit.P("plugins", "entries", id)
	if err := doc.Set(append(slices.Clone(entry), "enabled"), true); err != nil {
		return fmt.Errorf("openclaw: plugins.entries.%s: %w", id, err)
	}
	if err := doc.Set(append(slices.Clone(entry), "hooks", "allowConversationAccess"), true); err != nil {
		return err
	}
	if v, _ := doc.Get(append(slices.Clone(entry), "hooks", "allowPromptInjection")); v == false {
		p.Note("plugins.entries.%s.hooks.allowPromptInjection is false: MetaClaw learns from turns but cannot add its context to them; remove that key to let it inject", id)
	}
	if _, ok := man.ConfigSchema.Properties["agents"]; ok {
		if err := doc.Set(append(slices.Clone(entry), "config", "agents"), agents); err != nil {
			return err
		}
	} else {
		p.Note("the extension's config schema has no \"agents\" filter: its hooks see every OpenClaw agent")
	}
	// The extension's child must use this metaclaw's state, also under a
	// Gateway service that does not inherit METACLAW_HOME.
	if _, ok := man.ConfigSchema.Properties["home"]; ok && env.MetaclawHome != "" && env.MetaclawHome != filepath.Join(env.Home, ".metaclaw") {
		if err := doc.Set(append(slices.Clone(entry), "config", "home"), env.MetaclawHome); err != nil {
			return err
		}
	}
	p.Expect = append(p.Expect,
		adapters.Expect{File: d.ConfigPath, Format: format, Path: append(slices.Clone(entry), "enabled"), Want: true, What: "plugins.entries." + id + ".enabled"},
		adapters.Expect{File: d.ConfigPath, Format: format, Path: append(slices.Clone(entry), "hooks", "allowConversationAccess"), Want: true,
			What: "plugins.entries." + id + ".hooks.allowConversationAccess (without it OpenClaw silently blocks the conversation hooks; `" + conversationAccessCommand(id) + "`)"},
	)
	p.Restart = append(p.Restart, adapters.Command{Name: "openclaw", Args: []string{"gateway", "restart"}, Why: "load the extension", Optional: true})
	return nil
}

func readManifest(ext fs.FS) (pluginManifest, error) {
	var man pluginManifest
	raw, err := fs.ReadFile(ext, "openclaw.plugin.json")
	if err != nil {
		return man, fmt.Errorf("openclaw: the built-in extension has no openclaw.plugin.json: %w", err)
	}
	if err := json5.Unmarshal(raw, &man); err != nil || man.ID == "" {
		return man, fmt.Errorf("openclaw: the built-in extension's openclaw.plugin.json has no id (%v)", err)
	}
	return man, nil
}

// installFiles plans the extension's files under dir.
func installFiles(ext fs.FS, dir string, p *adapters.Plan) error {
	err := fs.WalkDir(ext, ".", func(name string, de fs.DirEntry, err error) error {
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
		dst := filepath.Join(dir, filepath.FromSlash(name))
		p.Files = append(p.Files, &adapters.FileChange{Path: dst, Format: ff, After: data, Mode: mode, Owned: true})
		p.Expect = append(p.Expect, adapters.Expect{File: dst, What: "extension file " + name + " installed"})
		return nil
	})
	if err != nil {
		return fmt.Errorf("openclaw: reading the built-in extension: %w", err)
	}
	return nil
}
