package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/host/onoff"
)

func newDisableCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "disable",
		Short: "Turn MetaClaw off without unwiring anything: clients pass through untouched",
		Long: `Switch MetaClaw off. Nothing is unwired and no client config changes:
the client plugins answer every hook with nothing and no longer start the
host, and the proxy forwards requests as they are. Nothing is injected,
recorded or learned until ` + "`metaclaw enable`" + `.

(` + "`metaclaw stop`" + ` alone does not keep MetaClaw off while a client plugin is
installed: the plugin starts the host again on its next turn.)`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := home()
			if err != nil {
				return err
			}
			if err := onoff.Disable(h); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "metaclaw disabled: wired clients pass through untouched (nothing injected, recorded or learned); `metaclaw enable` turns it back on")
			return nil
		},
	}
}

func newEnableCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "enable",
		Short: "Turn MetaClaw back on after `metaclaw disable`",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := home()
			if err != nil {
				return err
			}
			was := onoff.Disabled(h)
			if err := onoff.Enable(h); err != nil {
				return err
			}
			if was {
				fmt.Fprintln(cmd.OutOrStdout(), "metaclaw enabled: wired clients get injection and learning again (plugins start the host on their next turn)")
			} else {
				fmt.Fprintln(cmd.OutOrStdout(), "metaclaw is enabled (it was not disabled)")
			}
			return nil
		},
	}
}

// disabledNote says so when MetaClaw is switched off.
func disabledNote(w io.Writer, h string) {
	if onoff.Disabled(h) {
		fmt.Fprintf(w, "metaclaw is DISABLED since %s: clients pass through untouched (`metaclaw enable` turns it back on)\n",
			onoff.Since(h).Format("2006-01-02 15:04"))
	}
}

// restartNote warns, after `metaclaw stop`, that client plugins start the
// host again on their next turn.
func restartNote(w io.Writer, h string) {
	if onoff.Disabled(h) {
		return
	}
	wired, err := (&adapters.Engine{Env: newEnv(h)}).Wired()
	if err != nil {
		return
	}
	for _, m := range wired {
		if m.Via.Hooks() {
			fmt.Fprintf(w, "note: the %s plugin starts the host again on its next turn; to keep MetaClaw off, run `metaclaw disable`\n", m.Client)
			return
		}
	}
}
