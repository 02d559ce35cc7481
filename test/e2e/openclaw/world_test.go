//go:build e2e

// Package openclawe2e runs the real OpenClaw (npm openclaw@2026.9.6 on Node
// 24) against the real `metaclaw start` daemon, both set up the way a new
// user does: `metaclaw setup` with the upstream, `openclaw onboard
// --non-interactive` with a custom OpenAI-compatible provider, `openclaw
// agents add`, then `metaclaw wire openclaw`. The only thing that is not
// real is the model: a fake OpenAI-compatible server on loopback. Run it
// through `make e2e-openclaw` (run.sh installs Node and OpenClaw into a
// cache dir and sets OPENCLAW_BIN, NODE_BIN_DIR and METACLAW_BIN).
package openclawe2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func need(t *testing.T, name string) string {
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set: run `make e2e-openclaw`", name)
	}
	return v
}

// world is one user's machine: a HOME, MetaClaw's state, OpenClaw's state
// and config, the fake model, and the processes started on it.
type world struct {
	t        *testing.T
	dir      string
	home     string
	mcHome   string
	state    string
	cfg      string
	ocBin    string
	mcBin    string
	nodeDir  string
	up       *upstream
	mcPort   string
	gwPort   string
	gwToken  string
	gateway  *exec.Cmd
	gwExited chan error
	gwOut    *bytes.Buffer
}

func newWorld(t *testing.T) *world {
	t.Helper()
	w := &world{t: t, ocBin: need(t, "OPENCLAW_BIN"), nodeDir: need(t, "NODE_BIN_DIR"), mcBin: need(t, "METACLAW_BIN")}
	dir, err := os.MkdirTemp("", "mce") // short: unix socket paths stay under 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	w.dir = dir
	t.Cleanup(func() {
		w.stopGateway()
		w.mc(2*time.Minute, "stop")
		if !t.Failed() && os.Getenv("METACLAW_E2E_KEEP") == "" {
			os.RemoveAll(dir)
		} else {
			t.Logf("kept %s for inspection", dir)
		}
	})
	w.home, w.mcHome, w.state, w.cfg = filepath.Join(dir, "home"), filepath.Join(dir, "mc"), filepath.Join(dir, "state"), filepath.Join(dir, "openclaw.json")
	for _, d := range []string{w.home, w.state, filepath.Join(dir, "tmp"), filepath.Join(dir, "ws")} {
		os.MkdirAll(d, 0o700)
	}
	w.up = newUpstream()
	t.Cleanup(w.up.Close)
	w.mcPort, w.gwPort, w.gwToken = freePort(t), freePort(t), "e2e-gateway-token"
	return w
}

// env is what both programs see. OpenClaw does not get METACLAW_HOME: the
// extension must find MetaClaw's state from what `wire` wrote.
func (w *world) env(metaclaw bool) []string {
	path := w.nodeDir + ":/usr/bin:/bin"
	e := []string{"PATH=" + path, "HOME=" + w.home, "OPENCLAW_STATE_DIR=" + w.state, "OPENCLAW_CONFIG_PATH=" + w.cfg,
		"TMPDIR=" + filepath.Join(w.dir, "tmp"), "NO_COLOR=1", "OPENCLAW_GATEWAY_TOKEN=" + w.gwToken, "OPENCLAW_GATEWAY_PORT=" + w.gwPort}
	if l := os.Getenv("METACLAW_E2E_OPENCLAW_LOG_LEVEL"); l != "" && !metaclaw {
		e = append(e, "OPENCLAW_LOG_LEVEL="+l)
	}
	if metaclaw {
		// No openclaw on PATH: wire notes the restart instead of asking a
		// gateway that is not running yet to restart.
		e = []string{"PATH=/usr/bin:/bin", "HOME=" + w.home, "OPENCLAW_STATE_DIR=" + w.state, "OPENCLAW_CONFIG_PATH=" + w.cfg,
			"METACLAW_HOME=" + w.mcHome, "UPSTREAM_KEY=sk-upstream-e2e", "TMPDIR=" + filepath.Join(w.dir, "tmp")}
	}
	return e
}

func (w *world) exec(bin string, env []string, timeout time.Duration, args ...string) (string, string, error) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env, cmd.Dir = env, w.dir
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	w.t.Logf("%s %s: %v in %v", filepath.Base(bin), strings.Join(args, " "), err, time.Since(start).Round(time.Millisecond))
	return stdout.String(), stderr.String(), err
}

// mc runs the metaclaw CLI.
func (w *world) mc(timeout time.Duration, args ...string) (string, error) {
	out, errOut, err := w.exec(w.mcBin, w.env(true), timeout, args...)
	return out + errOut, err
}

func (w *world) mustMC(args ...string) string {
	w.t.Helper()
	out, err := w.mc(3*time.Minute, args...)
	if err != nil {
		w.t.Fatalf("metaclaw %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// oc runs the openclaw CLI.
func (w *world) oc(timeout time.Duration, args ...string) (string, string, error) {
	return w.exec(w.ocBin, w.env(false), timeout, args...)
}

func (w *world) mustOC(args ...string) string {
	w.t.Helper()
	out, errOut, err := w.oc(6*time.Minute, args...)
	if err != nil {
		w.t.Fatalf("openclaw %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, tail(out, 3000), tail(errOut, 3000))
	}
	return out
}

// setUp does what a new user does: MetaClaw set up and started against
// the model, OpenClaw onboarded with the same model as a custom provider,
// and a second agent added.
func (w *world) setUp() {
	w.t.Helper()
	w.mustMC("setup", "--provider", "custom", "--api-base", w.up.URL+"/v1", "--api", "openai", "--model", "fake-model",
		"--api-key-env", "UPSTREAM_KEY", "--port", w.mcPort, "--yes")
	w.mustMC("start")
	w.waitHost()
	w.mustOC("onboard", "--non-interactive", "--accept-risk", "--auth-choice", "custom-api-key",
		"--custom-base-url", w.up.URL+"/v1", "--custom-model-id", "fake-model", "--custom-api-key", "sk-openclaw-e2e",
		"--custom-compatibility", "openai", "--skip-channels", "--skip-daemon", "--skip-health", "--skip-search",
		"--skip-skills", "--skip-ui", "--workspace", filepath.Join(w.dir, "ws"),
		"--gateway-port", w.gwPort, "--gateway-token", w.gwToken, "--json")
	w.mustOC("agents", "add", "coder", "--non-interactive", "--workspace", filepath.Join(w.dir, "ws-coder"), "--json")
}

// waitHost waits until `metaclaw status` says the host runs.
func (w *world) waitHost() {
	w.t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		out, err := w.mc(30*time.Second, "status")
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			w.t.Fatalf("the MetaClaw host is not running: %v\n%s", err, out)
		}
		time.Sleep(time.Second)
	}
}

// snapshot reads every regular file and link under root (nil when absent).
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if d.Type()&fs.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			out[p] = "link:" + l
			return nil
		}
		b, _ := os.ReadFile(p)
		out[p] = string(b)
		return nil
	})
	return out
}

// metaclawFiles lists what wiring may add or change: the config, the
// extension folder, the agents' settings.json.
func (w *world) metaclawFiles() map[string]string {
	out := snapshot(w.t, filepath.Join(w.state, "extensions"))
	for _, a := range []string{"main", "coder"} {
		p := filepath.Join(w.state, "agents", a, "agent", "settings.json")
		if b, err := os.ReadFile(p); err == nil {
			out[p] = string(b)
		}
	}
	b, _ := os.ReadFile(w.cfg)
	out[w.cfg] = string(b)
	return out
}

func sameFiles(t *testing.T, what string, a, b map[string]string) {
	t.Helper()
	for p, v := range a {
		if b[p] != v {
			t.Errorf("%s: %s differs (%d bytes before, %d after)", what, p, len(v), len(b[p]))
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			t.Errorf("%s: %s was added", what, p)
		}
	}
}

// turn runs one `openclaw agent` turn (through the gateway when it runs,
// else --local) and returns its reply and the whole JSON result.
func (w *world) turn(agent, session, message string) (string, map[string]any, time.Duration) {
	w.t.Helper()
	args := []string{"agent", "--agent", agent, "--session-id", session, "--message", message, "--json"}
	if w.gateway == nil {
		args = append([]string{"agent", "--local"}, args[1:]...)
	}
	n0 := len(w.up.requests())
	start := time.Now()
	out, errOut, err := w.oc(8*time.Minute, args...)
	took := time.Since(start)
	if reqs := w.since(n0); len(reqs) > 0 {
		// Where a turn's time goes: before the model call (OpenClaw starting,
		// the proxy) and after the last one (OpenClaw finishing, exiting).
		w.t.Logf("TIMING %s/%s: %v in all; first upstream request after %v, last one %v before the end (%d requests)",
			agent, session, took.Round(time.Millisecond), reqs[0].At.Sub(start).Round(time.Millisecond),
			start.Add(took).Sub(reqs[len(reqs)-1].At).Round(time.Millisecond), len(reqs))
	}
	if err != nil {
		w.t.Fatalf("turn %s/%s %q: %v\nstdout: %s\nstderr: %s\n%s", agent, session, message, err, tail(out, 3000), tail(errOut, 4000), w.gatewayLog())
	}
	var res map[string]any
	if i := strings.Index(out, "{"); i < 0 || json.Unmarshal([]byte(out[i:]), &res) != nil {
		w.t.Fatalf("turn output is not JSON: %s", out)
	}
	if r, ok := res["result"].(map[string]any); ok { // the gateway wraps the local shape
		res = r
	}
	ps, _ := res["payloads"].([]any)
	var texts []string
	for _, p := range ps {
		if pm, ok := p.(map[string]any); ok {
			if s, ok := pm["text"].(string); ok {
				texts = append(texts, s)
			}
		}
	}
	return strings.Join(texts, "\n"), res, took
}

// slash sends a chat command such as /new through the gateway.
func (w *world) slash(agent, session, command string) {
	w.t.Helper()
	out, errOut, err := w.oc(8*time.Minute, "agent", "--agent", agent, "--session-id", session, "--message", command, "--json")
	if err != nil {
		w.t.Fatalf("%s: %v\nstdout: %s\nstderr: %s\n%s", command, err, tail(out, 3000), tail(errOut, 3000), w.gatewayLog())
	}
	w.t.Logf("%s: %s", command, tail(strings.TrimSpace(out), 300))
}

// startGateway runs `openclaw gateway run` until its port opens. OpenClaw
// gives its state-lease worker a fixed 5 s to come up and exits when a
// loaded machine misses that; such a start is tried again (3 times at most).
func (w *world) startGateway() {
	w.t.Helper()
	for attempt := 1; ; attempt++ {
		err := w.tryGateway()
		if err == nil {
			return
		}
		if attempt == 3 || !strings.Contains(err.Error(), "did not become ready") {
			w.t.Fatal(err)
		}
		w.t.Logf("gateway start %d failed (OpenClaw's 5 s worker start on a loaded machine), trying again", attempt)
	}
}

func (w *world) tryGateway() error {
	w.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w.t.Cleanup(cancel)
	gw := exec.CommandContext(ctx, w.ocBin, "gateway", "run", "--port", w.gwPort, "--bind", "loopback", "--allow-unconfigured", "--auth", "token")
	gw.Env, gw.Dir = w.env(false), w.dir
	w.gwOut = &bytes.Buffer{}
	gw.Stdout, gw.Stderr = w.gwOut, w.gwOut
	gw.Cancel = func() error { return gw.Process.Signal(syscall.SIGTERM) }
	gw.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} // never outlives a test that panics
	gw.WaitDelay = 30 * time.Second
	if err := gw.Start(); err != nil {
		return err
	}
	w.gateway, w.gwExited = gw, make(chan error, 1)
	go func() { w.gwExited <- gw.Wait() }()
	deadline := time.Now().Add(12 * time.Minute) // a loaded 2-core machine took over 4
	for {
		if c, err := net.DialTimeout("tcp", "127.0.0.1:"+w.gwPort, time.Second); err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("gateway port %s not open after 12 minutes:\n%s", w.gwPort, w.gatewayLog())
		}
		select {
		case err := <-w.gwExited:
			w.gateway = nil
			return fmt.Errorf("gateway exited: %v\n%s", err, tail(w.gwOut.String(), 4000))
		case <-time.After(time.Second):
		}
	}
}

func (w *world) gatewayLog() string {
	if w.gwOut == nil {
		return ""
	}
	return "gateway: " + tail(w.gwOut.String(), 4000)
}

// stopGateway sends SIGTERM and waits for the gateway to exit.
//
// OpenClaw drains its active work before it stops, up to its own stop
// budget (its log: "policy=330000ms"; drain 315 s + 10 s reserve,
// gateway-shutdown-budget.mjs), and one of its own cron runs can hold it
// there however fast MetaClaw and the model answer. The heartbeat
// (cron job heartbeat-<agent>, every 30 m at a phase drawn from the device
// id) turns every "New session created" system event into a model turn on
// agent:main:main. A tick that finds a user turn in flight is skipped
// ("requests-in-flight") and retried after SESSION_EVENT_IDLE_RETRY_MS =
// 60 s, and the cron run keeps waiting for it (dist/service-*.mjs
// executeJobCore → requestHeartbeatAndWait; dist/heartbeat-wake-*.mjs
// retry()). The stop drain waits for every active cron run
// (dist/gateway-active-work-*.mjs getCronRuns; dist/run-*.mjs
// drainGatewayActiveWork). So:
//   - SIGTERM during the heartbeat's own turn (admitted before SIGTERM):
//     stop waits for the rest of that turn (seen: 60–100 s on a loaded
//     machine);
//   - SIGTERM while the retry is pending: SIGTERM also sets OpenClaw's
//     one-way drain fence (markRestartDraining("stop (SIGTERM)"), "[admission]
//     closed: stop (SIGTERM)"), the retry's admission throws
//     GatewayDrainingError (dist/gateway-work-admission-*.mjs
//     runWithGatewayNewRootWorkAdmission), dispatch() retries it every
//     second and never settles the cron run's waiter: stop takes the whole
//     budget ("active-work drain timeout reached ... cronRuns=1", then
//     "shutdown deadline reached"; reproduced by hand with heartbeat.every
//     1m, 330 s).
//
// MetaClaw is not in that wait: its hooks are bounded (2 s, agent_end 5 s)
// and the heartbeat's model call goes straight to the model. So the test
// waits past OpenClaw's budget before it calls the stop a failure, and says
// what it waited for.
func (w *world) stopGateway() {
	if w.gateway == nil {
		return
	}
	gw := w.gateway
	w.gateway = nil
	gw.Process.Signal(syscall.SIGTERM)
	sigterm := time.Now()
	defer func() {
		// Kept with the world when a test fails (or METACLAW_E2E_KEEP is set).
		os.WriteFile(filepath.Join(w.dir, "gateway.log"), w.gwOut.Bytes(), 0o600)
	}()
	select {
	case err := <-w.gwExited:
		w.t.Logf("gateway exited %v after SIGTERM: %v", time.Since(sigterm).Round(time.Millisecond), err)
		return
	case <-time.After(60 * time.Second):
	}
	w.t.Logf("gateway still draining 60s after SIGTERM (an OpenClaw heartbeat cron run, see stopGateway); waiting for its own 330s stop budget\n%s", w.gatewayLog())
	select {
	case err := <-w.gwExited:
		w.t.Logf("gateway exited %v after SIGTERM: %v", time.Since(sigterm).Round(time.Millisecond), err)
	case <-time.After(300 * time.Second):
		gw.Process.Kill()
		<-w.gwExited
		w.t.Errorf("gateway did not stop within its own 330s stop budget after SIGTERM\n%s", w.gatewayLog())
	}
}

// pluginList is `openclaw plugins list --json`.
type pluginList struct {
	Plugins []struct {
		ID        string   `json:"id"`
		Enabled   bool     `json:"enabled"`
		Status    string   `json:"status"`
		ToolNames []string `json:"toolNames"`
	} `json:"plugins"`
}

func (w *world) plugins() pluginList {
	w.t.Helper()
	out := w.mustOC("plugins", "list", "--json")
	var pl pluginList
	if i := strings.Index(out, "{"); i < 0 || json.Unmarshal([]byte(out[i:]), &pl) != nil {
		w.t.Fatalf("plugins list: %s", tail(out, 2000))
	}
	return pl
}

func freePort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return fmt.Sprint(l.Addr().(*net.TCPAddr).Port)
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}

// healthy reports whether the MetaClaw proxy answers /healthz.
func (w *world) healthy() bool {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get("http://127.0.0.1:" + w.mcPort + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}
