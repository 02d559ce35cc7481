package calendar

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// fakeGoogle is Google's OAuth endpoints and the two Calendar v3 calls the
// fetcher makes, strict about what a real server checks: PKCE, the client
// secret, the redirect URI, bearer tokens, refresh tokens.
type fakeGoogle struct {
	t   *testing.T
	srv *httptest.Server

	mu         sync.Mutex
	codes      map[string]authRequest // code → the request it answers
	access     map[string]bool        // valid access tokens
	refresh    map[string]bool        // valid refresh tokens
	grantOf    map[string]string      // access token → the refresh token it came from
	revoked    []string               // tokens revoked, in order
	revokeFail int                    // answer /revoke with this status
	issued     int
	refreshes  int
	fail       int // answer the next calendar calls with this status
	events     []map[string]any
	timeZone   string
	busy       []map[string]string // free/busy intervals
	forbidden  map[string]bool     // calendars readable only as free/busy
	eventCalls int
	fbCalls    int
}

type authRequest struct {
	challenge, redirect string
}

const (
	fakeClientID     = "client-123.apps.googleusercontent.com"
	fakeClientSecret = "GOCSPX-secret"
)

func newFakeGoogle(t *testing.T) *fakeGoogle {
	f := &fakeGoogle{t: t, codes: map[string]authRequest{}, access: map[string]bool{}, refresh: map[string]bool{}, grantOf: map[string]string{}, forbidden: map[string]bool{}, timeZone: "Europe/Berlin"}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /o/oauth2/auth", f.auth)
	mux.HandleFunc("POST /token", f.token)
	mux.HandleFunc("POST /revoke", f.revoke)
	mux.HandleFunc("GET /calendar/v3/calendars/{id}/events", f.listEvents)
	mux.HandleFunc("POST /calendar/v3/freeBusy", f.freeBusy)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// clientFile writes a client secrets file as the Google console gives it.
func (f *fakeGoogle) clientFile(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "client_secret.json")
	b, _ := json.Marshal(map[string]any{"installed": map[string]any{
		"client_id": fakeClientID, "client_secret": fakeClientSecret, "project_id": "metaclaw-test",
		"auth_uri": f.srv.URL + "/o/oauth2/auth", "token_uri": f.srv.URL + "/token",
		"redirect_uris": []string{"http://localhost"},
	}})
	os.WriteFile(p, b, 0o600)
	return p
}

func (f *fakeGoogle) auth(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	redirect, err := url.Parse(q.Get("redirect_uri"))
	switch {
	case q.Get("client_id") != fakeClientID:
		http.Error(w, "invalid_client", 401)
		return
	case err != nil || redirect.Scheme != "http" || !strings.HasPrefix(redirect.Host, "127.0.0.1:"):
		http.Error(w, "redirect_uri_mismatch: installed apps use a loopback address", 400)
		return
	case q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("state") == "":
		http.Error(w, "invalid_request: PKCE S256 and state are required", 400)
		return
	case q.Get("scope") != Scope || q.Get("access_type") != "offline":
		http.Error(w, "invalid_scope", 400)
		return
	}
	f.mu.Lock()
	f.issued++
	code := fmt.Sprintf("code-%d", f.issued)
	f.codes[code] = authRequest{challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri")}
	f.mu.Unlock()
	v := redirect.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	redirect.RawQuery = v.Encode()
	http.Redirect(w, r, redirect.String(), http.StatusFound)
}

func tokenError(w http.ResponseWriter, code int, e string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	fmt.Fprintf(w, `{"error":%q}`, e)
}

func (f *fakeGoogle) token(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	if r.Form.Get("client_id") != fakeClientID || r.Form.Get("client_secret") != fakeClientSecret {
		tokenError(w, 401, "invalid_client")
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.issued++
	reply := map[string]any{"access_token": fmt.Sprintf("at-%d", f.issued), "expires_in": 3599, "token_type": "Bearer", "scope": Scope}
	switch r.Form.Get("grant_type") {
	case "authorization_code":
		req, ok := f.codes[r.Form.Get("code")]
		delete(f.codes, r.Form.Get("code")) // a code is used once
		sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
		switch {
		case !ok:
			tokenError(w, 400, "invalid_grant")
			return
		case base64.RawURLEncoding.EncodeToString(sum[:]) != req.challenge:
			tokenError(w, 400, "invalid_grant") // PKCE verifier does not match
			return
		case r.Form.Get("redirect_uri") != req.redirect:
			tokenError(w, 400, "redirect_uri_mismatch")
			return
		}
		rt := fmt.Sprintf("rt-%d", f.issued)
		f.refresh[rt] = true
		reply["refresh_token"] = rt
		f.grantOf[reply["access_token"].(string)] = rt
	case "refresh_token":
		if !f.refresh[r.Form.Get("refresh_token")] {
			tokenError(w, 400, "invalid_grant")
			return
		}
		f.refreshes++
		f.grantOf[reply["access_token"].(string)] = r.Form.Get("refresh_token")
	default:
		tokenError(w, 400, "unsupported_grant_type")
		return
	}
	f.access[reply["access_token"].(string)] = true
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(reply)
}

// revoke is Google's revocation endpoint: a refresh token ends the grant
// and every access token issued under it; an access token ends itself.
func (f *fakeGoogle) revoke(w http.ResponseWriter, r *http.Request) {
	r.ParseForm()
	tok := r.Form.Get("token")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.revokeFail != 0 {
		tokenError(w, f.revokeFail, "backend_error")
		return
	}
	switch {
	case f.refresh[tok]:
		delete(f.refresh, tok)
		for at, rt := range f.grantOf {
			if rt == tok {
				delete(f.access, at)
			}
		}
	case f.access[tok]:
		delete(f.access, tok)
	default:
		tokenError(w, 400, "invalid_token")
		return
	}
	f.revoked = append(f.revoked, tok)
	w.WriteHeader(200)
}

// calendarAuth checks the bearer token and the injected failure.
func (f *fakeGoogle) calendarAuth(w http.ResponseWriter, r *http.Request) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || !f.access[tok] {
		w.WriteHeader(401)
		fmt.Fprint(w, `{"error":{"code":401,"message":"Request had invalid authentication credentials."}}`)
		return false
	}
	if f.fail != 0 {
		w.WriteHeader(f.fail)
		fmt.Fprintf(w, `{"error":{"code":%d,"message":"Backend Error"}}`, f.fail)
		return false
	}
	return true
}

func (f *fakeGoogle) listEvents(w http.ResponseWriter, r *http.Request) {
	if !f.calendarAuth(w, r) {
		return
	}
	q := r.URL.Query()
	if q.Get("singleEvents") != "true" || q.Get("timeMin") == "" || q.Get("timeMax") == "" {
		http.Error(w, `{"error":{"message":"bad query"}}`, 400)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.eventCalls++
	if f.forbidden[r.PathValue("id")] {
		w.WriteHeader(403)
		fmt.Fprint(w, `{"error":{"code":403,"message":"Not enough permissions to see event details."}}`)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"kind": "calendar#events", "timeZone": f.timeZone, "items": f.events})
}

func (f *fakeGoogle) freeBusy(w http.ResponseWriter, r *http.Request) {
	if !f.calendarAuth(w, r) {
		return
	}
	var req struct {
		Items []struct {
			ID string `json:"id"`
		} `json:"items"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Items) != 1 {
		http.Error(w, `{"error":{"message":"bad body"}}`, 400)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fbCalls++
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"kind": "calendar#freeBusy", "calendars": map[string]any{req.Items[0].ID: map[string]any{"busy": f.busy}}})
}

func (f *fakeGoogle) set(fn func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn()
}
