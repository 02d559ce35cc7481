package copaw

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/adaptertest"
)

func qwenpaw(t *testing.T, w *adaptertest.World) {
	t.Helper()
	src := "clients/copaw/qwenpaw-1.1.8/"
	w.Copy(adaptertest.Fixture(t, src+"config.json"), ".qwenpaw/config.json")
	w.Copy(adaptertest.Fixture(t, src+"secret/providers.json"), ".qwenpaw.secret/providers.json")
	w.Copy(adaptertest.Fixture(t, src+"secret/providers/builtin/minimax.json"), ".qwenpaw.secret/providers/builtin/minimax.json")
	w.Copy(adaptertest.Fixture(t, src+"secret/providers/builtin/ollama.json"), ".qwenpaw.secret/providers/builtin/ollama.json")
	w.Copy(adaptertest.Fixture(t, src+"workspaces/default/agent.json"), ".qwenpaw/workspaces/default/agent.json")
	// the second profile of config.json, as the app writes it on first open
	w.Copy(adaptertest.Fixture(t, src+"workspaces/default/agent.json"), ".qwenpaw/workspaces/abc123/agent.json")
}

func TestQwenPawTwoAgentsBoth(t *testing.T) {
	w := adaptertest.NewWorld(t)
	qwenpaw(t, w)
	req := w.Request("default", "abc123")
	req.Via = adapters.ViaBoth
	adaptertest.Roundtrip{Adapter: New(), Request: req, Golden: "qwenpaw-1.1.8-both",
		Files: []string{".qwenpaw/workspaces/default/agent.json", ".qwenpaw.secret/providers/custom/metaclaw-default.json"}}.Run(w)
}

// QwenPaw re-encrypts api_key in provider files it loads: unwire still
// removes our provider file, and only our own files.
func TestQwenPawRewrittenProviderFile(t *testing.T) {
	w := adaptertest.NewWorld(t)
	qwenpaw(t, w)
	eng := w.Engine()
	if err := eng.Wire(context.Background(), New(), w.Request(), "", adapters.WireOptions{Yes: true}); err != nil {
		t.Fatal(err)
	}
	pf := filepath.Join(w.Home, ".qwenpaw.secret/providers/custom/metaclaw-default.json")
	b, _ := os.ReadFile(pf)
	os.WriteFile(pf, []byte(strings.Replace(string(b), `"metaclaw-local"`, `"ENC:abcdef"`, 1)), 0o600)
	if err := eng.Unwire(context.Background(), New(), adapters.UnwireOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(pf); !os.IsNotExist(err) {
		t.Fatalf("provider file left behind: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(pf)); !os.IsNotExist(err) {
		t.Fatalf("providers/custom left behind: %v", err)
	}
}

func TestCoPawMarchSingleFile(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(adaptertest.Fixture(t, "clients/copaw/copaw-2026-03/config.json"), ".copaw/config.json")
	w.Copy(adaptertest.Fixture(t, "clients/copaw/qwenpaw-1.1.8/secret/providers.json"), ".copaw.secret/providers.json")
	adaptertest.Roundtrip{Adapter: New(), Request: w.Request(), Golden: "copaw-2026-03", Files: []string{".copaw.secret/providers.json"}}.Run(w)
}

func TestNoProviderStore(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(adaptertest.Fixture(t, "clients/copaw/copaw-2026-03/config.json"), ".copaw/config.json")
	err := w.Engine().Wire(context.Background(), New(), w.Request(), "", adapters.WireOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "no provider store") {
		t.Fatalf("%v", err)
	}
	w.Vars["QWENPAW_WORKING_DIR"] = filepath.Join(w.Home, "qp")
	err = w.Engine().Wire(context.Background(), New(), w.Request(), "", adapters.WireOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "qp/config.json") {
		t.Fatalf("QWENPAW_WORKING_DIR ignored: %v", err)
	}
}

func TestUnknownAgentAndMissingAgentJSON(t *testing.T) {
	w := adaptertest.NewWorld(t)
	qwenpaw(t, w)
	os.RemoveAll(filepath.Join(w.Home, ".qwenpaw/workspaces/abc123"))
	for _, c := range []struct{ agent, want string }{{"ghost", `no agent "ghost"`}, {"abc123", "agent.json not found"}} {
		err := w.Engine().Wire(context.Background(), New(), w.Request(c.agent), "", adapters.WireOptions{Yes: true})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("%s: %v", c.agent, err)
		}
	}
}
