// Command testsummary runs `go test -json …` and prints what a plain
// `go test` prints (a line per package, the output of failing tests), then
// a summary of every skipped test with its reason. It exits non-zero when
// the tests fail, and also when a test was skipped and the environment
// variable CI is set (CI=1): on CI a skip means a missing tool (Node,
// Chromium, dbus-daemon) that the CI script should have installed.
//
//	go run ./tools/testsummary -- go test -json -count=1 ./...
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: testsummary -- go test -json [flags] [packages]")
		os.Exit(2)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	r := newReport(os.Stdout)
	readErr := r.read(out)
	runErr := cmd.Wait()
	os.Exit(r.finish(runErr, readErr, os.Getenv("CI")))
}

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action      string
	Package     string
	Test        string
	Output      string
	ImportPath  string // build-output and build-fail events
	FailedBuild string
}

type testKey struct{ pkg, test string }

// skip is one skipped test and why.
type skip struct {
	pkg, test, reason string
}

type report struct {
	w       io.Writer
	pending map[testKey][]string // output of tests still running
	skips   []skip
	failed  bool
}

func newReport(w io.Writer) *report {
	return &report{w: w, pending: map[testKey][]string{}}
}

// read consumes the JSON stream; a line that is not JSON (a go command
// message) is printed as it is.
func (r *report) read(in io.Reader) error {
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.Action == "" {
			fmt.Fprintln(r.w, sc.Text())
			continue
		}
		r.handle(e)
	}
	return sc.Err()
}

func (r *report) handle(e event) {
	switch {
	case e.Action == "build-output":
		fmt.Fprint(r.w, e.Output)
	case e.Action == "build-fail":
		r.failed = true
	case e.Test == "":
		r.packageEvent(e)
	default:
		r.testEvent(e)
	}
}

// packageEvent prints the package's own lines ("ok …", "FAIL …", a panic
// outside any test) as go test does.
func (r *report) packageEvent(e event) {
	switch e.Action {
	case "output":
		fmt.Fprint(r.w, e.Output)
	case "fail":
		r.failed = true
		// A test still running when its package failed (a timeout, a
		// crash of the test binary): its output is the evidence.
		for k, lines := range r.pending {
			if k.pkg == e.Package {
				fmt.Fprint(r.w, strings.Join(lines, ""))
				delete(r.pending, k)
			}
		}
	case "pass", "skip":
		for k := range r.pending {
			if k.pkg == e.Package {
				delete(r.pending, k)
			}
		}
	}
}

func (r *report) testEvent(e event) {
	k := testKey{e.Package, e.Test}
	switch e.Action {
	case "output":
		r.pending[k] = append(r.pending[k], e.Output)
	case "fail":
		r.failed = true
		fmt.Fprint(r.w, strings.Join(r.pending[k], ""))
		delete(r.pending, k)
	case "skip":
		r.skips = append(r.skips, skip{pkg: e.Package, test: e.Test, reason: skipReason(r.pending[k])})
		delete(r.pending, k)
	case "pass":
		delete(r.pending, k)
	}
}

// skipReason is what the test said when it skipped: its log lines, without
// the framework's own "=== RUN" and "--- SKIP" lines.
func skipReason(lines []string) string {
	var said []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- SKIP") {
			continue
		}
		said = append(said, t)
	}
	if len(said) == 0 {
		return "(no reason given)"
	}
	return strings.Join(said, " | ")
}

// finish prints the skip summary and returns the exit code.
func (r *report) finish(runErr, readErr error, ci string) int {
	code := 0
	if r.failed || readErr != nil {
		code = 1
	}
	var exit *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exit) {
		fmt.Fprintln(r.w, "testsummary:", runErr)
		code = 1
	} else if runErr != nil {
		code = 1
	}
	if readErr != nil {
		fmt.Fprintln(r.w, "testsummary: reading go test output:", readErr)
	}
	if len(r.skips) == 0 {
		fmt.Fprintln(r.w, "skipped tests: none")
		return code
	}
	fmt.Fprintf(r.w, "skipped tests: %d\n", len(r.skips))
	for _, s := range r.skips {
		fmt.Fprintf(r.w, "  %s %s: %s\n", s.pkg, s.test, s.reason)
	}
	if ci != "" && ci != "0" && ci != "false" {
		fmt.Fprintf(r.w, "CI=%s: a skipped test fails the run; install what the tests above need (the CI script installs node, chromium and dbus-daemon)\n", ci)
		code = 1
	}
	return code
}
