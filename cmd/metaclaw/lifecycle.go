package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/daemon"
)

func newStartCmd() *cobra.Command {
	var foreground, child bool
	var mode string
	var port int
	cmd := &cobra.Command{
		Use:   "start",
		Short: "Start the host (proxy, store, learning core)",
		Long: `Start the MetaClaw host. By default it detaches, holds a lock so that only one
host runs per state dir, and returns once /healthz answers. --foreground stays
attached (Ctrl-C stops it gracefully).

When the host already runs, start says so and exits 0 (scripts can call it
unconditionally); the running host keeps its config until it is restarted.
With --foreground it exits 1 instead (a service manager must not think it
started a second host).

Without a config file it starts on defaults (127.0.0.1:30000) and takes the
upstream from OPENAI_API_KEY/OPENAI_BASE_URL or ANTHROPIC_API_KEY/ANTHROPIC_BASE_URL.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig()
			if err != nil {
				return withConfigFix(err)
			}
			h := cfg.Home
			if cmd.Flags().Changed("mode") {
				cfg.Mode = mode
			}
			if cmd.Flags().Changed("port") {
				cfg.Proxy.Port = port
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			if foreground {
				if !child {
					for _, w := range cfg.Warnings {
						fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
					}
				}
				err := daemon.Run(context.Background(), cfg, daemon.RunOptions{Detached: child})
				var already *daemon.AlreadyRunningError
				if errors.As(err, &already) {
					return fmt.Errorf("%w; `metaclaw stop` stops it", err)
				}
				return err
			}
			var args []string
			if cmd.Flags().Changed("mode") {
				args = append(args, "--mode", mode)
			}
			if cmd.Flags().Changed("port") {
				args = append(args, "--port", strconv.Itoa(port))
			}
			info, err := daemon.Start(daemon.StartOptions{Home: h, Args: args})
			var already *daemon.AlreadyRunningError
			if errors.As(err, &already) {
				// Starting a running host succeeds, so scripts can run
				// `metaclaw start` unconditionally; the running host keeps
				// the config it started with.
				fmt.Fprintf(cmd.OutOrStdout(), "%s; nothing to do (to apply config changes: metaclaw stop && metaclaw start)\n", already.Error())
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "metaclaw started (pid %d), proxy on %s, mode %s\n", info.PID, info.URL(), info.Mode)
			if !cfg.UpstreamConfigured() {
				fmt.Fprintln(cmd.OutOrStdout(), "note: no upstream LLM is configured yet; requests get an error until you run `metaclaw setup` or set llm.api_base")
			}
			fmt.Fprintf(cmd.OutOrStdout(), "point OpenAI clients at %s/v1 and Anthropic clients at %s\n", info.URL(), info.URL())
			if cfg.ProxyAuthRequired() {
				fmt.Fprintln(cmd.OutOrStdout(), "clients send the proxy key from secrets.yaml: `metaclaw wire <client>` sets it, SDKs: eval \"$(metaclaw env)\"")
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&foreground, "foreground", false, "stay attached to the terminal")
	cmd.Flags().BoolVar(&child, "detached-child", false, "internal: run as the detached host")
	cmd.Flags().MarkHidden("detached-child")
	cmd.Flags().StringVar(&mode, "mode", "", "override mode (auto, rl, skills_only)")
	cmd.Flags().IntVar(&port, "port", 0, "override proxy.port")
	return cmd
}

func newStopCmd() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "stop",
		Short: "Stop the host gracefully (in-flight requests finish, queues are flushed)",
		Long: `Stop the host gracefully. A client plugin (OpenClaw's extension, hook
commands) starts the host again on its next turn, so that turns keep getting
context; to keep MetaClaw off, use ` + "`metaclaw disable`" + ` (and ` + "`metaclaw enable`" + `).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := home()
			if err != nil {
				return err
			}
			info, err := daemon.Stop(h, timeout)
			if errors.Is(err, daemon.ErrNotRunning) {
				fmt.Fprintln(cmd.OutOrStdout(), "metaclaw is not running")
				return nil
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "metaclaw stopped (pid %d)\n", info.PID)
			restartNote(cmd.OutOrStdout(), h)
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", daemon.ShutdownGrace+10*time.Second, "how long to wait for a graceful stop")
	return cmd
}

func newStatusCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show whether the host runs, and what it has recorded and learned",
		Long: `Show the host's health, mode, version, uptime, listen address, upstream,
counts of turns/sessions/skills/memories, background jobs and RL state.
--json prints the documented JSON (docs/status.md). Exit code 3 when not running.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := home()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !asJSON {
				disabledNote(out, h)
			}
			info, err := daemon.ReadInfo(h)
			if errors.Is(err, daemon.ErrNotRunning) {
				if asJSON {
					_ = printJSON(out, daemon.Status{Running: false, Version: "", Providers: []string{}})
				} else {
					fmt.Fprintln(out, "metaclaw is not running (start it with `metaclaw start`)")
				}
				return exitCode(3)
			}
			if err != nil {
				return err
			}
			apiKey := ""
			if cfg, err := config.Load(h); err == nil {
				apiKey = cfg.Proxy.APIKey
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			st, err := daemon.FetchStatus(ctx, info, apiKey)
			if err != nil {
				return err
			}
			if asJSON {
				_ = printJSON(out, st)
				return nil
			}
			printStatus(out, st)
			return nil
		},
	}
	jsonFlag(cmd, &asJSON)
	return cmd
}

func printStatus(w interface{ Write([]byte) (int, error) }, st daemon.Status) {
	health := "healthy"
	if !st.OK {
		health = "degraded: " + st.Error
	}
	up := "not configured (run `metaclaw setup`)"
	if st.Upstream.Configured {
		up = fmt.Sprintf("%s %s", st.Upstream.API, st.Upstream.BaseURL)
		if st.Upstream.Model != "" {
			up += " model " + st.Upstream.Model
		}
		if st.Upstream.Source != "" {
			up += " (from " + st.Upstream.Source + ")"
		}
		up += "; " + keySourceText(st.Upstream.KeySource)
	}
	auth := "none (loopback only)"
	if st.Auth {
		auth = "proxy.api_key required"
	}
	providers := "none"
	if len(st.Providers) > 0 {
		providers = strings.Join(st.Providers, ", ")
	}
	fmt.Fprintf(w, "metaclaw %s: running, %s\n", st.Version, health)
	fmt.Fprintf(w, "  pid %d, up %s, mode %s\n", st.PID, (time.Duration(st.UptimeSeconds) * time.Second).String(), st.Mode)
	fmt.Fprintf(w, "  proxy     http://%s (auth: %s)\n", st.Listen, auth)
	fmt.Fprintf(w, "  upstream  %s\n", up)
	fmt.Fprintf(w, "  recorded  %d turns in %d sessions (%d open), %d injected tokens\n", st.Counts.Turns, st.Counts.Sessions, st.Counts.OpenSessions, st.Counts.InjectedTokens)
	fmt.Fprintf(w, "  learned   %d skills, %d memories (context: %s)\n", st.Counts.Skills, st.Counts.Memories, providers)
	fmt.Fprintf(w, "  jobs      %d pending, %d failed; %d turns waiting to be written\n", st.Jobs.Pending, st.Jobs.Failed, st.Counts.PendingTurns)
	if st.Counts.MemoryPendingTurns > 0 {
		fmt.Fprintf(w, "  memory    %d turns waiting to be ingested, the oldest for %s\n", st.Counts.MemoryPendingTurns,
			time.Duration(st.Counts.MemoryOldestPendingSeconds)*time.Second)
	}
	for purpose, u := range st.LLMUsage {
		fmt.Fprintf(w, "  llm       %s: %d calls (%d failed), %d in / %d out tokens\n", purpose, u.Calls, u.Failed, u.InputTokens, u.OutputTokens)
	}
	fmt.Fprintf(w, "  rl        %s: %s\n", st.RL.State, st.RL.Reason)
	printRL(w, st.RL)
	printTraining(w, st.Training)
	if st.Scheduler != nil {
		printScheduler(w, "  ", *st.Scheduler)
	}
	for _, warn := range st.Warnings {
		fmt.Fprintf(w, "  warning   %s\n", warn)
	}
}

// stderrf prints a line to stderr.
func stderrf(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }
