package hermes

import (
	"context"
	"os"
	"path/filepath"
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

// A config saved on Windows with non-ASCII keys, values and comments:
// the edits keep CRLF line ends and every character, and unwire restores
// the bytes (Roundtrip).
func TestCRLFAndNonASCII(t *testing.T) {
	w := adaptertest.NewWorld(t)
	src := strings.ReplaceAll("# Hermes — configuración\n"+
		"model:\n  default: \"modèle-α\"   # 模型\n  provider: auto\n"+
		"custom_providers:\n  - name: ünï\n    base_url: https://例え.jp/v1 # ここ\n"+
		"名前: 値\n", "\n", "\r\n")
	w.Write(".hermes/config.yaml", src)
	req := w.Request()
	req.Via = adapters.ViaBoth
	adaptertest.Roundtrip{Adapter: New(), Request: req, Golden: "crlf-nonascii",
		Files: []string{".hermes/config.yaml"}}.Run(w)
	w2 := adaptertest.NewWorld(t)
	w2.Write(".hermes/config.yaml", src)
	req2 := w2.Request()
	req2.Via = adapters.ViaBoth
	if err := w2.Engine().Wire(context.Background(), New(), req2, "", adapters.WireOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(w2.Home, ".hermes", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got := string(b)
	if strings.Count(got, "\n") != strings.Count(got, "\r\n") {
		t.Fatalf("a line lost its CR:\n%q", got)
	}
	for _, keep := range []string{"# Hermes — configuración\r\n", "  default: \"modèle-α\"   # 模型\r\n", "    base_url: https://例え.jp/v1 # ここ\r\n", "名前: 値\r\n"} {
		if !strings.Contains(got, keep) {
			t.Fatalf("lost %q:\n%s", keep, got)
		}
	}
}
