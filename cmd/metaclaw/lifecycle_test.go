package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	_ "modernc.org/sqlite"

	"github.com/metaclaw-go/metaclaw/internal/fakellm"
	"github.com/metaclaw-go/metaclaw/internal/testwait"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// TestMain removes the binary the tests built: it is ~50 MB, and a
// directory left per run filled /tmp (65 of them, 3.3 GB, on the
// development machine).
func TestMain(m *testing.M) {
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// binary builds the real metaclaw binary once per test run.
func binary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "metaclaw-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "metaclaw")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			buildErr = err
			t.Logf("%s", out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

type cli struct {
	t    *testing.T
	home string
	env  []string
	key  string // the proxy key, once read
}

func newCLI(t *testing.T, env ...string) *cli {
	home := t.TempDir()
	c := &cli{t: t, home: home}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "METACLAW_") || strings.HasPrefix(k, "OPENAI_") || strings.HasPrefix(k, "ANTHROPIC_") {
			continue
		}
		c.env = append(c.env, kv)
	}
	c.env = append(c.env, "METACLAW_HOME="+home)
	c.env = append(c.env, env...)
	t.Cleanup(func() {
		// Never leave a host behind.
		c.run("stop", "--timeout", "20s")
	})
	return c
}

func (c *cli) run(args ...string) (string, int) {
	c.t.Helper()
	bin := binary(c.t) // built before the clock starts: a first build on a busy machine takes long
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = c.env
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatalf("run %v: %v", args, err)
	}
	return string(out), code
}

type statusJSON struct {
	Running  bool   `json:"running"`
	PID      int    `json:"pid"`
	Listen   string `json:"listen"`
	Mode     string `json:"mode"`
	Upstream struct {
		Configured bool   `json:"configured"`
		API        string `json:"api"`
		Source     string `json:"source"`
	} `json:"upstream"`
	Counts struct {
		Turns int `json:"turns"`
	} `json:"counts"`
}

func (c *cli) status() statusJSON {
	c.t.Helper()
	out, code := c.run("status", "--json")
	var st statusJSON
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		c.t.Fatalf("status --json (exit %d): %v\n%s", code, err, out)
	}
	return st
}

// proxyKey is the key the host generated on first start, as `metaclaw env`
// hands it to SDK users.
func (c *cli) proxyKey() string {
	c.t.Helper()
	if c.key != "" {
		return c.key
	}
	out, code := c.run("env", "--shell", "dotenv")
	for _, line := range strings.Split(out, "\n") {
		if k, ok := strings.CutPrefix(line, "OPENAI_API_KEY="); ok && code == 0 {
			c.key = k
			return k
		}
	}
	c.t.Fatalf("metaclaw env: %d %s", code, out)
	return ""
}

// post sends a JSON request with the proxy key (read it with proxyKey
// first when posting from another goroutine).
func (c *cli) post(url, body string) (*http.Response, error) {
	key := c.key
	if key == "" {
		key = c.proxyKey()
	}
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	return http.DefaultClient.Do(req)
}

func TestStartStatusStopAsProcesses(t *testing.T) {
	up := fakellm.New()
	defer up.Close()
	c := newCLI(t, "OPENAI_BASE_URL="+up.URL+"/v1", "OPENAI_API_KEY=sk-env-SECRET-123")

	out, code := c.run("start", "--port", "0", "--mode", "skills_only")
	if code != 0 || !strings.Contains(out, "metaclaw started") {
		t.Fatalf("start: %d %s", code, out)
	}
	st := c.status()
	if !st.Running || st.PID == 0 || st.Mode != "skills_only" || !st.Upstream.Configured || st.Upstream.Source != "env OPENAI_BASE_URL" {
		t.Fatalf("status %+v", st)
	}
	out, code = c.run("start", "--port", "0")
	if code != 0 || !strings.Contains(out, "already running") || !strings.Contains(out, st.Listen) {
		t.Fatalf("second start: %d %s", code, out)
	}

	// A turn through the daemon reaches the upstream from the environment.
	resp, err := c.post("http://"+st.Listen+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"hi"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "FAKE-REPLY-OK") {
		t.Fatalf("turn: %d %s", resp.StatusCode, b)
	}
	if got := up.Last().Header.Get("Authorization"); got != "Bearer sk-env-SECRET-123" {
		t.Fatalf("upstream auth %q", got)
	}

	// A change made while the host runs says that the host keeps its config.
	out, code = c.run("config", "set", "memory.top_k", "7")
	if code != 0 || !strings.Contains(out, "memory.top_k = 7") || !strings.Contains(out, "running host (pid "+strconv.Itoa(st.PID)+") keeps its config") {
		t.Fatalf("config set while running: %d %s", code, out)
	}

	human, _ := c.run("status")
	for _, want := range []string{"running", "skills_only", st.Listen, "env OPENAI_BASE_URL"} {
		if !strings.Contains(human, want) {
			t.Fatalf("status lacks %q:\n%s", want, human)
		}
	}

	// Graceful stop: a request in flight when stop is called still completes.
	type result struct {
		code int
		body string
		err  error
	}
	done := make(chan result, 1)
	go func() {
		resp, err := c.post("http://"+st.Listen+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"SLOW-1500 please"}]}`)
		if err != nil {
			done <- result{err: err}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		done <- result{code: resp.StatusCode, body: string(b)}
	}()
	// Stop once the upstream holds the request (the proxy is mid-turn).
	testwait.For(t, "the slow request to reach the upstream", func() bool { return len(up.Requests()) == 2 })
	out, code = c.run("stop")
	if code != 0 || !strings.Contains(out, "stopped") {
		t.Fatalf("stop: %d %s", code, out)
	}
	r := <-done
	if r.err != nil || r.code != 200 {
		t.Fatalf("in-flight request during stop: %+v", r)
	}
	if b, err := os.ReadFile("/proc/" + strconv.Itoa(st.PID) + "/stat"); err == nil && !strings.Contains(string(b), ") Z") {
		t.Fatalf("pid %d still running after stop: %s", st.PID, b)
	}
	out, code = c.run("status")
	if code != 3 || !strings.Contains(out, "not running") {
		t.Fatalf("status after stop: %d %s", code, out)
	}

	// Both turns were persisted before the host exited.
	db, err := sql.Open("sqlite", filepath.Join(c.home, "metaclaw.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM turns WHERE status = 200`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("persisted turns %d %v", n, err)
	}

	// No secret in any log.
	filepath.Walk(filepath.Join(c.home, "logs"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			b, _ := os.ReadFile(p)
			if strings.Contains(string(b), "sk-env-SECRET-123") {
				t.Errorf("%s contains the upstream key", p)
			}
		}
		return nil
	})
}

func TestStartWithoutUpstreamAnswersWithSetupHint(t *testing.T) {
	c := newCLI(t)
	out, code := c.run("start", "--port", "0")
	if code != 0 || !strings.Contains(out, "no upstream") {
		t.Fatalf("start: %d %s", code, out)
	}
	st := c.status()
	resp, err := c.post("http://"+st.Listen+"/v1/messages", `{"model":"m","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 503 || !strings.Contains(string(b), "metaclaw setup") || !strings.Contains(string(b), `"type":"error"`) {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	if _, err := os.Stat(filepath.Join(c.home, "metaclaw.db")); err != nil {
		t.Fatal("store not created on defaults")
	}
}

func TestNonLoopbackBindNeedsKey(t *testing.T) {
	c := newCLI(t, "METACLAW_PROXY_HOST=0.0.0.0")
	out, code := c.run("start", "--foreground", "--port", "0")
	if code == 0 || !strings.Contains(out, "proxy.api_key") {
		t.Fatalf("non-loopback bind without key: %d %s", code, out)
	}
}

func TestConfigCommands(t *testing.T) {
	c := newCLI(t)
	cfgPath := filepath.Join(c.home, "config.yaml")
	os.WriteFile(cfgPath, []byte("# my setup\nmode: auto   # keep\nllm:\n  provider: kimi\n"), 0o600)

	tests := []struct {
		args     []string
		wantCode int
		want     []string
	}{
		{[]string{"config", "set", "proxy.port", "abc"}, 1, []string{"proxy.port"}},
		{[]string{"config", "set", "proxy.prot", "1"}, 1, []string{"proxy.prot", "proxy.port"}},
		{[]string{"config", "set", "mode", "turbo"}, 1, []string{"mode", "skills_only"}},
		{[]string{"config", "set", "llm.model_id", "kimi-k2"}, 0, []string{"llm.model_id = kimi-k2"}},
		{[]string{"config", "llm.api_base", "https://api.moonshot.cn/v1"}, 0, nil},
		{[]string{"config", "llm.api_base"}, 0, []string{"https://api.moonshot.cn/v1"}},
		{[]string{"config", "get", "llm.model_id"}, 0, []string{"kimi-k2"}},
		{[]string{"config", "set", "llm.api_key", "sk-very-SECRET-999"}, 0, []string{"secret"}},
		{[]string{"config", "show"}, 0, []string{"kimi-k2", "moonshot"}},
	}
	for _, tt := range tests {
		out, code := c.run(tt.args...)
		if code != tt.wantCode {
			t.Fatalf("%v: exit %d, want %d\n%s", tt.args, code, tt.wantCode, out)
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Fatalf("%v: output lacks %q:\n%s", tt.args, w, out)
			}
		}
		if strings.Contains(out, "keeps its config") {
			t.Fatalf("%v: no host runs, yet it asks for a restart:\n%s", tt.args, out)
		}
		if strings.Contains(out, "sk-very-SECRET-999") && tt.args[1] == "show" {
			t.Fatalf("config show leaked the secret:\n%s", out)
		}
	}
	b, _ := os.ReadFile(cfgPath)
	if !strings.Contains(string(b), "# my setup") || !strings.Contains(string(b), "# keep") || strings.Contains(string(b), "SECRET") {
		t.Fatalf("config.yaml after edits:\n%s", b)
	}
	fi, err := os.Stat(filepath.Join(c.home, "secrets.yaml"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("secrets.yaml: %v %v", fi, err)
	}

	// A broken file is reported with its line and never overwritten.
	broken := []byte("mode: auto\nllm:\n  api_base: [unclosed\n")
	os.WriteFile(cfgPath, broken, 0o600)
	out, code := c.run("config", "set", "mode", "rl")
	if code == 0 || !strings.Contains(out, "config.yaml") {
		t.Fatalf("set on broken file: %d %s", code, out)
	}
	if after, _ := os.ReadFile(cfgPath); string(after) != string(broken) {
		t.Fatal("broken config was overwritten")
	}
	out, code = c.run("start", "--foreground")
	if code == 0 || !strings.Contains(out, "config.yaml") {
		t.Fatalf("start on broken file: %d %s", code, out)
	}
}

// TestConfigGetMasksSecrets: a secret is printed in full only with --reveal,
// so it does not land on a screen or in a pasted transcript by accident.
func TestConfigGetMasksSecrets(t *testing.T) {
	c := newCLI(t)
	const key = "sk-live-0123456789abcdefSECRET"
	if out, code := c.run("config", "set", "llm.api_key", key); code != 0 || strings.Contains(out, key) {
		t.Fatalf("set: %d %s", code, out)
	}
	for _, args := range [][]string{{"config", "get", "llm.api_key"}, {"config", "llm.api_key"}, {"config", "get", "llm"}, {"config", "show"}} {
		out, code := c.run(args...)
		if code != 0 || strings.Contains(out, key) || !strings.Contains(out, "masked") {
			t.Fatalf("%v: %d %s", args, code, out)
		}
	}
	for _, args := range [][]string{{"config", "get", "--reveal", "llm.api_key"}, {"config", "--reveal", "llm.api_key"}} {
		if out, code := c.run(args...); code != 0 || strings.TrimSpace(out) != key {
			t.Fatalf("%v: %d %q", args, code, out)
		}
	}
}

// TestStartRefusesAWorldWritableHome: a state dir every user can write is
// refused with the fix, before anything is loaded from it.
func TestStartRefusesAWorldWritableHome(t *testing.T) {
	c := newCLI(t)
	if err := os.Chmod(c.home, 0o777); err != nil {
		t.Fatal(err)
	}
	out, code := c.run("start", "--foreground", "--port", "0")
	if code == 0 || !strings.Contains(out, "writable by every user") || !strings.Contains(out, "chmod 700 "+c.home) {
		t.Fatalf("start in a 0777 home: %d %s", code, out)
	}
	os.Chmod(c.home, 0o700)
}
