package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// install.sh, run for real with bash against a temp HOME and --prefix:
// install + config + wire, idempotent re-run, uninstall (data kept), purge.
func TestInstallScript(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Fatal("install.sh needs bash")
	}
	script, err := filepath.Abs("../../install.sh")
	if err != nil {
		t.Fatal(err)
	}
	bin := binary(t)
	root := t.TempDir()
	home := filepath.Join(root, "home")
	prefix := filepath.Join(root, "prefix")
	fake := filepath.Join(root, "fakebin")
	calls := filepath.Join(root, "calls.log")
	for _, d := range []string{home, fake} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(fake, "openclaw"), []byte("#!/bin/sh\necho \"openclaw $*\" >> "+calls+"\n"), 0o755)
	src, err := os.ReadFile(filepath.Join(fixtures, "clients/openclaw/docs-current/provider-example-llamacpp.openclaw.json5"))
	if err != nil {
		t.Fatalf("fixture missing from the repository: %v", err)
	}
	cfg := filepath.Join(home, ".openclaw", "openclaw.json")
	os.MkdirAll(filepath.Dir(cfg), 0o755)
	os.WriteFile(cfg, src, 0o644)

	env := []string{"HOME=" + home, "PATH=" + fake + ":/usr/bin:/bin", "TEST_UPSTREAM_KEY=sk-upstream-test-123"}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("bash", append([]string{script}, args...)...)
		cmd.Env = env
		cmd.Dir = root
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("install.sh %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	installArgs := []string{"--binary", bin, "--prefix", prefix, "--client", "openclaw", "--agent", "main", "--via", "both",
		"--api-base", "http://127.0.0.1:9/v1", "--api-key-env", "TEST_UPSTREAM_KEY", "--model", "qwen35", "--api", "anthropic"}
	out := run(installArgs...)
	installed := filepath.Join(prefix, "bin", "metaclaw")
	a, _ := os.ReadFile(bin)
	b, err := os.ReadFile(installed)
	if err != nil || !bytes.Equal(a, b) {
		t.Fatalf("binary not installed: %v\n%s", err, out)
	}
	mc := filepath.Join(home, ".metaclaw")
	conf, _ := os.ReadFile(filepath.Join(mc, "config.yaml"))
	for _, want := range []string{"api_base: http://127.0.0.1:9/v1", "model_id: qwen35", "api: anthropic"} {
		if !strings.Contains(string(conf), want) {
			t.Fatalf("config.yaml lacks %q:\n%s", want, conf)
		}
	}
	if strings.Contains(string(conf), "sk-upstream-test-123") {
		t.Fatal("the key landed in config.yaml")
	}
	st, err := os.Stat(filepath.Join(mc, "secrets.yaml"))
	sec, _ := os.ReadFile(filepath.Join(mc, "secrets.yaml"))
	if err != nil || st.Mode().Perm() != 0o600 || !strings.Contains(string(sec), "sk-upstream-test-123") {
		t.Fatalf("secrets.yaml: %v %v", err, st)
	}
	wired, _ := os.ReadFile(cfg)
	if !strings.Contains(string(wired), `"metaclaw-main"`) || !strings.Contains(string(wired), "allowConversationAccess: true") {
		t.Fatalf("openclaw not wired:\n%s\n%s", wired, out)
	}
	if l, _ := os.Readlink(filepath.Join(home, ".openclaw", "extensions", "metaclaw", "bin", "metaclaw")); l != installed {
		t.Fatalf("extension bin link points at %q, want %q", l, installed)
	}
	if !strings.Contains(out, "add "+prefix+"/bin to your PATH") {
		t.Fatalf("no PATH hint:\n%s", out)
	}

	// idempotent
	out = run(installArgs...)
	if !strings.Contains(out, "is up to date") || !strings.Contains(out, "already wired") || strings.Contains(out, "config: ") {
		t.Fatalf("second run changed something:\n%s", out)
	}
	if ents, _ := os.ReadDir(filepath.Join(mc, "backups", "openclaw")); len(ents) != 1 {
		t.Fatalf("backups: %d", len(ents))
	}

	// uninstall keeps the data
	out = run("--uninstall", "--prefix", prefix)
	if got, _ := os.ReadFile(cfg); !bytes.Equal(got, src) {
		t.Fatalf("openclaw not restored:\n%s", out)
	}
	if _, err := os.Stat(installed); !os.IsNotExist(err) {
		t.Fatalf("binary left: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(mc, "config.yaml")); err != nil {
		t.Fatalf("config removed without --purge: %v", err)
	}
	if !strings.Contains(readFile(calls), "openclaw gateway restart") {
		t.Fatalf("restart not run: %q", readFile(calls))
	}

	// install again, then purge
	run(installArgs...)
	run("--uninstall", "--purge", "--prefix", prefix)
	if _, err := os.Stat(mc); !os.IsNotExist(err) {
		t.Fatalf("METACLAW_HOME left after --purge: %v", err)
	}
	if got, _ := os.ReadFile(cfg); !bytes.Equal(got, src) {
		t.Fatal("openclaw not restored after purge")
	}
}

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}
