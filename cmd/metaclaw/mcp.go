package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/metaclaw-go/metaclaw/host/version"
	"github.com/metaclaw-go/metaclaw/plugin"
	"github.com/metaclaw-go/metaclaw/plugin/mcpserver"
)

func newMCPCmd() *cobra.Command {
	var agent, session, logLevel string
	var noStart bool
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "MCP server on stdio offering MetaClaw's tools (memory, skills, status)",
		Long: `A Model Context Protocol server on stdio for MCP clients (PicoClaw, ZeroClaw,
CoPaw, NanoClaw, Hermes, OpenClaw). It offers the tools registered on the
learning core (metaclaw_memory_search, metaclaw_memory_store, metaclaw_memory_forget,
metaclaw_memory_status, metaclaw_skills_search, metaclaw_status, …), listed and called through the host, which
is started if it is not running. The list follows the host (tools/list_changed).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := home()
			if err != nil {
				return err
			}
			log, closer := plugin.NewLogger(h, logLevel, "mcp")
			defer closer.Close()
			if agent == "" {
				agent = plugin.DefaultAgent("mcp")
			}
			relay := plugin.NewRelay(h, "mcp", !noStart, false, log)
			defer relay.Close(0)
			srv := mcpserver.New(mcpserver.Options{Relay: relay, Log: log, Version: version.Version, Agent: agent, Session: session})
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			// Not mcp.StdioTransport: one malformed line would end the session.
			return srv.Run(ctx, &mcpserver.Transport{In: os.Stdin, Out: os.Stdout,
				Log: func(msg string) { log.Info().Msg("mcp: " + msg) }})
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "agent id tools run for (default $METACLAW_AGENT, else mcp)")
	cmd.Flags().StringVar(&session, "session", "", "session id tools run for (optional)")
	cmd.Flags().BoolVar(&noStart, "no-start", false, "do not start the host when it is not running")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "log level of logs/plugin.log (stderr gets warnings only)")
	return cmd
}
