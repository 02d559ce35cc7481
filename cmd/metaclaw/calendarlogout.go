package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/scheduler"
	"github.com/metaclaw-go/metaclaw/host/scheduler/calendar"
)

// calendarLogout revokes the grant at Google, deletes the token from the
// keyring and the file, and clears the cached events. A failed revocation
// (offline) still logs out here, and the command fails saying how to
// revoke by hand.
func calendarLogout(ctx context.Context, out io.Writer, h string, cfg *config.Config) error {
	cc := cfg.Scheduler.Calendar
	kind := cc.TokenStore
	if kind == "keyring" {
		kind = "auto" // delete the file copy too, and say clearly when there is no keyring
	}
	tokens, err := calendar.OpenTokenStore(ctx, kind, cc.TokenPath, 2*time.Minute)
	if err != nil {
		return err
	}
	client, cerr := calendar.LoadClient(cc.CredentialsPath)
	if cerr != nil {
		client = nil
	}
	res, err := calendar.Logout(ctx, tokens, client, nil)
	if err != nil {
		return fmt.Errorf("calendar logout: %w", err)
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := (&scheduler.BusyCache{W: st.Writer(), R: st.Reader()}).Clear(ctx, "calendar"); err != nil {
		return err
	}
	if api := runningHost(); api != nil {
		_ = api.call(ctx, http.MethodPost, "/v1/scheduler/calendar/reload", struct{}{}, nil)
	}
	switch {
	case !res.HadToken && res.Revoke == nil:
		fmt.Fprintln(out, "not logged in: no calendar token stored; cached events cleared")
	case res.Revoked:
		fmt.Fprintf(out, "logged out: Google revoked the grant; token deleted from %s; cached events cleared\n", tokens.Where())
	default:
		return fmt.Errorf("logged out here (token deleted from %s, cached events cleared), but the grant was not revoked at Google: %v; remove MetaClaw at https://myaccount.google.com/permissions", tokens.Where(), res.Revoke)
	}
	return nil
}
