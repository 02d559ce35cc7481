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
	"sync"
	"time"

	"golang.org/x/oauth2"

	"github.com/metaclaw-go/metaclaw/host/scheduler"
)

// DefaultAPIBase is Google Calendar API v3.
const DefaultAPIBase = "https://www.googleapis.com/calendar/v3"

// Google fetches busy intervals from one Google calendar: events.list with
// single (expanded) events, skipping cancelled, transparent ("show as
// available") and declined ones. A calendar the user may only see as
// free/busy (events.list answers 403 or 404) is read with freeBusy.query.
type Google struct {
	APIBase    string // default DefaultAPIBase
	CalendarID string // default "primary"
	Client     *oauth2.Config
	Token      TokenStore
	// Location is used for all-day events when the calendar names no zone.
	Location *time.Location
	// HTTPClient carries the requests (tests); nil = a client with a 30 s timeout.
	HTTPClient *http.Client

	mu  sync.Mutex
	tok *oauth2.Token // last token seen, to persist refreshed ones
}

// APIError is an unexpected answer of the API.
type APIError struct {
	Status  int
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("google calendar: HTTP %d: %s", e.Status, e.Message)
}

// Fetch implements scheduler.Fetcher.
func (g *Google) Fetch(ctx context.Context, from, to time.Time) ([]scheduler.Busy, error) {
	busy, err := g.fetch(ctx, from, to, false)
	var ae *APIError
	if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
		// The access token was revoked or expired early: refresh once.
		busy, err = g.fetch(ctx, from, to, true)
		if errors.As(err, &ae) && ae.Status == http.StatusUnauthorized {
			return nil, fmt.Errorf("%w (%s)", ErrLoginNeeded, ae.Message)
		}
	}
	return busy, err
}

func (g *Google) fetch(ctx context.Context, from, to time.Time, forceRefresh bool) ([]scheduler.Busy, error) {
	client, err := g.client(ctx, forceRefresh)
	if err != nil {
		return nil, err
	}
	busy, err := g.events(ctx, client, from, to)
	var ae *APIError
	if errors.As(err, &ae) && (ae.Status == http.StatusForbidden || ae.Status == http.StatusNotFound) {
		return g.freeBusy(ctx, client, from, to)
	}
	return busy, err
}

func (g *Google) base() string {
	if g.APIBase == "" {
		return DefaultAPIBase
	}
	return strings.TrimRight(g.APIBase, "/")
}

func (g *Google) calendarID() string {
	if g.CalendarID == "" {
		return "primary"
	}
	return g.CalendarID
}

// client returns an HTTP client that adds the token, refreshing it when it
// expires and saving every new token to the token store.
func (g *Google) client(ctx context.Context, forceRefresh bool) (*http.Client, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.tok == nil {
		t, err := g.Token.Load()
		if err != nil {
			return nil, err
		}
		g.tok = t
	}
	if forceRefresh {
		if g.tok.RefreshToken == "" {
			return nil, ErrLoginNeeded
		}
		t := *g.tok
		t.Expiry = time.Now().Add(-time.Minute)
		t.AccessToken = ""
		g.tok = &t
	}
	base := g.HTTPClient
	if base == nil {
		base = &http.Client{Timeout: 30 * time.Second}
	}
	ctx = context.WithValue(ctx, oauth2.HTTPClient, base)
	ts := &savingSource{g: g, src: g.Client.TokenSource(ctx, g.tok)}
	return &http.Client{Transport: &oauth2.Transport{Source: ts, Base: base.Transport}, Timeout: base.Timeout}, nil
}

// Reset drops the token held in memory (after login or logout).
func (g *Google) Reset() {
	g.mu.Lock()
	g.tok = nil
	g.mu.Unlock()
}

type savingSource struct {
	g   *Google
	src oauth2.TokenSource
}

func (s *savingSource) Token() (*oauth2.Token, error) {
	t, err := s.src.Token()
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && (re.ErrorCode == "invalid_grant" || re.Response != nil && re.Response.StatusCode == http.StatusUnauthorized) {
			return nil, fmt.Errorf("%w (refresh refused: %s)", ErrLoginNeeded, re.ErrorCode)
		}
		return nil, fmt.Errorf("google calendar: refresh the token: %w", err)
	}
	s.g.mu.Lock()
	changed := s.g.tok == nil || s.g.tok.AccessToken != t.AccessToken
	if changed {
		if t.RefreshToken == "" && s.g.tok != nil {
			t.RefreshToken = s.g.tok.RefreshToken
		}
		s.g.tok = t
	}
	s.g.mu.Unlock()
	if changed {
		if err := s.g.Token.Save(t); err != nil {
			return nil, err
		}
	}
	return t, nil
}

type eventTime struct {
	DateTime string `json:"dateTime"`
	Date     string `json:"date"`
	TimeZone string `json:"timeZone"`
}

type event struct {
	Status       string    `json:"status"`
	Summary      string    `json:"summary"`
	Transparency string    `json:"transparency"`
	EventType    string    `json:"eventType"`
	Start        eventTime `json:"start"`
	End          eventTime `json:"end"`
	Attendees    []struct {
		Self           bool   `json:"self"`
		ResponseStatus string `json:"responseStatus"`
	} `json:"attendees"`
}

type eventsPage struct {
	TimeZone      string  `json:"timeZone"`
	Items         []event `json:"items"`
	NextPageToken string  `json:"nextPageToken"`
}

func (g *Google) events(ctx context.Context, client *http.Client, from, to time.Time) ([]scheduler.Busy, error) {
	var out []scheduler.Busy
	page := ""
	for i := 0; i < 20; i++ { // at most 5000 events
		q := url.Values{
			"timeMin": {from.UTC().Format(time.RFC3339)}, "timeMax": {to.UTC().Format(time.RFC3339)},
			"singleEvents": {"true"}, "orderBy": {"startTime"}, "maxResults": {"250"},
			"fields": {"timeZone,nextPageToken,items(status,summary,transparency,eventType,start,end,attendees(self,responseStatus))"},
		}
		if page != "" {
			q.Set("pageToken", page)
		}
		var p eventsPage
		if err := g.do(ctx, client, http.MethodGet, g.base()+"/calendars/"+url.PathEscape(g.calendarID())+"/events?"+q.Encode(), nil, &p); err != nil {
			return nil, err
		}
		loc := g.Location
		if l, err := time.LoadLocation(p.TimeZone); err == nil && p.TimeZone != "" {
			loc = l
		}
		for _, e := range p.Items {
			if b, ok := busyOf(e, loc); ok {
				out = append(out, b)
			}
		}
		if p.NextPageToken == "" {
			return out, nil
		}
		page = p.NextPageToken
	}
	return out, nil
}

// busyOf says whether an event makes the user busy, and when.
func busyOf(e event, loc *time.Location) (scheduler.Busy, bool) {
	if e.Status == "cancelled" || e.Transparency == "transparent" || e.EventType == "workingLocation" || e.EventType == "birthday" {
		return scheduler.Busy{}, false
	}
	for _, a := range e.Attendees {
		if a.Self && a.ResponseStatus == "declined" {
			return scheduler.Busy{}, false
		}
	}
	start, err1 := parseEventTime(e.Start, loc)
	end, err2 := parseEventTime(e.End, loc)
	if err1 != nil || err2 != nil || !end.After(start) {
		return scheduler.Busy{}, false
	}
	summary := e.Summary
	if summary == "" {
		summary = "busy"
	}
	return scheduler.Busy{Start: start, End: end, Summary: summary}, true
}

// parseEventTime reads a timed event's instant, or an all-day event's date
// at midnight in the calendar's zone (not UTC).
func parseEventTime(t eventTime, loc *time.Location) (time.Time, error) {
	if t.DateTime != "" {
		return time.Parse(time.RFC3339, t.DateTime)
	}
	if loc == nil {
		loc = time.Local
	}
	if t.TimeZone != "" {
		if l, err := time.LoadLocation(t.TimeZone); err == nil {
			loc = l
		}
	}
	return time.ParseInLocation("2006-01-02", t.Date, loc)
}

func (g *Google) freeBusy(ctx context.Context, client *http.Client, from, to time.Time) ([]scheduler.Busy, error) {
	req := map[string]any{
		"timeMin": from.UTC().Format(time.RFC3339), "timeMax": to.UTC().Format(time.RFC3339),
		"items": []map[string]string{{"id": g.calendarID()}},
	}
	var resp struct {
		Calendars map[string]struct {
			Busy []struct {
				Start time.Time `json:"start"`
				End   time.Time `json:"end"`
			} `json:"busy"`
			Errors []struct {
				Reason string `json:"reason"`
			} `json:"errors"`
		} `json:"calendars"`
	}
	if err := g.do(ctx, client, http.MethodPost, g.base()+"/freeBusy", req, &resp); err != nil {
		return nil, err
	}
	cal, ok := resp.Calendars[g.calendarID()]
	if !ok {
		return nil, fmt.Errorf("google calendar: free/busy has no calendar %q", g.calendarID())
	}
	if len(cal.Errors) > 0 {
		return nil, fmt.Errorf("google calendar: free/busy for %q: %s", g.calendarID(), cal.Errors[0].Reason)
	}
	out := make([]scheduler.Busy, 0, len(cal.Busy))
	for _, b := range cal.Busy {
		out = append(out, scheduler.Busy{Start: b.Start, End: b.End, Summary: "busy"})
	}
	return out, nil
}

func (g *Google) do(ctx context.Context, client *http.Client, method, u string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, _ := json.Marshal(in)
		body = strings.NewReader(string(b))
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) && errors.Is(ue.Err, ErrLoginNeeded) {
			return ue.Err
		}
		return fmt.Errorf("google calendar: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("google calendar: read the answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		msg := http.StatusText(resp.StatusCode)
		if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		return &APIError{Status: resp.StatusCode, Message: msg}
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return fmt.Errorf("google calendar: bad answer: %w", err)
	}
	return nil
}

var _ scheduler.Fetcher = (*Google)(nil)
