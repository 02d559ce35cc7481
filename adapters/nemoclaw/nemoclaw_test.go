package nemoclaw

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/adaptertest"
)

func world(t *testing.T, blueprint string) *adaptertest.World {
	w := adaptertest.NewWorld(t)
	w.Copy(adaptertest.Fixture(t, blueprint), ".nemoclaw/source/nemoclaw-blueprint/blueprint.yaml")
	w.OnPath["openshell"] = true
	w.Runner.Answers["openshell inference get"] = "Gateway inference:\n  Provider: nvidia-prod\n  Model: nvidia/nemotron-3-nano-30b-a3b\n"
	w.Runner.Answers["openshell provider list"] = "NAME          TYPE\nnvidia-prod   nvidia\n"
	return w
}

func reachable(w *adaptertest.World) *adapters.Request {
	req := w.Request()
	req.ProxyHost, req.ProxyKey = "0.0.0.0", "sk-proxy-nemo-0001"
	return req
}

func TestWireRewireUnwire(t *testing.T) {
	for _, bp := range []string{"clients/nemoclaw/nemoclaw-latest/blueprint.yaml", "clients/nemoclaw/nemoclaw-2026-03/blueprint.yaml"} {
		t.Run(bp, func(t *testing.T) {
			w := world(t, bp)
			eng := w.Engine()
			before := w.Snapshot()
			ctx := context.Background()

			if err := eng.Wire(ctx, New(), reachable(w), "", adapters.WireOptions{DryRun: true}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(w.Runner.Calls, []string{"openshell inference get", "openshell provider list"}) {
				t.Fatalf("dry run ran %q", w.Runner.Calls)
			}
			if !strings.Contains(w.Out.String(), "will run: openshell provider create --name metaclaw --type openai --credential OPENAI_API_KEY=<proxy.api_key> --config OPENAI_BASE_URL=http://host.openshell.internal:30000/a/main/v1") {
				t.Fatalf("dry run output (key must be masked):\n%s", w.Out.String())
			}
			w.Runner.Reset()
			if err := eng.Wire(ctx, New(), reachable(w), "", adapters.WireOptions{Yes: true}); err != nil {
				t.Fatal(err)
			}
			want := []string{
				"openshell inference get", "openshell provider list",
				"openshell provider create --name metaclaw --type openai --credential OPENAI_API_KEY=sk-proxy-nemo-0001 --config OPENAI_BASE_URL=http://host.openshell.internal:30000/a/main/v1",
				"openshell inference set --provider metaclaw --model nvidia/nemotron-3-nano-30b-a3b",
			}
			if !slices.Equal(w.Runner.Calls, want) {
				t.Fatalf("calls %q\nwant %q", w.Runner.Calls, want)
			}
			// the gateway now reports our route
			w.Runner.Answers["openshell inference get"] = "Provider: metaclaw\nModel: nvidia/nemotron-3-nano-30b-a3b\n"
			w.Runner.Answers["openshell provider list"] = "nvidia-prod nvidia\nmetaclaw openai\n"
			w.Runner.Reset()
			w.Out.Reset()
			if err := eng.Wire(ctx, New(), reachable(w), "", adapters.WireOptions{Yes: true}); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(w.Out.String(), "already wired") || len(w.Runner.Calls) != 2 {
				t.Fatalf("re-wire: %q\n%s", w.Runner.Calls, w.Out.String())
			}
			w.Runner.Reset()
			if err := eng.Unwire(ctx, New(), adapters.UnwireOptions{}); err != nil {
				t.Fatal(err)
			}
			want = []string{"openshell inference set --provider nvidia-prod --model nvidia/nemotron-3-nano-30b-a3b", "openshell provider delete metaclaw"}
			if !slices.Equal(w.Runner.Calls, want) {
				t.Fatalf("unwire calls %q\nwant %q", w.Runner.Calls, want)
			}
			adaptertest.SameSnapshot(t, "nemoclaw changes no file", before, w.Snapshot())
		})
	}
}

func TestRefusals(t *testing.T) {
	w := world(t, "clients/nemoclaw/nemoclaw-latest/blueprint.yaml")
	err := w.Engine().Wire(context.Background(), New(), w.Request(), "", adapters.WireOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "OpenShell gateway container") {
		t.Fatalf("loopback: %v", err)
	}
	req := reachable(w)
	req.Agents = []string{"a", "b"}
	if err := w.Engine().Wire(context.Background(), New(), req, "", adapters.WireOptions{Yes: true}); err == nil || !strings.Contains(err.Error(), "one inference route") {
		t.Fatalf("%v", err)
	}
	w.Write(".nemoclaw/source/nemoclaw-blueprint/blueprint.yaml", "version: \"0.2.0\"\nmin_openshell_version: \"0.1.0\"\nmin_openclaw_version: \"2027.2.1\"\n")
	err = w.Engine().Wire(context.Background(), New(), reachable(w), "", adapters.WireOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "newer than this metaclaw knows") {
		t.Fatalf("%v", err)
	}
	w2 := adaptertest.NewWorld(t)
	w2.Write(".nemoclaw/config.json", "{}")
	if err := w2.Engine().Wire(context.Background(), New(), reachable(w2), "", adapters.WireOptions{Yes: true}); err == nil || !strings.Contains(err.Error(), "openshell CLI is not on PATH") {
		t.Fatalf("%v", err)
	}
}

func TestSetupFailureReported(t *testing.T) {
	w := world(t, "clients/nemoclaw/nemoclaw-latest/blueprint.yaml")
	w.Runner.Fail["openshell inference set"] = true
	err := w.Engine().Wire(context.Background(), New(), reachable(w), "", adapters.WireOptions{Yes: true})
	if err == nil || !strings.Contains(err.Error(), "openshell inference set") || strings.Contains(err.Error(), "sk-proxy-nemo-0001") {
		t.Fatalf("%v", err)
	}
	// unwire still deletes the provider that was created
	w.Runner.Reset()
	delete(w.Runner.Fail, "openshell inference set")
	if err := w.Engine().Unwire(context.Background(), New(), adapters.UnwireOptions{}); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(w.Runner.Calls, "openshell provider delete metaclaw") {
		t.Fatalf("%q", w.Runner.Calls)
	}
}
