package main

import (
	"bytes"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/internal/fakellm"
	"github.com/metaclaw-go/metaclaw/plugin/plugintest"
)

// fixtures are real client configs in the repository (testdata/SOURCES.md).
var fixtures = filepath.Join("..", "..", "testdata")

// wireWorld is a temp HOME and METACLAW_HOME with fake client binaries on
// PATH that append their argv to calls.log.
type wireWorld struct {
	t      *testing.T
	home   string
	mc     string
	calls  string
	binDir string
	bin    string // what METACLAW_BIN names: a fake metaclaw executable
}

func newWireWorld(t *testing.T, fakes ...string) *wireWorld {
	t.Helper()
	root := t.TempDir()
	w := &wireWorld{t: t, home: filepath.Join(root, "home"), mc: filepath.Join(root, "mc"), calls: filepath.Join(root, "calls.log"), binDir: filepath.Join(root, "fakebin")}
	for _, d := range []string{w.home, w.binDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range fakes {
		script := "#!/bin/sh\necho \"" + f + " $*\" >> " + w.calls + "\n"
		if err := os.WriteFile(filepath.Join(w.binDir, f), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", w.home)
	t.Setenv("METACLAW_HOME", w.mc)
	t.Setenv("PATH", w.binDir+":/usr/bin:/bin")
	w.bin = filepath.Join(root, "opt", "metaclaw", "bin", "metaclaw")
	os.MkdirAll(filepath.Dir(w.bin), 0o755)
	if err := os.WriteFile(w.bin, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("METACLAW_BIN", w.bin)
	for _, k := range []string{"OPENCLAW_STATE_DIR", "OPENCLAW_CONFIG_PATH", "PICOCLAW_HOME", "PICOCLAW_CONFIG", "HERMES_HOME",
		"METACLAW_PROXY_PORT", "METACLAW_PROXY_HOST", "METACLAW_PROXY_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"} {
		t.Setenv(k, "")
	}
	return w
}

func (w *wireWorld) copy(src, dst string) string {
	w.t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, src))
	if err != nil {
		w.t.Fatalf("fixture missing from the repository: %v", err)
	}
	p := filepath.Join(w.home, dst)
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		w.t.Fatal(err)
	}
	return p
}

// run executes the CLI in-process.
func (w *wireWorld) run(stdin string, args ...string) (string, error) {
	w.t.Helper()
	root := newRoot()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

func (w *wireWorld) callLog() string {
	b, _ := os.ReadFile(w.calls)
	return string(b)
}

func TestCLIWireOpenClawConfirmDoctorUnwire(t *testing.T) {
	w := newWireWorld(t, "openclaw")
	cfg := w.copy("openclaw-2026.9.6/config/openclaw.after-config-set.json", ".openclaw/openclaw.json")
	orig, _ := os.ReadFile(cfg)

	out, err := w.run("", "wire", "openclaw", "--agent", "main", "--via", "both", "--dry-run")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"--- " + cfg, `+      "metaclaw-main": {`, "will run: openclaw gateway restart", "dry run: nothing was changed"} {
		if !strings.Contains(out, want) {
			t.Fatalf("dry run output lacks %q:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(cfg); !bytes.Equal(b, orig) {
		t.Fatal("dry run changed the file")
	}

	out, err = w.run("n\n", "wire", "openclaw", "--via", "both")
	if err == nil || !strings.Contains(err.Error(), "not applied") {
		t.Fatalf("declined: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(cfg); !bytes.Equal(b, orig) {
		t.Fatal("declined wire changed the file")
	}

	out, err = w.run("y\n", "wire", "openclaw", "--via", "both")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(w.callLog(), "openclaw gateway restart") {
		t.Fatalf("restart not run through the fake openclaw: %q\n%s", w.callLog(), out)
	}
	// The client got the proxy key generated for this install (0600 secrets.yaml), not a placeholder.
	secPath := filepath.Join(w.mc, "secrets.yaml")
	sec, err := os.ReadFile(secPath)
	key := regexp.MustCompile(`mck-[A-Za-z0-9_-]{43}`).FindString(string(sec))
	if fi, serr := os.Stat(secPath); err != nil || serr != nil || fi.Mode().Perm() != 0o600 || key == "" {
		t.Fatalf("generated key: %v %v %q", err, serr, sec)
	}
	if b, _ := os.ReadFile(cfg); !strings.Contains(string(b), `"apiKey": "`+key+`"`) || strings.Contains(string(b), "metaclaw-local") || strings.Contains(out, key) {
		t.Fatalf("wired config does not carry the proxy key (or the output shows it):\n%s\n%s", b, out)
	}
	if l, err := os.Readlink(filepath.Join(w.home, ".openclaw/extensions/metaclaw/bin/metaclaw")); err != nil || l != w.bin {
		t.Fatalf("bin link %q %v", l, err)
	}

	// doctor: the proxy is down → FAIL with the fix, exit code 1
	out, err = w.run("", "doctor", "openclaw")
	var ec exitCode
	if !errors.As(err, &ec) || ec != 1 || !strings.Contains(out, "proxy does not answer") || !strings.Contains(out, "fix: metaclaw start") {
		t.Fatalf("doctor with the proxy down: %v\n%s", err, out)
	}
	// … and no host: the probe turn says so, with the fix
	if !strings.Contains(out, "probe turn for agent main: host not running: no socket at "+filepath.Join(w.mc, "run", "metaclaw.sock")) {
		t.Fatalf("doctor without a host: %v\n%s", err, out)
	}
	// a stale socket (a host that died without removing it) is refused
	stale := filepath.Join(w.mc, "run", "metaclaw.sock")
	os.MkdirAll(filepath.Dir(stale), 0o700)
	ln, lerr := net.ListenUnix("unix", &net.UnixAddr{Name: stale, Net: "unix"})
	if lerr != nil {
		t.Fatal(lerr)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	out, err = w.run("", "doctor", "openclaw")
	if !errors.As(err, &ec) || !strings.Contains(out, "probe turn for agent main: socket refused: ") || !strings.Contains(out, "fix: metaclaw start (it replaces the stale socket)") {
		t.Fatalf("doctor with a stale socket: %v\n%s", err, out)
	}
	host := plugintest.Start(t, w.mc) // replaces the stale socket, like the daemon
	// a live /healthz on the configured port → all checks pass
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			rw.Write([]byte(`{"ok":true}`))
			return
		}
		http.NotFound(rw, r)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	out, err = w.run("", "config", "set", "proxy.port", u.Port())
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err = w.run("", "doctor", "openclaw")
	if !errors.As(err, &ec) || !strings.Contains(out, "points at port 30000, but the proxy is configured on port "+u.Port()) {
		t.Fatalf("doctor after a port change: %v\n%s", err, out)
	}
	out, err = w.run("", "wire", "openclaw", "--via", "both", "--yes")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// doctor's own checks: the config, the host on the configured port, and
	// an upstream that answers the probe
	up := fakellm.New()
	defer up.Close()
	if out, err := w.run("", "config", "set", "llm.api_base", up.URL+"/v1"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err = w.run("", "doctor")
	if err != nil || strings.Contains(out, "FAIL") || !strings.Contains(out, "allowConversationAccess") {
		t.Fatalf("doctor: %v\n%s", err, out)
	}
	for _, want := range []string{"[ok ] config " + filepath.Join(w.mc, "config.yaml") + " loads", "[ok ] a host answers at http://127.0.0.1:" + u.Port(),
		"[ok ] upstream openai " + up.URL + "/v1 (from config); no API key: answers"} {
		if !strings.Contains(out, want) {
			t.Fatalf("doctor lacks %q:\n%s", want, out)
		}
	}
	// the probe went through the core (its context providers) for the wired
	// agent, and recorded nothing
	if !strings.Contains(out, "[ok ] probe turn for agent main reaches the core (host test, pid ") {
		t.Fatalf("doctor probe: %v\n%s", err, out)
	}
	if q := host.Provider.Last(); q.Agent != "main" || len(q.UserTexts) != 1 || q.UserTexts[0] != probeText || q.SessionID != "" {
		t.Fatalf("probe query %+v", q)
	}
	if turns := host.Turns(t, ""); len(turns) != 0 {
		t.Fatalf("the probe recorded turns: %+v", turns)
	}

	// unwire restores byte for byte
	out, err = w.run("", "unwire", "openclaw")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if b, _ := os.ReadFile(cfg); !bytes.Equal(b, orig) {
		t.Fatal("unwire is not byte-identical")
	}
	if _, err := os.Stat(filepath.Join(w.home, ".openclaw/extensions")); !os.IsNotExist(err) {
		t.Fatalf("extension dir left behind: %v", err)
	}
	if n := strings.Count(w.callLog(), "openclaw gateway restart"); n != 3 {
		t.Fatalf("restarts: %d\n%s", n, w.callLog())
	}
}

func TestCLIUnwireRefusesUserEdit(t *testing.T) {
	w := newWireWorld(t)
	cfg := w.copy("clients/picoclaw/v3/config.example.json", ".picoclaw/config.json")
	if out, err := w.run("", "wire", "picoclaw", "--yes"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	b, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, bytes.Replace(b, []byte(`"temperature": 0.7`), []byte(`"temperature": 0.2`), 1), 0o644)
	out, err := w.run("", "unwire", "picoclaw")
	if err == nil || !strings.Contains(err.Error(), "changed after metaclaw wired them") || !strings.Contains(err.Error(), "unwire picoclaw --force") {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err = w.run("", "unwire", "picoclaw", "--force")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	orig, _ := os.ReadFile(filepath.Join(fixtures, "clients/picoclaw/v3/config.example.json"))
	if b, _ := os.ReadFile(cfg); !bytes.Equal(b, orig) {
		t.Fatal("not restored")
	}
	saved, _ := filepath.Glob(filepath.Join(w.mc, "backups", "picoclaw", "*", "replaced", "*", "*config.json"))
	if len(saved) != 1 {
		t.Fatalf("the edited version was not saved: %v", saved)
	}
	if b, _ := os.ReadFile(saved[0]); !bytes.Contains(b, []byte(`"temperature": 0.2`)) {
		t.Fatal("saved copy is not the edited file")
	}
}

func TestCLIUnknownClientAndList(t *testing.T) {
	w := newWireWorld(t)
	w.copy("clients/zeroclaw/v3/config.template.toml", ".zeroclaw/config.toml")
	if _, err := w.run("", "wire", "clawdbot"); err == nil || !strings.Contains(err.Error(), "unknown client") {
		t.Fatalf("%v", err)
	}
	out, err := w.run("", "wire")
	if err != nil || !strings.Contains(out, "zeroclaw  schema_version 3") {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, err := w.run("", "unwire", "zeroclaw"); err == nil || !strings.Contains(err.Error(), "not wired") {
		t.Fatalf("%v", err)
	}
}

func TestCLIUninstall(t *testing.T) {
	w := newWireWorld(t, "zeroclaw", "hermes")
	zc := w.copy("clients/zeroclaw/v3/config.template.toml", ".zeroclaw/config.toml")
	hm := w.copy("clients/hermes/2026-07/custom-providers-together.config.yaml", ".hermes/config.yaml")
	zOrig, _ := os.ReadFile(zc)
	hOrig, _ := os.ReadFile(hm)
	for _, c := range [][]string{{"wire", "zeroclaw", "--yes", "--via", "both"}, {"wire", "hermes", "--yes", "--via", "both"}} {
		if out, err := w.run("", c...); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
	}
	bin := filepath.Join(w.home, ".local", "bin", "metaclaw")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)
	os.WriteFile(filepath.Join(w.mc, "install.json"), []byte(`{"binary": "`+bin+`"}`), 0o600)

	out, err := w.run("n\n", "uninstall")
	if err == nil || !strings.Contains(out, "unwire hermes") || !strings.Contains(out, "unwire zeroclaw") {
		t.Fatalf("%v\n%s", err, out)
	}
	out, err = w.run("", "uninstall", "--yes", "--purge")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if b, _ := os.ReadFile(zc); !bytes.Equal(b, zOrig) {
		t.Fatal("zeroclaw not restored")
	}
	if b, _ := os.ReadFile(hm); !bytes.Equal(b, hOrig) {
		t.Fatal("hermes not restored")
	}
	if _, err := os.Stat(filepath.Join(w.home, ".hermes", "shell-hooks-allowlist.json")); !os.IsNotExist(err) {
		t.Fatal("hermes allowlist left behind")
	}
	if _, err := os.Stat(bin); !os.IsNotExist(err) {
		t.Fatal("binary left behind")
	}
	if _, err := os.Stat(w.mc); !os.IsNotExist(err) {
		t.Fatal("METACLAW_HOME not purged")
	}
}

// TestCLIWireOpenClawDefaultIsThePlugin: without --via, `wire openclaw`
// installs the extension (no proxy provider, no allowlist); `unwire --yes`
// restores; `disable`/`enable` flip the pass-through switch that status
// and doctor report.
func TestCLIWireOpenClawDefaultIsThePlugin(t *testing.T) {
	w := newWireWorld(t, "openclaw")
	cfg := w.copy("openclaw-2026.9.6/config/onboarded.json", ".openclaw/openclaw.json")
	orig, _ := os.ReadFile(cfg)
	out, err := w.run("", "wire", "openclaw", "--yes")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	wired, _ := os.ReadFile(cfg)
	if !strings.Contains(out, "via hooks") || strings.Contains(string(wired), "metaclaw-main") || strings.Contains(string(wired), `"allow"`) ||
		!strings.Contains(string(wired), `"allowConversationAccess": true`) {
		t.Fatalf("default wiring:\n%s\n%s", out, wired)
	}
	if _, err := os.Stat(filepath.Join(w.home, ".openclaw/extensions/metaclaw/index.mjs")); err != nil {
		t.Fatal(err)
	}
	// After `metaclaw stop` the user is told that the plugin starts the host
	// again, and how to keep MetaClaw off; not once it is disabled.
	var note bytes.Buffer
	restartNote(&note, w.mc)
	if !strings.Contains(note.String(), "the openclaw plugin starts the host again on its next turn; to keep MetaClaw off, run `metaclaw disable`") {
		t.Fatalf("stop's note: %q", note.String())
	}
	out, err = w.run("", "disable")
	if err != nil || !strings.Contains(out, "metaclaw disabled") {
		t.Fatalf("%v\n%s", err, out)
	}
	note.Reset()
	if restartNote(&note, w.mc); note.Len() != 0 {
		t.Fatalf("stop's note while disabled: %q", note.String())
	}
	out, _ = w.run("", "status")
	if !strings.Contains(out, "metaclaw is DISABLED since") {
		t.Fatalf("status does not say disabled:\n%s", out)
	}
	out, _ = w.run("", "doctor", "openclaw")
	if !strings.Contains(out, "metaclaw is DISABLED since") {
		t.Fatalf("doctor does not say disabled:\n%s", out)
	}
	out, err = w.run("", "enable")
	if err != nil || !strings.Contains(out, "metaclaw enabled") {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(w.mc, "disabled")); !os.IsNotExist(err) {
		t.Fatal("enable left the switch")
	}
	out, err = w.run("", "unwire", "openclaw", "--yes")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if b, _ := os.ReadFile(cfg); !bytes.Equal(b, orig) {
		t.Fatal("unwire is not byte-identical")
	}
}
