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

	"github.com/metaclaw-go/metaclaw/host/setup"
	"github.com/metaclaw-go/metaclaw/internal/fakellm"
	"github.com/metaclaw-go/metaclaw/internal/testwait"
)

// screen collects what the program draws on its terminal, and answers the
// terminal's background-colour query as a real terminal would (the program
// otherwise waits seconds for the answer before drawing each form).
type screen struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	reply io.Writer
}

func (s *screen) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reply != nil {
		for range bytes.Count(p, []byte("\x1b]11;?")) {
			s.reply.Write([]byte("\x1b]11;rgb:0000/0000/0000\x1b\\"))
		}
	}
	return s.buf.Write(p)
}

var ansi = regexp.MustCompile(`\x1b\[[0-9;?]*[a-zA-Z]|\x1b\][^\x07\x1b]*(\x07|\x1b\\)|\x1b[()][A-Z0-9]`)

// mark is a position in what was drawn so far.
func (s *screen) mark() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Len()
}

// since is the text drawn after mark, without terminal escapes.
func (s *screen) since(mark int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ansi.ReplaceAllString(s.buf.String()[mark:], "")
}

func (s *screen) text() string { return s.since(0) }

// waitFor waits until the screen, after mark, shows want (bounded).
func (s *screen) waitFor(t *testing.T, mark int, want string) {
	t.Helper()
	if !testwait.Until(testwait.Deadline, func() bool { return strings.Contains(s.since(mark), want) }) {
		t.Fatalf("screen never showed %q; drawn since:\n%q", want, tail(s.since(mark), 3000))
	}
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
	ctx, cancel := context.WithTimeout(context.Background(), 3*testwait.Deadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "setup")
	cmd.Env = c.env
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	scr := screen{reply: tty}
	go io.Copy(&scr, tty)
	// press types keys and waits for the form to show their effect: huh
	// moves the focus in a command that runs after the key, so a key typed
	// before the new field shows would land in the old one. The focused
	// field is drawn with a bar: "┃ <title>", "┃ > <option>".
	press := func(keys, shows string) {
		t.Helper()
		m := scr.mark()
		if _, err := tty.Write([]byte(keys)); err != nil {
			t.Fatalf("typing %q: %v; screen:\n%s", keys, err, tail(scr.text(), 2000))
		}
		scr.waitFor(t, m, shows)
	}
	const enter, down, ctrlU, bar = "\r", "\x1b[B", "\x15", "┃ "

	scr.waitFor(t, 0, "Which agent should MetaClaw learn for?")
	press(enter, bar+"Which of its agents?") // client: none (nothing installed)
	press(enter, "LLM provider")             // keep "main"
	for _, p := range setup.Presets[1:] {    // down to "Custom endpoint"
		press(down, bar+"> "+p.Name)
	}
	press(enter, bar+"Base URL")
	press(up.URL+"/v1", up.URL+"/v1")
	press(enter, bar+"Wire format")
	press(enter, bar+"API key")
	press("sk-pty-key-123456"+enter, bar+"Model")
	press(ctrlU+"pty-model", "pty-model")
	press(enter, bar+"Enable long-term memory?")
	press(enter, bar+"Install the built-in skill bank?") // memory: yes
	press("n", bar+"Skills learned from sessions")       // no skill bank ("n" answers and moves on)
	press(enter, bar+"RL training of your model")        // review: auto
	press(enter, "Start MetaClaw now?")                  // RL: off
	if _, err := tty.Write([]byte("n")); err != nil {    // do not start
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("wizard exited with %v:\n%s", err, tail(scr.text(), 2000))
		}
	case <-time.After(testwait.Deadline):
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
