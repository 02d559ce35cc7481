package nanoclaw

import (
	"context"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/adaptertest"
)

func TestV1EnvWithSystemdUnit(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(adaptertest.Fixture(t, "clients/nanoclaw/v1/.env.example"), "code/nanoclaw/.env")
	w.Write(".config/systemd/user/nanoclaw.service", "[Service]\nWorkingDirectory=%h/code/nanoclaw\nExecStart=/usr/bin/node dist/index.js\n")
	w.OnPath["systemctl"] = true
	adaptertest.Roundtrip{Adapter: New(), Request: w.Request(), Golden: "v1", Files: []string{"code/nanoclaw/.env"},
		Commands: []string{"systemctl --user restart nanoclaw"}}.Run(w)
}

func v2(t *testing.T, w *adaptertest.World, withEnvSupport bool) {
	t.Helper()
	w.Copy(adaptertest.Fixture(t, "clients/nanoclaw/v2/.env.example"), "nanoclaw/.env")
	w.Copy(adaptertest.Fixture(t, "clients/nanoclaw/v2/groups/FOLDER/container.json"), "nanoclaw/groups/main/container.json")
	w.Copy(adaptertest.Fixture(t, "clients/nanoclaw/v2/groups/FOLDER/container.json"), "nanoclaw/groups/team/container.json")
	w.Copy(adaptertest.Fixture(t, "clients/nanoclaw/v2/claude-shared/settings.json"), "nanoclaw/data/v2-sessions/main/.claude-shared/settings.json")
	w.Copy(adaptertest.Fixture(t, "clients/nanoclaw/v2/mount-allowlist.json"), ".config/nanoclaw/mount-allowlist.json")
	w.Write("nanoclaw/package.json", `{"name": "nanoclaw", "version": "2.0.64"}`+"\n")
	if withEnvSupport {
		w.Write("nanoclaw/src/container-runner.ts", "interface ContainerConfig { env?: Record<string, string>; blockedHosts?: string[] }\n")
	}
	w.Write(".config/systemd/user/nanoclaw-v2-ab12cd.service", "[Service]\nWorkingDirectory="+w.Home+"/nanoclaw\n")
}

func TestV2NeedsReachableProxy(t *testing.T) {
	w := adaptertest.NewWorld(t)
	v2(t, w, true)
	err := w.Engine().Wire(context.Background(), New(), w.Request(), "", adapters.WireOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "metaclaw config set proxy.api_key") || !strings.Contains(err.Error(), "metaclaw config set proxy.host") {
		t.Fatalf("%v", err)
	}
}

func TestV2TwoGroups(t *testing.T) {
	w := adaptertest.NewWorld(t)
	v2(t, w, true)
	req := w.Request("main", "team")
	req.ProxyHost, req.ProxyKey = "172.17.0.1", "sk-proxy-nano-0001"
	w.OnPath["systemctl"] = true
	adaptertest.Roundtrip{Adapter: New(), Request: req, Golden: "v2-groups",
		Files:    []string{"nanoclaw/groups/main/container.json", "nanoclaw/groups/team/container.json"},
		Commands: []string{"systemctl --user restart nanoclaw-v2-ab12cd"}}.Run(w)
	if strings.Contains(w.Out.String(), "no per-group container env") {
		t.Fatal("warned although the source supports per-group env")
	}
}

func TestV2WarnsWithoutPerGroupEnv(t *testing.T) {
	w := adaptertest.NewWorld(t)
	v2(t, w, false)
	req := w.Request("main")
	req.ProxyHost, req.ProxyKey = "0.0.0.0", "sk-proxy-nano-0001"
	if err := w.Engine().Wire(context.Background(), New(), req, "", adapters.WireOptions{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(w.Out.String(), "no per-group container env") {
		t.Fatalf("%s", w.Out.String())
	}
}

func TestUnknownMajorAndHooks(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Write("nanoclaw/package.json", `{"version": "3.0.0"}`)
	err := w.Engine().Wire(context.Background(), New(), w.Request(), "", adapters.WireOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "nanoclaw v3.0.0") || !strings.Contains(err.Error(), "update metaclaw") {
		t.Fatalf("%v", err)
	}
	w2 := adaptertest.NewWorld(t)
	v2(t, w2, true)
	req := w2.Request()
	req.Via = adapters.ViaHooks
	if err := w2.Engine().Wire(context.Background(), New(), req, "", adapters.WireOptions{Yes: true}); err == nil || !strings.Contains(err.Error(), "--via proxy") {
		t.Fatalf("%v", err)
	}
}
