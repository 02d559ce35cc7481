package hermes

import (
	"context"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/adaptertest"
)

func TestTogetherAndTemplateProfilesBoth(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(adaptertest.Fixture(t, "clients/hermes/2026-07/custom-providers-together.config.yaml"), ".hermes/config.yaml")
	w.Copy(adaptertest.Fixture(t, "clients/hermes/2026-07/cli-config.yaml.example"), ".hermes/profiles/coder/config.yaml")
	req := w.Request("default", "coder")
	req.Via = adapters.ViaBoth
	req.ProxyKey = "sk-proxy-hermes-01"
	w.OnPath["hermes"] = true
	adaptertest.Roundtrip{Adapter: New(), Request: req, Golden: "2026-07-both",
		Files:    []string{".hermes/config.yaml", ".hermes/profiles/coder/config.yaml", ".hermes/shell-hooks-allowlist.json"},
		Commands: []string{"hermes gateway restart"}}.Run(w)
}

func TestTemplateProxyOnly(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(adaptertest.Fixture(t, "clients/hermes/2026-07/cli-config.yaml.example"), ".hermes/config.yaml")
	adaptertest.Roundtrip{Adapter: New(), Request: w.Request(), Golden: "2026-07-template", Files: []string{".hermes/config.yaml"}}.Run(w)
}

// Existing user hooks and approvals are kept; ours are appended.
func TestExistingHooksKept(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(adaptertest.Fixture(t, "clients/hermes/2026-07/hooks-pre_llm_call.yaml"), "hh/config.yaml")
	w.Write("hh/shell-hooks-allowlist.json", `{"approvals": [{"approved_at": "2026-06-24T11:34:56Z", "command": "~/.hermes/agent-hooks/inject-cwd-context.sh", "event": "pre_llm_call", "script_mtime_at_approval": null}]}`+"\n")
	w.Vars["HERMES_HOME"] = w.Home + "/hh"
	req := w.Request()
	req.Via = adapters.ViaHooks
	adaptertest.Roundtrip{Adapter: New(), Request: req, Golden: "hooks-existing", Files: []string{"hh/config.yaml", "hh/shell-hooks-allowlist.json"}}.Run(w)
}

func TestRefusals(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Write(".hermes/config.yaml", "_config_version: 51\nmodel:\n  default: x\n")
	err := w.Engine().Wire(context.Background(), New(), w.Request(), "", adapters.WireOptions{Yes: true})
	if err == nil || err.Error() != "hermes config _config_version 51 is newer than this metaclaw knows (50); update metaclaw" {
		t.Fatalf("%v", err)
	}
	w.Write(".hermes/config.yaml", "_config_version: 33\n")
	err = w.Engine().Wire(context.Background(), New(), w.Request("writer"), "", adapters.WireOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), `no agent "writer"`) {
		t.Fatalf("%v", err)
	}
	err = w.Engine().Wire(context.Background(), New(), w.Request(), "", adapters.WireOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "pass --model") {
		t.Fatalf("%v", err)
	}
}
