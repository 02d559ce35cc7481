package extensions_test

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/extensions"
	"github.com/metaclaw-go/metaclaw/plugin"
)

func read(t *testing.T, fsys fs.FS, name string) []byte {
	t.Helper()
	b, err := fs.ReadFile(fsys, name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

type pluginManifest struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Version     string `json:"version"`
	Description string `json:"description"`
	Activation  struct {
		OnStartup      bool     `json:"onStartup"`
		OnCapabilities []string `json:"onCapabilities"`
	} `json:"activation"`
	Contracts struct {
		Tools []string `json:"tools"`
	} `json:"contracts"`
	ConfigSchema struct {
		Type                 string                     `json:"type"`
		AdditionalProperties *bool                      `json:"additionalProperties"`
		Properties           map[string]json.RawMessage `json:"properties"`
	} `json:"configSchema"`
}

type topManifest struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Version     string `json:"version"`
	Description string `json:"description"`
	Binary      string `json:"binary"`
	JSONRPC     struct {
		Methods       []struct{ Name string } `json:"methods"`
		PluginMethods []struct{ Name string } `json:"plugin_methods"`
		Tools         []string                `json:"tools"`
	} `json:"jsonrpc"`
}

func TestOpenClawFiles(t *testing.T) {
	fsys := extensions.OpenClaw()
	var names []string
	fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p)
		}
		return nil
	})
	sort.Strings(names)
	if strings.Join(names, ",") != "index.mjs,openclaw.plugin.json,package.json" {
		t.Fatalf("files %v", names)
	}
	var pkg struct {
		Name     string `json:"name"`
		Version  string `json:"version"`
		Type     string `json:"type"`
		OpenClaw struct {
			Extensions []string `json:"extensions"`
			Compat     struct {
				PluginAPI string `json:"pluginApi"`
			} `json:"compat"`
		} `json:"openclaw"`
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(read(t, fsys, "package.json"), &pkg); err != nil {
		t.Fatal(err)
	}
	if pkg.Type != "module" || !reflect.DeepEqual(pkg.OpenClaw.Extensions, []string{"./index.mjs"}) || len(pkg.Dependencies) != 0 || pkg.OpenClaw.Compat.PluginAPI == "" {
		t.Fatalf("package.json %+v", pkg)
	}
	var pm pluginManifest
	if err := json.Unmarshal(read(t, fsys, "openclaw.plugin.json"), &pm); err != nil {
		t.Fatal(err)
	}
	if pm.ID != extensions.OpenClawPluginID || !pm.Activation.OnStartup || pm.Version != pkg.Version {
		t.Fatalf("openclaw.plugin.json %+v", pm)
	}
	// A strict schema whose keys are exactly what the Go side reads.
	if pm.ConfigSchema.Type != "object" || pm.ConfigSchema.AdditionalProperties == nil || *pm.ConfigSchema.AdditionalProperties {
		t.Fatal("configSchema must be a closed object")
	}
	var keys, goKeys []string
	for k := range pm.ConfigSchema.Properties {
		keys = append(keys, k)
	}
	ty := reflect.TypeOf(plugin.OpenClawConfig{})
	for i := 0; i < ty.NumField(); i++ {
		goKeys = append(goKeys, strings.Split(ty.Field(i).Tag.Get("json"), ",")[0])
	}
	sort.Strings(keys)
	sort.Strings(goKeys)
	if !reflect.DeepEqual(keys, goKeys) {
		t.Fatalf("configSchema keys %v, Go config keys %v", keys, goKeys)
	}

	// index.mjs: no imports but node builtins, the binary path of the
	// manifest, the right command, and only methods plugin serve offers.
	js := string(read(t, fsys, "index.mjs"))
	for _, imp := range regexp.MustCompile(`(?m)^import .* from "([^"]+)";`).FindAllStringSubmatch(js, -1) {
		if !strings.HasPrefix(imp[1], "node:") {
			t.Fatalf("index.mjs imports %s (must be dependency-free)", imp[1])
		}
	}
	if !strings.Contains(js, `["plugin", "serve", "--client", "openclaw"]`) || !strings.Contains(js, `path.join(root, "bin", "metaclaw")`) {
		t.Fatal("index.mjs does not start bin/metaclaw plugin serve --client openclaw")
	}
	if !strings.Contains(js, "globalThis[GLOBAL]") || !strings.Contains(js, `Symbol.for("metaclaw.openclaw.bridge`) {
		t.Fatal("index.mjs must keep its child process on a process-global")
	}
	served := append([]string{plugin.MethodInitialize, "tools.list", "tools.call"}, plugin.OpenClawMethods...)
	for _, m := range regexp.MustCompile(`b\.call\("([a-z_.]+)"|"(initialize)"`).FindAllStringSubmatch(js, -1) {
		name := m[1] + m[2]
		if !slices.Contains(served, name) {
			t.Fatalf("index.mjs calls %q, which plugin serve does not serve", name)
		}
	}
	for _, hook := range regexp.MustCompile(`forward\("([a-z_]+)"`).FindAllStringSubmatch(js, -1) {
		if !slices.Contains(plugin.OpenClawMethods, "openclaw."+hook[1]) {
			t.Fatalf("index.mjs forwards %s, which plugin serve does not serve", hook[1])
		}
	}
	// Contract tools are the ones the shim may register.
	for _, tool := range pm.Contracts.Tools {
		if !strings.Contains(js, tool+":") {
			t.Fatalf("contract tool %s missing from index.mjs CONTRACT_TOOLS", tool)
		}
	}
}

// TestManifestsAgree: the top-level manifest.json and openclaw.plugin.json
// describe the same plugin.
func TestManifestsAgree(t *testing.T) {
	var top topManifest
	b, err := os.ReadFile(filepath.Join("..", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	var pm pluginManifest
	if err := json.Unmarshal(read(t, extensions.OpenClaw(), "openclaw.plugin.json"), &pm); err != nil {
		t.Fatal(err)
	}
	if top.ID != pm.ID || top.Name != pm.Name || top.Version != pm.Version || top.Description != pm.Description {
		t.Fatalf("manifest.json (%s %s %s) and openclaw.plugin.json (%s %s %s) disagree", top.ID, top.Name, top.Version, pm.ID, pm.Name, pm.Version)
	}
	if top.Binary != "bin/metaclaw" {
		t.Fatalf("binary %q", top.Binary)
	}
	a, c := slices.Clone(top.JSONRPC.Tools), slices.Clone(pm.Contracts.Tools)
	sort.Strings(a)
	sort.Strings(c)
	if !reflect.DeepEqual(a, c) {
		t.Fatalf("tools: manifest.json %v, contracts.tools %v", a, c)
	}
	var documented []string
	for _, m := range top.JSONRPC.PluginMethods {
		documented = append(documented, m.Name)
	}
	for _, m := range plugin.OpenClawMethods {
		if !slices.Contains(documented, m) {
			t.Fatalf("%s is not documented in manifest.json jsonrpc.plugin_methods", m)
		}
	}
}
