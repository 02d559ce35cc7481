package ironclaw

import (
	"context"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/adaptertest"
)

const cfg = ".ironclaw/reborn/config.toml"

func TestV1ProductionWithKey(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(adaptertest.Fixture(t, "clients/ironclaw/v1-reborn/config.production.toml"), cfg)
	req := w.Request("main")
	req.ProxyKey = "sk-proxy-ic-0001"
	w.OnPath["ironclaw"] = true
	adaptertest.Roundtrip{Adapter: New(), Request: req, Golden: "v1-production-key", Files: []string{cfg},
		Commands: []string{"ironclaw service restart"}}.Run(w)
}

func TestV1HostedNoKey(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(adaptertest.Fixture(t, "clients/ironclaw/v1-reborn/config.hosted-single-tenant.toml"), cfg)
	adaptertest.Roundtrip{Adapter: New(), Request: w.Request(), Golden: "v1-hosted", Files: []string{cfg}}.Run(w)
}

// The shipped local-dev config has no [llm.default] slot: the model must
// come from --model (or llm.model_id).
func TestV1NoSlotNeedsModel(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(adaptertest.Fixture(t, "clients/ironclaw/v1-reborn/config.toml"), cfg)
	err := w.Engine().Wire(context.Background(), New(), w.Request(), "", adapters.WireOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "pass --model") {
		t.Fatalf("%v", err)
	}
	req := w.Request()
	req.LLMModel = "deepseek-ai/DeepSeek-V4-Flash"
	adaptertest.Roundtrip{Adapter: New(), Request: req, Golden: "v1-local-dev", Files: []string{cfg}}.Run(w)
}

func TestV0Env(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(adaptertest.Fixture(t, "clients/ironclaw/v0/.env.example"), ".ironclaw/.env")
	adaptertest.Roundtrip{Adapter: New(), Request: w.Request(), Golden: "v0-env", Files: []string{".ironclaw/.env"}}.Run(w)
}

func TestRefusals(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(adaptertest.Fixture(t, "clients/ironclaw/v1-reborn/config.production.toml"), cfg)
	err := w.Engine().Wire(context.Background(), New(), w.Request("main", "second"), "", adapters.WireOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "one agent per home") {
		t.Fatalf("%v", err)
	}
	req := w.Request()
	req.Via = adapters.ViaHooks
	if err := w.Engine().Wire(context.Background(), New(), req, "", adapters.WireOptions{Yes: true}); err == nil || !strings.Contains(err.Error(), "--via proxy") {
		t.Fatalf("%v", err)
	}
	w.Write(cfg, "api_version = \"ironclaw.runtime/v2\"\n")
	err = w.Engine().Wire(context.Background(), New(), w.Request(), "", adapters.WireOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "ironclaw config api_version ironclaw.runtime/v2") || !strings.Contains(err.Error(), "update metaclaw") {
		t.Fatalf("%v", err)
	}
}

func TestRebornHomeEnv(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Vars["IRONCLAW_REBORN_HOME"] = w.Home + "/ic2"
	w.Copy(adaptertest.Fixture(t, "clients/ironclaw/v1-reborn/config.production.toml"), "ic2/config.toml")
	adaptertest.Roundtrip{Adapter: New(), Request: w.Request("second"), Golden: "v1-reborn-home", Files: []string{"ic2/config.toml"}}.Run(w)
}
