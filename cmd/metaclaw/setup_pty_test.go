package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/metaclaw-go/metaclaw/internal/fakellm"
)

// screen collects what the program draws on its terminal.
type screen struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[a-zA-Z]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]`)

func (s *screen) text() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ansi.ReplaceAllString(s.buf.String(), "")
}

// waitFor waits until the screen shows want (bounded).
func (s *screen) waitFor(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Contains(s.text(), want) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("screen never showed %q; last output:\n%s", want, tail(s.text(), 1500))
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// TestSetupWizardInTerminal drives the real full-screen wizard through a
// pseudo-terminal: arrow keys, Enter, typed text, as a person would.
func TestSetupWizardInTerminal(t *testing.T) {
	up := fakellm.New()
	defer up.Close()
	c := newCLI(t, "HOME="+t.TempDir(), "TERM=xterm-256color", "OPENAI_API_KEY=")
	bin := binary(t) // built first: a slow build must not eat the wizard's time
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "setup")
	cmd.Env = c.env
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var scr screen
	go io.Copy(&scr, tty)
	key := func(s string) {
		time.Sleep(150 * time.Millisecond) // let the form settle, as a person would
		if _, err := tty.Write([]byte(s)); err != nil {
			t.Fatalf("typing %q: %v; screen:\n%s", s, err, tail(scr.text(), 2000))
		}
	}
	const enter, down, ctrlU = "\r", "\x1b[B", "\x15"

	scr.waitFor(t, "Which agent should MetaClaw learn for?")
	key(enter) // client: none (nothing installed)
	scr.waitFor(t, "Which of its agents?")
	key(enter) // keep "main"
	scr.waitFor(t, "LLM provider")
	for i := 0; i < 11; i++ { // down to "Custom endpoint"
		key(down)
	}
	key(enter)
	scr.waitFor(t, "Base URL")
	key(up.URL + "/v1")
	key(enter)
	scr.waitFor(t, "Wire format")
	key(enter)
	key("sk-pty-key-123456")
	key(enter)
	key(ctrlU + "pty-model")
	key(enter)
	scr.waitFor(t, "Enable long-term memory?")
	key(enter) // yes
	key("n")   // no skill bank
	key(enter)
	key(enter) // review: auto
	key(enter) // RL: off
	scr.waitFor(t, "Start MetaClaw now?")
	key("n")
	key(enter)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("wizard exited with %v:\n%s", err, tail(scr.text(), 2000))
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("wizard did not finish:\n%s", tail(scr.text(), 2000))
	}
	cfg, _ := os.ReadFile(filepath.Join(c.home, "config.yaml"))
	for _, want := range []string{up.URL + "/v1", "pty-model"} {
		if !strings.Contains(string(cfg), want) {
			t.Fatalf("config.yaml lacks %q:\n%s\nscreen:\n%s", want, cfg, tail(scr.text(), 2000))
		}
	}
	sec, _ := os.ReadFile(filepath.Join(c.home, "secrets.yaml"))
	if !strings.Contains(string(sec), "sk-pty-key-123456") {
		t.Fatalf("secrets.yaml: %s", sec)
	}
	if strings.Contains(scr.text(), "sk-pty-key-123456") {
		t.Fatal("the key was echoed on the terminal")
	}
}
