package calendar

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/oauth2"
)

func TestRevokeURL(t *testing.T) {
	for _, c := range []struct{ token, want string }{
		{"", GoogleRevokeURL},
		{GoogleTokenURL, GoogleRevokeURL},
		{"https://oauth2.googleapis.com/token", "https://oauth2.googleapis.com/revoke"},
		{"http://127.0.0.1:5555/token", "http://127.0.0.1:5555/revoke"},
		{"https://example.com/oauth/access", GoogleRevokeURL},
	} {
		if got := RevokeURL(&oauth2.Config{Endpoint: oauth2.Endpoint{TokenURL: c.token}}); got != c.want {
			t.Errorf("RevokeURL(%q) = %q, want %q", c.token, got, c.want)
		}
	}
}

// Logout against the fake Google: the grant is revoked (its refresh token
// and every access token issued under it stop working) and the token is
// deleted; a failed revocation still deletes it and says why.
func TestLogoutRevokesAtGoogle(t *testing.T) {
	g := newFakeGoogle(t)
	conf, tf := login(t, g)
	// A refresh first, so the grant has two access tokens.
	tok, _ := expireAndFetch(t, g, conf, tf, tf)
	refreshed, _ := tf.Load()

	res, err := Logout(context.Background(), tf, conf, nil)
	if err != nil || !res.HadToken || !res.Revoked || res.Revoke != nil {
		t.Fatalf("logout: %+v %v", res, err)
	}
	if len(g.revoked) != 1 || g.revoked[0] != tok.RefreshToken {
		t.Fatalf("revoked %v, want the refresh token %s", g.revoked, tok.RefreshToken)
	}
	if g.refresh[tok.RefreshToken] || g.access[tok.AccessToken] || g.access[refreshed.AccessToken] {
		t.Fatal("the grant's tokens still work at Google")
	}
	if _, err := tf.Load(); !errors.Is(err, ErrLoginNeeded) {
		t.Fatalf("token not deleted: %v", err)
	}
	// A second logout has nothing to do.
	res, err = Logout(context.Background(), tf, conf, nil)
	if err != nil || res.HadToken || res.Revoke != nil {
		t.Fatalf("second logout: %+v %v", res, err)
	}
}

func TestLogoutWhenRevocationFails(t *testing.T) {
	cases := []struct {
		name  string
		setup func(g *fakeGoogle)
		want  string
	}{
		{"google errs", func(g *fakeGoogle) { g.set(func() { g.revokeFail = 503 }) }, "HTTP 503: backend_error"},
		{"offline", func(g *fakeGoogle) { g.srv.Close() }, "revoke at 127.0.0.1:"},
		{"already revoked", func(g *fakeGoogle) { g.set(func() { g.refresh = map[string]bool{} }) }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newFakeGoogle(t)
			conf, tf := login(t, g)
			tok, _ := tf.Load()
			c.setup(g)
			res, err := Logout(context.Background(), tf, conf, nil)
			if err != nil || !res.HadToken {
				t.Fatalf("logout: %+v %v", res, err)
			}
			if c.want == "" {
				if !res.Revoked {
					t.Fatalf("a token Google no longer knows counts as revoked: %+v", res)
				}
			} else if res.Revoked || res.Revoke == nil || !strings.Contains(res.Revoke.Error(), c.want) {
				t.Fatalf("revoke error %v, want %q", res.Revoke, c.want)
			}
			if res.Revoke != nil && (strings.Contains(res.Revoke.Error(), tok.RefreshToken) || strings.Contains(res.Revoke.Error(), tok.AccessToken)) {
				t.Fatalf("the error shows the token: %v", res.Revoke)
			}
			if _, err := tf.Load(); !errors.Is(err, ErrLoginNeeded) {
				t.Fatalf("token kept after a failed revocation: %v", err)
			}
		})
	}
}

func TestLogoutWithoutAClientStillDeletes(t *testing.T) {
	tf := &TokenFile{Path: filepath.Join(t.TempDir(), "t.json")}
	tf.Save(&oauth2.Token{AccessToken: "a", RefreshToken: "r"})
	res, err := Logout(context.Background(), tf, nil, nil)
	if err != nil || res.Revoked || res.Revoke == nil || !strings.Contains(res.Revoke.Error(), "credentials_path") {
		t.Fatalf("%+v %v", res, err)
	}
	if _, err := tf.Load(); !errors.Is(err, ErrLoginNeeded) {
		t.Fatal("token kept")
	}
}
