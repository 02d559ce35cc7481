package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func events(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

func TestReport(t *testing.T) {
	passing := events(
		`{"Action":"run","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"=== RUN   TestA\n"}`,
		`{"Action":"output","Package":"p","Test":"TestA","Output":"--- PASS: TestA (0.00s)\n"}`,
		`{"Action":"pass","Package":"p","Test":"TestA"}`,
		`{"Action":"output","Package":"p","Output":"ok  \tp\t0.01s\n"}`,
		`{"Action":"pass","Package":"p"}`,
	)
	skipping := events(
		`{"Action":"run","Package":"q","Test":"TestNode"}`,
		`{"Action":"output","Package":"q","Test":"TestNode","Output":"=== RUN   TestNode\n"}`,
		`{"Action":"output","Package":"q","Test":"TestNode","Output":"    shim_test.go:33: node not installed\n"}`,
		`{"Action":"output","Package":"q","Test":"TestNode","Output":"--- SKIP: TestNode (0.00s)\n"}`,
		`{"Action":"skip","Package":"q","Test":"TestNode"}`,
		`{"Action":"output","Package":"q","Output":"ok  \tq\t0.01s\n"}`,
		`{"Action":"pass","Package":"q"}`,
	)
	failing := events(
		`{"Action":"run","Package":"r","Test":"TestB"}`,
		`{"Action":"output","Package":"r","Test":"TestB","Output":"    b_test.go:9: boom\n"}`,
		`{"Action":"output","Package":"r","Test":"TestB","Output":"--- FAIL: TestB (0.00s)\n"}`,
		`{"Action":"fail","Package":"r","Test":"TestB"}`,
		`{"Action":"output","Package":"r","Output":"FAIL\tr\t0.01s\n"}`,
		`{"Action":"fail","Package":"r"}`,
	)
	timedOut := events(
		`{"Action":"run","Package":"s","Test":"TestHang"}`,
		`{"Action":"output","Package":"s","Test":"TestHang","Output":"    still waiting\n"}`,
		`{"Action":"output","Package":"s","Output":"panic: test timed out after 1s\n"}`,
		`{"Action":"fail","Package":"s"}`,
	)
	buildFail := events(
		`{"ImportPath":"t","Action":"build-output","Output":"t/x.go:3:1: syntax error\n"}`,
		`{"ImportPath":"t","Action":"build-fail"}`,
		`{"Action":"output","Package":"t","Output":"FAIL\tt [build failed]\n"}`,
		`{"Action":"fail","Package":"t","FailedBuild":"t"}`,
	)
	tests := []struct {
		name, in, ci string
		code         int
		want, not    []string
	}{
		{"pass", passing, "", 0, []string{"ok  \tp", "skipped tests: none"}, []string{"=== RUN", "--- PASS"}},
		{"skip locally", skipping, "", 0, []string{"skipped tests: 1", "q TestNode: shim_test.go:33: node not installed"}, []string{"--- SKIP"}},
		{"skip on CI", skipping, "1", 1, []string{"CI=1: a skipped test fails the run"}, nil},
		{"CI=false is not CI", skipping, "false", 0, nil, []string{"fails the run"}},
		{"fail", failing, "", 1, []string{"b_test.go:9: boom", "--- FAIL: TestB", "FAIL\tr"}, nil},
		{"timeout shows the running test", timedOut, "", 1, []string{"still waiting", "panic: test timed out"}, nil},
		{"build failure", buildFail, "", 1, []string{"syntax error", "[build failed]"}, nil},
		{"not JSON is passed through", "go: downloading x v1.0.0\n" + passing, "", 0, []string{"go: downloading x"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			r := newReport(&out)
			if err := r.read(strings.NewReader(tt.in)); err != nil {
				t.Fatal(err)
			}
			if code := r.finish(nil, nil, tt.ci); code != tt.code {
				t.Errorf("exit %d, want %d\n%s", code, tt.code, out.String())
			}
			for _, w := range tt.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
			for _, n := range tt.not {
				if strings.Contains(out.String(), n) {
					t.Errorf("output has %q:\n%s", n, out.String())
				}
			}
		})
	}
}

// TestExitOfTheCommand: a command that fails without reporting a test
// failure (go test not found, a crash) still fails the run.
func TestExitOfTheCommand(t *testing.T) {
	var out bytes.Buffer
	r := newReport(&out)
	if code := r.finish(&exec.ExitError{}, nil, ""); code != 1 {
		t.Fatalf("exit %d", code)
	}
	if code := newReport(&out).finish(errors.New("exec: not found"), nil, ""); code != 1 || !strings.Contains(out.String(), "not found") {
		t.Fatalf("exit %d %s", code, out.String())
	}
}

// TestRealGoTest runs the real `go test -json` on a throwaway module with a
// passing, a skipped and (on request) a failing test.
func TestRealGoTest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go test on a temporary module")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go is needed to run the suite: %v", err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module tmp\n\ngo 1.21\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "x_test.go"), []byte(`package tmp
import ("os"; "testing")
func TestOK(t *testing.T) {}
func TestSkip(t *testing.T) { t.Skip("chromium not installed") }
func TestMaybeFail(t *testing.T) { if os.Getenv("FAIL_IT") != "" { t.Fatal("failed on purpose") } }
`), 0o644)
	run := func(env ...string) (string, int) {
		var out bytes.Buffer
		cmd := exec.Command(goBin, "test", "-json", "-count=1", ".")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), env...)
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		r := newReport(&out)
		readErr := r.read(stdout)
		code := r.finish(cmd.Wait(), readErr, "")
		return out.String(), code
	}
	out, code := run()
	if code != 0 || !strings.Contains(out, "ok  \ttmp") || !strings.Contains(out, "tmp TestSkip: x_test.go:4: chromium not installed") {
		t.Fatalf("exit %d\n%s", code, out)
	}
	out, code = run("FAIL_IT=1")
	if code != 1 || !strings.Contains(out, "failed on purpose") {
		t.Fatalf("exit %d\n%s", code, out)
	}
}
