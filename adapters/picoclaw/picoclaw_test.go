package picoclaw

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/adaptertest"
	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
)

const cfg = ".picoclaw/config.json"

// v3 example plus a second agent, as a user would add it to agents.list.
func TestV3TwoAgentsBoth(t *testing.T) {
	w := adaptertest.NewWorld(t)
	p := w.Copy(adaptertest.Fixture(t, "clients/picoclaw/v3/config.example.json"), cfg)
	b, _ := os.ReadFile(p)
	doc, err := edit.ParseJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Set(edit.P("agents", "list"), []any{edit.O("id", "coder", "model", "claude-opus-4-6")}); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, doc.Bytes(), 0o644)
	req := w.Request("main", "coder")
	req.Via = adapters.ViaBoth
	req.ProxyKey = "sk-proxy-key-0001"
	adaptertest.Roundtrip{Adapter: New(), Request: req, Golden: "v3-both", Files: []string{cfg}}.Run(w)
}

func TestV0MarchProxy(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(adaptertest.Fixture(t, "clients/picoclaw/v0-2026-03/config.example.json"), cfg)
	adaptertest.Roundtrip{Adapter: New(), Request: w.Request("main"), Golden: "v0-proxy", Files: []string{cfg}}.Run(w)
	b, _ := os.ReadFile(filepath.Join("testdata", "v0-proxy.picoclaw_config.json.golden"))
	if !strings.Contains(string(b), `"api_key": "metaclaw-local"`) || strings.Contains(string(b), `"api_keys": ["metaclaw-local"]`) {
		t.Fatal("a v0 file must get the singular api_key")
	}
}

func TestFutureVersionRefused(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Write(cfg, "{\n  \"version\": 9,\n  \"agents\": {\"defaults\": {\"model_name\": \"x\"}}\n}\n")
	err := w.Engine().Wire(context.Background(), New(), w.Request(), "", adapters.WireOptions{Yes: true})
	if err == nil || err.Error() != "picoclaw config version 9 is newer than this metaclaw knows (3); update metaclaw" {
		t.Fatalf("%v", err)
	}
	var ue *adapters.UnsupportedError
	if !errors.As(err, &ue) {
		t.Fatal("not an UnsupportedError")
	}
}

func TestConfigEnvAndHooksOff(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Vars["PICOCLAW_CONFIG"] = filepath.Join(w.Home, "pc", "my.json")
	w.Write("pc/my.json", `{"version": 3, "agents": {"defaults": {"model_name": "m"}}, "model_list": [{"model_name": "m", "model": "openai/gpt-x", "api_base": "https://api.example.com/v1"}], "hooks": {"enabled": false}}`)
	req := w.Request()
	req.Via = adapters.ViaHooks
	err := w.Engine().Wire(context.Background(), New(), req, "", adapters.WireOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "hooks are turned off") {
		t.Fatalf("%v", err)
	}
	if err := w.Engine().Wire(context.Background(), New(), w.Request(), "", adapters.WireOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(w.Home, "pc", "my.json"))
	if !strings.Contains(string(b), `"model_name": "metaclaw-main"`) {
		t.Fatalf("%s", b)
	}
}

func TestUnknownAgent(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(adaptertest.Fixture(t, "clients/picoclaw/v3/config.example.json"), cfg)
	err := w.Engine().Wire(context.Background(), New(), w.Request("coder"), "", adapters.WireOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), `no agent "coder"`) {
		t.Fatalf("%v", err)
	}
}

// A running gateway is asked to reload through POST /reload with the token
// from its pid file, after wire and after unwire.
func TestReloadRunningGateway(t *testing.T) {
	var reloads atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/reload" || r.Header.Get("Authorization") != "Bearer tok-123" {
			http.Error(w, "bad", http.StatusUnauthorized)
			return
		}
		reloads.Add(1)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	w := adaptertest.NewWorld(t)
	w.Env.HTTP = srv.Client()
	w.Copy(adaptertest.Fixture(t, "clients/picoclaw/v3/config.example.json"), cfg)
	w.Write(".picoclaw/.picoclaw.pid", fmt.Sprintf(`{"pid": 4242, "token": "tok-123", "version": "0.2.9", "port": %s, "host": "127.0.0.1"}`, u.Port()))
	eng := w.Engine()
	if err := eng.Wire(context.Background(), New(), w.Request(), "", adapters.WireOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	if reloads.Load() != 1 || !strings.Contains(w.Out.String(), "reloaded") {
		t.Fatalf("reloads %d\n%s", reloads.Load(), w.Out.String())
	}
	if err := eng.Unwire(context.Background(), New(), adapters.UnwireOptions{}); err != nil {
		t.Fatal(err)
	}
	if reloads.Load() != 2 {
		t.Fatalf("reloads after unwire: %d", reloads.Load())
	}
}
