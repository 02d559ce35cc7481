// Package nanoclaw wires NanoClaw. Its model client is the Claude Agent
// SDK, so it speaks Anthropic Messages: the base URL has no /v1.
//   - v1: the host credential proxy reads .env (ANTHROPIC_BASE_URL,
//     ANTHROPIC_API_KEY), so loopback works.
//   - v2: the model client runs in a Docker container per agent group.
//     Each group's groups/<folder>/container.json gets env pointing at
//     host.docker.internal (which needs the proxy on a non-loopback address,
//     hence proxy.api_key), with NO_PROXY so OneCLI's HTTPS proxy is
//     bypassed for that host only. blockedHosts and mounts are not touched.
package nanoclaw

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/internal/edit"
)

// DockerHost is how a NanoClaw container reaches the host.
const DockerHost = "host.docker.internal"

// Adapter is the NanoClaw adapter.
type Adapter struct{}

// New returns the adapter.
func New() *Adapter { return &Adapter{} }

// Name implements adapters.Adapter.
func (*Adapter) Name() string { return "nanoclaw" }

var (
	workDirRe = regexp.MustCompile(`(?m)^\s*WorkingDirectory\s*=\s*(.+?)\s*$`)
	plistWDRe = regexp.MustCompile(`<key>WorkingDirectory</key>\s*<string>([^<]+)</string>`)
)

// service is how NanoClaw runs on this machine.
type service struct {
	dir     string
	restart adapters.Command
}

// findServices reads NanoClaw's systemd user units and launchd plists.
func findServices(env *adapters.Env) []service {
	var out []service
	units, _ := filepath.Glob(filepath.Join(env.Home, ".config", "systemd", "user", "nanoclaw*.service"))
	slices.Sort(units)
	for _, u := range units {
		b, err := os.ReadFile(u)
		if err != nil {
			continue
		}
		if m := workDirRe.FindSubmatch(b); m != nil {
			name := strings.TrimSuffix(filepath.Base(u), ".service")
			wd := strings.ReplaceAll(strings.Trim(string(m[1]), `"`), "%h", env.Home)
			out = append(out, service{dir: env.Expand(wd),
				restart: adapters.Command{Name: "systemctl", Args: []string{"--user", "restart", name}, Why: "NanoClaw reads its config at start", Optional: true}})
		}
	}
	plists, _ := filepath.Glob(filepath.Join(env.Home, "Library", "LaunchAgents", "com.nanoclaw*.plist"))
	slices.Sort(plists)
	for _, p := range plists {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if m := plistWDRe.FindSubmatch(b); m != nil {
			label := strings.TrimSuffix(filepath.Base(p), ".plist")
			out = append(out, service{dir: env.Expand(string(m[1])),
				restart: adapters.Command{Name: "launchctl", Args: []string{"kickstart", "-k", "gui/" + strconv.Itoa(os.Getuid()) + "/" + label}, Why: "NanoClaw reads its config at start", Optional: true}})
		}
	}
	return out
}

// Detect implements adapters.Adapter.
func (a *Adapter) Detect(env *adapters.Env, override string) (*adapters.Detection, error) {
	d := &adapters.Detection{Client: a.Name()}
	dir := override
	if dir == "" {
		dir = env.Get("NANOCLAW_DIR")
	}
	var svc *service
	if dir == "" {
		for _, s := range findServices(env) {
			if isInstall(env, s.dir) {
				svc = &s
				dir = s.dir
				break
			}
		}
	}
	if dir == "" {
		for _, c := range []string{"nanoclaw", "code/nanoclaw", ".nanoclaw"} {
			if p := filepath.Join(env.Home, c); isInstall(env, p) {
				dir = p
				break
			}
		}
	}
	if dir == "" {
		d.Home = filepath.Join(env.Home, "nanoclaw")
		d.ConfigPath = d.Home
		return d, nil
	}
	dir = env.Expand(dir)
	d.Home, d.ConfigPath = dir, filepath.Join(dir, ".env")
	if !isInstall(env, dir) {
		return d, nil
	}
	d.Found = true
	major := 0
	if b, err := os.ReadFile(filepath.Join(dir, "package.json")); err == nil {
		if pj, err := edit.ParseJSON(b); err == nil {
			v := adapters.Str(pj, "version")
			if v != "" {
				major, _ = strconv.Atoi(strings.SplitN(strings.TrimPrefix(v, "v"), ".", 2)[0])
				d.Version = "v" + strings.TrimPrefix(v, "v")
			}
		}
	}
	if major == 0 {
		if groups(dir) != nil || exists(filepath.Join(dir, "data", "v2-sessions")) {
			major, d.Version = 2, "v2 (from its layout)"
		} else {
			major, d.Version = 1, "v1 (from its layout)"
		}
	}
	switch major {
	case 1:
		d.Schema, d.Default = "v1", []string{"main"}
	case 2:
		d.Schema = "v2"
		d.Agents = groups(dir)
		d.Default = slices.Clone(d.Agents)
		d.ConfigPath = filepath.Join(dir, "groups")
	default:
		return nil, adapters.Unsupported("nanoclaw %s (%s) is newer than this metaclaw knows (v1, v2); update metaclaw", d.Version, dir)
	}
	if svc == nil {
		for _, s := range findServices(env) {
			if filepath.Clean(s.dir) == filepath.Clean(dir) {
				svc = &s
			}
		}
	}
	if svc != nil {
		d.Restart = []adapters.Command{svc.restart}
	}
	return d, nil
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

func isInstall(env *adapters.Env, dir string) bool {
	return dir != "" && (env.Exists(filepath.Join(dir, "package.json")) || env.Exists(filepath.Join(dir, ".env")) || groups(dir) != nil)
}

// groups lists agent-group folders with a container.json.
func groups(dir string) []string {
	m, _ := filepath.Glob(filepath.Join(dir, "groups", "*", "container.json"))
	var out []string
	for _, p := range m {
		out = append(out, filepath.Base(filepath.Dir(p)))
	}
	slices.Sort(out)
	return out
}

// Plan implements adapters.Adapter.
func (a *Adapter) Plan(env *adapters.Env, d *adapters.Detection, req *adapters.Request) (*adapters.Plan, error) {
	if req.Via.Hooks() {
		return nil, fmt.Errorf("nanoclaw: the Claude Code hooks run inside the agent container, where metaclaw is not installed; wire with --via proxy")
	}
	agents := adapters.PickAgents(req, d)
	p := &adapters.Plan{Agents: agents, Via: adapters.ViaProxy, URLs: map[string]string{}}
	p.Restart = slices.Clone(d.Restart)
	if len(p.Restart) == 0 {
		p.Note("no NanoClaw service unit found: restart NanoClaw yourself so it loads the change")
	}
	if d.Schema == "v1" {
		if len(agents) != 1 {
			return nil, fmt.Errorf("nanoclaw v1 has one endpoint for every group: wire one agent")
		}
		return planV1(env, d, req, p, agents[0])
	}
	if len(agents) == 0 {
		return nil, fmt.Errorf("nanoclaw: no agent group has a groups/<folder>/container.json in %s yet; start NanoClaw once so it writes them", d.Home)
	}
	if err := adapters.NeedsReachableProxy("nanoclaw v2", "a Docker container", req); err != nil {
		return nil, err
	}
	p.Sandbox = true
	for _, g := range agents {
		if !slices.Contains(d.Agents, g) {
			return nil, adapters.UnknownAgent("nanoclaw", g, filepath.Join(d.Home, "groups"), d.Agents)
		}
		if err := planGroup(env, d, req, p, g); err != nil {
			return nil, err
		}
	}
	if !perGroupEnvSupported(d.Home) {
		p.Note("this NanoClaw's source shows no per-group container env (the /add-ollama-provider change adds env and blockedHosts to container.json); without it the container ignores these settings. Apply that change (in Claude Code: /add-ollama-provider), then restart NanoClaw")
	}
	p.Note("the containers reach MetaClaw at %s:%d; OneCLI's proxy is bypassed for that host only (NO_PROXY). blockedHosts and mounts are unchanged", DockerHost, req.ProxyPort)
	return p, nil
}

func planV1(env *adapters.Env, d *adapters.Detection, req *adapters.Request, p *adapters.Plan, agent string) (*adapters.Plan, error) {
	path := filepath.Join(d.Home, ".env")
	var src []byte
	if env.Exists(path) {
		b, err := env.ReadFile(path)
		if err != nil {
			return nil, err
		}
		src = b
	}
	e, err := edit.ParseEnv(src)
	if err != nil {
		return nil, fmt.Errorf("nanoclaw: %s: %w", path, err)
	}
	base := req.AnthropicURL(req.LocalHost(), agent)
	if err := e.Set("ANTHROPIC_BASE_URL", base); err != nil {
		return nil, err
	}
	if err := e.Set("ANTHROPIC_API_KEY", req.Key()); err != nil {
		return nil, err
	}
	if err := e.Verify(); err != nil {
		return nil, fmt.Errorf("nanoclaw: %s: %w", path, err)
	}
	p.Files = []*adapters.FileChange{{Path: path, Format: "env", After: e.Bytes(), Mode: 0o600}}
	p.URLs[agent] = base
	p.Expect = []adapters.Expect{{File: path, Format: "env", Path: edit.P("ANTHROPIC_BASE_URL"), Want: base, What: "ANTHROPIC_BASE_URL points at the proxy (" + base + ")"}}
	return p, nil
}

func planGroup(env *adapters.Env, d *adapters.Detection, req *adapters.Request, p *adapters.Plan, g string) error {
	path := filepath.Join(d.Home, "groups", g, "container.json")
	b, err := env.ReadFile(path)
	if err != nil {
		return err
	}
	doc, err := edit.ParseJSON(b)
	if err != nil {
		return fmt.Errorf("nanoclaw: %s: %w", path, err)
	}
	base := req.AnthropicURL(DockerHost, g)
	vars := []edit.KV{{Key: "ANTHROPIC_BASE_URL", Value: base}, {Key: "ANTHROPIC_API_KEY", Value: req.Key()}, {Key: "ANTHROPIC_AUTH_TOKEN", Value: req.Key()}}
	for _, np := range []string{"NO_PROXY", "no_proxy"} {
		cur := adapters.Str(doc, "env", np)
		vars = append(vars, edit.KV{Key: np, Value: addHost(cur, DockerHost)})
	}
	for _, kv := range vars {
		if err := doc.Set(edit.P("env", kv.Key), kv.Value); err != nil {
			return fmt.Errorf("nanoclaw: %s env.%s: %w", path, kv.Key, err)
		}
	}
	if err := doc.Verify(); err != nil {
		return fmt.Errorf("nanoclaw: %s: %w", path, err)
	}
	format := "json5"
	if doc.Strict() {
		format = "json"
	}
	p.Files = append(p.Files, &adapters.FileChange{Path: path, Format: format, After: doc.Bytes(), Mode: 0o644})
	p.URLs[g] = base
	p.Expect = append(p.Expect, adapters.Expect{File: path, Format: format, Path: edit.P("env", "ANTHROPIC_BASE_URL"), Want: base, What: "group " + g + " points at the proxy (" + base + ")"})
	return nil
}

// addHost adds host to a comma-separated NO_PROXY list (never removes).
func addHost(list, host string) string {
	for _, h := range strings.Split(list, ",") {
		if strings.TrimSpace(h) == host {
			return list
		}
	}
	if strings.TrimSpace(list) == "" {
		return host
	}
	return list + "," + host
}

// perGroupEnvSupported looks for the per-group env support in the source.
func perGroupEnvSupported(dir string) bool {
	found := false
	_ = filepath.WalkDir(filepath.Join(dir, "src"), func(p string, de os.DirEntry, err error) error {
		if err != nil || found || de.IsDir() || !strings.HasSuffix(p, ".ts") {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return nil
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			if bytes.Contains(sc.Bytes(), []byte("blockedHosts")) {
				found = true
				return filepath.SkipAll
			}
		}
		return nil
	})
	return found
}
