package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/skills"
	"github.com/metaclaw-go/metaclaw/host/skills/bank"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

func newSkillsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "skills",
		Short: "List, search, edit and review skills",
		Long: `Skills are SKILL.md folders under skills.dir (default $METACLAW_HOME/skills):
YAML frontmatter (name, description, category, tags, agents, status, …) and a
Markdown body. The files are the source of truth; edit them with any editor
and a running host re-indexes them within a second.

These commands act on the files and on the index in $METACLAW_HOME/metaclaw.db;
they are safe to run while the host runs.`,
	}
	cmd.AddCommand(
		newSkillsListCmd(), newSkillsShowCmd(), newSkillsSearchCmd(), newSkillsAddCmd(), newSkillsEditCmd(),
		newSkillsApproveCmd(), newSkillsRejectCmd(), newSkillsStatusCmd("enable", skills.StatusActive), newSkillsStatusCmd("disable", skills.StatusDisabled),
		newSkillsRemoveCmd(), newSkillsHistoryCmd(), newSkillsExportCmd(), newSkillsImportCmd(), newSkillsLintCmd(), newSkillsInstallBankCmd(),
	)
	return cmd
}

// skillsEnv is what a skills command works on.
type skillsEnv struct {
	cfg *config.Config
	st  *store.SQLite
	lib *skills.Library
}

func (e *skillsEnv) Close() {
	if e.lib != nil {
		e.lib.Close()
	}
	if e.st != nil {
		e.st.Close()
	}
}

// openSkills opens the store and the library (which syncs the index with the files).
func openSkills(ctx context.Context) (*skillsEnv, error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, err
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	lib, err := skills.OpenLibrary(ctx, cfg, st, skills.EmbedderFor(cfg, st), zerolog.Nop())
	if err != nil {
		st.Close()
		return nil, err
	}
	return &skillsEnv{cfg: cfg, st: st, lib: lib}, nil
}

func withSkills(cmd *cobra.Command, fn func(ctx context.Context, e *skillsEnv) error) error {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	e, err := openSkills(ctx)
	if err != nil {
		return err
	}
	defer e.Close()
	return fn(ctx, e)
}

func cliEvent(action string) skills.Event { return skills.Event{Action: action, Source: "cli"} }

func notFound(name string, err error) error {
	if errors.Is(err, skills.ErrNotFound) {
		return fmt.Errorf("no skill named %q (see metaclaw skills list)", name)
	}
	return err
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func newSkillsListCmd() *cobra.Command {
	var asJSON bool
	var status, agent, category string
	c := &cobra.Command{Use: "list", Short: "List skills", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withSkills(cmd, func(ctx context.Context, e *skillsEnv) error {
				var out []*skills.Skill
				for _, s := range e.lib.List() {
					if (status == "" || s.Status == status) && (agent == "" || s.ForAgent(agent)) && (category == "" || s.Category == category) {
						s.Body = ""
						out = append(out, s)
					}
				}
				if asJSON {
					if out == nil {
						out = []*skills.Skill{}
					}
					return printJSON(cmd.OutOrStdout(), out)
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tSTATUS\tGEN\tCATEGORY\tSOURCE\tDESCRIPTION")
				for _, s := range out {
					st := s.Status
					if s.HasProposal {
						st += "+edit"
					}
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", s.Name, st, s.Generation, s.Category, s.Source, clipText(s.Description, 70))
				}
				tw.Flush()
				fmt.Fprintf(cmd.OutOrStdout(), "\n%d skills, %d active, in %s\n", len(out), e.lib.ActiveCount(), e.lib.Dir())
				if n := fatalProblems(e.lib.Problems()); n > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "%d skill files could not be loaded: run `metaclaw skills lint`\n", n)
				}
				return nil
			})
		}}
	jsonFlag(c, &asJSON)
	c.Flags().StringVar(&status, "status", "", "only this status: active, pending or disabled")
	c.Flags().StringVar(&agent, "agent", "", "only skills that apply to this agent")
	c.Flags().StringVar(&category, "category", "", "only this category")
	return c
}

func fatalProblems(ps []skills.Problem) int {
	n := 0
	for _, p := range ps {
		if p.Fatal {
			n++
		}
	}
	return n
}

// clipText puts s on one line of at most n characters (a table column).
func clipText(s string, n int) string { return textclip.Runes(oneLine(s), n) }

func newSkillsShowCmd() *cobra.Command {
	var asJSON, proposal bool
	c := &cobra.Command{Use: "show NAME", Short: "Print a skill (its SKILL.md, or the pending edit with --proposal)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSkills(cmd, func(ctx context.Context, e *skillsEnv) error {
				s, ok := e.lib.Get(args[0])
				if !ok {
					return notFound(args[0], skills.ErrNotFound)
				}
				path := s.Path
				if proposal {
					p, err := e.lib.Proposal(args[0])
					if err != nil {
						return fmt.Errorf("%s has no pending edit", args[0])
					}
					s, path = p, p.Path
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), s)
				}
				raw, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "# %s\n%s", path, raw)
				if s.HasProposal && !proposal {
					fmt.Fprintf(cmd.ErrOrStderr(), "\nan edit of this skill waits for review: metaclaw skills show --proposal %s, then approve or reject\n", s.Name)
				}
				return nil
			})
		}}
	jsonFlag(c, &asJSON)
	c.Flags().BoolVar(&proposal, "proposal", false, "show the pending edit (PROPOSED.md)")
	return c
}

func newSkillsSearchCmd() *cobra.Command {
	var asJSON, all bool
	var agent string
	var limit int
	c := &cobra.Command{Use: "search QUERY…", Short: "Show the skills a turn saying QUERY would get", Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSkills(cmd, func(ctx context.Context, e *skillsEnv) error {
				o := skills.SearchOptions{Texts: []string{strings.Join(args, " ")}, Agent: agent, Limit: limit, All: all, Mode: e.cfg.Skills.RetrievalMode, Embedder: skills.EmbedderFor(e.cfg, e.st)}
				if !all {
					o.MinRelative = skills.DefaultMinRelative
				}
				if o.Embedder != nil {
					_ = e.lib.EmbedWait(ctx)
				}
				hits, err := e.lib.Search(ctx, o)
				var semErr *skills.SemanticError
				if errors.As(err, &semErr) {
					fmt.Fprintln(cmd.ErrOrStderr(), "warning:", err, "(ranked by keywords)")
				} else if err != nil {
					return err
				}
				if asJSON {
					if hits == nil {
						hits = []skills.Hit{}
					}
					for i := range hits {
						hits[i].Skill.Body = ""
					}
					return printJSON(cmd.OutOrStdout(), map[string]any{"query": o.Texts[0], "match": skills.BuildMatch(o.Texts), "hits": hits})
				}
				if len(hits) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "no matching skills")
					return nil
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "SCORE\tNAME\tSTATUS\tDESCRIPTION")
				for _, h := range hits {
					fmt.Fprintf(tw, "%.3f\t%s\t%s\t%s\n", h.Score, h.Skill.Name, h.Skill.Status, clipText(h.Skill.Description, 70))
				}
				return tw.Flush()
			})
		}}
	jsonFlag(c, &asJSON)
	c.Flags().BoolVar(&all, "all", false, "include pending and disabled skills, and weak matches")
	c.Flags().StringVar(&agent, "agent", "", "as this agent sees it (agent-scoped skills)")
	c.Flags().IntVar(&limit, "limit", 6, "how many")
	return c
}

func newSkillsAddCmd() *cobra.Command {
	var description, category, tags, agents, body, bodyFile, from string
	var pending, force bool
	c := &cobra.Command{Use: "add [NAME]", Short: "Add a skill (flags, or --from an existing SKILL.md)", Args: cobra.MaximumNArgs(1),
		Example: `  metaclaw skills add release-checklist --description "Use when cutting a release" --body-file checklist.md
  metaclaw skills add --from ./my-skill/SKILL.md`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var s *skills.Skill
			if from != "" {
				raw, err := os.ReadFile(from)
				if err != nil {
					return err
				}
				if s, err = skills.Parse(raw); err != nil {
					return fmt.Errorf("%s: %w", from, err)
				}
				s.Warnings = nil
				if len(args) == 1 && args[0] != s.Name {
					return fmt.Errorf("%s names the skill %q, not %q", from, s.Name, args[0])
				}
			} else {
				if len(args) != 1 {
					return errors.New("give the skill a NAME (or use --from FILE)")
				}
				if !skills.SlugRe.MatchString(args[0]) || len(args[0]) > skills.MaxNameLen {
					return fmt.Errorf("name %q: use lowercase words joined by hyphens, e.g. %q", args[0], skills.Slugify(args[0]))
				}
				if strings.TrimSpace(description) == "" {
					return errors.New("--description is required: one sentence saying when to use the skill")
				}
				text := body
				if bodyFile != "" {
					var raw []byte
					var err error
					if bodyFile == "-" {
						raw, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), skills.MaxFileBytes))
					} else {
						raw, err = os.ReadFile(bodyFile)
					}
					if err != nil {
						return err
					}
					text = string(raw)
				}
				s = &skills.Skill{Name: args[0], Description: description, Category: category, Tags: splitList(tags), Agents: splitList(agents), Body: text}
			}
			// A file or a pasted body may come from anywhere (a page, a
			// chat): it is checked like an imported skill.
			if f := skills.Check(s); len(f) > 0 && !force {
				var r []string
				for _, x := range f {
					r = append(r, x.String())
				}
				return fmt.Errorf("skill %s failed the safety checks (%s): it would be injected into every matching prompt; fix the text, or add it anyway with --force", s.Name, strings.Join(r, "; "))
			}
			if s.Source == "" {
				s.Source = "user"
			}
			if pending {
				s.Status = skills.StatusPending
			}
			now := time.Now().UTC().Truncate(time.Second)
			if s.Created.IsZero() {
				s.Created = now
			}
			s.Updated = now
			return withSkills(cmd, func(ctx context.Context, e *skillsEnv) error {
				if _, exists := e.lib.Get(s.Name); exists {
					return fmt.Errorf("a skill named %q exists: use metaclaw skills edit %s", s.Name, s.Name)
				}
				saved, err := e.lib.Save(ctx, s, cliEvent("created"))
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "added %s (%s) in %s\n", saved.Name, saved.Status, saved.Path)
				return nil
			})
		}}
	c.Flags().StringVar(&description, "description", "", "when to use the skill (required unless --from)")
	c.Flags().StringVar(&category, "category", "", "category, e.g. coding, data, communication")
	c.Flags().StringVar(&tags, "tags", "", "comma-separated tags (words users would say)")
	c.Flags().StringVar(&agents, "agents", "", "comma-separated agent ids this skill is for (default: every agent)")
	c.Flags().StringVar(&body, "body", "", "the Markdown body")
	c.Flags().StringVar(&bodyFile, "body-file", "", "read the body from a file (- for stdin)")
	c.Flags().StringVar(&from, "from", "", "add an existing SKILL.md file")
	c.Flags().BoolVar(&pending, "pending", false, "add it as pending (not injected until approved)")
	c.Flags().BoolVar(&force, "force", false, "add a skill that fails the safety checks")
	return c
}

// editorCommand runs $VISUAL or $EDITOR (which may carry arguments) on a file.
func editorCommand(cmd *cobra.Command, file string) *exec.Cmd {
	ed := os.Getenv("VISUAL")
	if ed == "" {
		ed = os.Getenv("EDITOR")
	}
	if ed == "" {
		ed = "vi"
	}
	c := exec.Command("sh", "-c", ed+` "$1"`, "sh", file)
	c.Stdin, c.Stdout, c.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	return c
}

func newSkillsEditCmd() *cobra.Command {
	return &cobra.Command{Use: "edit NAME", Short: "Edit a skill in $EDITOR (validated before it is saved; generation bumped)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			return withSkills(cmd, func(ctx context.Context, e *skillsEnv) error {
				cur, ok := e.lib.Get(name)
				if !ok {
					return notFound(name, skills.ErrNotFound)
				}
				before, err := os.ReadFile(cur.Path)
				if err != nil {
					return err
				}
				tmp, err := os.CreateTemp("", "metaclaw-skill-*.md")
				if err != nil {
					return err
				}
				tmpName := tmp.Name()
				_, werr := tmp.Write(before)
				tmp.Close()
				if werr != nil {
					return werr
				}
				if err := editorCommand(cmd, tmpName).Run(); err != nil {
					return fmt.Errorf("editor: %w (your copy is %s)", err, tmpName)
				}
				after, err := os.ReadFile(tmpName)
				if err != nil {
					return err
				}
				if string(after) == string(before) {
					os.Remove(tmpName)
					fmt.Fprintln(cmd.OutOrStdout(), "no changes")
					return nil
				}
				edited, err := skills.Parse(after)
				if err != nil {
					return fmt.Errorf("not saved: %v\nyour edit is kept in %s; fix it and copy it to %s, or run edit again", err, tmpName, cur.Path)
				}
				if edited.Name != name {
					return fmt.Errorf("not saved: the name changed to %q (add a new skill and remove this one to rename); your edit is in %s", edited.Name, tmpName)
				}
				saved, err := e.lib.Update(ctx, name, true, cliEvent("edited"), func(s *skills.Skill) error {
					gen := s.Generation
					created := s.Created
					*s = *edited
					s.Generation = max(gen, edited.Generation)
					if s.Created.IsZero() {
						s.Created = created
					}
					return nil
				})
				if err != nil {
					return fmt.Errorf("%w (your edit is in %s)", err, tmpName)
				}
				os.Remove(tmpName)
				fmt.Fprintf(cmd.OutOrStdout(), "saved %s (generation %d)\n", saved.Name, saved.Generation)
				return nil
			})
		}}
}

func newSkillsApproveCmd() *cobra.Command {
	return &cobra.Command{Use: "approve NAME…", Short: "Make pending skills (or pending edits) live", Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if api := runningHost(); api != nil {
				return skillActionsViaHost(cmd, api, "approve", "", args)
			}
			return withSkills(cmd, func(ctx context.Context, e *skillsEnv) error {
				for _, n := range args {
					s, err := e.lib.Approve(ctx, n, cliEvent("approved"))
					if err != nil {
						return notFound(n, err)
					}
					fmt.Fprintf(cmd.OutOrStdout(), "approved %s (generation %d)\n", s.Name, s.Generation)
				}
				return nil
			})
		}}
}

func newSkillsRejectCmd() *cobra.Command {
	var reason string
	c := &cobra.Command{Use: "reject NAME…", Short: "Drop pending skills or pending edits (the live skill stays)", Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if api := runningHost(); api != nil {
				return skillActionsViaHost(cmd, api, "reject", reason, args)
			}
			return withSkills(cmd, func(ctx context.Context, e *skillsEnv) error {
				for _, n := range args {
					if err := e.lib.Reject(ctx, n, reason, cliEvent("rejected")); err != nil {
						return notFound(n, err)
					}
					fmt.Fprintf(cmd.OutOrStdout(), "rejected %s\n", n)
				}
				return nil
			})
		}}
	c.Flags().StringVar(&reason, "reason", "", "why (kept in the history)")
	return c
}

func newSkillsStatusCmd(verb, status string) *cobra.Command {
	return &cobra.Command{Use: verb + " NAME…", Short: strings.ToUpper(verb[:1]) + verb[1:] + " skills", Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if api := runningHost(); api != nil {
				return skillActionsViaHost(cmd, api, verb, "", args)
			}
			return withSkills(cmd, func(ctx context.Context, e *skillsEnv) error {
				for _, n := range args {
					s, err := e.lib.SetStatus(ctx, n, status, cliEvent(verb+"d"))
					if err != nil {
						return notFound(n, err)
					}
					fmt.Fprintf(cmd.OutOrStdout(), "%s is %s\n", s.Name, s.Status)
				}
				return nil
			})
		}}
}

func newSkillsRemoveCmd() *cobra.Command {
	return &cobra.Command{Use: "remove NAME…", Short: "Remove skills (moved to skills.dir/.trash)", Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSkills(cmd, func(ctx context.Context, e *skillsEnv) error {
				for _, n := range args {
					dest, err := e.lib.Remove(ctx, n, cliEvent("removed"))
					if err != nil {
						return notFound(n, err)
					}
					fmt.Fprintf(cmd.OutOrStdout(), "removed %s (kept in %s)\n", n, dest)
				}
				return nil
			})
		}}
}

func newSkillsHistoryCmd() *cobra.Command {
	var asJSON bool
	var limit int
	var show int64
	c := &cobra.Command{Use: "history [NAME]", Short: "Versions and decisions (evolver proposals, rejections, edits) of one or all skills", Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSkills(cmd, func(ctx context.Context, e *skillsEnv) error {
				if show > 0 {
					h, err := e.lib.HistoryVersion(ctx, show)
					if err != nil {
						return err
					}
					if asJSON {
						return printJSON(cmd.OutOrStdout(), h)
					}
					fmt.Fprintf(cmd.OutOrStdout(), "# %s generation %d, %s by %s at %s\n%s", h.Name, h.Generation, h.Action, h.Source, h.At.Format(time.RFC3339), h.Content)
					return nil
				}
				name := ""
				if len(args) == 1 {
					name = args[0]
				}
				hist, err := e.lib.History(ctx, name, limit, false)
				if err != nil {
					return err
				}
				if asJSON {
					if hist == nil {
						hist = []skills.HistoryEntry{}
					}
					return printJSON(cmd.OutOrStdout(), hist)
				}
				if len(hist) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "no history")
					return nil
				}
				tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tWHEN\tSKILL\tGEN\tACTION\tBY\tREASON")
				for _, h := range hist {
					fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\n", h.ID, h.At.Local().Format("2006-01-02 15:04"), h.Name, h.Generation, h.Action, h.Source, clipText(h.Reason, 80))
				}
				tw.Flush()
				fmt.Fprintln(cmd.OutOrStdout(), "\nmetaclaw skills history --show ID prints a version")
				return nil
			})
		}}
	jsonFlag(c, &asJSON)
	c.Flags().IntVar(&limit, "limit", 50, "how many rows")
	c.Flags().Int64Var(&show, "show", 0, "print the SKILL.md of history row ID")
	return c
}

func newSkillsExportCmd() *cobra.Command {
	var out, status string
	c := &cobra.Command{Use: "export [NAME…]", Short: "Write skills to a .tar.gz (all, or the named ones)",
		RunE: func(cmd *cobra.Command, args []string) error {
			return withSkills(cmd, func(ctx context.Context, e *skillsEnv) error {
				var list []*skills.Skill
				if len(args) > 0 {
					for _, n := range args {
						s, ok := e.lib.Get(n)
						if !ok {
							return notFound(n, skills.ErrNotFound)
						}
						list = append(list, s)
					}
				} else {
					for _, s := range e.lib.List() {
						if status == "" || s.Status == status {
							list = append(list, s)
						}
					}
				}
				if err := writeExport(cmd.OutOrStdout(), out, func(w io.Writer) error { return skills.Export(w, list) }); err != nil {
					return err
				}
				if out != "-" {
					fmt.Fprintf(cmd.ErrOrStderr(), "exported %d skills to %s\n", len(list), out)
				}
				return nil
			})
		}}
	c.Flags().StringVarP(&out, "out", "o", "skills.tar.gz", "output file (- for stdout)")
	c.Flags().StringVar(&status, "status", "", "only this status")
	return c
}

func newSkillsImportCmd() *cobra.Command {
	var asJSON bool
	var o skills.ImportOptions
	c := &cobra.Command{Use: "import PATH", Short: "Import skills from a SKILL.md, a folder of skill folders, or a .tar.gz", Args: cobra.ExactArgs(1),
		Long: `Import skills from a SKILL.md, a skill folder, a folder of skill folders
(e.g. a Python MetaClaw memory_data/skills), or a .tar.gz from export.
Imported skills are checked like evolved ones (secrets, instruction overrides,
exfiltration, unknown hosts) and skipped when they fail, unless --force.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			list, problems, err := skills.ReadSkills(args[0])
			if err != nil {
				return err
			}
			return withSkills(cmd, func(ctx context.Context, e *skillsEnv) error {
				res, err := skills.Import(ctx, e.lib, list, o)
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), map[string]any{"result": res, "problems": problems})
				}
				fmt.Fprintf(cmd.OutOrStdout(), "imported %d, replaced %d, skipped %d\n", len(res.Imported), len(res.Replaced), len(res.Skipped))
				for n, why := range res.Skipped {
					fmt.Fprintf(cmd.OutOrStdout(), "  skipped %s: %s\n", n, why)
				}
				for _, p := range problems {
					fmt.Fprintf(cmd.OutOrStdout(), "  %s\n", p)
				}
				return nil
			})
		}}
	jsonFlag(c, &asJSON)
	c.Flags().BoolVar(&o.Overwrite, "overwrite", false, "replace skills with the same name (generation bumped, old version in history)")
	c.Flags().BoolVar(&o.Pending, "pending", false, "import as pending: nothing is injected until approved")
	c.Flags().BoolVar(&o.Force, "force", false, "import skills that fail the safety checks")
	return c
}

func newSkillsLintCmd() *cobra.Command {
	var asJSON, check bool
	c := &cobra.Command{Use: "lint", Short: "Check every SKILL.md; exits 1 if a file cannot be loaded", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig()
			if err != nil {
				return err
			}
			if _, err := os.Stat(cfg.Skills.Dir); errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(cmd.OutOrStdout(), "%s does not exist yet (metaclaw skills install-bank creates it)\n", cfg.Skills.Dir)
				return nil
			}
			list, problems, err := skills.Lint(cfg.Skills.Dir, check)
			if err != nil {
				return err
			}
			fatal := fatalProblems(problems)
			if asJSON {
				if problems == nil {
					problems = []skills.Problem{}
				}
				if err := printJSON(cmd.OutOrStdout(), map[string]any{"dir": cfg.Skills.Dir, "loaded": len(list), "problems": problems}); err != nil {
					return err
				}
			} else {
				for _, p := range problems {
					fmt.Fprintln(cmd.OutOrStdout(), p)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%d skills load from %s; %d files skipped, %d warnings\n", len(list), cfg.Skills.Dir, fatal, len(problems)-fatal)
			}
			if fatal > 0 {
				return exitCode(1)
			}
			return nil
		}}
	jsonFlag(c, &asJSON)
	c.Flags().BoolVar(&check, "check", false, "also run the safety checks evolved skills must pass")
	return c
}

func newSkillsInstallBankCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{Use: "install-bank", Short: "Install the built-in skill bank (never overwrites skills you wrote or edited)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withSkills(cmd, func(ctx context.Context, e *skillsEnv) error {
				res, err := skills.InstallBank(ctx, e.lib, bank.FS())
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), res)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "installed %d, upgraded %d, unchanged %d, kept %d of yours, in %s\n",
					len(res.Installed), len(res.Upgraded), len(res.Unchanged), len(res.Skipped), e.lib.Dir())
				for n, why := range res.Skipped {
					fmt.Fprintf(cmd.OutOrStdout(), "  kept %s: %s\n", n, why)
				}
				return nil
			})
		}}
	jsonFlag(c, &asJSON)
	return c
}

// skillActionsViaHost runs approve/reject/enable/disable through the running
// host's API (POST /v1/skills/{name}/{action}), the route the dashboard uses.
func skillActionsViaHost(cmd *cobra.Command, api *hostAPI, action, reason string, names []string) error {
	for _, n := range names {
		var out struct {
			Skill struct {
				Name       string `json:"name"`
				Status     string `json:"status"`
				Generation int    `json:"generation"`
			} `json:"skill"`
		}
		if err := api.call(cmd.Context(), http.MethodPost, "/v1/skills/"+url.PathEscape(n)+"/"+action, map[string]string{"reason": reason}, &out); err != nil {
			return fmt.Errorf("%s %s: %w", action, n, err)
		}
		switch action {
		case "approve":
			fmt.Fprintf(cmd.OutOrStdout(), "approved %s (generation %d)\n", n, out.Skill.Generation)
		case "reject":
			fmt.Fprintf(cmd.OutOrStdout(), "rejected %s\n", n)
		default:
			fmt.Fprintf(cmd.OutOrStdout(), "%s is %s\n", n, out.Skill.Status)
		}
	}
	return nil
}
