package zeroclaw

import (
	"context"
	"os"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/adaptertest"
)

const cfg = ".zeroclaw/config.toml"

func TestV3TemplateBoth(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(adaptertest.Fixture(t, "clients/zeroclaw/v3/config.template.toml"), cfg)
	req := w.Request("default")
	req.Via = adapters.ViaBoth
	w.OnPath["zeroclaw"] = true
	adaptertest.Roundtrip{Adapter: New(), Request: req, Golden: "v3-template-both", Files: []string{cfg},
		Commands: []string{"zeroclaw service restart"}}.Run(w)
}

func TestV3HarnessProxy(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(adaptertest.Fixture(t, "clients/zeroclaw/v3/config.harness-test.toml"), cfg)
	adaptertest.Roundtrip{Adapter: New(), Request: w.Request(), Golden: "v3-harness", Files: []string{cfg}}.Run(w)
}

// The commented V3 config inside the Kubernetes sample (anthropic family,
// agent "assistant"), plus a second agent on an ollama slot.
func TestV3ConfigMapTwoAgents(t *testing.T) {
	b, err := os.ReadFile(adaptertest.Fixture(t, "clients/zeroclaw/v3/configmap-sample.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `yaml:"data"`
	}
	if err := yaml.Unmarshal(b, &cm); err != nil {
		t.Fatal(err)
	}
	toml := cm.Data["config.toml"] + "\n[providers.models.ollama.local]\nuri = \"http://localhost:11434\"\nmodel = \"qwen2.5-coder:7b\"\n\n[agents.local]\nmodel_provider = \"ollama.local\"\nrisk_profile = \"assistant\"\n"
	w := adaptertest.NewWorld(t)
	w.Write(cfg, toml)
	req := w.Request("assistant", "local")
	req.Via = adapters.ViaBoth
	req.ProxyKey = "sk-proxy-zc-001"
	adaptertest.Roundtrip{Adapter: New(), Request: req, Golden: "v3-configmap-two-agents", Files: []string{cfg}}.Run(w)
}

func TestV1FixtureTwoAgents(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(adaptertest.Fixture(t, "clients/zeroclaw/v1/v1.toml"), cfg)
	adaptertest.Roundtrip{Adapter: New(), Request: w.Request("main", "complex_agent"), Golden: "v1-two-agents", Files: []string{cfg}}.Run(w)
}

func TestV1RaspberryPiAnthropicWithMCP(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(adaptertest.Fixture(t, "clients/zeroclaw/v1/rpi-config.toml"), cfg)
	req := w.Request()
	req.Via = adapters.ViaBoth
	adaptertest.Roundtrip{Adapter: New(), Request: req, Golden: "v1-rpi-both", Files: []string{cfg}}.Run(w)
}

func TestNoAgentsAndFutureSchema(t *testing.T) {
	w := adaptertest.NewWorld(t)
	w.Copy(adaptertest.Fixture(t, "clients/zeroclaw/v3/config.toml"), cfg)
	err := w.Engine().Wire(context.Background(), New(), w.Request(), "", adapters.WireOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "defines no [agents.<alias>]") {
		t.Fatalf("%v", err)
	}
	w.Write(cfg, "schema_version = 4\n")
	err = w.Engine().Wire(context.Background(), New(), w.Request(), "", adapters.WireOptions{Yes: true})
	if err == nil || err.Error() != "zeroclaw config schema_version 4 is newer than this metaclaw knows (3); update metaclaw" {
		t.Fatalf("%v", err)
	}
}
