package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	if !st.Enabled || st.State != "idle_wait" || !strings.Contains(st.IdleSource, "proxy traffic") || st.Trainer != "none" || !strings.Contains(st.TrainerNote, "no trainer configured") {
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
// its PKCE verifier, and the token lands in a 0600 file; logout deletes it.
func TestCalendarLoginThroughTheBinary(t *testing.T) {
	var challenge, redirect string
	mux := http.NewServeMux()
	mux.HandleFunc("GET /auth", func(w http.ResponseWriter, r *http.Request) {
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
	google := httptest.NewServer(mux)
	defer google.Close()

	c := newCLI(t, "HOME="+t.TempDir())
	secrets := filepath.Join(c.home, "client_secret.json")
	os.WriteFile(secrets, []byte(fmt.Sprintf(`{"installed":{"client_id":"cid","client_secret":"csecret","auth_uri":%q,"token_uri":%q}}`, google.URL+"/auth", google.URL+"/token")), 0o600)
	if out, code := c.run("config", "set", "scheduler.calendar.credentials_path", secrets); code != 0 {
		t.Fatal(out)
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
	tokenPath := filepath.Join(c.home, "calendar_token.json")
	fi, err := os.Stat(tokenPath)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v %v", fi, err)
	}
	b, _ := os.ReadFile(tokenPath)
	if !strings.Contains(string(b), "rt-cli") || !strings.Contains(strings.Join(rest, "\n"), "logged in") {
		t.Fatalf("token %s; output %v", b, rest)
	}
	if out, code := c.run("scheduler", "calendar", "logout"); code != 0 || !strings.Contains(out, "logged out") {
		t.Fatalf("logout: %d %s", code, out)
	}
	if _, err := os.Stat(tokenPath); !os.IsNotExist(err) {
		t.Fatalf("token still there: %v", err)
	}
}
