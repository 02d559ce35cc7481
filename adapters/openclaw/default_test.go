package openclaw

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/adaptertest"
	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
	"github.com/metaclaw-go/metaclaw/extensions"
)

// onboarded copies the config a fresh `openclaw onboard` wrote into the
// world, with its state paths moved under the world's home.
func onboarded(t *testing.T, w *adaptertest.World) string {
	t.Helper()
	b, err := os.ReadFile(fixture(t, "openclaw-2026.9.6/config/onboarded.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), "/home/user/oc-onboard/state", filepath.Join(w.Home, ".openclaw"))
	return w.Write(cfg, s)
}

func load(t *testing.T, path string) *edit.JSON {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := edit.ParseJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// doctor runs the doctor on one client: what passed, and what failed with its fix.
func doctor(w *adaptertest.World, a adapters.Adapter, req *adapters.Request) (ok, bad string) {
	var good, fail []string
	for _, f := range w.Engine().Doctor(context.Background(), []adapters.Adapter{a}, adapters.DoctorInput{Request: req}) {
		if f.OK {
			good = append(good, f.What)
		} else {
			fail = append(fail, f.What+" | fix: "+f.Fix)
		}
	}
	return strings.Join(good, "\n"), strings.Join(fail, "\n")
}

func canon(doc *edit.JSON, p ...any) string {
	v, _ := doc.Get(edit.Path(p))
	return edit.Canon(v)
}

// TestDefaultIsThePlugin: `metaclaw wire openclaw` with no --via installs
// and enables the extension with conversation access for the chosen agent,
// creates no allowlist (OpenClaw's default plugins stay on), leaves the
// models alone, and unwire restores every byte.
func TestDefaultIsThePlugin(t *testing.T) {
	w := adaptertest.NewWorld(t)
	p := onboarded(t, w)
	before := w.Snapshot()
	w.Env.MetaclawHome = filepath.Join(filepath.Dir(w.Home), "mc-elsewhere")
	req := w.Request()
	req.Via = "" // what `metaclaw wire openclaw` sends without --via
	req.MetaclawBin = w.Bin
	a := New(extensions.OpenClaw)
	if a.DefaultVia() != adapters.ViaHooks {
		t.Fatal("the default is not the plugin")
	}
	if err := w.Engine().Wire(context.Background(), a, req, "", adapters.WireOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	doc := load(t, p)
	if _, ok := doc.Get(edit.P("plugins", "allow")); ok {
		t.Fatal("wire created plugins.allow: every other plugin would be turned off")
	}
	for path, want := range map[string]string{
		"enabled":        "true",
		"conversation":   "true",
		"agents":         `["main"]`,
		"home":           `"` + w.Env.MetaclawHome + `"`,
		"defaults model": `{"primary":"custom-127-0-0-1-28555/fake-model"}`,
	} {
		var got string
		switch path {
		case "enabled":
			got = canon(doc, "plugins", "entries", "metaclaw", "enabled")
		case "conversation":
			got = canon(doc, "plugins", "entries", "metaclaw", "hooks", "allowConversationAccess")
		case "agents":
			got = canon(doc, "plugins", "entries", "metaclaw", "config", "agents")
		case "home":
			got = canon(doc, "plugins", "entries", "metaclaw", "config", "home")
		case "defaults model":
			got = canon(doc, "agents", "defaults", "model")
		}
		if got != want {
			t.Errorf("%s = %s, want %s", path, got, want)
		}
	}
	if _, ok := doc.Get(edit.P("models", "providers", "metaclaw-main")); ok {
		t.Fatal("the plugin path added a proxy provider")
	}
	ext := filepath.Join(w.Home, ".openclaw", "extensions", "metaclaw")
	for _, f := range []string{"index.mjs", "openclaw.plugin.json", "package.json"} {
		want, _ := fs.ReadFile(extensions.OpenClaw(), f)
		got, err := os.ReadFile(filepath.Join(ext, f))
		if err != nil || string(got) != string(want) {
			t.Fatalf("%s not installed: %v", f, err)
		}
	}
	// doctor: everything the plugin needs is in place.
	if _, bad := doctor(w, a, req); bad != "" {
		t.Errorf("doctor:\n%s", bad)
	}
	if err := w.Engine().Unwire(context.Background(), a, adapters.UnwireOptions{}); err != nil {
		t.Fatal(err)
	}
	adaptertest.SameSnapshot(t, "after unwire", before, w.Snapshot())
}

// TestProxyKeepsOtherAgentsOut: --via proxy --agent main points only main's
// own model entry at the proxy, with its old model as the fallback; an
// agent with its own model and one inheriting agents.defaults.model are
// untouched, doctor says so and notices when that changes.
func TestProxyKeepsOtherAgentsOut(t *testing.T) {
	w := adaptertest.NewWorld(t)
	p := onboarded(t, w)
	addAgent(t, p, "coder", `{"workspace": "/home/user/ws-coder", "model": {"primary": "custom-127-0-0-1-28555/fake-model", "fallbacks": ["x/y"]}}`)
	addAgent(t, p, "helper", `{"workspace": "/home/user/ws-helper"}`)
	before := w.Snapshot()
	orig := load(t, p)
	req := w.Request("main")
	req.Via = adapters.ViaProxy
	a := New(extensions.OpenClaw)
	if err := w.Engine().Wire(context.Background(), a, req, "", adapters.WireOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	doc := load(t, p)
	if got := canon(doc, "agents", "entries", "main", "model"); got != `{"fallbacks":["custom-127-0-0-1-28555/fake-model"],"primary":"metaclaw-main/fake-model"}` {
		t.Fatalf("main's model: %s", got)
	}
	for _, path := range [][]any{{"agents", "defaults", "model"}, {"agents", "entries", "coder"}, {"agents", "entries", "helper"}} {
		if canon(doc, path...) != canon(orig, path...) {
			t.Fatalf("%v changed: %s -> %s", path, canon(orig, path...), canon(doc, path...))
		}
	}
	if got := canon(doc, "agents", "defaults", "models"); !strings.Contains(got, "metaclaw-main/fake-model") {
		t.Fatalf("model allowlist lacks the MetaClaw model: %s", got)
	}
	settings := filepath.Join(w.Home, ".openclaw", "agents", "main", "agent", "settings.json")
	if got := canon(load(t, settings), "retry", "provider", "maxRetries"); got != "1" {
		t.Fatalf("fast failover setting: %s", got)
	}
	if _, err := os.Stat(filepath.Join(w.Home, ".openclaw", "agents", "helper", "agent", "settings.json")); err == nil {
		t.Fatal("an agent that was not enabled got retry settings")
	}
	ok, bad := doctor(w, a, req)
	for _, want := range []string{"agent coder (not enabled) still uses its own model", "agents helper (not enabled) inherit agents.defaults.model", "agent main falls back to"} {
		if !strings.Contains(ok, want) {
			t.Errorf("doctor does not report %q:\n%s", want, ok)
		}
	}
	for _, b := range strings.Split(bad, "\n") {
		if b != "" && !strings.Contains(b, "proxy does not answer") {
			t.Errorf("doctor: %s", b)
		}
	}
	// Someone points the defaults at MetaClaw: helper would be served as main.
	d := load(t, p)
	if err := d.Set(edit.P("agents", "defaults", "model", "primary"), "metaclaw-main/fake-model"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, d.Bytes(), 0o600)
	_, bad = doctor(w, a, req)
	if !strings.Contains(bad, "helper (not enabled)") {
		t.Fatalf("doctor missed the rewired default: %v", bad)
	}
	os.WriteFile(p, doc.Bytes(), 0o600)
	if err := w.Engine().Unwire(context.Background(), a, adapters.UnwireOptions{}); err != nil {
		t.Fatal(err)
	}
	adaptertest.SameSnapshot(t, "after unwire", before, w.Snapshot())
}

// TestHandCopiedExtension: the README's copy-by-hand install. Without
// conversation access doctor names the one command that grants it; with it
// (and a metaclaw on PATH) doctor recognises a working hooks-only setup.
func TestHandCopiedExtension(t *testing.T) {
	w := adaptertest.NewWorld(t)
	p := onboarded(t, w)
	dir := filepath.Join(w.Home, ".openclaw", "extensions", "metaclaw")
	for _, f := range []string{"index.mjs", "openclaw.plugin.json", "package.json"} {
		b, _ := fs.ReadFile(extensions.OpenClaw(), f)
		w.Write(filepath.Join(dir, f), string(b))
	}
	a := New(extensions.OpenClaw)
	req := w.Request()
	_, bad := doctor(w, a, req)
	if !strings.Contains(bad, "conversation access is not granted") || !strings.Contains(bad, "fix: openclaw config set plugins.entries.metaclaw.hooks.allowConversationAccess true") {
		t.Fatalf("doctor without conversation access:\n%s", bad)
	}
	if !strings.Contains(bad, "finds no metaclaw binary") {
		t.Fatalf("doctor without a binary:\n%s", bad)
	}
	if strings.Contains(bad, "not wired") {
		t.Fatalf("a hand install is reported as not wired:\n%s", bad)
	}
	doc := load(t, p)
	doc.Set(edit.P("plugins", "entries", "metaclaw", "hooks", "allowConversationAccess"), true)
	os.WriteFile(p, doc.Bytes(), 0o600)
	w.OnPath["metaclaw"] = true
	ok, bad := doctor(w, a, req)
	if bad != "" || !strings.Contains(ok, "hooks-only setup works") || !strings.Contains(ok, "finds and starts /usr/bin/metaclaw") {
		t.Fatalf("working hand install:\nok:\n%s\nbad:\n%s", ok, bad)
	}
	// An allowlist without us: the fix keeps every plugin already listed.
	doc.Set(edit.P("plugins", "allow"), []any{"browser", "openai"})
	os.WriteFile(p, doc.Bytes(), 0o600)
	_, bad = doctor(w, a, req)
	if !strings.Contains(bad, `openclaw config set plugins.allow '["browser","openai","metaclaw"]' --strict-json`) {
		t.Fatalf("allowlist fix:\n%s", bad)
	}
}

// TestExistingAllowlistGetsOurID: an allowlist the user has keeps every
// entry and gains ours; doctor checks it.
func TestExistingAllowlistGetsOurID(t *testing.T) {
	w := adaptertest.NewWorld(t)
	p := onboarded(t, w)
	doc := load(t, p)
	doc.Set(edit.P("plugins", "allow"), []any{"browser", "openai"})
	os.WriteFile(p, doc.Bytes(), 0o600)
	req := w.Request()
	req.Via = ""
	if err := w.Engine().Wire(context.Background(), New(extensions.OpenClaw), req, "", adapters.WireOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	if got := canon(load(t, p), "plugins", "allow"); got != `["browser","openai","metaclaw"]` {
		t.Fatalf("plugins.allow %s", got)
	}
}
