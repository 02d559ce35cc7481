package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/metaclaw-go/metaclaw/host/config"
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
