// Package ics reads a published iCalendar (ICS) URL for the scheduler: any
// calendar that offers one (Google's secret address, Outlook, Fastmail,
// Nextcloud …). Busy events open training windows, like Google Calendar's.
// Parsing and recurrence (RRULE, RDATE, EXDATE, RECURRENCE-ID overrides)
// use github.com/emersion/go-ical and its rrule-go.
package ics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/emersion/go-ical"

	"github.com/metaclaw-go/metaclaw/host/scheduler"
)

// MaxBytes bounds a calendar file.
const MaxBytes = 16 << 20

// maxIntervals bounds the expansion of a hostile or broken recurrence.
const maxIntervals = 10000

// Fetcher downloads and expands one ICS URL.
type Fetcher struct {
	URL      string
	Location *time.Location // floating times and all-day events; nil = local
	Client   *http.Client   // nil = 30 s timeout
}

// Fetch implements scheduler.Fetcher.
func (f *Fetcher) Fetch(ctx context.Context, from, to time.Time) ([]scheduler.Busy, error) {
	u := f.URL
	if rest, ok := strings.CutPrefix(u, "webcal://"); ok {
		u = "https://" + rest
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("ics: scheduler.calendar.ics_url: %w", err)
	}
	req.Header.Set("Accept", "text/calendar")
	c := f.Client
	if c == nil {
		c = &http.Client{Timeout: 30 * time.Second}
	}
	resp, err := c.Do(req)
	if err != nil {
		// The URL often carries a secret token: name only its host.
		return nil, fmt.Errorf("ics: fetch from %s: %w", req.URL.Host, unwrapURL(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("ics: %s answered HTTP %d", req.URL.Host, resp.StatusCode)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("ics: read from %s: %w", req.URL.Host, err)
	}
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("ics: the calendar at %s is larger than %d MiB", req.URL.Host, MaxBytes>>20)
	}
	return Parse(data, from, to, f.Location)
}

// unwrapURL drops the *url.Error around a transport error: its text
// carries the whole URL, secret token included.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// Parse returns the busy intervals of an ICS document that overlap
// [from, to): confirmed or tentative opaque events, recurring ones expanded.
func Parse(data []byte, from, to time.Time, loc *time.Location) (out []scheduler.Busy, err error) {
	// The decoder panics on some malformed lines (found by FuzzParse): a
	// bad calendar is an error, never a crash of the host.
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("ics: malformed calendar (%v)", r)
		}
	}()
	if loc == nil {
		loc = time.Local
	}
	cal, err := ical.NewDecoder(strings.NewReader(string(data))).Decode()
	if err != nil {
		return nil, fmt.Errorf("ics: not an iCalendar file: %w", err)
	}
	events := cal.Events()
	// Overrides of single occurrences (RECURRENCE-ID) replace them.
	overridden := map[string]map[int64]bool{}
	for _, e := range events {
		if rid := e.Props.Get(ical.PropRecurrenceID); rid != nil {
			t, err := rid.DateTime(loc)
			if err != nil {
				continue
			}
			uid := propText(e, ical.PropUID)
			if overridden[uid] == nil {
				overridden[uid] = map[int64]bool{}
			}
			overridden[uid][t.Unix()] = true
		}
	}

	var bad int
	for _, e := range events {
		if !busy(e) {
			continue
		}
		start, err := e.DateTimeStart(loc)
		if err != nil {
			bad++
			continue
		}
		end, err := e.DateTimeEnd(loc)
		if err != nil || end.IsZero() {
			bad++
			continue
		}
		dur := end.Sub(start)
		if dur <= 0 {
			continue
		}
		summary := propText(e, ical.PropSummary)
		if summary == "" {
			summary = "busy"
		}
		add := func(s time.Time) {
			if len(out) < maxIntervals && s.Before(to) && s.Add(dur).After(from) {
				out = append(out, scheduler.Busy{Start: s, End: s.Add(dur), Summary: summary})
			}
		}
		if e.Props.Get(ical.PropRecurrenceID) != nil || e.Props.Get(ical.PropRecurrenceRule) == nil && len(e.Props.Values(ical.PropRecurrenceDates)) == 0 {
			add(start)
			continue
		}
		set, err := e.RecurrenceSet(loc)
		if err != nil {
			bad++
			continue
		}
		skip := overridden[propText(e, ical.PropUID)]
		var starts []time.Time
		if set != nil {
			starts = set.Between(from.Add(-dur), to, true)
		} else {
			starts = []time.Time{start}
		}
		// RDATEs (extra occurrences) are added here: the library's set misses them.
		for _, p := range e.Props.Values(ical.PropRecurrenceDates) {
			for _, v := range strings.Split(p.Value, ",") {
				q := p
				q.Value = v
				if t, err := q.DateTime(loc); err == nil {
					starts = append(starts, t)
				}
			}
		}
		excluded := map[int64]bool{}
		for _, p := range e.Props.Values(ical.PropExceptionDates) {
			for _, v := range strings.Split(p.Value, ",") {
				q := p
				q.Value = v
				if t, err := q.DateTime(loc); err == nil {
					excluded[t.Unix()] = true
				}
			}
		}
		for _, s := range starts {
			if !skip[s.Unix()] && !excluded[s.Unix()] {
				add(s)
			}
		}
	}
	if len(out) == 0 && bad > 0 {
		return nil, errors.New("ics: no event could be read (unknown time zones or malformed dates)")
	}
	return out, nil
}

func busy(e ical.Event) bool {
	if strings.EqualFold(propText(e, ical.PropStatus), "CANCELLED") {
		return false
	}
	return !strings.EqualFold(propText(e, ical.PropTransparency), "TRANSPARENT")
}

func propText(e ical.Event, name string) string {
	p := e.Props.Get(name)
	if p == nil {
		return ""
	}
	s, err := p.Text()
	if err != nil {
		return p.Value
	}
	return s
}

var _ scheduler.Fetcher = (*Fetcher)(nil)
