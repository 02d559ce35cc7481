package subplugin

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLaunchFailuresAreClear: handshake mismatches, programs that are not
// plugins, and missing files fail the launch with an error that says what is
// wrong, and leave no process behind (TestMain checks).
func TestLaunchFailuresAreClear(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	notPlugin := script("not-a-plugin", "echo 'hello, I am a regular program'")
	exitsAtOnce := script("exits", "echo 'fatal: no config' >&2; exit 1")
	silent := script("silent", "exec sleep 60")
	cases := []struct {
		name  string
		spec  Spec
		o     func(*Options)
		wants []string
	}{
		{"protocol-version", helperSpec("wrong-version"), nil,
			[]string{"protocol version mismatch", "Plugin version: 99"}},
		{"other-kind", helperSpec("other-kind"), nil,
			[]string{"refused the handshake cookie", "METACLAW_PLUGIN=metaclaw-subplugin-embedder", "not a MetaClaw embedder plugin"}},
		{"no-embedder-service", helperSpec("no-service"), nil,
			[]string{"does not serve metaclaw.subplugin.embedder.v1.Embedder"}},
		{"no-automtls", helperSpec("no-mtls"), nil,
			[]string{"did not negotiate AutoMTLS"}},
		{"netrpc", helperSpec("netrpc"), nil,
			[]string{"speaks net/rpc"}},
		{"empty-name", helperSpec("empty-name"), nil,
			[]string{"empty name"}},
		{"not-a-plugin", Spec{Path: notPlugin}, nil,
			[]string{"not a go-plugin plugin", `first line on stdout was "hello, I am a regular program"`}},
		{"exits-at-once", Spec{Path: exitsAtOnce}, nil,
			[]string{"ended without printing go-plugin's handshake line", "fatal: no config"}},
		{"never-answers", Spec{Path: silent}, func(o *Options) { o.StartTimeout = 500 * time.Millisecond },
			[]string{"no handshake line on stdout within the start timeout"}},
		{"slow-start", helperSpec("slow-start"), func(o *Options) { o.StartTimeout = 500 * time.Millisecond },
			[]string{"start timeout"}},
		{"missing", Spec{Path: filepath.Join(dir, "nope")}, nil,
			[]string{"no such file"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			o := testOptions(t)
			if c.o != nil {
				c.o(&o)
			}
			h := newTestHost(t, o)
			start := time.Now()
			_, err := h.Embedder(context.Background(), c.spec)
			if err == nil {
				t.Fatal("launch succeeded")
			}
			if !errors.Is(err, ErrLaunch) {
				t.Errorf("not ErrLaunch: %v", err)
			}
			for _, w := range c.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\n lacks %q", err, w)
				}
			}
			if len(h.Status()) != 0 {
				t.Errorf("a failed launch is listed: %+v", h.Status())
			}
			t.Logf("%s (%s)", err, time.Since(start).Round(time.Millisecond))
		})
	}
}

func TestOpenEmbedderResolveErrors(t *testing.T) {
	dir := t.TempDir()
	nonExec := filepath.Join(dir, "metaclaw-embedder-noexec")
	if err := os.WriteFile(nonExec, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		use   string
		want  error
		wants []string
	}{
		{"missing", ErrNotFound, []string{`no embedder plugin "missing"`, "metaclaw-embedder-missing", "built-in embedders: hashing"}},
		{filepath.Join(dir, "absent-binary"), ErrNotFound, []string{"does not exist"}},
		{"noexec", ErrNotExecutable, []string{"chmod +x"}},
		{"Bad Name", nil, []string{"use only a-z"}},
	}
	for _, c := range cases {
		o := testOptions(t)
		o.Dir = dir
		_, _, err := OpenEmbedder(context.Background(), EmbedderSpec{Use: c.use, Options: o}, testLogger(t))
		if err == nil {
			t.Fatalf("%s: no error", c.use)
		}
		if c.want != nil && !errors.Is(err, c.want) {
			t.Errorf("%s: %v is not %v", c.use, err, c.want)
		}
		for _, w := range c.wants {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", c.use, err, w)
			}
		}
	}
	if n := len(AllStatus()); n != 0 {
		t.Errorf("failed opens left %d status rows", n)
	}
}

func TestLaunchHonoursContext(t *testing.T) {
	o := testOptions(t)
	o.StartTimeout = 2 * time.Second
	h := newTestHost(t, o)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := h.Embedder(ctx, helperSpec("slow-start"))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("err = %v after %s", err, time.Since(start))
	}
}
