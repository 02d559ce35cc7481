package main

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/daemon"
)

// newEnvCmd prints the environment an OpenAI or Anthropic SDK needs to go
// through the proxy, with the proxy key (generated now if there is none).
func newEnvCmd() *cobra.Command {
	var agent, shell string
	cmd := &cobra.Command{
		Use:   "env",
		Short: "Print the exports that point OpenAI/Anthropic SDKs at the proxy, with its key: eval \"$(metaclaw env)\"",
		Long: `Print OPENAI_BASE_URL/OPENAI_API_KEY and ANTHROPIC_BASE_URL/ANTHROPIC_API_KEY
for the proxy, so any SDK or tool that reads them goes through MetaClaw:

  eval "$(metaclaw env)"                 # bash, zsh
  metaclaw env --shell fish | source     # fish
  eval "$(metaclaw env --agent coder)"   # turns filed under agent "coder"

The key is proxy.api_key from $METACLAW_HOME/secrets.yaml (generated now if
there is none yet). The output holds it: do not paste it anywhere public.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadConfig()
			if err != nil {
				return err
			}
			h := cfg.Home
			if _, err := config.EnsureProxyKey(cfg); err != nil {
				return err
			}
			key := clientKey(cfg)
			if key == "" {
				key = "metaclaw-local" // proxy.auth none: any value; SDKs insist on one
			}
			base := "http://" + proxyAddr(h, cfg)
			if agent != "" {
				if strings.ContainsAny(agent, "/ ?#") {
					return fmt.Errorf("--agent %q: an agent id cannot contain '/', spaces, '?' or '#'", agent)
				}
				base += "/a/" + agent
			}
			vars := [][2]string{
				{"OPENAI_BASE_URL", base + "/v1"}, {"OPENAI_API_KEY", key},
				{"ANTHROPIC_BASE_URL", base}, {"ANTHROPIC_API_KEY", key},
			}
			out := cmd.OutOrStdout()
			for _, v := range vars {
				switch shell {
				case "sh", "bash", "zsh", "":
					fmt.Fprintf(out, "export %s=%s\n", v[0], shellQuote(v[1]))
				case "fish":
					fmt.Fprintf(out, "set -gx %s '%s'\n", v[0], strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(v[1]))
				case "dotenv":
					fmt.Fprintf(out, "%s=%s\n", v[0], v[1])
				default:
					return fmt.Errorf("--shell %q: use sh, fish or dotenv", shell)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "agent id to put in the URL (/a/<agent>/v1)")
	cmd.Flags().StringVar(&shell, "shell", "sh", "output syntax: sh (bash, zsh), fish or dotenv")
	return cmd
}

// proxyAddr is where a local client reaches the proxy: the running host's
// address, else the configured one (a wildcard bind is reached on loopback).
func proxyAddr(home string, cfg *config.Config) string {
	if info, err := daemon.ReadInfo(home); err == nil && info.Addr != "" {
		return info.Addr
	}
	h := cfg.Proxy.Host
	switch strings.Trim(h, "[]") {
	case "", "0.0.0.0", "localhost":
		h = "127.0.0.1"
	case "::":
		h = "::1"
	}
	return net.JoinHostPort(strings.Trim(h, "[]"), strconv.Itoa(cfg.Proxy.Port))
}

// shellQuote single-quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
