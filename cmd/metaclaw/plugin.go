package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/metaclaw-go/metaclaw/plugin"
)

func newPluginCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plugin",
		Short: "Client-facing plugin modes (started by agent clients, not by hand)",
		Long: `Modes that agent clients start to reach MetaClaw through their hooks. They relay
to the host over $METACLAW_HOME/run/metaclaw.sock, starting the host if needed.
A client's turn never waits on MetaClaw beyond a deadline: without the host,
no context is injected and events are spooled in $METACLAW_HOME/spool/.
stdout carries only protocol; logs go to stderr and logs/plugin.log.
The protocol is documented in docs/plugin.md.`,
	}
	cmd.AddCommand(newPluginServeCmd(), newPluginHookCmd())
	return cmd
}

type pluginFlags struct {
	client   string
	agent    string
	timeout  time.Duration
	noStart  bool
	logLevel string
}

func (f *pluginFlags) register(cmd *cobra.Command, timeout time.Duration) {
	cmd.Flags().StringVar(&f.client, "client", "", "the client speaking to this process (required)")
	cmd.Flags().StringVar(&f.agent, "agent", "", "agent id when the client gives none (default $METACLAW_AGENT, else the client name)")
	cmd.Flags().DurationVar(&f.timeout, "timeout", timeout, "deadline of a context lookup; the turn proceeds without injection after it")
	cmd.Flags().BoolVar(&f.noStart, "no-start", false, "do not start the host when it is not running")
	cmd.Flags().StringVar(&f.logLevel, "log-level", "info", "log level of logs/plugin.log (stderr gets warnings only)")
	_ = cmd.MarkFlagRequired("client")
}

func newPluginServeCmd() *cobra.Command {
	var f pluginFlags
	cmd := &cobra.Command{
		Use:   "serve --client <client>",
		Short: "Long-lived JSON-RPC 2.0 server on stdio (NDJSON)",
		Long: `Long-lived JSON-RPC 2.0 over stdio, one JSON object per line.

  --client openclaw   the OpenClaw extension shim (openclaw.* hook methods + the host methods)
  --client picoclaw   PicoClaw process hooks (hook.hello, hook.before_llm, hook.after_llm, …)
  --client <other>    the host methods only (context, observe, session.end, tools.call, …)

The process exits when stdin closes (after in-flight calls answer) or on "shutdown".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := home()
			if err != nil {
				return err
			}
			client := strings.ToLower(strings.TrimSpace(f.client))
			log, closer := plugin.NewLogger(h, f.logLevel, "plugin-serve:"+client)
			defer closer.Close()
			relay := plugin.NewRelay(h, client, !f.noStart, false, log)
			relay.ContextTimeout = f.timeout
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			log.Debug().Msg("plugin serve started")
			return plugin.Serve(ctx, os.Stdin, os.Stdout, plugin.ServeOptions{Client: client, Agent: f.agent, Relay: relay, Log: log})
		},
	}
	f.register(cmd, 1500*time.Millisecond)
	return cmd
}

func newPluginHookCmd() *cobra.Command {
	var f pluginFlags
	clients := make([]string, 0, len(plugin.HookClients))
	for k := range plugin.HookClients {
		clients = append(clients, k)
	}
	sort.Strings(clients)
	cmd := &cobra.Command{
		Use:   "hook --client <client> <event>",
		Short: "One-shot command hook: JSON on stdin, JSON on stdout",
		Long: `One-shot command hook for clients whose hooks are commands. Reads one JSON
payload on stdin, writes one JSON object on stdout, always exits 0.

Clients and events: ` + plugin.HookClientsHelp + `.
Without <event>, the payload's hook_event_name is used.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			client, ok := plugin.HookClients[strings.ToLower(strings.TrimSpace(f.client))]
			if !ok {
				fmt.Fprintf(os.Stdout, "{}\n")
				return fmt.Errorf("unknown --client %q (one of %s)", f.client, strings.Join(clients, ", "))
			}
			h, err := home()
			if err != nil {
				fmt.Fprintf(os.Stdout, "{}\n")
				return err
			}
			event := ""
			if len(args) == 1 {
				event = args[0]
			}
			log, closer := plugin.NewLogger(h, f.logLevel, "plugin-hook:"+client)
			defer closer.Close()
			relay := plugin.NewRelay(h, client, !f.noStart, true, log)
			relay.ContextTimeout = f.timeout
			ctx, cancel := context.WithTimeout(context.Background(), f.timeout+5*time.Second)
			defer cancel()
			return plugin.RunHook(ctx, event, os.Stdin, os.Stdout, plugin.HookOptions{Client: client, Agent: f.agent, Relay: relay, Log: log})
		},
	}
	f.register(cmd, 1500*time.Millisecond)
	return cmd
}
