package calendar

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"golang.org/x/oauth2"
)

// GoogleRevokeURL is Google's OAuth 2 token revocation endpoint.
const GoogleRevokeURL = "https://oauth2.googleapis.com/revoke"

// RevokeURL is the revocation endpoint beside the client's token endpoint:
// Google's token URI ends in /token and its revocation URI is /revoke on
// the same host (a client secrets file names no revocation URI).
func RevokeURL(c *oauth2.Config) string {
	if c == nil || c.Endpoint.TokenURL == "" || c.Endpoint.TokenURL == GoogleTokenURL {
		return GoogleRevokeURL
	}
	if base, ok := strings.CutSuffix(c.Endpoint.TokenURL, "/token"); ok {
		return base + "/revoke"
	}
	return GoogleRevokeURL
}

// Revoke asks the provider to revoke the grant behind tok: the refresh
// token when there is one (which also ends its access tokens), else the
// access token. A token the provider no longer knows (already revoked or
// expired) counts as revoked.
func Revoke(ctx context.Context, hc *http.Client, revokeURL string, tok *oauth2.Token) error {
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	value := tok.RefreshToken
	if value == "" {
		value = tok.AccessToken
	}
	if value == "" {
		return errors.New("revoke: the stored token is empty")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, revokeURL, strings.NewReader(url.Values{"token": {value}}.Encode()))
	if err != nil {
		return fmt.Errorf("revoke: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := hc.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL adds nothing, and a token never rides in it
		}
		return fmt.Errorf("revoke at %s: %w", hostOf(revokeURL), err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode == http.StatusOK {
		return nil
	}
	var e struct {
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	_ = json.Unmarshal(body, &e)
	if resp.StatusCode == http.StatusBadRequest && e.Error == "invalid_token" {
		return nil // nothing left to revoke
	}
	msg := e.Error
	if e.Description != "" {
		msg += ": " + e.Description
	}
	if msg == "" {
		msg = http.StatusText(resp.StatusCode)
	}
	return fmt.Errorf("revoke at %s: HTTP %d: %s", hostOf(revokeURL), resp.StatusCode, msg)
}

func hostOf(u string) string {
	if p, err := url.Parse(u); err == nil && p.Host != "" {
		return p.Host
	}
	return "the provider"
}

// LogoutResult says what Logout did.
type LogoutResult struct {
	HadToken bool  // a token was stored
	Revoked  bool  // the provider revoked it
	Revoke   error // why it was not revoked (offline, refused); the token is deleted all the same
}

// Logout revokes the stored token at the provider and deletes it from the
// store. The local copy goes even when revocation fails (the user asked to
// be logged out here); the result says so, for the user to revoke the
// grant in their Google account. The error is for a token that could not
// be deleted.
func Logout(ctx context.Context, store TokenStore, client *oauth2.Config, hc *http.Client) (LogoutResult, error) {
	var res LogoutResult
	tok, err := store.Load()
	switch {
	case err == nil:
		res.HadToken = true
		if client == nil {
			res.Revoke = errors.New("no OAuth client (scheduler.calendar.credentials_path) to revoke with")
		} else if res.Revoke = Revoke(ctx, hc, RevokeURL(client), tok); res.Revoke == nil {
			res.Revoked = true
		}
	case !errors.Is(err, ErrLoginNeeded):
		res.Revoke = err // unreadable: nothing to revoke with, delete it anyway
	}
	return res, store.Remove()
}
