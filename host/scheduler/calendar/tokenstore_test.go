package calendar

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/zalando/go-keyring"
	"golang.org/x/oauth2"

	"github.com/metaclaw-go/metaclaw/internal/dbustest"
)

// useSessionBus points this process's session bus at addr. go-keyring
// keeps one shared connection; the one to an earlier test's bus is closed
// so the next call dials addr.
func useSessionBus(t *testing.T, addr string) {
	t.Helper()
	t.Setenv("DBUS_SESSION_BUS_ADDRESS", addr) // first: never autolaunch a bus
	if c, err := dbus.SessionBus(); err == nil {
		c.Close()
	}
	t.Cleanup(func() {
		if c, err := dbus.SessionBus(); err == nil {
			c.Close()
		}
	})
}

// The token lives in a real Secret Service (gnome-keyring-daemon on a
// private bus): login saves it there and leaves no file, the fetcher's
// refresh re-saves it there, a token left in the file from before moves
// into the keyring at its next save, and logout revokes the grant at
// Google and deletes the keyring item and the file.
func TestTokenInTheSecretService(t *testing.T) {
	useSessionBus(t, dbustest.SecretService(t))
	g := newFakeGoogle(t)
	conf, tf := login(t, g) // a token in a 0600 file, as before the keyring

	store, err := OpenTokenStore(context.Background(), "auto", tf.Path, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	auto, ok := store.(*AutoStore)
	if !ok || auto.Keyring == nil {
		t.Fatalf("auto with a Secret Service running: %#v", store)
	}
	if !strings.Contains(store.Where(), "Secret Service") {
		t.Fatalf("where: %s", store.Where())
	}
	// Read from the file while the keyring has nothing.
	if got, err := store.Load(); err != nil || got.RefreshToken == "" || !strings.Contains(store.Where(), tf.Path) {
		t.Fatalf("load from the file: %+v %v (%s)", got, err, store.Where())
	}
	// The fetcher refreshes the expired token: it is saved in the keyring
	// and the plain-text file is gone.
	fileTok, _ := expireAndFetch(t, g, conf, tf, store)
	if _, err := os.Stat(tf.Path); !os.IsNotExist(err) {
		t.Fatalf("the plain-text token stayed beside the keyring: %v", err)
	}
	raw, err := keyring.Get(KeyringService, auto.Keyring.Account)
	if err != nil {
		t.Fatalf("keyring item: %v", err)
	}
	var inKeyring oauth2.Token
	json.Unmarshal([]byte(raw), &inKeyring)
	if inKeyring.RefreshToken != fileTok.RefreshToken || inKeyring.AccessToken == fileTok.AccessToken || g.refreshes != 1 {
		t.Fatalf("keyring holds %+v (refreshes %d)", inKeyring, g.refreshes)
	}
	// A new host reads it back from the keyring.
	again, _ := OpenTokenStore(context.Background(), "auto", tf.Path, 10*time.Second)
	if got, err := again.Load(); err != nil || got.AccessToken != inKeyring.AccessToken || !strings.Contains(again.Where(), "Secret Service") {
		t.Fatalf("reload: %+v %v", got, err)
	}
	// Another MetaClaw home keeps its own token.
	other, _ := OpenTokenStore(context.Background(), "keyring", filepath.Join(t.TempDir(), "calendar_token.json"), 10*time.Second)
	if _, err := other.Load(); !errors.Is(err, ErrLoginNeeded) {
		t.Fatalf("another home sees this token: %v", err)
	}

	res, err := Logout(context.Background(), again, conf, nil)
	if err != nil || !res.Revoked {
		t.Fatalf("logout: %+v %v", res, err)
	}
	if g.refresh[fileTok.RefreshToken] || g.access[inKeyring.AccessToken] {
		t.Fatal("the grant still works at Google")
	}
	if _, err := keyring.Get(KeyringService, auto.Keyring.Account); !errors.Is(err, keyring.ErrNotFound) {
		t.Fatalf("keyring item kept: %v", err)
	}
	if _, err := again.Load(); !errors.Is(err, ErrLoginNeeded) {
		t.Fatalf("after logout: %v", err)
	}
}

// hangingSecrets owns org.freedesktop.secrets and never answers, as a
// keyring waiting on an unlock prompt nobody sees.
type hangingSecrets struct{ release chan struct{} }

func (h hangingSecrets) Get(string, string) (dbus.Variant, *dbus.Error) {
	<-h.release
	return dbus.Variant{}, dbus.MakeFailedError(errors.New("released"))
}

func (h hangingSecrets) OpenSession(string, dbus.Variant) (dbus.Variant, dbus.ObjectPath, *dbus.Error) {
	<-h.release
	return dbus.Variant{}, "/", dbus.MakeFailedError(errors.New("released"))
}

// A keyring that does not answer bounds each call by the timeout, and auto
// falls back to the 0600 file with the reason in Where.
func TestKeyringThatHangsFallsBackToTheFile(t *testing.T) {
	addr := dbustest.PrivateBus(t)
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	h := hangingSecrets{release: make(chan struct{})}
	defer close(h.release)
	conn.Export(h, "/org/freedesktop/secrets", "org.freedesktop.DBus.Properties")
	conn.Export(h, "/org/freedesktop/secrets", "org.freedesktop.Secret.Service")
	if reply, err := conn.RequestName("org.freedesktop.secrets", dbus.NameFlagDoNotQueue); err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("own the name: %v %v", reply, err)
	}
	useSessionBus(t, addr)

	path := filepath.Join(t.TempDir(), "calendar_token.json")
	store, err := OpenTokenStore(context.Background(), "auto", path, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	tok := &oauth2.Token{AccessToken: "at", RefreshToken: "rt"}
	if err := store.Save(tok); err != nil {
		t.Fatalf("save must fall back to the file: %v", err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("file: %v %v", fi, err)
	}
	if w := store.Where(); !strings.Contains(w, path) || !strings.Contains(w, "did not answer within 300ms") {
		t.Fatalf("where: %s", w)
	}
	// Load: the keyring times out, the file answers.
	if got, err := store.Load(); err != nil || got.RefreshToken != "rt" {
		t.Fatalf("load: %+v %v", got, err)
	}
	// With no file either, the keyring's failure is the error, not "log in".
	os.Remove(path)
	if _, err := store.Load(); err == nil || errors.Is(err, ErrLoginNeeded) || !strings.Contains(err.Error(), "did not answer") {
		t.Fatalf("load with a hung keyring and no file: %v", err)
	}
}

// With no session bus (a server, CI): auto uses the file and says why;
// keyring refuses with the fix; file never asks.
func TestNoKeyringHere(t *testing.T) {
	useSessionBus(t, "unix:path="+filepath.Join(t.TempDir(), "no-bus"))
	path := filepath.Join(t.TempDir(), "calendar_token.json")
	for _, c := range []struct {
		kind, where, err string
	}{
		{"auto", "no keyring: no session D-Bus", ""},
		{"file", " (mode 0600)", ""},
		{"keyring", "", "scheduler.calendar.token_store is keyring, but no session D-Bus"},
		{"vault", "", `token_store "vault": use auto, keyring or file`},
	} {
		store, err := OpenTokenStore(context.Background(), c.kind, path, time.Second)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want %q", c.kind, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", c.kind, err)
		}
		if err := store.Save(&oauth2.Token{RefreshToken: "rt"}); err != nil {
			t.Fatal(err)
		}
		if w := store.Where(); !strings.Contains(w, path) || !strings.Contains(w, c.where) {
			t.Errorf("%s: where %q", c.kind, w)
		}
		if got, err := store.Load(); err != nil || got.RefreshToken != "rt" {
			t.Errorf("%s: load %+v %v", c.kind, got, err)
		}
		if err := store.Remove(); err != nil {
			t.Fatal(err)
		}
	}
}
