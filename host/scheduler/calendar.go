package scheduler

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// Busy is one interval during which a calendar says the user is busy
// elsewhere (a meeting, a trip): away from the agent.
type Busy struct {
	Start, End time.Time
	Summary    string
}

// Fetcher reads the busy intervals of one calendar in [from, to).
type Fetcher interface {
	Fetch(ctx context.Context, from, to time.Time) ([]Busy, error)
}

// Runner is implemented by sources with background work (calendar
// refreshes); Scheduler.Run starts it.
type Runner interface {
	Run(ctx context.Context)
}

// CalendarOptions configure a CalendarSource.
type CalendarOptions struct {
	Name      string // "calendar" (Google) or "ics"
	Fetcher   Fetcher
	Refresh   time.Duration // between fetches; default 15 minutes
	Lookahead time.Duration // how far ahead to fetch; default 36 hours
	Cache     *BusyCache    // persisted intervals; nil = memory only
	Clock     Clock
	Log       zerolog.Logger
	// Location renders times in reasons.
	Location *time.Location
}

// CalendarSource opens a window while the calendar says the user is busy.
// It fetches ahead on a schedule (and when asked to reload), keeps the last
// good answer in memory and in the store, and answers Check from it: a
// window check never waits on the network, and an offline host keeps using
// what it fetched last.
type CalendarSource struct {
	o      CalendarOptions
	wake   chan struct{}
	reload chan struct{}

	mu        sync.Mutex
	busy      []Busy // merged, sorted
	fetchedAt time.Time
	err       error
}

// NewCalendarSource loads the cached intervals; Run fetches.
func NewCalendarSource(ctx context.Context, o CalendarOptions) *CalendarSource {
	if o.Refresh <= 0 {
		o.Refresh = 15 * time.Minute
	}
	if o.Lookahead <= 0 {
		o.Lookahead = 36 * time.Hour
	}
	if o.Clock == nil {
		o.Clock = SystemClock{}
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	c := &CalendarSource{o: o, wake: make(chan struct{}, 1), reload: make(chan struct{}, 1)}
	if o.Cache != nil {
		busy, at, errText, err := o.Cache.Load(ctx, o.Name)
		if err != nil {
			o.Log.Warn().Err(err).Str("source", o.Name).Msg("scheduler: read cached calendar")
		}
		c.busy, c.fetchedAt = merge(busy), at
		if errText != "" {
			c.err = fmt.Errorf("%s", errText)
		}
	}
	return c
}

// Name implements Source.
func (c *CalendarSource) Name() string { return c.o.Name }

// Wake implements Waker: it fires after each fetch that changed the intervals.
func (c *CalendarSource) Wake() <-chan struct{} { return c.wake }

// Reload implements Reloader: fetch now (after a login or logout).
func (c *CalendarSource) Reload() {
	select {
	case c.reload <- struct{}{}:
	default:
	}
}

// Run fetches now and then every Refresh; a failure is retried sooner
// (1, 2, 4 … minutes, at most Refresh) and keeps the last good intervals.
func (c *CalendarSource) Run(ctx context.Context) {
	retry := time.Minute
	for {
		wait := c.o.Refresh
		if err := c.FetchNow(ctx); err != nil {
			c.o.Log.Warn().Err(err).Str("source", c.o.Name).Dur("retry_in", retry).Msg("scheduler: calendar fetch failed; using the cached intervals")
			wait = min(retry, c.o.Refresh)
			retry *= 2
		} else {
			retry = time.Minute
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		case <-c.reload:
			t.Stop()
		}
	}
}

// FetchNow fetches once and updates the cache.
func (c *CalendarSource) FetchNow(ctx context.Context) error {
	now := c.o.Clock.Now()
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	busy, err := c.o.Fetcher.Fetch(fctx, now.Add(-12*time.Hour), now.Add(c.o.Lookahead))
	if err != nil {
		c.mu.Lock()
		c.err = err
		c.mu.Unlock()
		if c.o.Cache != nil {
			_ = c.o.Cache.SaveError(ctx, c.o.Name, err.Error(), now)
		}
		return err
	}
	merged := merge(busy)
	c.mu.Lock()
	changed := !sameBusy(c.busy, merged)
	c.busy, c.fetchedAt, c.err = merged, now, nil
	c.mu.Unlock()
	if c.o.Cache != nil {
		if err := c.o.Cache.Save(ctx, c.o.Name, merged, now); err != nil {
			c.o.Log.Warn().Err(err).Msg("scheduler: cache calendar")
		}
	}
	c.o.Log.Debug().Str("source", c.o.Name).Int("busy", len(merged)).Msg("scheduler: calendar fetched")
	if changed {
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
	return nil
}

// Check implements Source.
func (c *CalendarSource) Check(now time.Time) Verdict {
	c.mu.Lock()
	busy, at, err := c.busy, c.fetchedAt, c.err
	c.mu.Unlock()
	v := Verdict{}
	if err != nil {
		v.Error = err.Error()
	}
	for _, b := range busy {
		switch {
		case !now.Before(b.Start) && now.Before(b.End):
			v.Open, v.Until = true, b.End
			v.Reason = fmt.Sprintf("%s: busy (%s) until %s", c.o.Name, b.Summary, b.End.In(c.o.Location).Format("15:04"))
		case b.Start.After(now) && len(v.Upcoming) < 3:
			v.Upcoming = append(v.Upcoming, Span{Start: b.Start, End: b.End, Reason: c.o.Name + ": " + b.Summary})
		}
	}
	if !v.Open {
		switch {
		case at.IsZero() && err != nil:
			v.Reason = c.o.Name + ": not fetched yet (" + textclip.Ellipsis(err.Error(), 120) + ")"
		case at.IsZero():
			v.Reason = c.o.Name + ": not fetched yet"
		case len(v.Upcoming) > 0:
			v.Reason = fmt.Sprintf("%s: free now, next busy at %s", c.o.Name, v.Upcoming[0].Start.In(c.o.Location).Format("Mon 15:04"))
		default:
			v.Reason = c.o.Name + ": free, nothing busy ahead"
		}
	}
	return v
}

// merge sorts intervals and joins overlapping or touching ones (back-to-back
// meetings are one window).
func merge(in []Busy) []Busy {
	var bs []Busy
	for _, b := range in {
		if b.End.After(b.Start) {
			bs = append(bs, b)
		}
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].Start.Before(bs[j].Start) })
	var out []Busy
	for _, b := range bs {
		if n := len(out); n > 0 && !b.Start.After(out[n-1].End) {
			last := &out[n-1]
			if b.End.After(last.End) {
				last.End = b.End
			}
			if b.Summary != "" && !strings.Contains(last.Summary, b.Summary) {
				last.Summary = strings.TrimPrefix(last.Summary+", "+b.Summary, ", ")
			}
			continue
		}
		out = append(out, b)
	}
	return out
}

func sameBusy(a, b []Busy) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !a[i].Start.Equal(b[i].Start) || !a[i].End.Equal(b[i].End) || a[i].Summary != b[i].Summary {
			return false
		}
	}
	return true
}

// BusyCache persists fetched intervals in the store (tables calendar_busy
// and calendar_fetch), so a restart or the CLI sees them without fetching.
type BusyCache struct {
	W, R *sql.DB
}

// Save replaces a source's intervals.
func (b *BusyCache) Save(ctx context.Context, source string, busy []Busy, at time.Time) error {
	tx, err := b.W.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cache calendar: %w", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `DELETE FROM calendar_busy WHERE source = ?`, source); err != nil {
		return fmt.Errorf("cache calendar: %w", err)
	}
	for _, x := range busy {
		if _, err := tx.ExecContext(ctx, `INSERT INTO calendar_busy (source, start, end, summary) VALUES (?, ?, ?, ?)`, source, msOf(x.Start), msOf(x.End), x.Summary); err != nil {
			return fmt.Errorf("cache calendar: %w", err)
		}
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO calendar_fetch (source, fetched_at, tried_at, error) VALUES (?, ?, ?, '')
ON CONFLICT(source) DO UPDATE SET fetched_at = excluded.fetched_at, tried_at = excluded.tried_at, error = ''`, source, msOf(at), msOf(at)); err != nil {
		return fmt.Errorf("cache calendar: %w", err)
	}
	return tx.Commit()
}

// SaveError records a failed fetch (the intervals are kept).
func (b *BusyCache) SaveError(ctx context.Context, source, errText string, at time.Time) error {
	_, err := b.W.ExecContext(ctx, `INSERT INTO calendar_fetch (source, tried_at, error) VALUES (?, ?, ?)
ON CONFLICT(source) DO UPDATE SET tried_at = excluded.tried_at, error = excluded.error`, source, msOf(at), errText)
	return err
}

// Clear forgets a source's intervals (calendar logout).
func (b *BusyCache) Clear(ctx context.Context, source string) error {
	if _, err := b.W.ExecContext(ctx, `DELETE FROM calendar_busy WHERE source = ?`, source); err != nil {
		return err
	}
	_, err := b.W.ExecContext(ctx, `DELETE FROM calendar_fetch WHERE source = ?`, source)
	return err
}

// Load returns a source's cached intervals, when they were fetched, and
// the last error.
func (b *BusyCache) Load(ctx context.Context, source string) ([]Busy, time.Time, string, error) {
	rows, err := b.R.QueryContext(ctx, `SELECT start, end, summary FROM calendar_busy WHERE source = ? ORDER BY start`, source)
	if err != nil {
		return nil, time.Time{}, "", fmt.Errorf("read cached calendar: %w", err)
	}
	defer rows.Close()
	var out []Busy
	for rows.Next() {
		var s, e int64
		var x Busy
		if err := rows.Scan(&s, &e, &x.Summary); err != nil {
			return nil, time.Time{}, "", err
		}
		x.Start, x.End = timeOf(s), timeOf(e)
		out = append(out, x)
	}
	if err := rows.Err(); err != nil {
		return nil, time.Time{}, "", err
	}
	var at int64
	var errText string
	err = b.R.QueryRowContext(ctx, `SELECT fetched_at, error FROM calendar_fetch WHERE source = ?`, source).Scan(&at, &errText)
	if err != nil && err != sql.ErrNoRows {
		return nil, time.Time{}, "", err
	}
	return out, timeOf(at), errText, nil
}
