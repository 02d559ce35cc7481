// Package calendar reads Google Calendar (API v3) for the scheduler: busy
// events open training windows. It holds the OAuth 2 installed-app login
// (loopback redirect with PKCE), the token file (0600, refreshed and
// re-saved), and the fetcher behind scheduler.CalendarSource.
package calendar

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/metaclaw-go/metaclaw/internal/atomicfile"
)

// Scope is read-only access to the user's calendars.
const Scope = "https://www.googleapis.com/auth/calendar.readonly"

// Google's endpoints, used when the client secrets file names none.
const (
	GoogleAuthURL  = "https://accounts.google.com/o/oauth2/auth"
	GoogleTokenURL = "https://oauth2.googleapis.com/token"
)

// ErrLoginNeeded means there is no usable token: the user must run
// `metaclaw scheduler calendar login`.
var ErrLoginNeeded = errors.New("google calendar: not logged in or the login was revoked: run `metaclaw scheduler calendar login`")

// LoadClient reads a Google OAuth client secrets file (downloaded from the
// Google Cloud console for a "Desktop app" client: {"installed": {…}}).
func LoadClient(path string) (*oauth2.Config, error) {
	if path == "" {
		return nil, errors.New("scheduler.calendar.credentials_path is empty: download the OAuth client (type Desktop app) JSON from the Google Cloud console and set its path with `metaclaw config set scheduler.calendar.credentials_path <file>`")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("scheduler.calendar.credentials_path: %w", err)
	}
	var f map[string]struct {
		ClientID     string `json:"client_id"`
		ClientSecret string `json:"client_secret"`
		AuthURI      string `json:"auth_uri"`
		TokenURI     string `json:"token_uri"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("scheduler.calendar.credentials_path %s: not a Google client secrets JSON: %w", path, err)
	}
	c, ok := f["installed"]
	if !ok {
		c, ok = f["web"]
	}
	if !ok || c.ClientID == "" {
		return nil, fmt.Errorf("scheduler.calendar.credentials_path %s: no \"installed\" client with a client_id (create an OAuth client of type Desktop app)", path)
	}
	if c.AuthURI == "" {
		c.AuthURI = GoogleAuthURL
	}
	if c.TokenURI == "" {
		c.TokenURI = GoogleTokenURL
	}
	return &oauth2.Config{
		ClientID: c.ClientID, ClientSecret: c.ClientSecret, Scopes: []string{Scope},
		Endpoint: oauth2.Endpoint{AuthURL: c.AuthURI, TokenURL: c.TokenURI, AuthStyle: oauth2.AuthStyleInParams},
	}, nil
}

// TokenFile stores the OAuth token as JSON, mode 0600, written atomically.
type TokenFile struct {
	Path string
	mu   sync.Mutex
}

// Load reads the token; ErrLoginNeeded when there is none.
func (f *TokenFile) Load() (*oauth2.Token, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := os.ReadFile(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, ErrLoginNeeded
	}
	if err != nil {
		return nil, fmt.Errorf("read calendar token: %w", err)
	}
	if fi, err := os.Stat(f.Path); err == nil && fi.Mode().Perm()&0o077 != 0 {
		_ = os.Chmod(f.Path, 0o600) // a token readable by others is tightened
	}
	var t oauth2.Token
	if err := json.Unmarshal(b, &t); err != nil || (t.AccessToken == "" && t.RefreshToken == "") {
		return nil, fmt.Errorf("calendar token %s is unreadable (%v): run `metaclaw scheduler calendar login`", f.Path, err)
	}
	return &t, nil
}

// Save writes the token (0600, temp file + rename).
func (f *TokenFile) Save(t *oauth2.Token) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := json.Marshal(t)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o700); err != nil {
		return fmt.Errorf("save calendar token: %w", err)
	}
	if err := atomicfile.Write(f.Path, b, 0o600); err != nil {
		return fmt.Errorf("save calendar token: %w", err)
	}
	return nil
}

// Remove deletes the token (logout).
func (f *TokenFile) Remove() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := os.Remove(f.Path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// LoginOptions configure Login.
type LoginOptions struct {
	Client *oauth2.Config
	// Open shows the consent page to the user (a browser); nil only prints.
	Open func(url string) error
	// Out receives the URL to open and progress lines.
	Out     io.Writer
	Timeout time.Duration // default 5 minutes
	// HTTPClient is used for the token exchange (tests); nil = default.
	HTTPClient *http.Client
}

// Login runs the OAuth 2 installed-app flow: a listener on 127.0.0.1 with
// a random port receives the redirect, PKCE (S256) binds the code to this
// process, and a random state rejects forged redirects. It returns the
// token (with a refresh token: offline access).
func Login(ctx context.Context, o LoginOptions) (*oauth2.Token, error) {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("calendar login: listen for the redirect: %w", err)
	}
	defer ln.Close()
	conf := *o.Client
	conf.RedirectURL = "http://" + ln.Addr().String() + "/"
	state := randomString()
	verifier := oauth2.GenerateVerifier()
	authURL := conf.AuthCodeURL(state, oauth2.AccessTypeOffline, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("prompt", "consent"))

	type result struct {
		code string
		err  error
	}
	got := make(chan result, 1)
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.URL.Path != "/" || (q.Get("state") == "" && q.Get("code") == "" && q.Get("error") == "") {
			http.NotFound(w, r)
			return
		}
		var res result
		switch {
		case q.Get("state") != state:
			res.err = errors.New("calendar login: the redirect carried a wrong state (not the request this login made); try again")
		case q.Get("error") != "":
			res.err = fmt.Errorf("calendar login: Google answered %q: %s", q.Get("error"), q.Get("error_description"))
		case q.Get("code") == "":
			res.err = errors.New("calendar login: the redirect carried no code")
		default:
			res.code = q.Get("code")
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if res.err != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "<p>MetaClaw calendar login failed: %s</p>", html.EscapeString(res.err.Error()))
		} else {
			io.WriteString(w, "<p>MetaClaw can now read your calendar. You can close this window.</p>")
		}
		select {
		case got <- res:
		default:
		}
	})}
	go srv.Serve(ln)
	defer func() {
		// Let the browser receive its page before the listener goes.
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()

	fmt.Fprintf(o.Out, "Open this page to allow MetaClaw to read your calendar (read-only):\n%s\n", authURL)
	if o.Open != nil {
		if err := o.Open(authURL); err != nil {
			fmt.Fprintf(o.Out, "(could not open a browser: %v; open the page yourself)\n", err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	var res result
	select {
	case res = <-got:
	case <-ctx.Done():
		return nil, fmt.Errorf("calendar login: no answer from the browser within %s: %w", o.Timeout, ctx.Err())
	}
	if res.err != nil {
		return nil, res.err
	}
	if o.HTTPClient != nil {
		ctx = context.WithValue(ctx, oauth2.HTTPClient, o.HTTPClient)
	}
	tok, err := conf.Exchange(ctx, res.code, oauth2.VerifierOption(verifier))
	if err != nil {
		return nil, fmt.Errorf("calendar login: exchange the code for a token: %w", err)
	}
	if tok.RefreshToken == "" {
		fmt.Fprintln(o.Out, "warning: Google returned no refresh token; the login lasts until the access token expires")
	}
	return tok, nil
}

func randomString() string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}
