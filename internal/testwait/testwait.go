// Package testwait waits in tests for something to happen, not for a fixed
// time: a condition is polled until it holds or a deadline generous enough
// for a loaded machine passes.
package testwait

import (
	"bufio"
	"io"
	"strings"
	"testing"
	"time"
)

// Deadline bounds every wait: long enough for a busy 2-core machine, short
// enough that a broken test fails instead of hanging the suite.
const Deadline = 60 * time.Second

// For polls cond every few milliseconds until it holds; the test fails,
// naming what, when it does not hold within Deadline.
func For(t testing.TB, what string, cond func() bool) {
	t.Helper()
	if !Until(Deadline, cond) {
		t.Fatalf("timed out after %s waiting for %s", Deadline, what)
	}
}

// Until polls cond until it holds (true) or d passes (false).
func Until(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait)
	}
}

// FirstLine reads the first line a just-started process writes to r (its
// address, its display number), trimmed; the test fails, naming what, when
// the line is empty or does not come within Deadline.
func FirstLine(t testing.TB, what string, r io.Reader) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(r).ReadString('\n')
		got <- strings.TrimSpace(line)
	}()
	select {
	case line := <-got:
		if line == "" {
			t.Fatalf("%s: nothing was printed", what)
		}
		return line
	case <-time.After(Deadline):
		t.Fatalf("timed out after %s waiting for %s", Deadline, what)
	}
	return ""
}
