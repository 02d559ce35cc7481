package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/daemon"
	"github.com/metaclaw-go/metaclaw/host/memory"
	"github.com/metaclaw-go/metaclaw/host/store"
)

// memEnv is an opened memory store for one command.
type memEnv struct {
	cfg *config.Config
	st  *store.SQLite
	mem *memory.Store
}

func memOpen(cmd *cobra.Command) (*memEnv, error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, err
	}
	if cfg.Memory.SidecarURL != "" {
		fmt.Fprintf(cmd.ErrOrStderr(), "note: memory.sidecar_url is set; this host's memory lives at %s (this command reads the local store)\n", cfg.Memory.SidecarURL)
	}
	// SQLite in WAL mode: safe to open while the host runs.
	st, err := openStore(cmd.Context(), cfg)
	if err != nil {
		return nil, err
	}
	mem := memory.Open(st, memory.OptionsFromConfig(cfg, st, zerolog.Nop(), memory.AssembleOptions{}))
	return &memEnv{cfg: cfg, st: st, mem: mem}, nil
}

func (e *memEnv) Close() { e.st.Close() }

// memScopeFlags select a memory scope the way requests do.
type memScopeFlags struct {
	scope, user, workspace string
}

func (f *memScopeFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.scope, "scope", "", "memory scope (as X-Memory-Scope); default memory.scope")
	cmd.Flags().StringVar(&f.user, "user", "", "user id (as X-User-Id)")
	cmd.Flags().StringVar(&f.workspace, "workspace", "", "workspace id (as X-Workspace-Id)")
}

// key is the scope key, or "" when no flag was given.
func (f *memScopeFlags) key() string {
	if f.scope == "" && f.user == "" && f.workspace == "" {
		return ""
	}
	return core.Scope{UserID: f.user, WorkspaceID: f.workspace, Explicit: f.scope}.Key()
}

// memParseExpiry reads "30d", "12h" or an RFC 3339 time.
func memParseExpiry(s string) (*time.Time, error) {
	if s == "" {
		return nil, nil
	}
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("--expires %q: use e.g. 30d, 12h or 2026-12-31T00:00:00Z", s)
		}
		t := time.Now().Add(time.Duration(n) * 24 * time.Hour)
		return &t, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		t := time.Now().Add(d)
		return &t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return nil, fmt.Errorf("--expires %q: use e.g. 30d, 12h or 2026-12-31T00:00:00Z", s)
	}
	return &t, nil
}

func memSplitTags(s string) []string {
	var out []string
	for _, t := range strings.Split(s, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

func memPrintUnits(w io.Writer, units []memory.Unit) {
	if len(units) == 0 {
		fmt.Fprintln(w, "no memories")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTYPE\tSCOPE\tSTATUS\tSAID\tCONTENT")
	for _, u := range units {
		scope := u.Scope
		if u.Agent != "" {
			scope += " (" + u.Agent + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", u.ID, u.Type, scope, u.Status, u.SaidAt.Local().Format("2006-01-02"), clipText(u.Content, 80))
	}
	tw.Flush()
}

func newMemoryCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Inspect and edit what MetaClaw remembers (list, search, show, add, edit, forget, export, import, stats, flush)",
		Long: `Memories are what MetaClaw learned from your turns: preferences, rules, facts,
project state, events and session summaries, per scope (user/workspace, as the
X-User-Id / X-Workspace-Id / X-Memory-Scope headers name it). These commands work
on the store in $METACLAW_HOME (also while the host runs); --json prints JSON.
docs/memory.md describes the memory layer.`,
	}
	cmd.AddCommand(newMemListCmd(), newMemSearchCmd(), newMemShowCmd(), newMemAddCmd(), newMemEditCmd(), newMemForgetCmd(),
		newMemExportCmd(), newMemImportCmd(), newMemStatsCmd(), newMemFlushCmd(), newMemRefusedCmd())
	return cmd
}

func newMemListCmd() *cobra.Command {
	var sf memScopeFlags
	var agent, typ, status string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List memories, newest first (all scopes unless one is named)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := memOpen(cmd)
			if err != nil {
				return err
			}
			defer e.Close()
			f := memory.Filter{Scope: sf.key(), Status: status, Limit: limit}
			if cmd.Flags().Changed("agent") {
				f.Agent = &agent
			}
			if typ != "" {
				t, err := memory.ParseType(typ)
				if err != nil {
					return err
				}
				f.Type = t
			}
			units, err := e.mem.List(cmd.Context(), f)
			if err != nil {
				return err
			}
			if asJSON {
				if units == nil {
					units = []memory.Unit{}
				}
				return printJSON(cmd.OutOrStdout(), map[string]any{"memories": units})
			}
			memPrintUnits(cmd.OutOrStdout(), units)
			return nil
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&agent, "agent", "", "only units private to this agent (\"\" = shared ones)")
	cmd.Flags().StringVar(&typ, "type", "", "preference, semantic, project_state, episodic or working_summary")
	cmd.Flags().StringVar(&status, "status", "active", "active, superseded or all")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many")
	jsonFlag(cmd, &asJSON)
	return cmd
}

func newMemSearchCmd() *cobra.Command {
	var sf memScopeFlags
	var agent string
	var limit int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "search <query>",
		Short: "Search a scope's memories (FTS5 bm25 ranking, as injection ranks them)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := memOpen(cmd)
			if err != nil {
				return err
			}
			defer e.Close()
			q := memory.SearchQuery{Scope: sf.key(), Text: strings.Join(args, " "), Limit: limit, Agent: agent, AllAgents: agent == ""}
			hits, err := e.mem.Search(cmd.Context(), q)
			if err != nil {
				return err
			}
			if asJSON {
				if hits == nil {
					hits = []memory.Hit{}
				}
				return printJSON(cmd.OutOrStdout(), map[string]any{"results": hits})
			}
			if len(hits) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no memory matches")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 2, 2, ' ', 0)
			fmt.Fprintln(tw, "SCORE\tID\tTYPE\tCONTENT")
			for _, h := range hits {
				fmt.Fprintf(tw, "%.3f\t%s\t%s\t%s\n", h.Score, h.ID, h.Type, clipText(h.Content, 90))
			}
			return tw.Flush()
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&agent, "agent", "", "search as this agent (the scope's shared units and its own); default every agent's")
	cmd.Flags().IntVar(&limit, "limit", 20, "at most this many")
	jsonFlag(cmd, &asJSON)
	return cmd
}

func newMemShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show <id>",
		Short: "Show one memory and its history (created, reinforced, superseded, edited)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := memOpen(cmd)
			if err != nil {
				return err
			}
			defer e.Close()
			u, err := e.mem.Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			ev, err := e.mem.Events(cmd.Context(), u.ID)
			if err != nil {
				return err
			}
			if asJSON {
				if ev == nil {
					ev = []memory.Event{}
				}
				return printJSON(cmd.OutOrStdout(), map[string]any{"memory": u, "events": ev})
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%s  %s  %s\n%s\n\n", u.ID, u.Type, u.Status, u.Content)
			fmt.Fprintf(w, "scope %s", u.Scope)
			if u.Agent != "" {
				fmt.Fprintf(w, ", agent %s (private)", u.Agent)
			}
			fmt.Fprintf(w, "\nimportance %.2f, confidence %.2f, stated %d time(s), injected %d time(s)\n", u.Importance, u.Confidence, u.Mentions, u.InjectedCount)
			fmt.Fprintf(w, "first said %s, last %s", u.SaidAt.Local().Format(time.RFC3339), u.LastSeenAt.Local().Format(time.RFC3339))
			if u.ExpiresAt != nil {
				fmt.Fprintf(w, ", expires %s", u.ExpiresAt.Local().Format(time.RFC3339))
			}
			fmt.Fprintln(w)
			if u.Subject != "" {
				fmt.Fprintf(w, "slot %s = %s\n", u.Subject, u.Value)
			}
			if u.SupersededBy != "" {
				fmt.Fprintf(w, "superseded by %s\n", u.SupersededBy)
			}
			if u.SourceSession != "" {
				fmt.Fprintf(w, "from session %s, turns %v (%s)\n", u.SourceSession, u.SourceTurns, u.Origin)
			}
			fmt.Fprintln(w, "\nhistory:")
			for _, e := range ev {
				fmt.Fprintf(w, "  %s  %-10s %s\n", e.At.Local().Format("2006-01-02 15:04"), e.Action, string(e.Detail))
			}
			return nil
		},
	}
	jsonFlag(cmd, &asJSON)
	return cmd
}

func newMemAddCmd() *cobra.Command {
	var sf memScopeFlags
	var typ, agent, tags, expires string
	var importance float64
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "add <text>",
		Short: "Remember something (a repeat reinforces, a changed preference supersedes)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := memOpen(cmd)
			if err != nil {
				return err
			}
			defer e.Close()
			n := memory.NewUnit{Content: strings.Join(args, " "), Scope: sf.key(), Agent: agent, Importance: importance, Tags: memSplitTags(tags)}
			if typ != "" {
				t, err := memory.ParseType(typ)
				if err != nil {
					return err
				}
				n.Type = t
			}
			if n.ExpiresAt, err = memParseExpiry(expires); err != nil {
				return err
			}
			u, outcome, err := e.mem.Add(cmd.Context(), n)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"memory": u, "outcome": outcome})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s (%s, scope %s): %s\n", outcome, u.ID, u.Type, u.Scope, u.Content)
			return nil
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&typ, "type", "", "preference, semantic, project_state, episodic (default: from the wording)")
	cmd.Flags().StringVar(&agent, "agent", "", "make it private to this agent (default: shared by the scope's agents)")
	cmd.Flags().StringVar(&tags, "tags", "", "comma-separated tags")
	cmd.Flags().Float64Var(&importance, "importance", 0, "0..1 (default 0.8)")
	cmd.Flags().StringVar(&expires, "expires", "", "forget automatically after this (30d, 12h, or an RFC 3339 time)")
	jsonFlag(cmd, &asJSON)
	return cmd
}

func newMemEditCmd() *cobra.Command {
	var content, typ, tags, expires string
	var importance float64
	var noExpiry, asJSON bool
	cmd := &cobra.Command{
		Use:   "edit <id>",
		Short: "Change a memory (the old values stay in its history)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := memOpen(cmd)
			if err != nil {
				return err
			}
			defer e.Close()
			var p memory.Patch
			if cmd.Flags().Changed("content") {
				p.Content = &content
			}
			if typ != "" {
				t, err := memory.ParseType(typ)
				if err != nil {
					return err
				}
				p.Type = &t
			}
			if cmd.Flags().Changed("importance") {
				p.Importance = &importance
			}
			if cmd.Flags().Changed("tags") {
				ts := memSplitTags(tags)
				p.Tags = &ts
			}
			if p.ExpiresAt, err = memParseExpiry(expires); err != nil {
				return err
			}
			p.ClearExpires = noExpiry
			if p == (memory.Patch{}) {
				return errors.New("nothing to change: give --content, --type, --importance, --tags, --expires or --no-expiry")
			}
			var u memory.Unit
			if api := runningHost(); api != nil {
				// The route the dashboard uses (PATCH /v1/memory/{id}).
				req := memory.PatchRequest{Content: p.Content, Importance: p.Importance, Tags: p.Tags, ExpiresAt: p.ExpiresAt, ClearExpires: p.ClearExpires}
				if p.Type != nil {
					t := string(*p.Type)
					req.Type = &t
				}
				var out struct {
					Memory memory.Unit `json:"memory"`
				}
				if err := api.call(cmd.Context(), http.MethodPatch, "/v1/memory/"+url.PathEscape(args[0]), req, &out); err != nil {
					return err
				}
				u = out.Memory
			} else {
				u, err = e.mem.Edit(cmd.Context(), args[0], p)
			}
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"memory": u})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "edited %s (%s): %s\n", u.ID, u.Type, u.Content)
			return nil
		},
	}
	cmd.Flags().StringVar(&content, "content", "", "new text")
	cmd.Flags().StringVar(&typ, "type", "", "new type")
	cmd.Flags().Float64Var(&importance, "importance", 0, "new importance 0..1")
	cmd.Flags().StringVar(&tags, "tags", "", "new comma-separated tags")
	cmd.Flags().StringVar(&expires, "expires", "", "expire after this (30d, 12h, or an RFC 3339 time)")
	cmd.Flags().BoolVar(&noExpiry, "no-expiry", false, "never expire")
	jsonFlag(cmd, &asJSON)
	return cmd
}

func newMemForgetCmd() *cobra.Command {
	var reason string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "forget <id>...",
		Short: "Delete memories for good (an audit record keeps the id and a hash, not the text)",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := memOpen(cmd)
			if err != nil {
				return err
			}
			defer e.Close()
			var done []string
			api := runningHost()
			for _, id := range args {
				if api != nil {
					// The route the dashboard uses (POST /v1/memory/forget).
					if err := api.call(cmd.Context(), http.MethodPost, "/v1/memory/forget", map[string]string{"memory_id": id, "reason": reason}, nil); err != nil {
						return err
					}
				} else if err := e.mem.Forget(cmd.Context(), id, reason); err != nil {
					return err
				}
				done = append(done, id)
				if !asJSON {
					fmt.Fprintf(cmd.OutOrStdout(), "forgot %s\n", id)
				}
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"forgotten": done})
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "cli", "why (kept in the audit record)")
	jsonFlag(cmd, &asJSON)
	return cmd
}

func newMemExportCmd() *cobra.Command {
	var sf memScopeFlags
	var status, out string
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write memories as JSON lines (stdout, or -o file)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := memOpen(cmd)
			if err != nil {
				return err
			}
			defer e.Close()
			var n int
			err = writeExport(cmd.OutOrStdout(), out, func(w io.Writer) (err error) {
				n, err = e.mem.Export(cmd.Context(), w, memory.Filter{Scope: sf.key(), Status: status})
				return err
			})
			if err != nil {
				return err
			}
			if out != "" && out != "-" {
				fmt.Fprintf(cmd.OutOrStdout(), "exported %d memories to %s\n", n, out)
			}
			return nil
		},
	}
	sf.add(cmd)
	cmd.Flags().StringVar(&status, "status", "all", "active, superseded or all")
	cmd.Flags().StringVarP(&out, "output", "o", "", "file to write (mode 0600); default stdout")
	return cmd
}

func newMemImportCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "import <file|->",
		Short: "Read memories from JSON lines (metaclaw memory export, or MetaClaw's memory records)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := memOpen(cmd)
			if err != nil {
				return err
			}
			defer e.Close()
			var r io.Reader = cmd.InOrStdin()
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				r = f
			}
			res, err := e.mem.Import(cmd.Context(), r)
			if err != nil {
				return err
			}
			if res.Imported > 1000 {
				_ = e.mem.Optimize(cmd.Context())
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), res)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "imported %d, skipped %d (already present)\n", res.Imported, res.Skipped)
			if res.Refused > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "refused %d by the injection guard (metaclaw memory refused)\n", res.Refused)
			}
			for _, m := range res.Errors {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", m)
			}
			return nil
		},
	}
	jsonFlag(cmd, &asJSON)
	return cmd
}

func newMemStatsCmd() *cobra.Command {
	var sf memScopeFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "stats",
		Short: "Count memories by type and scope, and turns waiting to be learned from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := memOpen(cmd)
			if err != nil {
				return err
			}
			defer e.Close()
			st, err := e.mem.Stats(cmd.Context(), sf.key())
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "active memories:   %d\nsuperseded:        %d\npending turns:     %d\nbuffered turns:    %d\nsessions ingested: %d\naudit records:     %d\nrefused:           %d\n",
				st.Active, st.Superseded, st.PendingTurns, st.Buffered, st.Sessions, st.Events, st.Refused)
			for _, t := range memory.Types {
				if n := st.ByType[string(t)]; n > 0 {
					fmt.Fprintf(w, "  %-16s %d\n", t, n)
				}
			}
			if len(st.ByScope) > 0 {
				fmt.Fprintln(w, "by scope:")
				for sc, n := range st.ByScope {
					fmt.Fprintf(w, "  %-30s %d\n", sc, n)
				}
			}
			return nil
		},
	}
	sf.add(cmd)
	jsonFlag(cmd, &asJSON)
	return cmd
}

func newMemFlushCmd() *cobra.Command {
	var session string
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "flush",
		Aliases: []string{"ingest"},
		Short:   "Learn from the turns not ingested yet, now (through the running host, else locally)",
		Long: `Ingest pending turns now instead of waiting for memory.ingest_every_turns or
the session's end. When the host runs, it is asked over HTTP (POST
/v1/memory/ingest); otherwise the store is ingested in this process.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig()
			if err != nil {
				return err
			}
			h := cfg.Home
			var out struct {
				memory.IngestResponse
				Via string `json:"via"`
			}
			if info, err := daemon.ReadInfo(h); err == nil {
				if out.IngestResponse, err = memFlushViaHost(cmd.Context(), info, cfg.Proxy.APIKey, session); err != nil {
					return err
				}
				out.Via = "host"
			} else {
				st, err := openStore(cmd.Context(), cfg)
				if err != nil {
					return err
				}
				defer st.Close()
				mem := memory.Open(st, memory.OptionsFromConfig(cfg, st, zerolog.Nop(), memory.AssembleOptions{}))
				in, err := memory.NewLocalIngester(cfg, st, mem, memory.AssembleOptions{SidecarKey: os.Getenv("METACLAW_MEMORY_SIDECAR_KEY")})
				if err != nil {
					return err
				}
				out.Via = "local"
				if session != "" {
					final := false
					if sess, err := st.Session(cmd.Context(), session); err == nil && sess.EndedAt != nil {
						final = true
					}
					res, err := in.IngestSession(cmd.Context(), session, final)
					if err != nil {
						return err
					}
					out.IngestResult, out.Sessions = res, []string{session}
				} else {
					res, sessions, err := in.IngestAll(cmd.Context(), true)
					if err != nil {
						return err
					}
					out.IngestResult, out.Sessions = res, sessions
				}
				out.BufferedTurns = out.Turns
			}
			if out.Sessions == nil {
				out.Sessions = []string{}
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), out)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ingested %d turns from %d session(s) (%s): %d added, %d reinforced, %d superseded\n",
				out.Turns, len(out.Sessions), out.Via, out.Added, out.Reinforced, out.Superseded)
			return nil
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "only this session")
	jsonFlag(cmd, &asJSON)
	return cmd
}

func memFlushViaHost(ctx context.Context, info daemon.Info, key, session string) (memory.IngestResponse, error) {
	var out memory.IngestResponse
	body, _ := json.Marshal(map[string]any{"session_id": session})
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	// ?wait=1: the CLI shows what was learned; Ctrl-C cancels the ingestion.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, info.URL()+"/v1/memory/ingest?wait=1", bytes.NewReader(body))
	if err != nil {
		return out, err
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return out, fmt.Errorf("ask the host at %s to ingest: %w", info.Addr, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if resp.StatusCode != http.StatusOK {
		return out, fmt.Errorf("ask the host at %s to ingest: HTTP %d: %s", info.Addr, resp.StatusCode, clipText(string(raw), 300))
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return out, fmt.Errorf("ask the host at %s to ingest: %w", info.Addr, err)
	}
	return out, nil
}
