// Package assemble builds the scheduler and its window sources from the
// configuration, for the daemon and for the CLI when no host runs.
package assemble

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/scheduler"
	"github.com/metaclaw-go/metaclaw/host/scheduler/calendar"
	"github.com/metaclaw-go/metaclaw/host/scheduler/ics"
	"github.com/metaclaw-go/metaclaw/host/scheduler/idle"
	"github.com/metaclaw-go/metaclaw/host/scheduler/sleep"
	"github.com/metaclaw-go/metaclaw/host/store"
)

// Options tune Build.
type Options struct {
	Log     zerolog.Logger
	Trainer scheduler.Trainer // nil: scheduler.NoTrainer
	// ReadOnly builds for the CLI without a running host: no idle detector
	// (idleness is the host's to observe), nothing written.
	ReadOnly bool
	Clock    scheduler.Clock
	// IdleDetector overrides idle.Choose (tests).
	IdleDetector idle.Detector
}

// Active says whether the scheduler runs for this config: always in auto
// mode, in rl mode when scheduler.enabled.
func Active(cfg *config.Config) (bool, string) {
	switch {
	case cfg.Mode == "auto":
		return true, ""
	case cfg.Mode == "rl" && cfg.Scheduler.Enabled:
		return true, ""
	case cfg.Mode == "rl":
		return false, "mode rl trains as soon as a batch is ready (set scheduler.enabled to train only in windows)"
	}
	return false, "mode " + cfg.Mode + " does not train"
}

// Build returns the scheduler and a closer for its sources.
func Build(ctx context.Context, cfg *config.Config, st store.Tables, o Options) (*scheduler.Scheduler, io.Closer, error) {
	sc := cfg.Scheduler
	clock := o.Clock
	if clock == nil {
		clock = scheduler.SystemClock{}
	}
	loc, err := sleep.LoadZone(sc.Timezone)
	if err != nil {
		return nil, nil, err
	}
	var sources []scheduler.Source
	var closers closers
	sl, err := sleep.New(sc.SleepStart, sc.SleepEnd, loc)
	if err != nil {
		return nil, nil, err
	}
	sources = append(sources, sl)

	idleLabel := "none (the host is not running)"
	if !o.ReadOnly {
		det, note := o.IdleDetector, ""
		if det == nil {
			det, note = idle.Choose(ctx, sc.IdleSource)
		}
		if note != "" {
			o.Log.Info().Str("why", note).Msg("scheduler: no input idle detector; idle means no proxy traffic")
		}
		is := idle.NewSource(time.Duration(sc.IdleThresholdMinutes)*time.Minute, det, note, clock.Now())
		sources = append(sources, is)
		closers = append(closers, is)
		idleLabel = is.Label()
	}

	cache := &scheduler.BusyCache{W: st.Writer(), R: st.Reader()}
	calOpts := func(name string, f scheduler.Fetcher) scheduler.CalendarOptions {
		return scheduler.CalendarOptions{Name: name, Fetcher: f, Refresh: time.Duration(sc.Calendar.RefreshMinutes) * time.Minute,
			Cache: cache, Clock: clock, Log: o.Log, Location: loc}
	}
	if sc.Calendar.Enabled {
		var f scheduler.Fetcher
		client, err := calendar.LoadClient(sc.Calendar.CredentialsPath)
		var tokens calendar.TokenStore
		if err == nil {
			tokens, err = calendar.OpenTokenStore(ctx, sc.Calendar.TokenStore, sc.Calendar.TokenPath, 30*time.Second)
		}
		if err != nil {
			f = failing{err}
		} else {
			f = &reloadingGoogle{Google: &calendar.Google{APIBase: sc.Calendar.APIBase, CalendarID: sc.Calendar.CalendarID, Client: client,
				Token: tokens, Location: loc}}
		}
		sources = append(sources, &reloadSource{scheduler.NewCalendarSource(ctx, calOpts("calendar", f)), f})
	}
	if sc.Calendar.ICSURL != "" {
		var f scheduler.Fetcher = &ics.Fetcher{URL: sc.Calendar.ICSURL, Location: loc}
		if err := checkICSURL(sc.Calendar.ICSURL); err != nil {
			f = failing{err}
		}
		sources = append(sources, scheduler.NewCalendarSource(ctx, calOpts("ics", f)))
	}
	var stateStore scheduler.StateStore = scheduler.SQLStore{W: st.Writer(), R: st.Reader()}
	s, err := scheduler.New(ctx, scheduler.Options{
		Clock: clock, Sources: sources, Trainer: o.Trainer, Store: stateStore, Log: o.Log, ReadOnly: o.ReadOnly,
		MinWindow:   time.Duration(sc.MinWindowMinutes) * time.Minute,
		ReturnGrace: time.Duration(sc.ReturnGraceMinutes) * time.Minute,
		IdleSource:  idleLabel,
	})
	if err != nil {
		closers.Close()
		return nil, nil, err
	}
	return s, closers, nil
}

func checkICSURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http" && u.Scheme != "webcal") {
		// The value may hold a token: do not repeat it.
		return errors.New("scheduler.calendar.ics_url must be an https:// or webcal:// URL of a published calendar; fix it with `metaclaw config set scheduler.calendar.ics_url <url>`")
	}
	return nil
}

// failing is a calendar that cannot be read; status shows why.
type failing struct{ err error }

func (f failing) Fetch(context.Context, time.Time, time.Time) ([]scheduler.Busy, error) {
	return nil, f.err
}

// reloadingGoogle drops its in-memory token on Reload, so a new login (or
// a logout) is picked up.
type reloadingGoogle struct{ *calendar.Google }

// reloadSource resets the fetcher's token before refetching.
type reloadSource struct {
	*scheduler.CalendarSource
	f scheduler.Fetcher
}

func (r *reloadSource) Reload() {
	if g, ok := r.f.(*reloadingGoogle); ok {
		g.Reset()
	}
	r.CalendarSource.Reload()
}

type closers []io.Closer

func (c closers) Close() error {
	var errs []error
	for _, x := range c {
		errs = append(errs, x.Close())
	}
	return errors.Join(errs...)
}

// Describe is a one-line summary of the configured sources, for messages.
func Describe(cfg *config.Config) string {
	sc := cfg.Scheduler
	s := fmt.Sprintf("sleep %s–%s", sc.SleepStart, sc.SleepEnd)
	if sc.IdleThresholdMinutes > 0 {
		s += fmt.Sprintf(", idle %dm", sc.IdleThresholdMinutes)
	}
	if sc.Calendar.Enabled {
		s += ", google calendar"
	}
	if sc.Calendar.ICSURL != "" {
		s += ", ics"
	}
	return s
}
