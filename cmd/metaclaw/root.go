package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/daemon"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/host/version"
)

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "metaclaw",
		Short: "MetaClaw: the learning layer for personal AI agents",
		Long: `MetaClaw sits between your agent and its LLM. Every turn it injects the most
relevant skills and memories; from every turn it learns.

State lives in $METACLAW_HOME (default ~/.metaclaw); configuration in
$METACLAW_HOME/config.yaml, secrets in $METACLAW_HOME/secrets.yaml (0600).`,
		Version:       version.Version,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newSetupCmd(), newStartCmd(), newStopCmd(), newStatusCmd(), newConfigCmd(), newEnvCmd(), newVersionCmd())
	root.AddCommand(newPluginCmd(), newMCPCmd())
	root.AddCommand(newSkillsCmd())
	root.AddCommand(newMemoryCmd())
	root.AddCommand(newSchedulerCmd())
	root.AddCommand(newRLCmd())
	root.AddCommand(newStoreCmd())
	root.AddCommand(newWireCmd(), newUnwireCmd(), newDoctorCmd(), newUninstallCmd())
	root.AddCommand(newEnableCmd(), newDisableCmd())
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		// stdout, like --version: v=$(metaclaw version) must capture it.
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintln(cmd.OutOrStdout(), "metaclaw", version.Version)
		},
	}
}

// home resolves $METACLAW_HOME.
func home() (string, error) { return config.Home() }

// loadConfig loads the configuration of $METACLAW_HOME (cfg.Home is that
// directory).
func loadConfig() (*config.Config, error) {
	h, err := home()
	if err != nil {
		return nil, err
	}
	return config.Load(h)
}

// openStore opens the store of cfg's home. SQLite in WAL mode: safe to open
// while the host runs.
func openStore(ctx context.Context, cfg *config.Config) (*store.SQLite, error) {
	return store.OpenSQLite(ctx, daemon.PathsFor(cfg.Home).DB)
}

// jsonFlag adds the --json flag that switches a command to printJSON.
func jsonFlag(cmd *cobra.Command, asJSON *bool) {
	cmd.Flags().BoolVar(asJSON, "json", false, "print JSON")
}

// printJSON writes v as indented JSON (HTML characters as they are) and a
// newline: the --json output of every command.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
