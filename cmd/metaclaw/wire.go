package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/metaclaw-go/metaclaw/adapters"
	"github.com/metaclaw-go/metaclaw/adapters/copaw"
	"github.com/metaclaw-go/metaclaw/adapters/hermes"
	"github.com/metaclaw-go/metaclaw/adapters/ironclaw"
	"github.com/metaclaw-go/metaclaw/adapters/nanoclaw"
	"github.com/metaclaw-go/metaclaw/adapters/nemoclaw"
	"github.com/metaclaw-go/metaclaw/adapters/openclaw"
	"github.com/metaclaw-go/metaclaw/adapters/picoclaw"
	"github.com/metaclaw-go/metaclaw/adapters/zeroclaw"
	"github.com/metaclaw-go/metaclaw/extensions"
	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/daemon"
	"github.com/metaclaw-go/metaclaw/host/version"
)

// clientAdapters lists every client adapter, in display order.
func clientAdapters() []adapters.Adapter {
	return []adapters.Adapter{
		openclaw.New(extensions.OpenClaw), copaw.New(), ironclaw.New(), picoclaw.New(),
		zeroclaw.New(), nanoclaw.New(), nemoclaw.New(), hermes.New(),
	}
}

var clientAliases = map[string]string{"qwenpaw": "copaw", "hermes-agent": "hermes"}

func clientNames() string {
	var n []string
	for _, a := range clientAdapters() {
		n = append(n, a.Name())
	}
	return strings.Join(n, ", ")
}

func findAdapter(name string) (adapters.Adapter, error) {
	name = strings.ToLower(strings.TrimSpace(name))
	if a, ok := clientAliases[name]; ok {
		name = a
	}
	for _, a := range clientAdapters() {
		if a.Name() == name {
			return a, nil
		}
	}
	return nil, fmt.Errorf("unknown client %q: use one of %s (qwenpaw is copaw)", name, clientNames())
}

// newEnv builds the adapters' view of the machine; tests replace it.
var newEnv = func(metaclawHome string) *adapters.Env { return adapters.DefaultEnv(metaclawHome) }

// metaclawBin is the path written into client hook and MCP commands.
func metaclawBin() string {
	if p := os.Getenv("METACLAW_BIN"); p != "" {
		return p
	}
	p, err := os.Executable()
	if err != nil {
		return "metaclaw"
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		p = r
	}
	return p
}

// wireSetup loads the MetaClaw config into a request and builds the engine.
func wireSetup(cmd *cobra.Command) (*adapters.Engine, *adapters.Request, *config.Config, error) {
	h, err := home()
	if err != nil {
		return nil, nil, nil, err
	}
	cfg, err := config.Load(h)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%w\n(fix the MetaClaw config first: the client is wired to the proxy it describes)", err)
	}
	req := &adapters.Request{
		ProxyHost: cfg.Proxy.Host, ProxyPort: cfg.Proxy.Port, ProxyKey: clientKey(cfg),
		LLMModel: cfg.LLM.ModelID, ContextWindow: cfg.ContextWindow, MetaclawBin: metaclawBin(),
	}
	eng := &adapters.Engine{Env: newEnv(h), Out: cmd.OutOrStdout(), Version: version.Version,
		Confirm: adapters.PromptConfirm(cmd.InOrStdin(), cmd.OutOrStdout())}
	return eng, req, cfg, nil
}

// clientProxyKey is the key a wired client sends: proxy.api_key, generated
// into secrets.yaml now if there is none yet (a dry run only shows where it
// goes), or "" with proxy.auth none.
func clientProxyKey(cmd *cobra.Command, cfg *config.Config, dryRun bool) (string, error) {
	if !cfg.ProxyAuthRequired() {
		return "", nil
	}
	if dryRun && cfg.Proxy.APIKey == "" {
		fmt.Fprintf(cmd.OutOrStdout(), "note: no proxy key yet; wiring for real generates one into %s\n", filepath.Join(cfg.Home, config.SecretsFile))
		return config.NewProxyKey()
	}
	created, err := config.EnsureProxyKey(cfg)
	if err != nil {
		return "", err
	}
	if created {
		fmt.Fprintf(cmd.OutOrStdout(), "generated a proxy key into %s (mode 0600); the client gets it, other local users do not\n", filepath.Join(cfg.Home, config.SecretsFile))
	}
	return cfg.Proxy.APIKey, nil
}

func newWireCmd() *cobra.Command {
	var (
		agents                        []string
		via, model, cfgPath           string
		dryRun, yes, force, noRestart bool
	)
	cmd := &cobra.Command{
		Use:   "wire [client]",
		Short: "Point a client (openclaw, copaw, …) at MetaClaw, reversibly",
		Long: `Point a client at MetaClaw: its LLM provider goes to the proxy with the agent
in the URL (http://127.0.0.1:<port>/a/<agent>/v1), and with --via hooks|both the
client's extension, hook and MCP entries are installed where it has them.
OpenClaw's default is its plugin (--via hooks): the MetaClaw extension,
enabled with conversation access for the chosen agents; with --via proxy
only the chosen agents' models point at the proxy, their old model kept as
the fallback.

The exact diff of every file is printed first; nothing changes until you
confirm (or pass --yes). Each file is backed up to
$METACLAW_HOME/backups/<client>/<timestamp>/ and written atomically;
` + "`metaclaw unwire <client>`" + ` restores it byte for byte. Wiring again with the same
options changes nothing; with other options it rebuilds from the originals.

Clients: ` + clientNames() + ` (qwenpaw is copaw).
Without a client, lists what is installed and wired here.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return listClients(cmd)
			}
			a, err := findAdapter(args[0])
			if err != nil {
				return err
			}
			v, err := adapters.ParseVia(via)
			if err != nil {
				return err
			}
			if via == "" {
				v = defaultVia(a)
			}
			eng, req, cfg, err := wireSetup(cmd)
			if err != nil {
				return err
			}
			req.Agents, req.Via, req.Model = agents, v, model
			if req.ProxyKey, err = clientProxyKey(cmd, cfg, dryRun); err != nil {
				return err
			}
			if v.Proxy() && cfg.LLM.APIKey == "" && req.ProxyKey == "" {
				fmt.Fprintf(cmd.OutOrStdout(), "note: no upstream key is configured (llm.api_key), so the proxy passes the client's key upstream, and the wired client sends the placeholder %q. Set the real key once: metaclaw config set llm.api_key <key>\n", adapters.PlaceholderKey)
			}
			return eng.Wire(context.Background(), a, req, cfgPath, adapters.WireOptions{DryRun: dryRun, Yes: yes, Force: force, NoRestart: noRestart})
		},
	}
	f := cmd.Flags()
	f.StringArrayVar(&agents, "agent", nil, "agent id to wire (repeat for several; default: the client's default agent)")
	f.StringVar(&via, "via", "", "integration path: proxy, hooks or both (default: hooks, i.e. the plugin, for openclaw; proxy for the others)")
	f.BoolVar(&dryRun, "dry-run", false, "print the diff and commands, change nothing")
	f.BoolVarP(&yes, "yes", "y", false, "apply without asking")
	f.BoolVar(&force, "force", false, "rebuild from the originals even if wired files were edited since (the edited versions are saved)")
	f.StringVar(&model, "model", "", "model to use when the client's own cannot be read (or to replace it)")
	f.StringVar(&cfgPath, "config", "", "the client's config file or directory, when it is not where the client keeps it by default")
	f.BoolVar(&noRestart, "no-restart", false, "do not reload or restart the client")
	return cmd
}

// defaultVia is a client's integration path when --via is not given.
func defaultVia(a adapters.Adapter) adapters.Via {
	if d, ok := a.(interface{ DefaultVia() adapters.Via }); ok {
		return d.DefaultVia()
	}
	return adapters.ViaProxy
}

func listClients(cmd *cobra.Command) error {
	h, err := home()
	if err != nil {
		return err
	}
	env := newEnv(h)
	eng := &adapters.Engine{Env: env}
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLIENT\tINSTALLED\tWIRED\tCONFIG")
	for _, a := range clientAdapters() {
		inst, wired, where := "no", "no", ""
		d, err := a.Detect(env, "")
		switch {
		case err != nil:
			inst = "unsupported: " + err.Error()
		case d.Found:
			inst, where = d.Version, d.ConfigPath
		}
		if m, _ := eng.Active(a.Name()); m != nil {
			wired = "yes (" + strings.Join(m.Agents, ", ") + ", via " + string(m.Via) + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Name(), inst, wired, where)
	}
	return tw.Flush()
}

func newUnwireCmd() *cobra.Command {
	var dryRun, force, noRestart, yes bool
	cmd := &cobra.Command{
		Use:   "unwire <client>",
		Short: "Restore a wired client's files exactly as they were before wiring",
		Long: `Restore every file metaclaw changed for the client, byte for byte, remove the
files it added, and undo the client commands it ran.

A file changed after wiring (by you or by the client) is not overwritten
unless you pass --force; the current version is then saved in the backup
directory first.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			a, err := findAdapter(args[0])
			if err != nil {
				return err
			}
			h, err := home()
			if err != nil {
				return err
			}
			eng := &adapters.Engine{Env: newEnv(h), Out: cmd.OutOrStdout(), Version: version.Version}
			if !yes && !dryRun && isTerminal(cmd.InOrStdin()) {
				if !adapters.PromptConfirm(cmd.InOrStdin(), cmd.OutOrStdout())(fmt.Sprintf("Restore %s's files as they were before wiring?", a.Name())) {
					return errors.New("not unwired (confirm, or pass --yes)")
				}
			}
			return eng.Unwire(context.Background(), a, adapters.UnwireOptions{DryRun: dryRun, Force: force, NoRestart: noRestart})
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation (it is asked only on a terminal)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be restored, change nothing")
	cmd.Flags().BoolVar(&force, "force", false, "restore even files changed since wiring (their current versions are saved first)")
	cmd.Flags().BoolVar(&noRestart, "no-restart", false, "do not reload or restart the client")
	return cmd
}

func newDoctorCmd() *cobra.Command {
	var asJSON, noProbe bool
	cmd := &cobra.Command{
		Use:   "doctor [client]",
		Short: "Check the config, the host, the upstream, and that wired clients reach MetaClaw",
		Long: `First MetaClaw itself: does the config load, does the host answer, is an
upstream LLM configured, where does its key come from (secrets.yaml, or an
environment variable only a host started with it has), and does the upstream
answer a probe (GET /models, or a one-token request; --no-probe skips it)?

Then, for every installed or wired client (or just the one named): does its config
point at the proxy on the configured address, does the proxy answer /healthz,
are metaclaw's entries, extension and hooks still installed and allowed? And
does a probe turn reach the core: for each wired agent, doctor pings the host
socket ($METACLAW_HOME/run/metaclaw.sock) and asks the core for that agent's
context (no LLM call, no turn recorded). Each problem comes with the exact command that fixes it. Exit code 1 when a
check fails.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			hd, err := newHostDoctor(cmd, asJSON, noProbe)
			if err != nil {
				return err
			}
			eng, req, _, err := wireSetup(cmd)
			if err != nil {
				return err
			}
			list := clientAdapters()
			if len(args) == 1 {
				a, err := findAdapter(args[0])
				if err != nil {
					return err
				}
				list = []adapters.Adapter{a}
			}
			h, err := home()
			if err != nil {
				return err
			}
			if !asJSON {
				disabledNote(cmd.OutOrStdout(), h)
			}
			probe := newSocketProbe(h)
			defer probe.Close()
			findings := eng.Doctor(context.Background(), list, adapters.DoctorInput{Request: req, Probe: probe.Probe})
			findings = hd.with(context.Background(), eng, list, findings)
			bad := 0
			for _, f := range findings {
				if !f.OK {
					bad++
				}
			}
			w := cmd.OutOrStdout()
			if asJSON {
				_ = printJSON(w, findings)
			} else {
				printFindings(w, findings)
			}
			if bad > 0 {
				return exitCode(1)
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the findings as JSON")
	cmd.Flags().BoolVar(&noProbe, "no-probe", false, "do not send the upstream LLM a probe request")
	return cmd
}

func printFindings(w io.Writer, findings []adapters.Finding) {
	defer func() {
		for _, f := range findings {
			if f.Client != hostClient {
				return
			}
		}
		fmt.Fprintln(w, "no client installed or wired here (`metaclaw wire` lists the clients metaclaw knows)")
	}()
	last := ""
	for _, f := range findings {
		if f.Client != last {
			fmt.Fprintf(w, "%s\n", f.Client)
			last = f.Client
		}
		mark := "ok "
		if !f.OK {
			mark = "FAIL"
		}
		fmt.Fprintf(w, "  [%s] %s\n", mark, f.What)
		if f.Fix != "" && !f.OK {
			fmt.Fprintf(w, "         fix: %s\n", f.Fix)
		}
	}
}

// installRecord is what install.sh writes to $METACLAW_HOME/install.json.
type installRecord struct {
	Binary string `json:"binary"`
}

func newUninstallCmd() *cobra.Command {
	var yes, purge, force bool
	cmd := &cobra.Command{
		Use:   "uninstall",
		Short: "Unwire every client, stop the host and remove what the installer added",
		Long: `Restore every wired client (as ` + "`metaclaw unwire`" + `), stop the host, and remove the
binary install.sh put in place. $METACLAW_HOME (config, memory, skills,
backups) is kept unless --purge; it is never removed while a client could not
be restored.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			h, err := home()
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			eng := &adapters.Engine{Env: newEnv(h), Out: w, Version: version.Version}
			wired, err := eng.Wired()
			if err != nil {
				return err
			}
			sort.Slice(wired, func(i, j int) bool { return wired[i].Client < wired[j].Client })
			var rec installRecord
			if b, err := os.ReadFile(filepath.Join(h, "install.json")); err == nil {
				_ = json.Unmarshal(b, &rec)
			}
			fmt.Fprintln(w, "metaclaw uninstall will:")
			for _, m := range wired {
				fmt.Fprintf(w, "  unwire %s (restore from %s)\n", m.Client, m.Dir())
			}
			fmt.Fprintln(w, "  stop the host if it runs")
			if rec.Binary != "" {
				fmt.Fprintf(w, "  remove %s\n", rec.Binary)
			}
			if purge {
				fmt.Fprintf(w, "  delete %s (config, secrets, memory, skills, backups)\n", h)
			} else {
				fmt.Fprintf(w, "  keep %s (pass --purge to delete it)\n", h)
			}
			if !yes && !adapters.PromptConfirm(cmd.InOrStdin(), w)("Uninstall MetaClaw?") {
				return errors.New("not uninstalled (confirm, or pass --yes)")
			}
			var failed []string
			for _, m := range wired {
				a, err := findAdapter(m.Client)
				if err == nil {
					err = eng.Unwire(context.Background(), a, adapters.UnwireOptions{Force: force})
				}
				if err != nil {
					failed = append(failed, fmt.Sprintf("%s: %v", m.Client, err))
				}
			}
			if _, err := daemon.Stop(h, daemon.ShutdownGrace+10*time.Second); err != nil && !errors.Is(err, daemon.ErrNotRunning) {
				failed = append(failed, "stop: "+err.Error())
			}
			if len(failed) > 0 {
				return fmt.Errorf("uninstall stopped; nothing else was removed:\n  %s", strings.Join(failed, "\n  "))
			}
			if rec.Binary != "" {
				if err := os.Remove(rec.Binary); err != nil && !errors.Is(err, os.ErrNotExist) {
					return err
				}
				fmt.Fprintf(w, "removed %s\n", rec.Binary)
				_ = os.Remove(filepath.Join(h, "install.json"))
			}
			if purge {
				if err := os.RemoveAll(h); err != nil {
					return err
				}
				fmt.Fprintf(w, "deleted %s\n", h)
			}
			fmt.Fprintln(w, "metaclaw uninstalled")
			return nil
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do not ask for confirmation")
	cmd.Flags().BoolVar(&purge, "purge", false, "also delete $METACLAW_HOME")
	cmd.Flags().BoolVar(&force, "force", false, "restore clients even where files were edited since wiring (their current versions are saved in the backups first)")
	return cmd
}

// clientKey is the proxy key clients present ("" with proxy.auth none).
func clientKey(cfg *config.Config) string {
	if !cfg.ProxyAuthRequired() {
		return ""
	}
	return cfg.Proxy.APIKey
}
