package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/internal/fakellm"
)

// runIn runs the binary with stdin.
func (c *cli) runIn(stdin string, args ...string) (string, int) {
	c.t.Helper()
	bin := binary(c.t) // built before the clock starts
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = c.env
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("run %v: %v", args, err)
	}
	return string(out), code
}

func TestSetupNonInteractive(t *testing.T) {
	up := fakellm.New()
	defer up.Close()
	c := newCLI(t, "MY_LLM_KEY=sk-from-env-123456", "HOME="+t.TempDir())
	out, code := c.run("setup", "--client", "none", "--provider", "custom", "--api-base", up.URL+"/v1",
		"--api-key-env", "MY_LLM_KEY", "--model", "m-1", "--memory=false", "--install-bank=false", "--skill-review", "manual", "--yes")
	if code != 0 {
		t.Fatalf("setup: %d\n%s", code, out)
	}
	for _, want := range []string{"Testing", "ok", "llm.api_base", "llm.api_key", "…(masked)", "Saved.", "metaclaw start"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "sk-from-env-123456") {
		t.Fatal("key printed")
	}
	if r := up.Last(); r.Path != "/v1/models" || r.Header.Get("Authorization") != "Bearer sk-from-env-123456" {
		t.Fatalf("probe request %s %v", r.Path, r.Header)
	}
	cfgText, _ := os.ReadFile(filepath.Join(c.home, "config.yaml"))
	for _, want := range []string{up.URL + "/v1", "m-1", "manual"} {
		if !strings.Contains(string(cfgText), want) {
			t.Fatalf("config.yaml lacks %q:\n%s", want, cfgText)
		}
	}
	if strings.Contains(string(cfgText), "mode:") {
		t.Fatalf("setup with RL off changed the mode:\n%s", cfgText)
	}
	if strings.Contains(string(cfgText), "sk-from-env") {
		t.Fatal("key in config.yaml")
	}
	sec, err := os.ReadFile(filepath.Join(c.home, "secrets.yaml"))
	fi, _ := os.Stat(filepath.Join(c.home, "secrets.yaml"))
	if err != nil || !strings.Contains(string(sec), "sk-from-env-123456") || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secrets.yaml: %v %s", err, sec)
	}
	got, _ := c.run("config", "get", "memory.enabled")
	if strings.TrimSpace(got) != "false" {
		t.Fatalf("memory.enabled = %q", got)
	}

	// Re-running with the same answers changes nothing.
	out, code = c.run("setup", "--client", "none", "--provider", "custom", "--api-base", up.URL+"/v1",
		"--api-key-env", "MY_LLM_KEY", "--model", "m-1", "--memory=false", "--install-bank=false", "--skill-review", "manual", "--yes", "--no-probe")
	if code != 0 || !strings.Contains(out, "nothing to change") {
		t.Fatalf("second setup: %d\n%s", code, out)
	}
}

func TestSetupProbeFailureWritesNothing(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	dead := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	c := newCLI(t, "HOME="+t.TempDir())
	out, code := c.run("setup", "--provider", "custom", "--api-base", dead, "--api-key", "k", "--model", "m", "--install-bank=false", "--yes")
	if code == 0 || !strings.Contains(out, "cannot reach") || !strings.Contains(out, "--no-probe") {
		t.Fatalf("%d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(c.home, "config.yaml")); err == nil {
		t.Fatal("config written despite failed probe")
	}
	out, code = c.run("setup", "--provider", "nope", "--yes")
	if code == 0 || !strings.Contains(out, `--provider "nope" is unknown`) {
		t.Fatalf("%d\n%s", code, out)
	}
}

func TestSetupNeedsTerminalOrFlags(t *testing.T) {
	c := newCLI(t, "HOME="+t.TempDir())
	out, code := c.runIn("", "setup")
	if code == 0 || !strings.Contains(out, "needs a terminal") {
		t.Fatalf("%d\n%s", code, out)
	}
}

// TestSetupInteractiveAccessible drives the wizard's questions line by line
// (huh's accessible mode), the way a screen reader or a pipe answers them.
func TestSetupInteractiveAccessible(t *testing.T) {
	up := fakellm.New()
	defer up.Close()
	c := newCLI(t, "HOME="+t.TempDir(), "OPENAI_API_KEY=")
	answers := strings.Join([]string{
		"9",                 // client: none
		"main",              // agents
		"12",                // provider: custom
		up.URL + "/v1",      // base URL
		"1",                 // wire format: openai
		"sk-typed-abcdefgh", // key
		"typed-model",       // model
		"y",                 // memory
		"n",                 // skill bank
		"2",                 // review: manual
		"1",                 // RL: off
		"n",                 // start now?
	}, "\n") + "\n"
	out, code := c.runIn(answers, "setup", "--accessible")
	if code != 0 {
		t.Fatalf("%d\n%s", code, out)
	}
	cfgText, _ := os.ReadFile(filepath.Join(c.home, "config.yaml"))
	for _, want := range []string{up.URL + "/v1", "typed-model", "manual"} {
		if !strings.Contains(string(cfgText), want) {
			t.Fatalf("config.yaml lacks %q:\n%s\n--- output:\n%s", want, cfgText, out)
		}
	}
	// An existing config: the wizard shows the diff and asks; "n" writes nothing.
	before, _ := os.ReadFile(filepath.Join(c.home, "config.yaml"))
	answers = strings.Join([]string{"9", "main", "12", up.URL + "/v1", "1", "sk-typed-abcdefgh", "other-model", "y", "n", "2", "1", "n"}, "\n") + "\n"
	out, code = c.runIn(answers, "setup", "--accessible")
	if !strings.Contains(out, "llm.model_id: typed-model -> other-model") || !strings.Contains(out, "cancelled") {
		t.Fatalf("%d\n%s", code, out)
	}
	after, _ := os.ReadFile(filepath.Join(c.home, "config.yaml"))
	if string(before) != string(after) {
		t.Fatal("declined changes were written")
	}
}
