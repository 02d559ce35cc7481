package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/godbus/dbus/v5"
	"github.com/zalando/go-keyring"

	"github.com/metaclaw-go/metaclaw/host/scheduler/calendar"
	"github.com/metaclaw-go/metaclaw/internal/browsertest"
	"github.com/metaclaw-go/metaclaw/internal/dbustest"
)

type schedJSON struct {
	Enabled     bool       `json:"enabled"`
	State       string     `json:"state"`
	Now         string     `json:"now"`
	Paused      bool       `json:"paused"`
	PausedUntil *time.Time `json:"paused_until"`
	IdleSource  string     `json:"idle_source"`
	Trainer     string     `json:"trainer"`
	TrainerNote string     `json:"trainer_note"`
	NextWindow  *struct {
		Start  time.Time `json:"start"`
		Reason string    `json:"reason"`
	} `json:"next_window"`
	Sources []struct {
		Name string `json:"name"`
	} `json:"sources"`
}

func (c *cli) sched(args ...string) schedJSON {
	c.t.Helper()
	out, code := c.run(append(append([]string{"scheduler"}, args...), "--json")...)
	var s schedJSON
	if code != 0 || json.Unmarshal([]byte(out), &s) != nil {
		c.t.Fatalf("scheduler %v: exit %d\n%s", args, code, out)
	}
	return s
}

// The scheduler commands work against the running host's API and, with no
// host, on the store; a pause survives a restart; status shows the
// scheduler, names the idle source and says honestly that nothing trains.
func TestSchedulerCommands(t *testing.T) {
	c := newCLI(t, "HOME="+t.TempDir())
	// Sleep hours far from now, so the state does not depend on the time of
	// day the suite runs at (the default 23:00-07:00 would open a window).
	now := time.Now().UTC()
	for k, v := range map[string]string{
		"scheduler.timezone":    "UTC",
		"scheduler.sleep_start": now.Add(6 * time.Hour).Format("15:04"),
		"scheduler.sleep_end":   now.Add(7 * time.Hour).Format("15:04"),
	} {
		if out, code := c.run("config", "set", k, v); code != 0 {
			t.Fatalf("config set %s: %s", k, out)
		}
	}
	if out, code := c.run("start", "--port", "0"); code != 0 {
		t.Fatalf("start: %s", out)
	}
	st := c.sched("status")
	if !st.Enabled || st.State != "idle_wait" || !strings.Contains(st.IdleSource, "proxy traffic") || st.Trainer != "none" || !strings.Contains(st.TrainerNote, "nothing trains in them") || !strings.Contains(st.TrainerNote, "TINKER_API_KEY") {
		t.Fatalf("status: %+v", st)
	}
	if len(st.Sources) != 2 || st.NextWindow == nil {
		t.Fatalf("sources/next: %+v", st)
	}
	out, _ := c.run("status")
	if !strings.Contains(out, "scheduler idle_wait") || !strings.Contains(out, "idle    proxy traffic") {
		t.Fatalf("metaclaw status does not show the scheduler:\n%s", out)
	}
	p := c.sched("pause", "--for", "1h")
	if !p.Paused || p.PausedUntil == nil || time.Until(*p.PausedUntil) < 59*time.Minute {
		t.Fatalf("pause: %+v", p)
	}
	if out, code := c.run("scheduler", "next-window"); code != 0 || !strings.Contains(out, "paused") {
		t.Fatalf("next-window: %d %s", code, out)
	}
	if out, code := c.run("stop"); code != 0 {
		t.Fatal(out)
	}
	// No host: the store answers, and still holds the pause.
	if off := c.sched("status"); !off.Paused || off.IdleSource != "none (the host is not running)" {
		t.Fatalf("offline: %+v", off)
	}
	if r := c.sched("resume"); r.Paused {
		t.Fatalf("offline resume: %+v", r)
	}
	c.sched("pause")
	if out, code := c.run("start", "--port", "0"); code != 0 {
		t.Fatalf("restart: %s", out)
	}
	if again := c.sched("status"); !again.Paused || !strings.Contains(again.Now, "paused by the user") {
		t.Fatalf("pause lost across a restart: %+v", again)
	}
	if r := c.sched("resume"); r.Paused {
		t.Fatalf("resume: %+v", r)
	}
	// skills_only: the scheduler is off and says why.
	c.run("stop")
	c.run("config", "set", "mode", "skills_only")
	if off := c.sched("status"); off.Enabled || off.State != "off" {
		t.Fatalf("skills_only: %+v", off)
	}
}

// `metaclaw scheduler calendar login` end to end: the real binary prints
// the consent URL, the "browser" (this test) opens it at a fake Google that
// redirects to the binary's loopback listener, the code is exchanged with
// its PKCE verifier, and the token lands in the OS keyring (a real
// gnome-keyring on a private bus) or a 0600 file; logout revokes the grant
// at Google and deletes the token, and says so when Google cannot be told.
func TestCalendarLoginThroughTheBinary(t *testing.T) {
	t.Run("file", func(t *testing.T) { calendarLoginCase(t, "file", "") })
	t.Run("keyring", func(t *testing.T) { calendarLoginCase(t, "auto", dbustest.SecretService(t)) })
}

func calendarLoginCase(t *testing.T, tokenStore, bus string) {
	var mu sync.Mutex // the fake's state is shared with the test through the child process
	var challenge, redirect string
	var revoked []string
	revokeStatus := 200
	mux := http.NewServeMux()
	mux.HandleFunc("GET /auth", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		q := r.URL.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("client_id") != "cid" {
			http.Error(w, "bad request", 400)
			return
		}
		challenge, redirect = q.Get("code_challenge"), q.Get("redirect_uri")
		u, _ := url.Parse(redirect)
		u.RawQuery = url.Values{"code": {"the-code"}, "state": {q.Get("state")}}.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	})
	mux.HandleFunc("POST /token", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		r.ParseForm()
		sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
		if r.Form.Get("code") != "the-code" || base64.RawURLEncoding.EncodeToString(sum[:]) != challenge || r.Form.Get("redirect_uri") != redirect || r.Form.Get("client_secret") != "csecret" {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":"invalid_grant"}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"access_token":"at-cli","refresh_token":"rt-cli","expires_in":3600,"token_type":"Bearer"}`)
	})
	mux.HandleFunc("POST /revoke", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		r.ParseForm()
		revoked = append(revoked, r.Form.Get("token"))
		w.WriteHeader(revokeStatus)
	})
	google := httptest.NewServer(mux)
	defer google.Close()

	env := []string{"HOME=" + t.TempDir()}
	if bus != "" {
		env = append(env, "DBUS_SESSION_BUS_ADDRESS="+bus)
	}
	c := newCLI(t, env...)
	secrets := filepath.Join(c.home, "client_secret.json")
	os.WriteFile(secrets, []byte(fmt.Sprintf(`{"installed":{"client_id":"cid","client_secret":"csecret","auth_uri":%q,"token_uri":%q}}`, google.URL+"/auth", google.URL+"/token")), 0o600)
	for _, kv := range [][2]string{{"scheduler.calendar.credentials_path", secrets}, {"scheduler.calendar.token_store", tokenStore}} {
		if out, code := c.run("config", "set", kv[0], kv[1]); code != 0 {
			t.Fatal(out)
		}
	}
	cmd := exec.Command(binary(t), "scheduler", "calendar", "login", "--no-browser")
	cmd.Env = c.env
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(stdout)
	var consent string
	var rest []string
	for lines.Scan() {
		if strings.HasPrefix(lines.Text(), google.URL+"/auth?") {
			consent = lines.Text()
			break
		}
	}
	if consent == "" {
		t.Fatal("no consent URL printed")
	}
	resp, err := http.Get(consent) // the browser, following the redirect home
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "You can close this window") {
		t.Fatalf("loopback page: %s", page)
	}
	for lines.Scan() {
		rest = append(rest, lines.Text())
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("login: %v\n%s", err, strings.Join(rest, "\n"))
	}
	printed := strings.Join(rest, "\n")
	tokenPath := filepath.Join(c.home, "calendar_token.json")
	if bus == "" {
		fi, err := os.Stat(tokenPath)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("token file: %v %v", fi, err)
		}
		b, _ := os.ReadFile(tokenPath)
		if !strings.Contains(string(b), "rt-cli") || !strings.Contains(printed, "logged in: token saved in "+tokenPath+" (mode 0600)") {
			t.Fatalf("token %s; output %s", b, printed)
		}
		// Google cannot be told: logged out here all the same, and the
		// command fails saying how to revoke by hand.
		mu.Lock()
		revokeStatus = 503
		mu.Unlock()
		out, code := c.run("scheduler", "calendar", "logout")
		if code == 0 || !strings.Contains(out, "not revoked at Google") || !strings.Contains(out, "myaccount.google.com/permissions") || strings.Contains(out, "rt-cli") {
			t.Fatalf("logout with Google down: %d %s", code, out)
		}
	} else {
		if _, err := os.Stat(tokenPath); !os.IsNotExist(err) {
			t.Fatalf("a token file was written beside the keyring: %v", err)
		}
		if !strings.Contains(printed, "logged in: token saved in the OS keyring (Secret Service") {
			t.Fatalf("output %s", printed)
		}
		t.Setenv("DBUS_SESSION_BUS_ADDRESS", bus)
		if v, err := keyring.Get(calendar.KeyringService, tokenPath); err != nil || !strings.Contains(v, "rt-cli") {
			t.Fatalf("keyring item: %q %v", v, err)
		}
		out, code := c.run("scheduler", "calendar", "logout")
		if code != 0 || !strings.Contains(out, "logged out: Google revoked the grant") {
			t.Fatalf("logout: %d %s", code, out)
		}
		if _, err := keyring.Get(calendar.KeyringService, tokenPath); !errors.Is(err, keyring.ErrNotFound) {
			t.Fatalf("keyring item kept: %v", err)
		}
		if c, err := dbus.SessionBus(); err == nil {
			c.Close() // the bus goes with this test
		}
	}
	mu.Lock()
	got := append([]string(nil), revoked...)
	mu.Unlock()
	if len(got) != 1 || got[0] != "rt-cli" {
		t.Fatalf("revoked %v, want the refresh token", got)
	}
	if _, err := os.Stat(tokenPath); !os.IsNotExist(err) {
		t.Fatalf("token still there: %v", err)
	}
	if out, code := c.run("scheduler", "calendar", "logout"); code != 0 || !strings.Contains(out, "not logged in") {
		t.Fatalf("second logout: %d %s", code, out)
	}
}

// The dashboard's Activity tab shows the running host's scheduler as a
// user sees it in a browser: state and why, the next window, the user's
// pause, the idle source and the trainer; a resume shows on reload.
func TestSchedulerPanelInTheDashboard(t *testing.T) {
	c := newCLI(t, "HOME="+t.TempDir())
	now := time.Now().UTC()
	for k, v := range map[string]string{
		"scheduler.timezone":    "UTC",
		"scheduler.sleep_start": now.Add(6 * time.Hour).Format("15:04"),
		"scheduler.sleep_end":   now.Add(7 * time.Hour).Format("15:04"),
	} {
		if out, code := c.run("config", "set", k, v); code != 0 {
			t.Fatalf("config set %s: %s", k, out)
		}
	}
	if out, code := c.run("start", "--port", "0"); code != 0 {
		t.Fatalf("start: %s", out)
	}
	c.sched("pause", "--for", "1h")
	ui := "http://" + c.status().Listen + "/ui/#activity"
	ctx := browsertest.Browser(t)
	panel := func() string {
		t.Helper()
		text, err := chromedp.Run(ctx, chromedp.Text("#scheduler tbody"))
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	err := chromedp.Do(ctx,
		chromedp.Navigate(ui),
		chromedp.WaitVisible("#login-key"),
		chromedp.SendKeys("#login-key", c.proxyKey()),
		chromedp.Click("#login-form button"),
		chromedp.WaitNotVisible("#login"),
		chromedp.WaitVisible(`#scheduler tbody tr:nth-child(3)`),
	)
	if err != nil {
		t.Fatal(err)
	}
	text := panel()
	for _, want := range []string{"idle_wait since", "paused by the user", "next window", "idle threshold, if the user stays away (when the pause ends)", "paused", "until ", "idle source", "proxy traffic", "trainer", "none: no trainer: windows are computed", "last step", "none yet"} {
		if !strings.Contains(text, want) {
			t.Errorf("scheduler panel lacks %q:\n%s", want, text)
		}
	}
	browsertest.Screenshot(t, ctx, "dashboard-scheduler.png")

	c.sched("resume")
	if err := chromedp.Do(ctx, chromedp.Reload(), chromedp.WaitVisible(`#scheduler tbody tr:nth-child(3)`)); err != nil {
		t.Fatal(err)
	}
	if text := panel(); strings.Contains(text, "paused") || !strings.Contains(text, "idle_wait since") {
		t.Fatalf("after resume:\n%s", text)
	}
}
