package calendar

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	_ "time/tzdata"

	"github.com/rs/zerolog"
	"golang.org/x/oauth2"

	"github.com/metaclaw-go/metaclaw/host/scheduler"
	"github.com/metaclaw-go/metaclaw/host/store"
)

// browse plays the user's browser: it opens the consent page and follows
// the redirect back to the loopback listener.
func browse(t *testing.T) func(string) error {
	return func(u string) error {
		go func() {
			resp, err := http.Get(u)
			if err != nil {
				t.Errorf("browser: %v", err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}()
		return nil
	}
}

func login(t *testing.T, g *fakeGoogle) (*oauth2.Config, *TokenFile) {
	t.Helper()
	conf, err := LoadClient(g.clientFile(t))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	tok, err := Login(context.Background(), LoginOptions{Client: conf, Open: browse(t), Out: &out, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatalf("login: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), g.srv.URL+"/o/oauth2/auth?") {
		t.Fatalf("the consent URL was not printed: %s", out.String())
	}
	tf := &TokenFile{Path: filepath.Join(t.TempDir(), "calendar_token.json")}
	if err := tf.Save(tok); err != nil {
		t.Fatal(err)
	}
	return conf, tf
}

func TestLoginWithPKCEAgainstAFakeGoogle(t *testing.T) {
	g := newFakeGoogle(t)
	_, tf := login(t, g)
	fi, err := os.Stat(tf.Path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v %v", fi.Mode(), err)
	}
	tok, err := tf.Load()
	if err != nil || !strings.HasPrefix(tok.AccessToken, "at-") || !strings.HasPrefix(tok.RefreshToken, "rt-") {
		t.Fatalf("token %+v %v", tok, err)
	}
}

func TestLoginRejectsAForgedRedirect(t *testing.T) {
	g := newFakeGoogle(t)
	conf, _ := LoadClient(g.clientFile(t))
	opener := func(u string) error {
		pu, err := neturl.Parse(u)
		if err != nil {
			return err
		}
		go func() {
			// An attacker's page sends the browser to the listener with its own code.
			resp, err := http.Get(pu.Query().Get("redirect_uri") + "?code=stolen&state=guess")
			if err == nil {
				resp.Body.Close()
			}
		}()
		return nil
	}
	_, err := Login(context.Background(), LoginOptions{Client: conf, Open: opener, Timeout: 10 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "wrong state") {
		t.Fatalf("forged redirect accepted: %v", err)
	}
}

func newGoogle(g *fakeGoogle, conf *oauth2.Config, tf TokenStore) *Google {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	return &Google{APIBase: g.srv.URL + "/calendar/v3", Client: conf, Token: tf, Location: berlin}
}

func TestEventsHonourTransparencyAndDeclines(t *testing.T) {
	g := newFakeGoogle(t)
	conf, tf := login(t, g)
	g.set(func() {
		g.events = []map[string]any{
			{"summary": "Standup", "status": "confirmed", "start": map[string]any{"dateTime": "2026-05-04T09:00:00+02:00"}, "end": map[string]any{"dateTime": "2026-05-04T09:30:00+02:00"}},
			{"summary": "Focus (free)", "transparency": "transparent", "start": map[string]any{"dateTime": "2026-05-04T10:00:00+02:00"}, "end": map[string]any{"dateTime": "2026-05-04T12:00:00+02:00"}},
			{"summary": "Declined sync", "attendees": []map[string]any{{"email": "me@example.com", "self": true, "responseStatus": "declined"}, {"email": "boss@example.com", "responseStatus": "accepted"}},
				"start": map[string]any{"dateTime": "2026-05-04T13:00:00+02:00"}, "end": map[string]any{"dateTime": "2026-05-04T14:00:00+02:00"}},
			{"summary": "Accepted review", "attendees": []map[string]any{{"self": true, "responseStatus": "accepted"}},
				"start": map[string]any{"dateTime": "2026-05-04T15:00:00+02:00"}, "end": map[string]any{"dateTime": "2026-05-04T16:00:00+02:00"}},
			{"summary": "Cancelled", "status": "cancelled", "start": map[string]any{"dateTime": "2026-05-04T17:00:00+02:00"}, "end": map[string]any{"dateTime": "2026-05-04T18:00:00+02:00"}},
			// All-day: midnight in the calendar's zone, not UTC.
			{"summary": "Offsite", "start": map[string]any{"date": "2026-05-05"}, "end": map[string]any{"date": "2026-05-06"}},
			{"summary": "Working from home", "eventType": "workingLocation", "start": map[string]any{"date": "2026-05-04"}, "end": map[string]any{"date": "2026-05-05"}},
		}
	})
	busy, err := newGoogle(g, conf, tf).Fetch(context.Background(), time.Date(2026, 5, 4, 0, 0, 0, 0, time.UTC), time.Date(2026, 5, 6, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range busy {
		got = append(got, b.Summary+" "+b.Start.UTC().Format("01-02T15:04")+"–"+b.End.UTC().Format("01-02T15:04"))
	}
	want := []string{"Standup 05-04T07:00–05-04T07:30", "Accepted review 05-04T13:00–05-04T14:00", "Offsite 05-04T22:00–05-05T22:00"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("busy\n got %v\nwant %v", got, want)
	}
}

// expireAndFetch expires the access token in tf and fetches once through
// store, so the fetcher refreshes it; it returns the token from before.
func expireAndFetch(t *testing.T, g *fakeGoogle, conf *oauth2.Config, tf *TokenFile, store TokenStore) (*oauth2.Token, *Google) {
	t.Helper()
	tok, err := tf.Load()
	if err != nil {
		t.Fatal(err)
	}
	expired := *tok
	expired.Expiry = time.Now().Add(-time.Hour)
	tf.Save(&expired)
	gc := newGoogle(g, conf, store)
	if _, err := gc.Fetch(context.Background(), time.Now(), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	return tok, gc
}

func TestTokenRefreshAnd401(t *testing.T) {
	g := newFakeGoogle(t)
	conf, tf := login(t, g)
	// The access token has expired: the fetcher refreshes and saves the new one.
	tok, gc := expireAndFetch(t, g, conf, tf, tf)
	saved, _ := tf.Load()
	if saved.AccessToken == tok.AccessToken || saved.RefreshToken != tok.RefreshToken || g.refreshes != 1 {
		t.Fatalf("refreshed token not saved: %+v (refreshes %d)", saved, g.refreshes)
	}
	// Google revokes the access token early: a 401 makes the fetcher refresh once.
	g.set(func() { g.access = map[string]bool{} })
	if _, err := gc.Fetch(context.Background(), time.Now(), time.Now().Add(time.Hour)); err != nil {
		t.Fatalf("after revoked access token: %v", err)
	}
	if g.refreshes != 2 {
		t.Fatalf("refreshes %d", g.refreshes)
	}
	// The user revoked the app: the refresh token is refused too.
	g.set(func() { g.access, g.refresh = map[string]bool{}, map[string]bool{} })
	_, err := gc.Fetch(context.Background(), time.Now(), time.Now().Add(time.Hour))
	if !errors.Is(err, ErrLoginNeeded) || !strings.Contains(err.Error(), "metaclaw scheduler calendar login") {
		t.Fatalf("revoked login: %v", err)
	}
	// No token at all.
	none := &Google{APIBase: g.srv.URL + "/calendar/v3", Client: conf, Token: &TokenFile{Path: filepath.Join(t.TempDir(), "none.json")}}
	if _, err := none.Fetch(context.Background(), time.Now(), time.Now().Add(time.Hour)); !errors.Is(err, ErrLoginNeeded) {
		t.Fatalf("no token: %v", err)
	}
}

func TestFreeBusyFallback(t *testing.T) {
	g := newFakeGoogle(t)
	conf, tf := login(t, g)
	g.set(func() {
		g.forbidden["team@example.com"] = true
		g.busy = []map[string]string{{"start": "2026-05-04T07:00:00Z", "end": "2026-05-04T08:00:00Z"}}
	})
	gc := newGoogle(g, conf, tf)
	gc.CalendarID = "team@example.com"
	busy, err := gc.Fetch(context.Background(), time.Date(2026, 5, 4, 0, 0, 0, 0, time.UTC), time.Date(2026, 5, 5, 0, 0, 0, 0, time.UTC))
	if err != nil || len(busy) != 1 || busy[0].End.Sub(busy[0].Start) != time.Hour || g.fbCalls != 1 {
		t.Fatalf("free/busy: %v %v (calls %d)", busy, err, g.fbCalls)
	}
}

// The calendar source answers from its cache: a 5xx or a dead server keeps
// the last good intervals (also across a restart, from the store), and the
// error is shown.
func TestSourceKeepsItsCacheWhenGoogleFails(t *testing.T) {
	g := newFakeGoogle(t)
	conf, tf := login(t, g)
	now := time.Now().Truncate(time.Minute)
	g.set(func() {
		g.events = []map[string]any{{"summary": "Board meeting", "start": map[string]any{"dateTime": now.Add(-10 * time.Minute).Format(time.RFC3339)}, "end": map[string]any{"dateTime": now.Add(50 * time.Minute).Format(time.RFC3339)}}}
	})
	st, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cache := &scheduler.BusyCache{W: st.Writer(), R: st.Reader()}
	src := scheduler.NewCalendarSource(context.Background(), scheduler.CalendarOptions{Name: "calendar", Fetcher: newGoogle(g, conf, tf), Cache: cache, Log: zerolog.Nop()})
	if v := src.Check(now); v.Open || !strings.Contains(v.Reason, "not fetched yet") {
		t.Fatalf("before the first fetch: %+v", v)
	}
	if err := src.FetchNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	v := src.Check(now)
	if !v.Open || !v.Until.Equal(now.Add(50*time.Minute)) || !strings.Contains(v.Reason, "Board meeting") {
		t.Fatalf("in the meeting: %+v", v)
	}
	select {
	case <-src.Wake():
	default:
		t.Fatal("a changed calendar must wake the scheduler")
	}

	g.set(func() { g.fail = 503 })
	if err := src.FetchNow(context.Background()); err == nil || !strings.Contains(err.Error(), "503") {
		t.Fatalf("5xx: %v", err)
	}
	if v := src.Check(now); !v.Open || !strings.Contains(v.Error, "503") {
		t.Fatalf("5xx must keep the cache and show the error: %+v", v)
	}
	g.srv.Close() // offline
	if err := src.FetchNow(context.Background()); err == nil {
		t.Fatal("offline fetch succeeded")
	}
	// A new host (or the CLI) reads the cache from the store.
	again := scheduler.NewCalendarSource(context.Background(), scheduler.CalendarOptions{Name: "calendar", Fetcher: newGoogle(g, conf, tf), Cache: cache, Log: zerolog.Nop()})
	if v := again.Check(now); !v.Open || v.Error == "" {
		t.Fatalf("from the store: %+v", v)
	}
}

func TestLoadClientErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := LoadClient(""); err == nil || !strings.Contains(err.Error(), "credentials_path") {
		t.Fatalf("empty: %v", err)
	}
	p := filepath.Join(dir, "x.json")
	os.WriteFile(p, []byte(`{"other":{}}`), 0o600)
	if _, err := LoadClient(p); err == nil || !strings.Contains(err.Error(), "Desktop app") {
		t.Fatalf("wrong shape: %v", err)
	}
	os.WriteFile(p, []byte(`{"installed":{"client_id":"a","client_secret":"b"}}`), 0o600)
	c, err := LoadClient(p)
	if err != nil || c.Endpoint.TokenURL != GoogleTokenURL {
		t.Fatalf("defaults: %+v %v", c, err)
	}
}
