package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/daemon"
)

func newConfigCmd() *cobra.Command {
	var reveal bool
	cmd := &cobra.Command{
		Use:   "config [KEY [VALUE]]",
		Short: "Show, read or change the configuration",
		Long: `Show, read or change $METACLAW_HOME/config.yaml.

  metaclaw config show              effective configuration, secrets masked
  metaclaw config get KEY           one value (or a section as YAML); secrets masked unless --reveal
  metaclaw config set KEY VALUE     validate, then write (comments and order kept)
  metaclaw config unset KEY         back to the default
  metaclaw config keys [--json]     every key with its type, default and env override
  metaclaw config KEY [VALUE]       MetaClaw's short form of get/set

Secret keys (*.api_key and the like) are written to secrets.yaml (mode 0600).
A config file that does not parse is never overwritten: fix it first.`,
		Args: cobra.RangeArgs(0, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch len(args) {
			case 0:
				return showConfig(cmd)
			case 1:
				return getConfig(cmd, args[0], reveal)
			default:
				return setConfig(cmd, args[0], args[1])
			}
		},
	}
	cmd.AddCommand(
		&cobra.Command{Use: "show", Short: "Print the effective configuration (secrets masked)", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return showConfig(cmd) }},
		newConfigGetCmd(),
		&cobra.Command{Use: "set KEY VALUE", Short: "Set a value", Args: cobra.ExactArgs(2),
			RunE: func(cmd *cobra.Command, args []string) error { return setConfig(cmd, args[0], args[1]) }},
		&cobra.Command{Use: "unset KEY", Short: "Return a key to its default", Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				h, err := home()
				if err != nil {
					return err
				}
				if err := config.Unset(h, args[0]); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s reset to its default\n", args[0])
				return nil
			}},
		newConfigKeysCmd(),
	)
	cmd.Flags().BoolVar(&reveal, "reveal", false, "with KEY: print a secret value in full")
	return cmd
}

func newConfigKeysCmd() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{Use: "keys", Short: "List every configuration key", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			keys := config.Keys()
			if asJSON {
				_ = printJSON(cmd.OutOrStdout(), keys)
				return nil
			}
			for _, k := range keys {
				def := k.Default
				if def == "" {
					def = `""`
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%-40s %-7s default %-12s %s\n", k.Path, k.Type, def, k.Env)
			}
			return nil
		}}
	jsonFlag(c, &asJSON)
	return c
}

func showConfig(cmd *cobra.Command) error {
	h, err := home()
	if err != nil {
		return err
	}
	// A configuration that does not load is still shown as far as it can be
	// read (problem keys at their defaults), and the problems are the error.
	cfg, loadErr := config.LoadPartial(h)
	if cfg == nil {
		return loadErr
	}
	out, err := cfg.ShowYAML()
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "# %s\n", filepath.Join(h, config.ConfigFile))
	if loadErr != nil {
		fmt.Fprintln(cmd.OutOrStdout(), "# does NOT load (see the errors): what could be read; a value that does not parse shows its default")
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s", out)
	for _, w := range cfg.Warnings {
		fmt.Fprintln(cmd.ErrOrStderr(), "warning:", w)
	}
	if loadErr != nil {
		return withConfigFix(loadErr)
	}
	return nil
}

func newConfigGetCmd() *cobra.Command {
	var reveal bool
	c := &cobra.Command{Use: "get KEY", Short: "Print one value (secrets masked unless --reveal)", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return getConfig(cmd, args[0], reveal) }}
	c.Flags().BoolVar(&reveal, "reveal", false, "print secret values in full (they end up on the terminal and in its scrollback)")
	return c
}

// getConfig prints one value; secrets are masked unless reveal, so a key
// does not land in a terminal, a screen share or a pasted transcript by accident.
func getConfig(cmd *cobra.Command, key string, reveal bool) error {
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	if !reveal {
		cfg = cfg.Masked()
	}
	v, err := cfg.Get(key)
	if err != nil {
		return err
	}
	fmt.Fprintln(cmd.OutOrStdout(), v)
	return nil
}

func setConfig(cmd *cobra.Command, key, value string) error {
	h, err := home()
	if err != nil {
		return err
	}
	if err := config.Set(h, key, value); err != nil {
		return err
	}
	shown := value
	for _, k := range config.Keys() {
		if k.Path == key && k.Secret {
			shown = "(secret, stored in " + config.SecretsFile + ")"
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s = %s\n", key, shown)
	// A running host keeps the config it started with; a stopped one reads
	// the file on its next start, so there is nothing to restart.
	if info, err := daemon.ReadInfo(h); err == nil {
		fmt.Fprintf(cmd.OutOrStdout(), "the running host (pid %d) keeps its config: restart it (`metaclaw stop && metaclaw start`) for this to take effect\n", info.PID)
	}
	return nil
}
