package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/scheduler"
	"github.com/metaclaw-go/metaclaw/host/scheduler/assemble"
	"github.com/metaclaw-go/metaclaw/host/scheduler/calendar"
)

func newSchedulerCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "When auto mode trains: windows (sleep hours, idle, calendar), state, pause and resume",
		Long: `The scheduler lets the model train only while you are away: during sleep hours
(scheduler.sleep_start/sleep_end), after scheduler.idle_threshold_minutes without
input or requests, and during busy calendar events; it steps aside when you return.
While the host runs these commands use its API; otherwise they read the store.`,
	}
	cmd.AddCommand(newSchedulerStatusCmd(), newSchedulerNextCmd(), newSchedulerPauseCmd(), newSchedulerResumeCmd(), newCalendarCmd())
	return cmd
}

// offlineScheduler builds a read-only scheduler over the store for a host
// that is not running.
func offlineScheduler(ctx context.Context) (*scheduler.Scheduler, *config.Config, func(), error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, nil, nil, err
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	s, closer, err := assemble.Build(ctx, cfg, st, assemble.Options{ReadOnly: true})
	if err != nil {
		st.Close()
		return nil, nil, nil, err
	}
	return s, cfg, func() { closer.Close(); st.Close() }, nil
}

func schedulerStatus(ctx context.Context) (scheduler.Status, bool, error) {
	if api := runningHost(); api != nil {
		var st scheduler.Status
		err := api.call(ctx, http.MethodGet, "/v1/scheduler?transitions=10", nil, &st)
		return st, true, err
	}
	s, cfg, done, err := offlineScheduler(ctx)
	if err != nil {
		return scheduler.Status{}, false, err
	}
	defer done()
	if on, why := assemble.Active(cfg); !on {
		return scheduler.Off(why), false, nil
	}
	return s.Snapshot(ctx, 10), false, nil
}

func newSchedulerStatusCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "State, why, the open or next window, sources, last step and recent transitions",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, running, err := schedulerStatus(cmd.Context())
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			w := cmd.OutOrStdout()
			if !running {
				fmt.Fprintln(w, "(metaclaw is not running: state as last stored, windows from config and cached calendars)")
			}
			printScheduler(w, "", st)
			if len(st.Sources) > 0 {
				fmt.Fprintln(w, "sources:")
				for _, s := range st.Sources {
					line := fmt.Sprintf("  %-9s %s", s.Name, s.Reason)
					if s.Error != "" {
						line += " [error: " + s.Error + "]"
					}
					fmt.Fprintln(w, line)
				}
			}
			if len(st.Transitions) > 0 {
				fmt.Fprintln(w, "recent transitions:")
				for _, t := range st.Transitions {
					fmt.Fprintf(w, "  %s  %s → %s: %s\n", t.At.Local().Format("01-02 15:04:05"), t.From, t.To, t.Reason)
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the scheduler object of docs/status.md)")
	return cmd
}

// printScheduler prints the scheduler lines of `metaclaw status` and
// `metaclaw scheduler status`.
func printScheduler(w io.Writer, indent string, st scheduler.Status) {
	if !st.Enabled {
		fmt.Fprintf(w, "%sscheduler off: %s\n", indent, st.Reason)
		return
	}
	fmt.Fprintf(w, "%sscheduler %s since %s: %s\n", indent, st.State, st.Since.Local().Format("01-02 15:04"), st.Reason)
	fmt.Fprintf(w, "%s  now     %s\n", indent, st.Now)
	if st.Window != nil {
		until := "until the user returns"
		if !st.Window.Until.IsZero() {
			until = "until " + st.Window.Until.Local().Format("01-02 15:04")
		}
		fmt.Fprintf(w, "%s  window  open %s (%s)\n", indent, until, st.Window.Reason)
	} else if st.NextWindow != nil {
		fmt.Fprintf(w, "%s  next    %s\n", indent, spanText(*st.NextWindow))
	}
	if st.Paused {
		fmt.Fprintf(w, "%s  paused  by the user (metaclaw scheduler resume)\n", indent)
	}
	fmt.Fprintf(w, "%s  idle    %s\n", indent, st.IdleSource)
	trainer := st.Trainer
	if st.TrainerNote != "" {
		trainer += ": " + st.TrainerNote
	}
	fmt.Fprintf(w, "%s  trainer %s\n", indent, trainer)
	if st.LastStep != nil {
		fmt.Fprintf(w, "%s  last    step %d at %s, %d samples, %.1fs (average %.1fs over %d steps), loss %.4g\n", indent,
			st.LastStep.Step, st.LastStep.At.Local().Format("01-02 15:04"), st.LastStep.Samples, st.LastStep.DurationSeconds, st.StepAvgSeconds, st.Steps, st.LastStep.Loss)
	}
}

func spanText(s scheduler.Span) string {
	t := s.Start.Local().Format("Mon 01-02 15:04")
	if !s.End.IsZero() {
		t += " – " + s.End.Local().Format("15:04") + fmt.Sprintf(" (%s)", s.End.Sub(s.Start).Round(time.Minute))
	}
	return t + ": " + s.Reason
}

func newSchedulerNextCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "next-window",
		Short: "When the next training window is expected",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, _, err := schedulerStatus(cmd.Context())
			if err != nil {
				return err
			}
			ans := scheduler.NextWindowAnswer{Now: st.Now, Window: st.Window, NextWindow: st.NextWindow, Paused: st.Paused}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), ans)
			}
			w := cmd.OutOrStdout()
			switch {
			case !st.Enabled:
				fmt.Fprintf(w, "no windows: %s\n", st.Reason)
			case ans.Window != nil:
				fmt.Fprintf(w, "a window is open now: %s\n", ans.Window.Reason)
			case ans.NextWindow != nil:
				fmt.Fprintf(w, "next window: %s\n", spanText(*ans.NextWindow))
			default:
				fmt.Fprintf(w, "no window expected (%s)\n", ans.Now)
			}
			if ans.Paused {
				fmt.Fprintln(w, "the scheduler is paused: no window opens until `metaclaw scheduler resume`")
			}
			return nil
		},
	}
	jsonFlag(cmd, &asJSON)
	return cmd
}

func newSchedulerPauseCmd() *cobra.Command {
	var dur time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "pause",
		Short: "Hold training: close an open window and open none until resume (or --for)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dur < 0 {
				return fmt.Errorf("--for must be positive, e.g. --for 2h")
			}
			st, err := pauseOrResume(cmd.Context(), true, dur)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			if st.PausedUntil != nil {
				fmt.Fprintf(cmd.OutOrStdout(), "scheduler paused until %s\n", st.PausedUntil.Local().Format("01-02 15:04"))
			} else {
				fmt.Fprintln(cmd.OutOrStdout(), "scheduler paused until `metaclaw scheduler resume`")
			}
			return nil
		},
	}
	cmd.Flags().DurationVar(&dur, "for", 0, "pause for this long (e.g. 2h); default until resumed")
	jsonFlag(cmd, &asJSON)
	return cmd
}

func newSchedulerResumeCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "resume",
		Short: "Lift a pause: windows open again",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := pauseOrResume(cmd.Context(), false, 0)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			fmt.Fprintln(cmd.OutOrStdout(), "scheduler resumed: "+st.Now)
			return nil
		},
	}
	jsonFlag(cmd, &asJSON)
	return cmd
}

func pauseOrResume(ctx context.Context, pause bool, dur time.Duration) (scheduler.Status, error) {
	var st scheduler.Status
	if api := runningHost(); api != nil {
		if pause {
			return st, api.call(ctx, http.MethodPost, "/v1/scheduler/pause", scheduler.PauseRequest{ForSeconds: dur.Seconds()}, &st)
		}
		return st, api.call(ctx, http.MethodPost, "/v1/scheduler/resume", struct{}{}, &st)
	}
	s, _, done, err := offlineScheduler(ctx)
	if err != nil {
		return st, err
	}
	defer done()
	if pause {
		until := time.Time{}
		if dur > 0 {
			until = time.Now().Add(dur)
		}
		err = s.Pause(ctx, until)
	} else {
		err = s.Resume(ctx)
	}
	return s.Snapshot(ctx, 5), err
}

func newCalendarCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "calendar", Short: "Google Calendar login for calendar windows"}
	var noBrowser bool
	login := &cobra.Command{
		Use:   "login",
		Short: "Allow MetaClaw to read your Google Calendar (OAuth, read-only)",
		Long: `Runs Google's sign-in for installed apps: a consent page in your browser
redirects to a one-time listener on 127.0.0.1 (PKCE-protected). The token is saved
in the OS keyring when there is one (scheduler.calendar.token_store auto), else to
scheduler.calendar.token_path with mode 0600, and refreshed automatically.
Needs scheduler.calendar.credentials_path: the JSON of an OAuth client of type
"Desktop app" from the Google Cloud console (Calendar API enabled).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig()
			if err != nil {
				return err
			}
			client, err := calendar.LoadClient(cfg.Scheduler.Calendar.CredentialsPath)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			opts := calendar.LoginOptions{Client: client, Out: out}
			if !noBrowser {
				opts.Open = openBrowser
			}
			tok, err := calendar.Login(cmd.Context(), opts)
			if err != nil {
				return err
			}
			tokens, err := calendar.OpenTokenStore(cmd.Context(), cfg.Scheduler.Calendar.TokenStore, cfg.Scheduler.Calendar.TokenPath, 2*time.Minute)
			if err != nil {
				return err
			}
			if err := tokens.Save(tok); err != nil {
				return err
			}
			fmt.Fprintf(out, "logged in: token saved in %s\n", tokens.Where())
			if !cfg.Scheduler.Calendar.Enabled {
				fmt.Fprintln(out, "calendar windows are off: turn them on with `metaclaw config set scheduler.calendar.enabled true` (and restart the host)")
			}
			if api := runningHost(); api != nil {
				_ = api.call(cmd.Context(), http.MethodPost, "/v1/scheduler/calendar/reload", struct{}{}, nil)
			}
			return nil
		},
	}
	login.Flags().BoolVar(&noBrowser, "no-browser", false, "only print the consent URL (open it yourself, on this machine)")
	logout := &cobra.Command{
		Use:   "logout",
		Short: "Revoke the calendar grant at Google, delete the token and the cached events",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig()
			if err != nil {
				return err
			}
			h := cfg.Home
			return calendarLogout(cmd.Context(), cmd.OutOrStdout(), h, cfg)
		},
	}
	cmd.AddCommand(login, logout)
	return cmd
}

// openBrowser opens url with the desktop's opener ($BROWSER first).
func openBrowser(url string) error {
	var name string
	var args []string
	switch {
	case strings.TrimSpace(os.Getenv("BROWSER")) != "":
		name = strings.TrimSpace(os.Getenv("BROWSER"))
	case runtime.GOOS == "darwin":
		name = "open"
	case runtime.GOOS == "windows":
		name, args = "rundll32", []string{"url.dll,FileProtocolHandler"}
	default:
		name = "xdg-open"
	}
	c := exec.Command(name, append(args, url)...)
	if err := c.Start(); err != nil {
		return err
	}
	go c.Wait()
	return nil
}
