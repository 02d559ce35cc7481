package main

import (
	"fmt"
	"strconv"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// newMemRefusedCmd lists (and dismisses) the memory candidates the injection
// guard refused, so nothing it drops goes unseen.
func newMemRefusedCmd() *cobra.Command {
	var sf memScopeFlags
	var limit int
	var dismiss string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "refused",
		Short: "List memories refused by the injection guard (instructions to the agent); --dismiss ID|all after review",
		Long: `Memories are injected into later prompts, so a statement that tries to steer
the agent (ignore its instructions, reveal secrets, send data to a host, run
fetch/upload commands, disable safety) is refused instead of stored. Each
refusal is kept here with the rule that caught it, where it came from and how
often it was seen. Nothing listed here reaches a prompt.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := memOpen(cmd)
			if err != nil {
				return err
			}
			defer e.Close()
			w := cmd.OutOrStdout()
			if dismiss != "" {
				var id int64
				if dismiss != "all" {
					if id, err = strconv.ParseInt(dismiss, 10, 64); err != nil || id <= 0 {
						return fmt.Errorf("--dismiss %q: give a refusal id from `metaclaw memory refused`, or all", dismiss)
					}
				}
				n, err := e.mem.DismissRefused(cmd.Context(), id)
				if err != nil {
					return err
				}
				if n == 0 && id != 0 {
					return fmt.Errorf("no refused memory %d", id)
				}
				fmt.Fprintf(w, "dismissed %d\n", n)
				return nil
			}
			list, err := e.mem.Refused(cmd.Context(), sf.key(), limit)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(w, map[string]any{"refused": list})
			}
			if len(list) == 0 {
				fmt.Fprintln(w, "no refused memories")
				return nil
			}
			tw := tabwriter.NewWriter(w, 0, 2, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tLAST SEEN\tTIMES\tORIGIN\tSCOPE\tRULE\tCONTENT")
			for _, r := range list {
				rule := ""
				if len(r.Findings) > 0 {
					rule = r.Findings[0].Rule
				}
				fmt.Fprintf(tw, "%d\t%s\t%d\t%s\t%s\t%s\t%s\n", r.ID, r.LastAt.Local().Format("2006-01-02 15:04"), r.Count, r.Origin, r.Scope, rule, clipText(r.Content, 70))
			}
			return tw.Flush()
		},
	}
	sf.add(cmd)
	cmd.Flags().IntVar(&limit, "limit", 100, "most refusals listed (newest first)")
	cmd.Flags().StringVar(&dismiss, "dismiss", "", "delete a reviewed refusal by id, or all")
	jsonFlag(cmd, &asJSON)
	return cmd
}
