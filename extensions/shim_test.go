package extensions_test

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type shimRun struct {
	Service          string          `json:"service"`
	ToolNames        []string        `json:"toolNames"`
	Hooks            []string        `json:"hooks"`
	ToolsBeforeChild []string        `json:"toolsBeforeChild"`
	First            map[string]any  `json:"first"`
	FirstMs          int             `json:"firstMs"`
	Dup              map[string]any  `json:"dup"`
	Second           map[string]any  `json:"second"`
	ToolsAfterChild  []string        `json:"toolsAfterChild"`
	ToolsOtherAgent  []string        `json:"toolsOtherAgent"`
	ToolsDisabled    []string        `json:"toolsDisabled"`
	Warnings         []string        `json:"warnings"`
	ToolResult       json.RawMessage `json:"toolResult"`
	Debug            []string        `json:"debug"`
}

// runShim loads index.mjs in Node the way OpenClaw does (three register()
// calls, hooks on a discovery registration) with a fake child process.
func runShim(t *testing.T, mode string) (shimRun, []map[string]any) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	home := t.TempDir()
	child, _ := filepath.Abs(filepath.Join("testdata", "fake_child.mjs"))
	// The plugin folder: `wire` links bin/metaclaw into it; a folder copied
	// by hand (handcopy, nobinary) has no bin/, and the binary is elsewhere.
	root := home
	bin := filepath.Join(home, "bin", "metaclaw")
	env := append(os.Environ(), "TEST_HOME="+home, "FAKE_CHILD_MODE="+mode)
	if mode == "handcopy" || mode == "nobinary" {
		root = t.TempDir()
		bin = filepath.Join(home, "opt", "metaclaw")
		env = append(env, "HOME="+t.TempDir(), "PATH="+filepath.Dir(node), "METACLAW_BIN=")
	}
	if mode == "handcopy" { // install.sh recorded where it put the binary
		os.WriteFile(filepath.Join(home, "install.json"), []byte(`{"binary":`+strconvQuote(bin)+`}`), 0o644)
	}
	os.MkdirAll(filepath.Dir(bin), 0o755)
	os.WriteFile(bin, []byte("#!/bin/sh\nexec "+node+" "+child+" \"$@\"\n"), 0o755)
	shim, _ := filepath.Abs(filepath.Join("openclaw", "index.mjs"))
	harness, _ := filepath.Abs(filepath.Join("testdata", "shim_harness.mjs"))
	log := filepath.Join(home, "child.log")
	cmd := exec.Command(node, harness, "file://"+shim, child, mode)
	cmd.Env = append(env, "FAKE_CHILD_LOG="+log, "TEST_ROOT="+root)
	done := make(chan struct{})
	var out []byte
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("node harness did not exit: the shim keeps the process alive")
	}
	if err != nil {
		t.Fatalf("harness: %v\n%s", err, out)
	}
	var r shimRun
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("harness output %s", out)
	}
	var events []map[string]any
	if f, err := os.Open(log); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			json.Unmarshal(sc.Bytes(), &m)
			events = append(events, m)
		}
	}
	return r, events
}

func TestShimOneChildPerProcess(t *testing.T) {
	r, events := runShim(t, "ok")
	if r.Service != "metaclaw" || len(r.ToolNames) != 6 || strings.Join(r.Hooks, ",") != "agent_end,before_prompt_build,before_reset,gateway_stop,llm_input,llm_output,session_end,session_start" {
		t.Fatalf("registration %+v", r)
	}
	spawns, methods := 0, map[string]int{}
	for _, e := range events {
		if e["spawn"] != nil {
			spawns++
			if args, _ := json.Marshal(e["argv"]); string(args) != `["plugin","serve","--client","openclaw"]` {
				t.Fatalf("child argv %s", args)
			}
			continue
		}
		methods[e["method"].(string)]++
		if e["method"] == "openclaw.before_prompt_build" {
			p := e["params"].(map[string]any)
			ev, ctx := p["event"].(map[string]any), p["ctx"].(map[string]any)
			if ev["systemPrompt"] != nil || ev["tools"] != nil || ctx["config"] != nil {
				t.Fatalf("shim forwarded what the child never reads: %v", p)
			}
		}
	}
	if spawns != 1 {
		t.Fatalf("%d child processes for one OpenClaw process", spawns)
	}
	// The tool factory never spawns; before the child answered tools.list the
	// contract names are offered.
	if len(r.ToolsBeforeChild) != 6 {
		t.Fatalf("tools before the child %v", r.ToolsBeforeChild)
	}
	if r.First["appendSystemContext"] == nil || r.Second["appendSystemContext"] == nil || r.Dup != nil {
		t.Fatalf("before_prompt_build first %v dup %v second %v", r.First, r.Dup, r.Second)
	}
	if methods["openclaw.before_prompt_build"] != 2 || methods["initialize"] != 1 || methods["openclaw.agent_end"] != 1 {
		t.Fatalf("child saw %v", methods)
	}
	// The host's list, filtered to the contract, replaces the fallback.
	if strings.Join(r.ToolsAfterChild, ",") != "metaclaw_memory_search" || !strings.Contains(string(r.ToolResult), `"tea"`) {
		t.Fatalf("tools after the child %v, result %s", r.ToolsAfterChild, r.ToolResult)
	}
	// Only the agents MetaClaw serves get its tools; none while disabled.
	if len(r.ToolsOtherAgent) != 0 || len(r.ToolsDisabled) != 0 {
		t.Fatalf("tools for an agent not served %v, while disabled %v", r.ToolsOtherAgent, r.ToolsDisabled)
	}
	if len(r.Warnings) != 0 {
		t.Fatalf("warnings with conversation access and a binary: %v", r.Warnings)
	}
}

// TestShimSaysWhatIsMissing: without conversation access the shim tells
// (once per process, through OpenClaw's logger, which `openclaw plugins
// doctor` prints) the one command that grants it.
func TestShimSaysWhatIsMissing(t *testing.T) {
	r, _ := runShim(t, "noaccess")
	if len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "openclaw config set plugins.entries.metaclaw.hooks.allowConversationAccess true") {
		t.Fatalf("warnings %v", r.Warnings)
	}
}

// TestShimFindsTheBinary: a folder copied by hand (no bin/, metaclaw not on
// PATH) finds the binary install.sh recorded; with none anywhere, hooks
// answer nothing and the shim says once where it looked and what to do.
func TestShimFindsTheBinary(t *testing.T) {
	r, events := runShim(t, "handcopy")
	if r.First["appendSystemContext"] == nil || len(r.Warnings) != 0 || len(events) == 0 {
		t.Fatalf("hand-copied folder: first %v, warnings %v, %d child events", r.First, r.Warnings, len(events))
	}
	r, events = runShim(t, "nobinary")
	if r.First != nil || len(events) != 0 || len(r.Warnings) != 1 || !strings.Contains(r.Warnings[0], "no metaclaw binary found") ||
		!strings.Contains(r.Warnings[0], "metaclaw wire openclaw") {
		t.Fatalf("no binary: first %v, warnings %v, %d child events", r.First, r.Warnings, len(events))
	}
}

func strconvQuote(s string) string { b, _ := json.Marshal(s); return string(b) }

func TestShimFailsOpen(t *testing.T) {
	for _, mode := range []string{"silent", "crash"} {
		t.Run(mode, func(t *testing.T) {
			r, _ := runShim(t, mode)
			if r.First != nil || r.Second != nil {
				t.Fatalf("injected without an answer: %+v", r)
			}
			// silent: the 300 ms deadline ends the wait (the hook says so);
			// crash: the child's exit does, long before the 120 s deadline.
			if r.FirstMs > 60000 {
				t.Fatalf("hook waited %d ms", r.FirstMs)
			}
			if mode == "silent" && !strings.Contains(strings.Join(r.Debug, "\n"), "timed out after 300 ms") {
				t.Fatalf("silent child: the hook did not time out after timeoutMs: %q", r.Debug)
			}
		})
	}
}
