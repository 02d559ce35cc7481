package openclaw

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/adaptertest"
	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
	"github.com/metaclaw-go/metaclaw/extensions"
)

// fakeExtension stands in for extensions.OpenClaw() in these tests.
func fakeExtension() fs.FS {
	return fstest.MapFS{
		"package.json":         {Data: []byte(`{"name":"@metaclaw/openclaw","type":"module","openclaw":{"extensions":["./index.mjs"]}}` + "\n")},
		"openclaw.plugin.json": {Data: []byte(`{"id":"metaclaw","configSchema":{"type":"object","properties":{"agents":{"type":"array","items":{"type":"string"}}}},"activation":{"onStartup":true}}` + "\n")},
		"index.mjs":            {Data: []byte("export default { id: \"metaclaw\", register(api) {} };\n")},
	}
}

const cfg = ".openclaw/openclaw.json"

func TestDocsCurrentCustomProviders(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(fixture(t, "clients/openclaw/docs-current/custom-providers.openclaw.json5"), cfg)
	req := w.Request("main")
	req.Model = "llama-3.1-8b" // the example sets no agents.defaults.model
	adaptertest.Roundtrip{Adapter: New(fakeExtension), Request: req, Golden: "docs-custom-providers", Files: []string{cfg}}.Run(w)
}

func TestDocsCurrentLlamacpp(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(fixture(t, "clients/openclaw/docs-current/provider-example-llamacpp.openclaw.json5"), cfg)
	adaptertest.Roundtrip{Adapter: New(fakeExtension), Request: w.Request(), Golden: "docs-llamacpp", Files: []string{cfg}}.Run(w)
}

func TestDocsCurrentSyntheticAnthropic(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(fixture(t, "clients/openclaw/docs-current/provider-example-synthetic-anthropic.openclaw.json5"), cfg)
	req := w.Request("main")
	req.ProxyKey = "sk-proxy-secret-123"
	adaptertest.Roundtrip{Adapter: New(fakeExtension), Request: req, Golden: "docs-synthetic-anthropic", Files: []string{cfg}}.Run(w)
	if !strings.Contains(w.Out.String(), "") {
		t.Fatal()
	}
}

func TestJSON5CommentsKept(t *testing.T) {
	w := adaptertest.NewWorld(t)
	src := fixture(t, "openclaw-2026.9.6/config/json5-comments.before.json5")
	w.Copy(src, cfg)
	req := w.Request()
	req.Model = "gpt-5.4"
	req.Via = adapters.ViaBoth
	w.OnPath["openclaw"] = true
	adaptertest.Roundtrip{Adapter: New(fakeExtension), Request: req, Golden: "json5-comments", Files: []string{cfg},
		Commands: []string{"openclaw gateway restart"}}.Run(w)
}

// The live 2026.9.6 config (strict JSON) plus a second agent, as
// `openclaw agents add coder` would leave it, wired both ways.
func TestLive2026_9_6BothAgentsAndHooks(t *testing.T) {
	w := adaptertest.NewWorld(t)
	p := w.Copy(fixture(t, "openclaw-2026.9.6/config/openclaw.after-config-set.json"), cfg)
	addAgent(t, p, "coder", `{"workspace": "/home/user/ws-coder", "model": "fakeanth/fake-claude"}`)
	req := w.Request("main", "coder")
	req.Via = adapters.ViaBoth
	w.OnPath["openclaw"] = true
	adaptertest.Roundtrip{Adapter: New(fakeExtension), Request: req, Golden: "live-2026.9.6-both", Files: []string{cfg},
		Commands: []string{"openclaw gateway restart"}}.Run(w)
}

func addAgent(t *testing.T, path, id, entry string) {
	t.Helper()
	doc := load(t, path)
	var v any
	if err := jsonUnmarshal(entry, &v); err != nil {
		t.Fatal(err)
	}
	if err := doc.Set(edit.P("agents", "entries", id), v); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, doc.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLegacy2026_2_15(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(fixture(t, "clients/openclaw/legacy-2026.2.15/openclaw.json"), cfg)
	adaptertest.Roundtrip{Adapter: New(fakeExtension), Request: w.Request(), Golden: "legacy-2026.2.15", Files: []string{cfg}}.Run(w)

	// hooks need allowConversationAccess, which 2026.2.15 does not have
	req := w.Request()
	req.Via = adapters.ViaHooks
	err := w.Engine().Wire(context.Background(), New(fakeExtension), req, "", adapters.WireOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "predates hooks.allowConversationAccess") {
		t.Fatalf("hooks on 2026.2.15: %v", err)
	}
	// an agent the config does not define
	req = w.Request("metaclaw_agent", "ghost")
	err = w.Engine().Wire(context.Background(), New(fakeExtension), req, "", adapters.WireOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), `no agent "ghost"`) {
		t.Fatalf("unknown agent: %v", err)
	}
}

func TestFutureVersionRefused(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Write(cfg, `{"meta": {"lastTouchedVersion": "2027.3.1"}, "agents": {"defaults": {"model": "x/y"}}}`)
	before := w.Snapshot()
	err := w.Engine().Wire(context.Background(), New(fakeExtension), w.Request(), "", adapters.WireOptions{Yes: true})
	var ue *adapters.UnsupportedError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "newer than this metaclaw knows (2026.9.x); update metaclaw") {
		t.Fatalf("future version: %v", err)
	}
	adaptertest.SameSnapshot(t, "refused", before, w.Snapshot())
}

func TestEnvOverridesAndNotInstalled(t *testing.T) {
	w := adaptertest.NewWorld(t)
	err := w.Engine().Wire(context.Background(), New(fakeExtension), w.Request(), "", adapters.WireOptions{Yes: true})
	if !errors.Is(err, adapters.ErrNotFound) {
		t.Fatalf("not installed: %v", err)
	}
	state := filepath.Join(w.Home, "oc-state")
	w.Vars["OPENCLAW_STATE_DIR"] = state
	w.Vars["OPENCLAW_CONFIG_PATH"] = filepath.Join(w.Home, "elsewhere", "oc.json")
	w.Copy(fixture(t, "clients/openclaw/docs-current/provider-example-llamacpp.openclaw.json5"), "elsewhere/oc.json")
	req := w.Request()
	req.Via = adapters.ViaBoth
	if err := w.Engine().Wire(context.Background(), New(fakeExtension), req, "", adapters.WireOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(state, "extensions", "metaclaw", "index.mjs")); err != nil {
		t.Fatalf("extension not installed under OPENCLAW_STATE_DIR: %v", err)
	}
	if l, err := os.Readlink(filepath.Join(state, "extensions", "metaclaw", "bin", "metaclaw")); err != nil || l != adaptertest.FakeBin {
		t.Fatalf("bin link: %q %v", l, err)
	}
	b, _ := os.ReadFile(filepath.Join(w.Home, "elsewhere", "oc.json"))
	if !strings.Contains(string(b), `"metaclaw-main"`) {
		t.Fatalf("OPENCLAW_CONFIG_PATH not used:\n%s", b)
	}
	if err := w.Engine().Unwire(context.Background(), New(fakeExtension), adapters.UnwireOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(state, "extensions")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("unwire left the extensions dir: %v", err)
	}
}

// Wiring never touches the sandbox or any allowlist except appending our
// own id to plugins.allow.
func TestSandboxAndAllowlistsUntouched(t *testing.T) {
	w := adaptertest.NewWorld(t)
	p := w.Copy(fixture(t, "openclaw-2026.9.6/config/openclaw.after-config-set.json"), cfg)
	b, _ := os.ReadFile(p)
	doc, err := edit.ParseJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []struct {
		p edit.Path
		v any
	}{
		{edit.P("agents", "defaults", "sandbox"), edit.O("mode", "all", "scope", "agent", "workspaceAccess", "ro")},
		{edit.P("tools", "deny"), []string{"group:runtime", "browser"}},
		{edit.P("tools", "allow"), []string{"read", "edit"}},
		{edit.P("plugins", "deny"), []string{"evil-plugin"}},
	} {
		if err := doc.Set(set.p, set.v); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(p, doc.Bytes(), 0o644)
	orig, _ := os.ReadFile(p)
	origDoc, _ := edit.ParseJSON(orig)

	req := w.Request()
	req.Via = adapters.ViaBoth
	if err := w.Engine().Wire(context.Background(), New(fakeExtension), req, "", adapters.WireOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(p)
	afterDoc, err := edit.ParseJSON(after)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []edit.Path{edit.P("agents", "defaults", "sandbox"), edit.P("tools", "deny"), edit.P("tools", "allow"), edit.P("plugins", "deny")} {
		a, _ := origDoc.Get(path)
		z, _ := afterDoc.Get(path)
		if edit.Canon(a) != edit.Canon(z) {
			t.Fatalf("%s changed: %s → %s", path, edit.Canon(a), edit.Canon(z))
		}
	}
	for _, path := range []edit.Path{edit.P("agents", "defaults", "sandbox"), edit.P("tools", "deny"), edit.P("tools", "allow"), edit.P("plugins", "deny")} {
		a, ok1 := origDoc.Raw(path)
		z, ok2 := afterDoc.Raw(path)
		if !ok1 || !ok2 || a != z {
			t.Fatalf("%s is not byte-identical after wire:\n%s\n---\n%s", path, a, z)
		}
	}
	oa, _ := origDoc.Get(edit.P("plugins", "allow"))
	na, _ := afterDoc.Get(edit.P("plugins", "allow"))
	ol, nl := oa.([]any), na.([]any)
	if len(nl) != len(ol)+1 || !slices.Equal(nl[:len(ol)], ol) || nl[len(ol)] != "metaclaw" {
		t.Fatalf("plugins.allow: %v → %v (want the old list plus metaclaw)", ol, nl)
	}
	if err := w.Engine().Unwire(context.Background(), New(fakeExtension), adapters.UnwireOptions{}); err != nil {
		t.Fatal(err)
	}
	back, _ := os.ReadFile(p)
	if string(back) != string(orig) {
		t.Fatal("unwire is not byte-identical")
	}
}

func TestDeniedOrDisabledPluginsRefuseHooks(t *testing.T) {
	for name, content := range map[string]string{
		"deny":     `{"agents":{"defaults":{"model":"a/b"}},"plugins":{"deny":["metaclaw"]}}`,
		"disabled": `{"agents":{"defaults":{"model":"a/b"}},"plugins":{"enabled":false}}`,
	} {
		t.Run(name, func(t *testing.T) {
			w := adaptertest.NewWorld(t)
			w.Write(cfg, content)
			req := w.Request()
			req.Via = adapters.ViaHooks
			err := w.Engine().Wire(context.Background(), New(fakeExtension), req, "", adapters.WireOptions{Yes: true})
			if err == nil || !strings.Contains(err.Error(), "metaclaw does not") {
				t.Fatalf("%v", err)
			}
			// the proxy path still works
			if err := w.Engine().Wire(context.Background(), New(fakeExtension), w.Request(), "", adapters.WireOptions{Yes: true}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestNoExtensionBuiltIn(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(fixture(t, "clients/openclaw/docs-current/provider-example-llamacpp.openclaw.json5"), cfg)
	req := w.Request()
	req.Via = adapters.ViaHooks
	err := w.Engine().Wire(context.Background(), New(nil), req, "", adapters.WireOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "--via proxy") {
		t.Fatalf("%v", err)
	}
	if err := w.Engine().Wire(context.Background(), New(nil), w.Request(), "", adapters.WireOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
}

// Re-wiring with other options starts from the original file: switching
// from both to proxy removes the extension again.
func TestRewireOtherOptions(t *testing.T) {
	w := adaptertest.NewWorld(t)
	p := w.Copy(fixture(t, "clients/openclaw/docs-current/provider-example-llamacpp.openclaw.json5"), cfg)
	eng := w.Engine()
	both := w.Request()
	both.Via = adapters.ViaBoth
	if err := eng.Wire(context.Background(), New(fakeExtension), both, "", adapters.WireOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	proxyOnly := w.Request()
	proxyOnly.ProxyPort = 31000
	if err := eng.Wire(context.Background(), New(fakeExtension), proxyOnly, "", adapters.WireOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(w.Home, ".openclaw", "extensions", "metaclaw")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("extension still installed after re-wiring with --via proxy: %v", err)
	}
	b, _ := os.ReadFile(p)
	if strings.Contains(string(b), "plugins") || !strings.Contains(string(b), ":31000/a/main/v1") {
		t.Fatalf("re-wired file:\n%s", b)
	}
	if w.Backups("openclaw") != 1 {
		t.Fatal("re-wire made a second backup")
	}
	if err := eng.Unwire(context.Background(), New(fakeExtension), adapters.UnwireOptions{}); err != nil {
		t.Fatal(err)
	}
	orig, _ := os.ReadFile(fixture(t, "clients/openclaw/docs-current/provider-example-llamacpp.openclaw.json5"))
	b, _ = os.ReadFile(p)
	if string(b) != string(orig) {
		t.Fatal("not restored")
	}
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }

// fixture is a real client config in the repository's testdata/ (see
// testdata/SOURCES.md); a missing one fails the test.
func fixture(t testing.TB, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", "testdata", rel))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("fixture missing from the repository: %v", err)
	}
	return p
}

// The real embedded extension (package extensions) installs into a live
// 2026.9.6 config; a 2026.5 config is refused by its pluginApi floor.
func TestRealExtension(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(fixture(t, "openclaw-2026.9.6/config/openclaw.after-config-set.json"), cfg)
	req := w.Request()
	req.Via = adapters.ViaHooks
	if err := w.Engine().Wire(context.Background(), New(extensions.OpenClaw), req, "", adapters.WireOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"package.json", "openclaw.plugin.json", "index.mjs"} {
		want, _ := fs.ReadFile(extensions.OpenClaw(), f)
		got, err := os.ReadFile(filepath.Join(w.Home, ".openclaw/extensions", extensions.OpenClawPluginID, f))
		if err != nil || string(got) != string(want) {
			t.Fatalf("%s not installed verbatim: %v", f, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(w.Home, cfg))
	doc, _ := edit.ParseJSON(b)
	if v, _ := doc.Get(edit.P("plugins", "entries", extensions.OpenClawPluginID, "config", "agents")); edit.Canon(v) != `["main"]` {
		t.Fatalf("agents filter: %v", v)
	}

	w2 := adaptertest.NewWorld(t)
	w2.Write(cfg, `{"meta": {"lastTouchedVersion": "2026.5.7"}, "agents": {"defaults": {"model": "a/b"}}}`)
	err := w2.Engine().Wire(context.Background(), New(extensions.OpenClaw), req, "", adapters.WireOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "older than the MetaClaw extension needs (2026.9.6") {
		t.Fatalf("%v", err)
	}
}
