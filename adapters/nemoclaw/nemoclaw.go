// Package nemoclaw wires NemoClaw: OpenClaw inside an OpenShell sandbox.
// The sandbox always calls https://inference.local; OpenShell's gateway
// forwards to the one provider and model set with `openshell inference set`.
// metaclaw registers itself in OpenShell's provider registry (`openshell
// provider create|update`) with the proxy as seen from the gateway
// (host.openshell.internal) and points the route at it; unwire points the
// route back at the previous provider and model and deletes the provider.
// No sandbox file, network policy or NemoClaw setting is changed.
package nemoclaw

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
)

// GatewayHost is how the OpenShell gateway reaches the host.
const GatewayHost = "host.openshell.internal"

// ProviderName is the OpenShell provider metaclaw creates.
const ProviderName = "metaclaw"

// Known blueprint: min_openclaw_version up to this year.month.
const knownYear, knownMonth = 2026, 9

// Adapter is the NemoClaw adapter.
type Adapter struct{}

// New returns the adapter.
func New() *Adapter { return &Adapter{} }

// Name implements adapters.Adapter.
func (*Adapter) Name() string { return "nemoclaw" }

// blueprintPaths are where an installed NemoClaw keeps its blueprint.
func blueprintPaths(env *adapters.Env, override string) []string {
	var out []string
	if override != "" {
		o := env.Expand(override)
		out = append(out, o, filepath.Join(o, "blueprint.yaml"), filepath.Join(o, "nemoclaw-blueprint", "blueprint.yaml"))
		return out
	}
	home := filepath.Join(env.Home, ".nemoclaw")
	m, _ := filepath.Glob(filepath.Join(home, "blueprints", "*", "blueprint.yaml"))
	out = append(out, m...)
	out = append(out, filepath.Join(home, "source", "nemoclaw-blueprint", "blueprint.yaml"))
	if env.LookPath != nil {
		if bin, err := env.LookPath("nemoclaw"); err == nil {
			if real, err := filepath.EvalSymlinks(bin); err == nil {
				bin = real
			}
			for d := filepath.Dir(bin); d != filepath.Dir(d); d = filepath.Dir(d) {
				out = append(out, filepath.Join(d, "nemoclaw-blueprint", "blueprint.yaml"))
			}
		}
	}
	return out
}

var verRe = regexp.MustCompile(`^(\d{4})\.(\d{1,2})`)

// Detect implements adapters.Adapter.
func (a *Adapter) Detect(env *adapters.Env, override string) (*adapters.Detection, error) {
	home := filepath.Join(env.Home, ".nemoclaw")
	d := &adapters.Detection{Client: a.Name(), Home: home, ConfigPath: home, Default: []string{"main"}}
	st, err := os.Stat(home)
	installed := (err == nil && st.IsDir()) || env.Has("nemoclaw") || override != ""
	if !installed {
		return d, nil
	}
	d.Found = true
	d.Version = "blueprint not found"
	for _, p := range blueprintPaths(env, override) {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		doc, err := edit.ParseYAML(b)
		if err != nil {
			return nil, fmt.Errorf("nemoclaw: %s: %w", p, err)
		}
		oc := adapters.Str(doc, "min_openclaw_version")
		osv := adapters.Str(doc, "min_openshell_version")
		d.ConfigPath = p
		d.Version = fmt.Sprintf("blueprint %s (OpenShell %s, OpenClaw %s)", adapters.Str(doc, "version"), osv, oc)
		if m := verRe.FindStringSubmatch(oc); m != nil {
			y, _ := strconv.Atoi(m[1])
			mo, _ := strconv.Atoi(m[2])
			if y > knownYear || (y == knownYear && mo > knownMonth) {
				return nil, adapters.Unsupported("nemoclaw blueprint needs OpenClaw %s, newer than this metaclaw knows (%d.%d); update metaclaw", oc, knownYear, knownMonth)
			}
		}
		if oc == "2026.3.0" {
			d.Schema = "2026-03"
		} else {
			d.Schema = "current"
		}
		break
	}
	return d, nil
}

// route is the current `openshell inference get`.
type route struct{ provider, model string }

var kvRe = regexp.MustCompile(`(?im)^\s*(provider|model)\s*[:=]\s*(\S.*?)\s*$`)

func parseRoute(out string) route {
	var r route
	for _, m := range kvRe.FindAllStringSubmatch(out, -1) {
		switch strings.ToLower(m[1]) {
		case "provider":
			if r.provider == "" {
				r.provider = strings.Trim(m[2], `"'`)
			}
		case "model":
			if r.model == "" {
				r.model = strings.Trim(m[2], `"'`)
			}
		}
	}
	return r
}

var wordRe = func(w string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)(^|\s)` + regexp.QuoteMeta(w) + `(\s|$)`)
}

// Plan implements adapters.Adapter. It asks OpenShell (read-only) for the
// current route and provider list.
func (a *Adapter) Plan(env *adapters.Env, d *adapters.Detection, req *adapters.Request) (*adapters.Plan, error) {
	if req.Via.Hooks() {
		return nil, fmt.Errorf("nemoclaw: OpenClaw's config and extensions are baked into the sandbox image; metaclaw wires NemoClaw through its inference route only: use --via proxy")
	}
	agents := adapters.PickAgents(req, d)
	if len(agents) != 1 {
		return nil, fmt.Errorf("nemoclaw has one inference route per OpenShell gateway, shared by every sandbox: wire one agent")
	}
	if !env.Has("openshell") {
		return nil, fmt.Errorf("nemoclaw: the openshell CLI is not on PATH; metaclaw sets NemoClaw's inference route through it")
	}
	if err := adapters.NeedsReachableProxy("nemoclaw", "the OpenShell gateway container", req); err != nil {
		return nil, err
	}
	ctx := context.Background()
	out, _, err := env.Runner.Run(ctx, "openshell", "inference", "get")
	if err != nil {
		return nil, fmt.Errorf("nemoclaw: `openshell inference get` failed (%v): is the OpenShell gateway running?", err)
	}
	prev := parseRoute(out)
	model, err := adapters.ModelOr(req, prev.model, "nemoclaw", "the model of `openshell inference get`")
	if err != nil {
		return nil, err
	}
	list, _, _ := env.Runner.Run(ctx, "openshell", "provider", "list")
	agent := agents[0]
	url := req.OpenAIURL(GatewayHost, agent)
	p := &adapters.Plan{Agents: agents, Via: adapters.ViaProxy, URLs: map[string]string{agent: url}, Sandbox: true}
	args := []string{"--credential", "OPENAI_API_KEY=" + req.Key(), "--config", "OPENAI_BASE_URL=" + url}
	if wordRe(ProviderName).MatchString(list) {
		p.Setup = append(p.Setup, adapters.Command{Name: "openshell", Args: append([]string{"provider", "update", ProviderName}, args...),
			Why: "point the metaclaw provider at the proxy"})
	} else {
		p.Setup = append(p.Setup, adapters.Command{Name: "openshell", Args: append([]string{"provider", "create", "--name", ProviderName, "--type", "openai"}, args...),
			Why:  "register the proxy in OpenShell's provider registry",
			Undo: &adapters.Command{Name: "openshell", Args: []string{"provider", "delete", ProviderName}}})
	}
	set := adapters.Command{Name: "openshell", Args: []string{"inference", "set", "--provider", ProviderName, "--model", model}, Why: "route inference.local through MetaClaw"}
	if prev.provider == ProviderName {
		// already ours (an earlier wiring recorded how to go back)
	} else if prev.provider != "" && prev.model != "" {
		set.Undo = &adapters.Command{Name: "openshell", Args: []string{"inference", "set", "--provider", prev.provider, "--model", prev.model}}
	} else {
		p.Note("could not read the current route from `openshell inference get`; after unwiring, set it back yourself with `openshell inference set --provider <p> --model <m>`")
	}
	p.Setup = append(p.Setup, set)
	p.SetupKey = strings.Join([]string{url, req.Key(), model}, "\x00")
	p.Note("the sandbox's network policy is unchanged: it still calls only https://inference.local; the OpenShell gateway calls MetaClaw at %s:%d", GatewayHost, req.ProxyPort)
	p.Note("NemoClaw's own registry (`nemoclaw status`) still names the old provider; a later `nemoclaw onboard` or `nemoclaw inference set` replaces this route: run `metaclaw wire nemoclaw` again afterwards")
	if req.ProxyPort != 8000 && req.ProxyPort != 11434 {
		p.Note("NemoClaw's own onboarding only accepts local endpoints on ports 8000 and 11434; OpenShell itself does not need that, but `metaclaw config set proxy.port 8000` keeps the two compatible")
	}
	return p, nil
}
