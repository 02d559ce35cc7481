package main

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/daemon"
	"github.com/metaclaw-go/metaclaw/host/store"
)

func newStoreCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "store",
		Short: "Inspect and prune the database (turns, jobs, usage; retention: store.retain_days)",
	}
	cmd.AddCommand(newStoreStatsCmd(), newStorePruneCmd())
	return cmd
}

// storeOpen opens the database (WAL: safe while the host runs).
func storeOpen(cmd *cobra.Command) (*config.Config, *store.SQLite, string, error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, nil, "", err
	}
	h := cfg.Home
	path := daemon.PathsFor(h).DB
	st, err := store.OpenSQLite(cmd.Context(), path)
	if err != nil {
		return nil, nil, "", err
	}
	return cfg, st, path, nil
}

func newStoreStatsCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Size of the database, rows per table, and what retention would delete now",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, st, path, err := storeOpen(cmd)
			if err != nil {
				return err
			}
			defer st.Close()
			stats, err := st.Stats(cmd.Context(), path)
			if err != nil {
				return err
			}
			var prunable *store.PruneReport
			if o, ok := daemon.PruneOptions(cfg, time.Now(), st); ok {
				o.DryRun = true
				rep, err := st.Prune(cmd.Context(), o)
				if err != nil {
					return err
				}
				prunable = &rep
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"stats": stats, "retain_days": cfg.Store.RetainDays, "prunable": prunable})
			}
			printStoreStats(cmd.OutOrStdout(), stats, cfg.Store.RetainDays, prunable)
			return nil
		},
	}
	jsonFlag(cmd, &asJSON)
	return cmd
}

func printStoreStats(w io.Writer, s store.Stats, days int, prunable *store.PruneReport) {
	fmt.Fprintf(w, "database     %s\n", s.Path)
	fmt.Fprintf(w, "file         %s (+ %s write-ahead log)\n", humanBytes(s.FileBytes), humanBytes(s.WALBytes))
	fmt.Fprintf(w, "free space   %s in %d pages (auto_vacuum %s)\n", humanBytes(s.FreePages*s.PageSize), s.FreePages, s.AutoVacuum)
	fmt.Fprintf(w, "turn bodies  %s\n", humanBytes(s.TurnBodyBytes))
	if s.OldestTurn != nil {
		fmt.Fprintf(w, "turns from   %s to %s\n", s.OldestTurn.Format("2006-01-02 15:04"), s.NewestTurn.Format("2006-01-02 15:04"))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TABLE\tROWS")
	names := make([]string, 0, len(s.Rows))
	for n := range s.Rows {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(tw, "%s\t%d\n", n, s.Rows[n])
	}
	tw.Flush()
	fmt.Fprintln(w)
	if prunable == nil {
		fmt.Fprintln(w, "retention    off (store.retain_days 0): nothing is deleted")
		return
	}
	fmt.Fprintf(w, "retention    %d days: a prune now deletes %d turns (%s of bodies), %d finished jobs, folds %d usage rows\n",
		days, prunable.Turns, humanBytes(prunable.TurnBytes), prunable.Jobs, prunable.UsageRows)
	fmt.Fprintf(w, "             and keeps %d old turns of open sessions, %d named by pending jobs, %d not yet mined by memory\n",
		prunable.KeptOpenSession, prunable.KeptPendingJob, prunable.KeptUnmined)
}

func newStorePruneCmd() *cobra.Command {
	var asJSON, dryRun, vacuum bool
	var days int
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Apply retention now (store.retain_days) and return free space to the file system",
		Long: "Deletes recorded turns, finished jobs and per-call usage rows older than store.retain_days " +
			"(or --days), keeping turns that learning still needs: those of open sessions, of sessions a pending " +
			"job names, and turns memory has not mined yet. Usage rows are folded into one row per day, so totals " +
			"stay. Memories, skills and RL samples are never touched. The host does this hourly by itself.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, st, path, err := storeOpen(cmd)
			if err != nil {
				return err
			}
			defer st.Close()
			if cmd.Flags().Changed("days") {
				if days < 1 {
					return fmt.Errorf("--days %d: give at least 1 (store.retain_days 0 turns retention off)", days)
				}
				cfg.Store.RetainDays = days
			}
			o, ok := daemon.PruneOptions(cfg, time.Now(), st)
			if !ok {
				return fmt.Errorf("store.retain_days is 0 (keep everything): pass --days N, or `metaclaw config set store.retain_days 30`")
			}
			o.DryRun = dryRun
			before, _ := st.Stats(cmd.Context(), path)
			rep, err := st.Prune(cmd.Context(), o)
			if err != nil {
				return err
			}
			var freed int64
			if !dryRun {
				if vacuum {
					if err := st.Vacuum(cmd.Context()); err != nil {
						return err
					}
				} else if freed, err = st.IncrementalVacuum(cmd.Context(), 1<<40); err != nil {
					return err
				}
			}
			after, _ := st.Stats(cmd.Context(), path)
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"prune": rep, "pages_freed": freed,
					"file_bytes_before": before.FileBytes, "file_bytes_after": after.FileBytes, "auto_vacuum": after.AutoVacuum})
			}
			w := cmd.OutOrStdout()
			verb := "deleted"
			if dryRun {
				verb = "would delete"
			}
			fmt.Fprintf(w, "turns before %s: %s %d turns (%s of bodies), %d sessions, %d finished jobs; folded %d usage rows\n",
				o.Before.Format("2006-01-02"), verb, rep.Turns, humanBytes(rep.TurnBytes), rep.Sessions, rep.Jobs, rep.UsageRows)
			fmt.Fprintf(w, "kept because learning still needs them: %d (open sessions), %d (pending jobs), %d (not yet mined by memory)\n",
				rep.KeptOpenSession, rep.KeptPendingJob, rep.KeptUnmined)
			if !dryRun {
				fmt.Fprintf(w, "database file: %s -> %s\n", humanBytes(before.FileBytes), humanBytes(after.FileBytes))
				if after.AutoVacuum == "none" && after.FreePages > 0 {
					fmt.Fprintf(w, "note: this database predates incremental vacuum; %s stay free inside the file until `metaclaw store prune --vacuum`\n", humanBytes(after.FreePages*after.PageSize))
				}
			}
			return nil
		},
	}
	jsonFlag(cmd, &asJSON)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "count what would be deleted; delete nothing")
	cmd.Flags().BoolVar(&vacuum, "vacuum", false, "rebuild the whole file afterwards (switches an old database to incremental vacuum; needs free disk space the size of the database and blocks writes while it runs)")
	cmd.Flags().IntVar(&days, "days", 0, "retention in days for this run (default store.retain_days)")
	return cmd
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
