package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/metaclaw-go/metaclaw/host/skills/bank"
	"github.com/metaclaw-go/metaclaw/internal/fakellm"
)

// The first hour of a new user, through the real binary: what setup keeps,
// what it says, and what the CLI prints where.

// runSplit runs the binary with stdin from a file (nil: none) and returns
// stdout and stderr apart.
func (c *cli) runSplit(stdin *os.File, args ...string) (stdout, stderr string, code int) {
	c.t.Helper()
	bin := binary(c.t) // built before the clock starts
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = c.env
	if stdin != nil {
		cmd.Stdin = stdin
	}
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("run %v: %v", args, err)
	}
	return o.String(), e.String(), code
}

// TestSetupKeyReachesAHostStartedElsewhere: `setup --provider … --api-key-env
// VAR --yes` (the README's example) stores the key and the base URL, so a
// host started from a shell without VAR (systemd, a client's plugin) still
// reaches the upstream with it; status says where the key comes from.
func TestSetupKeyReachesAHostStartedElsewhere(t *testing.T) {
	up := fakellm.New()
	defer up.Close()
	const key = "sk-first-hour-0123456789"
	c := newCLI(t, "HOME="+t.TempDir(), "OPENAI_API_KEY="+key)
	out, code := c.run("setup", "--provider", "openai", "--api-key-env", "OPENAI_API_KEY", "--api-base", up.URL+"/v1", "--yes", "--install-bank=false")
	if code != 0 || !strings.Contains(out, "read from $OPENAI_API_KEY, stored in secrets.yaml") || strings.Contains(out, key) || strings.Contains(out, "warning:") {
		t.Fatalf("setup: %d\n%s", code, out)
	}
	if sec, _ := os.ReadFile(filepath.Join(c.home, "secrets.yaml")); !strings.Contains(string(sec), key) {
		t.Fatalf("secrets.yaml: %s", sec)
	}
	if cfg, _ := os.ReadFile(filepath.Join(c.home, "config.yaml")); !strings.Contains(string(cfg), "api_base: "+up.URL+"/v1") || strings.Contains(string(cfg), "mode:") {
		t.Fatalf("config.yaml:\n%s", cfg)
	}

	// Another shell: no OPENAI_API_KEY.
	other := &cli{t: t, home: c.home}
	for _, kv := range c.env {
		if !strings.HasPrefix(kv, "OPENAI_API_KEY=") {
			other.env = append(other.env, kv)
		}
	}
	t.Cleanup(func() { other.run("stop", "--timeout", "20s") })
	if out, code := other.run("start", "--port", "0"); code != 0 {
		t.Fatalf("start: %d %s", code, out)
	}
	st := other.status()
	out, _ = other.run("status", "--json")
	var full struct {
		Upstream struct {
			KeySource string `json:"key_source"`
		} `json:"upstream"`
	}
	if err := json.Unmarshal([]byte(out), &full); err != nil || full.Upstream.KeySource != "secrets" || !st.Upstream.Configured {
		t.Fatalf("status: %v\n%s", err, out)
	}
	if human, _ := other.run("status"); !strings.Contains(human, "key in secrets.yaml") {
		t.Fatalf("status does not say where the key is:\n%s", human)
	}
	resp, err := postTurn(t, c.home, "http://"+st.Listen+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || up.Last().Header.Get("Authorization") != "Bearer "+key {
		t.Fatalf("turn from a host started without the variable: %d %s (upstream auth %q)", resp.StatusCode, b, up.Last().Header.Get("Authorization"))
	}
}

// postTurn sends a JSON body to the host of home, with the proxy key when
// its secrets.yaml holds one.
func postTurn(t *testing.T, home, url, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	var sec struct {
		Proxy struct {
			APIKey string `yaml:"api_key"`
		} `yaml:"proxy"`
	}
	if b, err := os.ReadFile(filepath.Join(home, "secrets.yaml")); err == nil {
		if err := yaml.Unmarshal(b, &sec); err != nil {
			t.Fatalf("secrets.yaml: %v", err)
		}
	}
	if sec.Proxy.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+sec.Proxy.APIKey)
	}
	return http.DefaultClient.Do(req)
}

// TestSetupSaysWhatWillNotWork: with no provider and no key, setup warns
// that nothing will answer and leaves the mode alone; without a terminal it
// says which flags answer instead (no escape codes, no terminal library
// errors).
func TestSetupSaysWhatWillNotWork(t *testing.T) {
	c := newCLI(t, "HOME="+t.TempDir())
	out, code := c.run("setup", "--yes", "--install-bank=false", "--no-probe")
	if code != 0 || !strings.Contains(out, "warning: no upstream LLM is configured") || !strings.Contains(out, "nothing will answer") {
		t.Fatalf("setup with nothing: %d\n%s", code, out)
	}
	if cfg, _ := os.ReadFile(filepath.Join(c.home, "config.yaml")); strings.Contains(string(cfg), "mode:") {
		t.Fatalf("setup changed the mode:\n%s", cfg)
	}

	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	stdout, stderr, code := c.runSplit(devnull, "setup")
	all := stdout + stderr
	if code == 0 || !strings.Contains(all, "needs a terminal") || strings.Contains(all, "\x1b") || strings.Contains(all, "cancelreader") {
		t.Fatalf("setup < /dev/null: %d\n%q", code, all)
	}
	// Flags but no --yes on an existing config: the confirmation cannot be asked.
	if out, code := c.run("config", "set", "llm.model_id", "mine"); code != 0 {
		t.Fatal(out)
	}
	stdout, stderr, code = c.runSplit(devnull, "setup", "--provider", "ollama", "--no-probe", "--install-bank=false")
	all = stdout + stderr
	if code == 0 || !strings.Contains(all, "no terminal to ask on; pass --yes") || strings.Contains(all, "\x1b") || strings.Contains(all, "cancelreader") {
		t.Fatalf("setup --provider without --yes < /dev/null: %d\n%q", code, all)
	}
	if cfg, _ := os.ReadFile(filepath.Join(c.home, "config.yaml")); strings.Contains(string(cfg), "ollama") {
		t.Fatalf("written without confirmation:\n%s", cfg)
	}
}

// TestVersionOnStdout: `metaclaw version` and `--version` print the same
// line on stdout, so v=$(metaclaw version) works.
func TestVersionOnStdout(t *testing.T) {
	c := newCLI(t)
	for _, args := range [][]string{{"version"}, {"--version"}} {
		stdout, stderr, code := c.runSplit(nil, args...)
		if code != 0 || !strings.HasPrefix(stdout, "metaclaw ") || strings.Count(stdout, "\n") != 1 || stderr != "" {
			t.Fatalf("%v: %d stdout %q stderr %q", args, code, stdout, stderr)
		}
	}
}

// TestConfigErrorsOnTheCommandLine: config show on a file that does not
// load shows what it can and the error with the right line; the "fix the
// file" advice comes only when a file is named.
func TestConfigErrorsOnTheCommandLine(t *testing.T) {
	c := newCLI(t)
	cfgPath := filepath.Join(c.home, "config.yaml")
	write := func(s string) {
		if err := os.WriteFile(cfgPath, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("mode: rl\nllm:\n  model_id: [unclosed\n")
	stdout, stderr, code := c.runSplit(nil, "config", "show")
	if code == 0 || !strings.Contains(stdout, "does NOT load") || !strings.Contains(stdout, "proxy:") || !strings.Contains(stderr, "config.yaml:3: invalid YAML") {
		t.Fatalf("config show, syntax error: %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	write("mode: rl\nproxy:\n  port: 99999\n")
	stdout, stderr, code = c.runSplit(nil, "config", "show")
	if code == 0 || !strings.Contains(stdout, "mode: rl") || !strings.Contains(stderr, "config.yaml:3: `proxy.port`") || !strings.Contains(stderr, "fix the file named above") {
		t.Fatalf("config show, bad value: %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	write("mode: auto\n")
	out, code := c.run("config", "set", "proxy.port", "70000")
	if code == 0 || !strings.Contains(out, "`proxy.port`: must be between 0 and 65535") || strings.Contains(out, "config.yaml:") {
		t.Fatalf("config set proxy.port 70000: %d\n%s", code, out)
	}

	// An error from the environment only: no advice about a file.
	env := &cli{t: t, home: c.home, env: append(append([]string{}, c.env...), "METACLAW_PROXY_PORT=99999")}
	out, code = env.run("start")
	if code == 0 || !strings.Contains(out, "env METACLAW_PROXY_PORT") || strings.Contains(out, "file named above") || !strings.Contains(out, "environment variable named above") {
		t.Fatalf("start with a bad env value: %d\n%s", code, out)
	}
}

// TestDoctorWithNothingWired checks MetaClaw itself: the config, the host
// and the upstream (with a probe), even when no client is wired.
func TestDoctorWithNothingWired(t *testing.T) {
	up := fakellm.New()
	defer up.Close()
	c := newCLI(t, "HOME="+t.TempDir())
	if out, code := c.run("config", "set", "llm.api_base", up.URL+"/v1"); code != 0 {
		t.Fatal(out)
	}
	out, code := c.run("doctor")
	for _, want := range []string{"[ok ] config " + filepath.Join(c.home, "config.yaml") + " loads", "[FAIL] host not running", "fix: metaclaw start",
		"[ok ] upstream openai " + up.URL + "/v1 (from config); no API key: answers", "no client installed or wired here"} {
		if !strings.Contains(out, want) {
			t.Fatalf("doctor lacks %q (exit %d):\n%s", want, code, out)
		}
	}
	if code != 1 {
		t.Fatalf("doctor with the host down exited %d", code)
	}
	if r := up.Last(); r.Path != "/v1/models" {
		t.Fatalf("the probe did not reach the upstream: %+v", r)
	}
	if out, code := c.run("start", "--port", "0"); code != 0 {
		t.Fatalf("start: %d %s", code, out)
	}
	// The host listens on a port picked at start; doctor reads it from the run state.
	out, code = c.run("doctor", "--no-probe")
	if code != 0 || !strings.Contains(out, "[ok ] host running (pid ") || !strings.Contains(out, "not probed (--no-probe)") {
		t.Fatalf("doctor with the host up: %d\n%s", code, out)
	}
	// A config that does not load is the one finding.
	os.WriteFile(filepath.Join(c.home, "config.yaml"), []byte("mode: [x\n"), 0o600)
	out, code = c.run("doctor")
	if code != 1 || !strings.Contains(out, "[FAIL] config does not load") || !strings.Contains(out, "config.yaml:1: invalid YAML") {
		t.Fatalf("doctor with a broken config: %d\n%s", code, out)
	}
}

// TestInstallScriptFirstHour: install.sh --help shows only its help; a bad
// --api-key-env is refused before anything is installed; an install brings
// the skill bank setup brings; a second --uninstall says there is nothing
// to uninstall.
func TestInstallScriptFirstHour(t *testing.T) {
	script, err := filepath.Abs("../../install.sh")
	if err != nil {
		t.Fatal(err)
	}
	bin := binary(t)
	root := t.TempDir()
	home := filepath.Join(root, "home")
	prefix := filepath.Join(root, "prefix")
	os.MkdirAll(home, 0o755)
	env := []string{"HOME=" + home, "PATH=/usr/bin:/bin", "EMPTY_KEY=", "GOOD_KEY=sk-install-0123456789"}
	run := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command("bash", append([]string{script}, args...)...)
		cmd.Env = env
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	out, code := run("--help")
	if code != 0 || !strings.Contains(out, "--uninstall [--purge]") || strings.Contains(out, "set -euo") || strings.Contains(out, "pipefail") {
		t.Fatalf("--help: %d\n%s", code, out)
	}
	installed := filepath.Join(prefix, "bin", "metaclaw")
	for _, bad := range [][]string{{"--api-key-env", "EMPTY_KEY"}, {"--api-key-env", "sk-a-key-not-a-name"}} {
		out, code = run(append([]string{"--binary", bin, "--prefix", prefix, "--api-base", "http://127.0.0.1:9/v1"}, bad...)...)
		if code == 0 || !strings.Contains(out, "--api-key-env") && !strings.Contains(out, "EMPTY_KEY is empty") {
			t.Fatalf("%v: %d\n%s", bad, code, out)
		}
		if _, err := os.Stat(installed); !os.IsNotExist(err) {
			t.Fatalf("%v: the binary was installed before the key was checked (%v)\n%s", bad, err, out)
		}
	}
	out, code = run("--binary", bin, "--prefix", prefix, "--api-base", "http://127.0.0.1:9/v1", "--api-key-env", "GOOD_KEY")
	if code != 0 {
		t.Fatalf("install: %d\n%s", code, out)
	}
	skills, _ := filepath.Glob(filepath.Join(home, ".metaclaw", "skills", "*", "SKILL.md"))
	if want := len(bank.Names()); want < 40 || len(skills) != want || !strings.Contains(out, "skills: installed") {
		t.Fatalf("%d skills installed, want the bank's %d:\n%s", len(skills), want, out)
	}
	out, code = run("--binary", bin, "--prefix", prefix, "--api-base", "http://127.0.0.1:9/v1", "--api-key-env", "GOOD_KEY")
	if code != 0 || !strings.Contains(out, "installed 0") {
		t.Fatalf("second install: %d\n%s", code, out)
	}
	if out, code = run("--uninstall", "--prefix", prefix); code != 0 || !strings.Contains(out, "uninstalled") {
		t.Fatalf("uninstall: %d\n%s", code, out)
	}
	out, code = run("--uninstall", "--prefix", prefix)
	if code != 0 || !strings.Contains(out, "nothing to uninstall") || strings.Contains(out, "install.sh: uninstalled") {
		t.Fatalf("second uninstall: %d\n%s", code, out)
	}
}

// TestEnvShellIsNotItsOwnUpstream: a shell that ran `eval "$(metaclaw env)"`
// (the README's line for SDK users) has OPENAI_*/ANTHROPIC_* pointing at the
// proxy with the proxy key. A host or doctor run from that shell must not
// take them for the upstream (the host would call itself and send the proxy
// key upstream): doctor says nothing is configured and config show says why.
func TestEnvShellIsNotItsOwnUpstream(t *testing.T) {
	c := newCLI(t, "HOME="+t.TempDir())
	exports, code := c.run("env")
	if code != 0 {
		t.Fatalf("env: %d %s", code, exports)
	}
	n := 0
	for _, line := range strings.Split(exports, "\n") {
		kv, ok := strings.CutPrefix(strings.TrimSpace(line), "export ")
		if !ok {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		c.env = append(c.env, k+"="+strings.Trim(v, "'"))
		n++
	}
	if n != 4 {
		t.Fatalf("metaclaw env printed %d exports:\n%s", n, exports)
	}
	out, code := c.run("doctor", "--no-probe")
	if code == 0 || !strings.Contains(out, "no upstream LLM configured") || strings.Contains(out, "upstream openai") {
		t.Fatalf("doctor in a shell with metaclaw env's variables: %d\n%s", code, out)
	}
	show, _ := c.run("config", "show")
	if !strings.Contains(show, "OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL hold this proxy's own address or key") {
		t.Fatalf("config show does not say why the variables are not used:\n%s", show)
	}
}
