// Package sleep is the scheduler's sleep-hours window: every night from
// scheduler.sleep_start to scheduler.sleep_end in scheduler.timezone,
// crossing midnight and DST changes correctly (a window is bounded by the
// wall-clock times, so it lasts an hour less or more on the nights the
// clocks change).
package sleep

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/metaclaw-go/metaclaw/host/scheduler"
)

// Source is the sleep-hours source.
type Source struct {
	loc                *time.Location
	startMin, endMin   int // minutes after midnight
	startText, endText string
}

// New builds the source for "HH:MM" start and end in loc (nil = local).
// Equal start and end disable it (it never opens).
func New(start, end string, loc *time.Location) (*Source, error) {
	if loc == nil {
		loc = time.Local
	}
	s := &Source{loc: loc, startText: start, endText: end}
	var err error
	if s.startMin, err = parseHHMM(start); err != nil {
		return nil, fmt.Errorf("scheduler.sleep_start: %w", err)
	}
	if s.endMin, err = parseHHMM(end); err != nil {
		return nil, fmt.Errorf("scheduler.sleep_end: %w", err)
	}
	return s, nil
}

// LoadZone resolves scheduler.timezone: "" or "local" is the system zone.
func LoadZone(name string) (*time.Location, error) {
	if name == "" || strings.EqualFold(name, "local") {
		return time.Local, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("scheduler.timezone: unknown time zone %q (use an IANA name such as Europe/Berlin, or leave it empty for the system zone): %w", name, err)
	}
	return loc, nil
}

func parseHHMM(s string) (int, error) {
	h, m, ok := strings.Cut(strings.TrimSpace(s), ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if !ok || err1 != nil || err2 != nil || hh < 0 || hh > 23 || mm < 0 || mm > 59 || len(m) != 2 {
		return 0, fmt.Errorf("want HH:MM (00:00 to 23:59), got %q", s)
	}
	return hh*60 + mm, nil
}

// Name implements scheduler.Source.
func (s *Source) Name() string { return "sleep" }

func (s *Source) label() string {
	zone := s.loc.String()
	if zone == "Local" {
		zone, _ = time.Now().In(s.loc).Zone()
	}
	return fmt.Sprintf("sleep hours %s–%s (%s)", s.startText, s.endText, zone)
}

// Check implements scheduler.Source.
func (s *Source) Check(now time.Time) scheduler.Verdict {
	if s.startMin == s.endMin {
		return scheduler.Verdict{Reason: "sleep hours disabled (scheduler.sleep_start equals sleep_end)"}
	}
	v := scheduler.Verdict{}
	day := dateOf(now.In(s.loc))
	for off := -1; off <= 2; off++ {
		st, en := s.interval(day.AddDate(0, 0, off))
		switch {
		case !now.Before(st) && now.Before(en):
			v.Open, v.Until = true, en
			v.Reason = fmt.Sprintf("%s, until %s", s.label(), en.In(s.loc).Format("15:04"))
		case st.After(now) && len(v.Upcoming) < 2:
			v.Upcoming = append(v.Upcoming, scheduler.Span{Start: st, End: en, Reason: s.label()})
		}
	}
	if !v.Open {
		next := "?"
		if len(v.Upcoming) > 0 {
			next = v.Upcoming[0].Start.In(s.loc).Format("15:04")
		}
		v.Reason = fmt.Sprintf("sleep hours start at %s", next)
	}
	return v
}

// interval is the night that starts on day (a date at midnight UTC used as a
// calendar date).
func (s *Source) interval(day time.Time) (time.Time, time.Time) {
	start := wall(day, s.startMin, s.loc)
	endDay := day
	if s.endMin <= s.startMin {
		endDay = day.AddDate(0, 0, 1)
	}
	return start, wall(endDay, s.endMin, s.loc)
}

func dateOf(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
}

// wall is the first instant at which the clock in loc reads `minutes` on
// that date. A time skipped by a spring-forward change happens when the
// clocks jump past it; a time repeated by a fall-back change is its first
// occurrence.
func wall(day time.Time, minutes int, loc *time.Location) time.Time {
	y, mo, d := day.Date()
	target := time.Date(y, mo, d, minutes/60, minutes%60, 0, 0, time.UTC) // the wall reading, as a comparable value
	reads := func(t time.Time) time.Time {
		l := t.In(loc)
		return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
	}
	t := time.Date(y, mo, d, minutes/60, minutes%60, 0, 0, loc)
	if !reads(t).Equal(target) {
		// Skipped: search the first instant whose reading is at or after it.
		lo, hi := t.Add(-3*time.Hour), t.Add(3*time.Hour)
		for hi.Sub(lo) > time.Second {
			mid := lo.Add(hi.Sub(lo) / 2)
			if reads(mid).Before(target) {
				lo = mid
			} else {
				hi = mid
			}
		}
		return hi.Truncate(time.Second)
	}
	// Repeated: prefer the earlier occurrence.
	for _, back := range []time.Duration{time.Hour, 30 * time.Minute, 2 * time.Hour} {
		if e := t.Add(-back); reads(e).Equal(target) {
			return e
		}
	}
	return t
}

var _ scheduler.Source = (*Source)(nil)
