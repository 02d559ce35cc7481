package main

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/internal/fakellm"
)

// TestMain lets the test binary be -processes' child, as proxybench is.
func TestMain(m *testing.M) {
	if childMain() {
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// systemPrompt is the system message of a request the upstream received.
func systemPrompt(t *testing.T, r fakellm.Request) string {
	t.Helper()
	msgs, _ := r.Body["messages"].([]any)
	if len(msgs) == 0 {
		t.Fatalf("request without messages: %s", r.Raw)
	}
	m, _ := msgs[0].(map[string]any)
	s, _ := m["content"].(string)
	return s
}

// TestChildrenServeAndReport starts both children as -processes does (this
// test binary re-executed), sends loaded turns through each, and reads
// their figures: the bare child relays the request as sent, the MetaClaw
// child with its memory and skills block, each counts its own CPU and
// allocation, the MetaClaw child runs at the GOMAXPROCS its spec sets and
// writes the CPU profile and trace it was asked for, and both exit when
// their stdin closes.
func TestChildrenServeAndReport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes and seeds a library")
	}
	up := fakellm.New()
	defer up.Close()
	bare, err := startChild(childSpec{Kind: "bare", Upstream: up.URL}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	profile, traced := filepath.Join(dir, "cpu.prof"), filepath.Join(dir, "run.trace")
	mc, err := startChild(childSpec{Kind: "metaclaw", Upstream: up.URL, Memories: 300, Skills: 20,
		GCPercent: config.Default("").Runtime.GCPercent, BackgroundNice: core.DefaultBackgroundNice, Procs: 3,
		CPUProfile: profile, Trace: traced}, 3*time.Minute)
	if err != nil {
		bare.stop()
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	sent := loadedBodies(1, 7, "")[0]
	sentSystem := sent[strings.Index(sent, `"content":"`)+len(`"content":"`):]
	sentSystem = sentSystem[:strings.Index(sentSystem, `"`)]
	for _, c := range []struct {
		name   string
		proc   *child
		inject bool
	}{{"bare", bare, false}, {"metaclaw", mc, true}} {
		if c.inject {
			if _, err := c.proc.ask("profile", 10*time.Second); err != nil {
				t.Fatal(err)
			}
		}
		cpu0, alloc0, err := c.proc.stats()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if r, _ := runLoaded(client, "http://"+c.proc.addr+"/v1/chat/completions", loadedBodies(5, 7, ""), 7, nil); r.p50 <= 0 {
			t.Errorf("%s: no latency measured: %+v", c.name, r)
		}
		cpu1, alloc1, err := c.proc.stats()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if cpu1 < cpu0 || alloc1 <= alloc0 {
			t.Errorf("%s: CPU %v → %v, allocated %d → %d over 5 requests", c.name, cpu0, cpu1, alloc0, alloc1)
		}
		if c.inject {
			if _, err := c.proc.ask("endprofile", 10*time.Second); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{profile, traced} {
				if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
					t.Errorf("%s after endprofile: %v %v", f, fi, err)
				}
			}
			// Each request is a region from the handler's side.
			var report strings.Builder
			if err := traceReport(&report, traced, 3); err != nil || !strings.Contains(report.String(), "trace report: 5 requests") {
				t.Errorf("trace report of the child's trace: %v\n%.300s", err, report.String())
			}
		}
		got := systemPrompt(t, up.Last())
		if injected := got != sentSystem; injected != c.inject || !strings.HasPrefix(got, sentSystem) {
			t.Errorf("%s: upstream got a system prompt of %d bytes for one of %d (want a block appended: %v)", c.name, len(got), len(sentSystem), c.inject)
		}
	}
	if v, err := mc.ask("procs", 10*time.Second); err != nil || v[0] != 3 || v[1] < 1 {
		t.Errorf("procs (GOMAXPROCS, CPUs): %v %v, want GOMAXPROCS 3 as the spec says", v, err)
	}
	if v, err := mc.ask("catchup", time.Minute); err != nil || v[1] < 0 {
		t.Errorf("catchup: %v %v", v, err)
	}
	if _, err := bare.ask("reboot", 10*time.Second); err == nil || !strings.Contains(err.Error(), `unknown command \"reboot\"`) {
		t.Errorf("an unknown command: %v", err)
	}
	for _, c := range []*child{bare, mc} {
		if err := c.stop(); err != nil {
			t.Errorf("child %d: %v", c.cmd.Process.Pid, err)
		}
	}
}

func TestRunChildRefusesAnUnknownKind(t *testing.T) {
	err := runChild(childSpec{Kind: "haproxy", Upstream: "http://127.0.0.1:1"}, strings.NewReader(""), &strings.Builder{})
	if err == nil || !strings.Contains(err.Error(), `"haproxy"`) {
		t.Errorf("got %v", err)
	}
}
