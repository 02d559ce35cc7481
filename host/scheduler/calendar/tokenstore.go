package calendar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/godbus/dbus/v5"
	"github.com/zalando/go-keyring"
	"golang.org/x/oauth2"
)

// TokenStore keeps the OAuth token between runs: the OS keyring, a 0600
// file, or the keyring with the file as fallback.
type TokenStore interface {
	// Load returns the token; ErrLoginNeeded when there is none.
	Load() (*oauth2.Token, error)
	Save(*oauth2.Token) error
	// Remove deletes the token wherever it is; none is not an error.
	Remove() error
	// Where says where the token is kept, for messages.
	Where() string
}

// KeyringService is the service name of the keyring item.
const KeyringService = "metaclaw google calendar"

// Keyring stores the token in the OS keyring: the Secret Service over the
// session D-Bus on Linux (GNOME Keyring, KWallet), the login Keychain on
// macOS, the Credential Manager on Windows. The account is the configured
// token path, so two MetaClaw homes keep two tokens.
type Keyring struct {
	Account string
	// Timeout bounds each keyring call: a locked keyring may show an
	// unlock prompt, and a keyring that never answers must not hang the
	// host. Default 30 s.
	Timeout time.Duration
}

// Where implements TokenStore.
func (k *Keyring) Where() string {
	return fmt.Sprintf("the OS keyring (%s, service %q, account %q)", keyringKind(), KeyringService, k.Account)
}

func keyringKind() string {
	switch runtime.GOOS {
	case "darwin":
		return "macOS Keychain"
	case "windows":
		return "Windows Credential Manager"
	}
	return "Secret Service"
}

// call runs fn with the timeout: go-keyring takes no context, so a call
// that does not return in time is left to finish on its own.
func (k *Keyring) call(what string, fn func() error) error {
	d := k.Timeout
	if d <= 0 {
		d = 30 * time.Second
	}
	done := make(chan error, 1)
	go func() { done <- fn() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		return fmt.Errorf("%s: the OS keyring did not answer within %s (locked, or waiting for an unlock prompt)", what, d)
	}
}

// Load implements TokenStore.
func (k *Keyring) Load() (*oauth2.Token, error) {
	var s string
	err := k.call("read the calendar token", func() (err error) {
		s, err = keyring.Get(KeyringService, k.Account)
		return err
	})
	if errors.Is(err, keyring.ErrNotFound) {
		return nil, ErrLoginNeeded
	}
	if err != nil {
		return nil, fmt.Errorf("read the calendar token from %s: %w", keyringKind(), err)
	}
	var t oauth2.Token
	if err := json.Unmarshal([]byte(s), &t); err != nil || (t.AccessToken == "" && t.RefreshToken == "") {
		return nil, fmt.Errorf("the calendar token in %s is unreadable: run `metaclaw scheduler calendar login`", keyringKind())
	}
	return &t, nil
}

// Save implements TokenStore.
func (k *Keyring) Save(t *oauth2.Token) error {
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	err = k.call("save the calendar token", func() error { return keyring.Set(KeyringService, k.Account, string(b)) })
	if err != nil {
		return fmt.Errorf("save the calendar token in %s: %w", keyringKind(), err)
	}
	return nil
}

// Remove implements TokenStore.
func (k *Keyring) Remove() error {
	err := k.call("delete the calendar token", func() error { return keyring.Delete(KeyringService, k.Account) })
	if err == nil || errors.Is(err, keyring.ErrNotFound) {
		return nil
	}
	return fmt.Errorf("delete the calendar token from %s: %w", keyringKind(), err)
}

// KeyringAvailable says whether an OS keyring can be used here. On Linux
// that is a Secret Service on the session bus (running or activatable);
// with no session bus (a server, CI) there is none, and nothing is
// launched to find out.
func KeyringAvailable(ctx context.Context) error {
	switch runtime.GOOS {
	case "darwin", "windows":
		return nil
	case "linux", "freebsd", "openbsd", "netbsd", "dragonfly":
	default:
		return fmt.Errorf("no OS keyring on %s", runtime.GOOS)
	}
	conn, err := dbus.SessionBusPrivateNoAutoStartup(dbus.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("no session D-Bus for a Secret Service: %w", err)
	}
	defer conn.Close()
	if err := conn.Auth(nil); err != nil {
		return fmt.Errorf("session D-Bus: %w", err)
	}
	if err := conn.Hello(); err != nil {
		return fmt.Errorf("session D-Bus: %w", err)
	}
	const name = "org.freedesktop.secrets"
	var owned bool
	if err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, name).Store(&owned); err != nil {
		return fmt.Errorf("session D-Bus: %w", err)
	}
	if owned {
		return nil
	}
	var names []string
	if err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.ListActivatableNames", 0).Store(&names); err == nil && slices.Contains(names, name) {
		return nil
	}
	return errors.New("no Secret Service on the session D-Bus (install and start gnome-keyring or KWallet)")
}

// AutoStore keeps the token in the OS keyring when there is one and in the
// 0600 file otherwise. A token saved to the keyring removes the file, so
// no plain-text copy stays behind; a token found only in the file (from
// before, or from a time the keyring failed) moves to the keyring at its
// next save (the next refresh).
type AutoStore struct {
	Keyring *Keyring // nil: no keyring here
	File    *TokenFile
	// NoKeyring says why Keyring is nil, for messages.
	NoKeyring string

	mu    sync.Mutex
	where string
}

// Where implements TokenStore: where the token was last read or saved.
func (a *AutoStore) Where() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.where != "" {
		return a.where
	}
	if a.Keyring != nil {
		return a.Keyring.Where()
	}
	return a.fileWhere(a.NoKeyring)
}

func (a *AutoStore) fileWhere(why string) string {
	w := a.File.Where()
	if why != "" {
		w += " (no keyring: " + why + ")"
	}
	return w
}

func (a *AutoStore) setWhere(w string) {
	a.mu.Lock()
	a.where = w
	a.mu.Unlock()
}

// Load implements TokenStore.
func (a *AutoStore) Load() (*oauth2.Token, error) {
	var kerr error
	if a.Keyring != nil {
		t, err := a.Keyring.Load()
		if err == nil {
			a.setWhere(a.Keyring.Where())
			return t, nil
		}
		if !errors.Is(err, ErrLoginNeeded) {
			kerr = err
		}
	}
	t, err := a.File.Load()
	if errors.Is(err, ErrLoginNeeded) && kerr != nil {
		return nil, kerr // the keyring failed: say so, not "log in"
	}
	if err == nil {
		a.setWhere(a.fileWhere(a.NoKeyring))
	}
	return t, err
}

// Save implements TokenStore.
func (a *AutoStore) Save(t *oauth2.Token) error {
	if a.Keyring != nil {
		err := a.Keyring.Save(t)
		if err == nil {
			a.setWhere(a.Keyring.Where())
			if rerr := a.File.Remove(); rerr != nil {
				return fmt.Errorf("the token is in the keyring, but the old plain-text copy stays: %w", rerr)
			}
			return nil
		}
		if ferr := a.File.Save(t); ferr != nil {
			return errors.Join(err, ferr)
		}
		a.setWhere(a.fileWhere(err.Error()))
		return nil
	}
	if err := a.File.Save(t); err != nil {
		return err
	}
	a.setWhere(a.fileWhere(a.NoKeyring))
	return nil
}

// Remove implements TokenStore: from the keyring and the file.
func (a *AutoStore) Remove() error {
	var errs []error
	if a.Keyring != nil {
		errs = append(errs, a.Keyring.Remove())
	}
	errs = append(errs, a.File.Remove())
	return errors.Join(errs...)
}

// OpenTokenStore returns the store scheduler.calendar.token_store names:
// "auto" (the keyring when available, else the file), "keyring" (the
// keyring or an error), "file" (the 0600 file at path).
func OpenTokenStore(ctx context.Context, kind, path string, timeout time.Duration) (TokenStore, error) {
	file := &TokenFile{Path: path}
	if kind == "file" {
		return file, nil
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	k := &Keyring{Account: abs, Timeout: timeout}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	avail := KeyringAvailable(pctx)
	switch kind {
	case "keyring":
		if avail != nil {
			return nil, fmt.Errorf("scheduler.calendar.token_store is keyring, but %v; set it to auto or file with `metaclaw config set scheduler.calendar.token_store auto`", avail)
		}
		return k, nil
	case "", "auto":
		if avail != nil {
			return &AutoStore{File: file, NoKeyring: avail.Error()}, nil
		}
		return &AutoStore{Keyring: k, File: file}, nil
	}
	return nil, fmt.Errorf("scheduler.calendar.token_store %q: use auto, keyring or file", kind)
}

var (
	_ TokenStore = (*TokenFile)(nil)
	_ TokenStore = (*Keyring)(nil)
	_ TokenStore = (*AutoStore)(nil)
)

// Where implements TokenStore.
func (f *TokenFile) Where() string { return f.Path + " (mode 0600)" }
