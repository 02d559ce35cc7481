package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/charmbracelet/huh"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/daemon"
	"github.com/metaclaw-go/metaclaw/host/setup"
	"github.com/metaclaw-go/metaclaw/host/skills"
)

type setupFlags struct {
	client, provider, apiBase, api, apiKey, apiKeyEnv, model string
	agents                                                   []string
	memory, installBank                                      bool
	review                                                   string
	rl, rlKey, rlKeyEnv, rlModel, judgeURL, judgeModel       string
	sleep                                                    string
	port                                                     int
	yes, noProbe, start, accessible                          bool
}

func newSetupCmd() *cobra.Command {
	var f setupFlags
	cmd := &cobra.Command{
		Use:   "setup",
		Short: "First-run wizard: pick the agent, the LLM provider, memory, skills and RL",
		Long: `Asks which agent to wire, which LLM provider to use (it probes the endpoint),
whether to enable memory, install the skill bank and review evolved skills, and
whether to run RL on a training backend (main turns are then answered by your
LoRA of the chosen model on that backend, stored as judged samples and trained
on in the scheduler's windows, see docs/rl.md). It shows the changes to
config.yaml before writing them (secrets go to secrets.yaml, mode 0600; a key
named with --api-key-env is read from that variable and stored there, so a host
started from anywhere has it), warns when nothing would answer, and ends by
offering to start the host and wire the agent.

Every answer is also a flag, for scripts:
  metaclaw setup --client openclaw --provider openai --api-key-env OPENAI_API_KEY --model gpt-4.1 --yes`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runSetup(cmd, &f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.client, "client", "", "agent to wire: "+strings.Join(setup.Clients, ", "))
	fl.StringSliceVar(&f.agents, "agent", nil, "agent id(s) of that client to enable (repeatable)")
	var ids []string
	for _, p := range setup.Presets {
		ids = append(ids, p.ID)
	}
	fl.StringVar(&f.provider, "provider", "", "LLM provider preset: "+strings.Join(ids, ", "))
	fl.StringVar(&f.apiBase, "api-base", "", "upstream base URL (default: the preset's)")
	fl.StringVar(&f.api, "api", "", "upstream wire format: openai or anthropic (default: the preset's)")
	fl.StringVar(&f.apiKey, "api-key", "", "upstream API key (prefer --api-key-env: flags show in ps)")
	fl.StringVar(&f.apiKeyEnv, "api-key-env", "", "read the upstream API key from this environment variable")
	fl.StringVar(&f.model, "model", "", "model id (default: the preset's)")
	fl.BoolVar(&f.memory, "memory", true, "enable long-term memory")
	fl.BoolVar(&f.installBank, "install-bank", true, "install the built-in skill bank")
	fl.StringVar(&f.review, "skill-review", "auto", "evolved skills: auto (go live once checked) or manual (wait for approval)")
	fl.StringVar(&f.rl, "rl", "off", "RL backend: off, tinker, mint or weaver (the LoRA answers main turns and trains on the judged samples)")
	fl.StringVar(&f.rlKey, "rl-api-key", "", "RL backend API key")
	fl.StringVar(&f.rlKeyEnv, "rl-api-key-env", "", "read the RL backend API key from this environment variable")
	fl.StringVar(&f.rlModel, "rl-model", "", "base model to train")
	fl.StringVar(&f.judgeURL, "judge-url", "", "reward judge base URL (OpenAI-compatible)")
	fl.StringVar(&f.judgeModel, "judge-model", "", "reward judge model")
	fl.StringVar(&f.sleep, "sleep", "", "training window as HH:MM-HH:MM, e.g. 23:00-07:00")
	fl.IntVar(&f.port, "port", 0, "proxy port (default: keep)")
	fl.BoolVar(&f.yes, "yes", false, "non-interactive: accept the plan without asking")
	fl.BoolVar(&f.noProbe, "no-probe", false, "do not test the endpoint")
	fl.BoolVar(&f.start, "start", false, "start the host when done (asked interactively otherwise)")
	fl.BoolVar(&f.accessible, "accessible", os.Getenv("ACCESSIBLE") != "", "plain line-by-line prompts (screen readers, pipes)")
	return cmd
}

func runSetup(cmd *cobra.Command, f *setupFlags) error {
	h, err := home()
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	cfg, err := config.Load(h)
	if err != nil {
		return fmt.Errorf("%w\nsetup never overwrites a config it cannot read", withConfigFix(err))
	}
	_, statErr := os.Stat(filepath.Join(h, config.ConfigFile))
	existing := statErr == nil

	interactive := !f.yes && f.provider == ""
	if interactive && !f.accessible && !isTerminal(cmd.InOrStdin()) {
		return errors.New("setup asks questions and needs a terminal; for scripts pass the answers as flags, e.g. --provider openai --api-key-env OPENAI_API_KEY --yes (or use --accessible for line-by-line prompts)")
	}
	var a setup.Answers
	if interactive {
		if a, err = askInteractive(cmd, f, cfg); err != nil {
			return err
		}
	} else if a, err = answersFromFlags(f); err != nil {
		return err
	}
	if !f.noProbe && a.APIBase != "" {
		if err := probeEndpoint(cmd, f, a, interactive); err != nil {
			return err
		}
	}
	if err := writeSetup(cmd, f, h, cfg, a, existing); err != nil {
		return err
	}
	if a.InstallBank {
		if err := runSub(cmd, "skills", "install-bank"); err != nil {
			fmt.Fprintln(out, "skill bank: "+err.Error())
		}
	} else if saved, err := config.Load(h); err == nil {
		// Remember the choice: otherwise the host installs the bank on its
		// first start.
		if err := skills.DeclineBank(saved.Skills.Dir); err != nil {
			fmt.Fprintln(out, "skill bank: "+err.Error())
		}
	}
	if a.Client != "" && a.Client != "none" {
		if err := offerWire(cmd, f, a, interactive); err != nil {
			return err
		}
	}
	return offerStart(cmd, f, h, interactive)
}

// probeEndpoint tests the chosen endpoint; a failure stops a scripted
// setup, and an interactive one asks whether to save it anyway.
func probeEndpoint(cmd *cobra.Command, f *setupFlags, a setup.Answers, interactive bool) error {
	out := cmd.OutOrStdout()
	fmt.Fprintf(out, "Testing %s … ", a.APIBase)
	perr := setup.Probe(context.Background(), a.APIBase, a.API, a.APIKey, a.Model)
	if perr == nil {
		fmt.Fprintln(out, "ok")
		return nil
	}
	fmt.Fprintln(out, "failed")
	fmt.Fprintln(out, "  "+perr.Error())
	if !interactive {
		return fmt.Errorf("the endpoint test failed (see above); fix it or pass --no-probe")
	}
	ok := false
	if err := confirm(cmd, f, "Save this provider anyway?", &ok); err != nil || !ok {
		return errors.Join(err, errors.New("setup cancelled; nothing was written"))
	}
	return nil
}

// writeSetup shows the changes the answers make to config.yaml and writes
// them (asking first when a config exists), makes sure there is a proxy
// key, and warns about what the saved config still lacks.
func writeSetup(cmd *cobra.Command, f *setupFlags, h string, cfg *config.Config, a setup.Answers, existing bool) error {
	out := cmd.OutOrStdout()
	changes, err := setup.Plan(cfg, a)
	if err != nil {
		return err
	}
	if len(changes) == 0 {
		fmt.Fprintln(out, "config.yaml already says all of this; nothing to change.")
	} else {
		fmt.Fprintf(out, "Changes to %s:\n", filepath.Join(h, config.ConfigFile))
		for _, c := range changes {
			fmt.Fprintln(out, "  "+c.String())
		}
		if existing && !f.yes {
			ok := false
			if err := confirm(cmd, f, "Write these changes?", &ok); err != nil || !ok {
				return errors.Join(err, errors.New("setup cancelled; nothing was written"))
			}
		}
		if err := setup.Apply(h, changes); err != nil {
			return err
		}
		fmt.Fprintln(out, "Saved.")
	}

	if created, err := config.EnsureProxyKey(cfg); err != nil {
		return err
	} else if created {
		fmt.Fprintf(out, "Generated a proxy key in %s (mode 0600): clients must send it. `metaclaw wire` sets it in the client; for SDKs: eval \"$(metaclaw env)\"\n", filepath.Join(h, config.SecretsFile))
	}
	if saved, err := config.Load(h); err == nil {
		for _, w := range setup.Warnings(saved) {
			fmt.Fprintln(out, "warning: "+w)
		}
	}
	return nil
}

// offerWire wires the chosen client (asked interactively, done with --yes),
// or says how to later.
func offerWire(cmd *cobra.Command, f *setupFlags, a setup.Answers, interactive bool) error {
	out := cmd.OutOrStdout()
	args := []string{"wire", a.Client}
	for _, ag := range a.Agents {
		args = append(args, "--agent", ag)
	}
	if f.yes {
		args = append(args, "--yes")
	}
	wire := f.yes
	if interactive {
		if err := confirm(cmd, f, fmt.Sprintf("Wire %s to MetaClaw now (`metaclaw %s`)?", a.Client, strings.Join(args, " ")), &wire); err != nil {
			return err
		}
	}
	if wire {
		if err := runSub(cmd, args...); err != nil {
			fmt.Fprintln(out, "wiring: "+err.Error())
		}
	} else {
		fmt.Fprintf(out, "Wire it later with: metaclaw %s\n", strings.Join(args, " "))
	}
	return nil
}

// offerStart starts the host (with --start, or when the user says so), or
// says how to later.
func offerStart(cmd *cobra.Command, f *setupFlags, h string, interactive bool) error {
	out := cmd.OutOrStdout()
	start := f.start
	if interactive && !start {
		if err := confirm(cmd, f, "Start MetaClaw now?", &start); err != nil {
			return err
		}
	}
	if !start {
		fmt.Fprintln(out, "Start it with: metaclaw start")
		return nil
	}
	info, err := daemon.Start(daemon.StartOptions{Home: h})
	var already *daemon.AlreadyRunningError
	switch {
	case errors.As(err, &already):
		fmt.Fprintln(out, already.Error()+"; restart it to apply the new config: metaclaw stop && metaclaw start")
	case err != nil:
		return err
	default:
		fmt.Fprintf(out, "metaclaw started (pid %d) on %s\n", info.PID, info.URL())
	}
	return nil
}

// runSub runs another metaclaw command in this process, if this build has it.
func runSub(cmd *cobra.Command, args ...string) error {
	root := cmd.Root()
	sub, rest, err := root.Find(args)
	if err != nil || sub == root {
		return fmt.Errorf("`metaclaw %s` is not available in this build", strings.Join(args, " "))
	}
	sub.SetOut(cmd.OutOrStdout())
	sub.SetErr(cmd.ErrOrStderr())
	sub.SetIn(cmd.InOrStdin())
	if err := sub.ParseFlags(rest); err != nil {
		return err
	}
	if sub.RunE != nil {
		return sub.RunE(sub, sub.Flags().Args())
	}
	if sub.Run != nil {
		sub.Run(sub, sub.Flags().Args())
	}
	return nil
}

func answersFromFlags(f *setupFlags) (setup.Answers, error) {
	a := setup.Answers{
		Client: f.client, Agents: f.agents, Memory: f.memory, InstallBank: f.installBank, SkillReview: f.review,
		RLBackend: f.rl, RLModel: f.rlModel, JudgeURL: f.judgeURL, JudgeModel: f.judgeModel, Port: f.port,
	}
	if a.Client != "" && !contains(setup.Clients, a.Client) {
		return a, fmt.Errorf("--client %q is not one of %s", a.Client, strings.Join(setup.Clients, ", "))
	}
	if f.provider != "" {
		p, ok := setup.PresetByID(f.provider)
		if !ok {
			return a, fmt.Errorf("--provider %q is unknown; see `metaclaw setup --help` for the list", f.provider)
		}
		a.Provider, a.APIBase, a.API, a.Model = p.ID, p.APIBase, p.API, p.Model
		if f.apiKeyEnv == "" && f.apiKey == "" && p.KeyEnv != "" && os.Getenv(p.KeyEnv) != "" {
			f.apiKeyEnv = p.KeyEnv
		}
	}
	if f.apiBase != "" {
		a.APIBase = f.apiBase
	}
	if f.api != "" {
		a.API = f.api
	}
	if f.model != "" {
		a.Model = f.model
	}
	if a.Provider == "custom" && a.APIBase == "" {
		return a, errors.New("--provider custom needs --api-base")
	}
	key, err := secretFrom(f.apiKey, f.apiKeyEnv, "--api-key-env")
	if err != nil {
		return a, err
	}
	a.APIKey, a.APIKeyEnv = key, f.apiKeyEnv
	if a.RLAPIKey, err = secretFrom(f.rlKey, f.rlKeyEnv, "--rl-api-key-env"); err != nil {
		return a, err
	}
	a.RLAPIKeyEnv = f.rlKeyEnv
	if f.sleep != "" {
		start, end, ok := strings.Cut(f.sleep, "-")
		if !ok {
			return a, fmt.Errorf("--sleep %q: use HH:MM-HH:MM, e.g. 23:00-07:00", f.sleep)
		}
		a.SleepStart, a.SleepEnd = strings.TrimSpace(start), strings.TrimSpace(end)
	}
	return a, nil
}

func secretFrom(value, envName, flag string) (string, error) {
	if envName == "" {
		return value, nil
	}
	v := os.Getenv(envName)
	if v == "" {
		return "", fmt.Errorf("%s %s: that environment variable is empty or unset", flag, envName)
	}
	return v, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// form runs a huh form on the command's stdin/stdout.
func form(cmd *cobra.Command, f *setupFlags, groups ...*huh.Group) error {
	in := cmd.InOrStdin()
	if f.accessible {
		// Each form reads through its own buffered scanner; feeding it one
		// byte at a time keeps a form from swallowing the next form's answers.
		in = oneByteReader{in}
	}
	fm := huh.NewForm(groups...).WithAccessible(f.accessible).WithInput(in).WithOutput(cmd.OutOrStdout())
	if err := fm.Run(); err != nil {
		if errors.Is(err, huh.ErrUserAborted) || errors.Is(err, io.EOF) {
			return errors.New("setup cancelled; nothing was written")
		}
		return err
	}
	return nil
}

// confirm asks a yes/no question; without a terminal (and without
// --accessible) it cannot, and says how to answer by flag instead.
func confirm(cmd *cobra.Command, f *setupFlags, title string, v *bool) error {
	if !f.accessible && !isTerminal(cmd.InOrStdin()) {
		return fmt.Errorf("setup would ask %q but has no terminal to ask on; pass --yes to accept (or --accessible for line-by-line prompts)", title)
	}
	return form(cmd, f, huh.NewGroup(huh.NewConfirm().Title(title).Value(v)))
}

func askInteractive(cmd *cobra.Command, f *setupFlags, cfg *config.Config) (setup.Answers, error) {
	a := setup.Answers{Memory: cfg.Memory.Enabled, InstallBank: true, SkillReview: cfg.Skills.Review, RLBackend: "off"}
	userHome, _ := os.UserHomeDir()
	detected := setup.DetectClients(userHome)
	var clientOpts []huh.Option[string]
	for _, c := range detected {
		clientOpts = append(clientOpts, huh.NewOption(c+" (installed)", c))
	}
	for _, c := range setup.Clients {
		if !contains(detected, c) {
			clientOpts = append(clientOpts, huh.NewOption(c, c))
		}
	}
	a.Client = "none"
	if len(detected) > 0 {
		a.Client = detected[0]
	}
	agents := "main"
	if err := form(cmd, f, huh.NewGroup(
		huh.NewSelect[string]().Title("Which agent should MetaClaw learn for?").Options(clientOpts...).Value(&a.Client),
		huh.NewInput().Title("Which of its agents? (comma-separated ids)").Value(&agents),
	)); err != nil {
		return a, err
	}
	for _, s := range strings.Split(agents, ",") {
		if s = strings.TrimSpace(s); s != "" {
			a.Agents = append(a.Agents, s)
		}
	}

	var provOpts []huh.Option[string]
	for _, p := range setup.Presets {
		provOpts = append(provOpts, huh.NewOption(p.Name, p.ID))
	}
	a.Provider = "openai"
	if err := form(cmd, f, huh.NewGroup(huh.NewSelect[string]().Title("LLM provider").Options(provOpts...).Value(&a.Provider))); err != nil {
		return a, err
	}
	p, _ := setup.PresetByID(a.Provider)
	a.APIBase, a.API, a.Model = p.APIBase, p.API, p.Model
	if p.KeyEnv != "" {
		a.APIKey = os.Getenv(p.KeyEnv)
	}
	keyTitle := "API key"
	if p.KeyEnv != "" && a.APIKey != "" {
		keyTitle = "API key (found in $" + p.KeyEnv + "; Enter keeps it)"
	}
	if err := form(cmd, f, huh.NewGroup(
		huh.NewInput().Title("Base URL").Value(&a.APIBase).Validate(func(s string) error {
			if !strings.HasPrefix(s, "http://") && !strings.HasPrefix(s, "https://") {
				return errors.New("must start with http:// or https://")
			}
			return nil
		}),
		huh.NewSelect[string]().Title("Wire format").Options(huh.NewOption("OpenAI-compatible", "openai"), huh.NewOption("Anthropic Messages", "anthropic")).Value(&a.API),
		secretInput(f, keyTitle, &a.APIKey),
		huh.NewInput().Title("Model").Value(&a.Model),
	)); err != nil {
		return a, err
	}
	// A key kept from the provider's variable is stored like one named with
	// --api-key-env (the plan says so).
	if p.KeyEnv != "" && a.APIKey != "" && a.APIKey == os.Getenv(p.KeyEnv) {
		a.APIKeyEnv = p.KeyEnv
	}

	if err := form(cmd, f, huh.NewGroup(
		huh.NewConfirm().Title("Enable long-term memory?").Value(&a.Memory),
		huh.NewConfirm().Title("Install the built-in skill bank?").Value(&a.InstallBank),
		huh.NewSelect[string]().Title("Skills learned from sessions").Options(
			huh.NewOption("go live once checked (auto)", "auto"), huh.NewOption("wait for my approval (manual)", "manual")).Value(&a.SkillReview),
		huh.NewSelect[string]().Title("RL training of your model").Description(setup.RLStatus).Options(
			huh.NewOption("off", "off"), huh.NewOption("Tinker", "tinker"), huh.NewOption("MinT", "mint"), huh.NewOption("Weaver", "weaver")).Value(&a.RLBackend),
	)); err != nil {
		return a, err
	}
	if a.RLBackend != "off" {
		a.SleepStart, a.SleepEnd = cfg.Scheduler.SleepStart, cfg.Scheduler.SleepEnd
		a.JudgeURL, a.JudgeModel = cfg.RL.PRMURL, cfg.RL.PRMModel
		hhmm := func(s string) error {
			if len(s) != 5 || s[2] != ':' {
				return errors.New("use HH:MM")
			}
			return nil
		}
		if err := form(cmd, f, huh.NewGroup(
			secretInput(f, "Training backend API key", &a.RLAPIKey),
			huh.NewInput().Title("Base model to train").Value(&a.RLModel),
			huh.NewInput().Title("Reward judge URL (OpenAI-compatible)").Value(&a.JudgeURL),
			huh.NewInput().Title("Reward judge model").Value(&a.JudgeModel),
			huh.NewInput().Title("Sleep starts (HH:MM)").Value(&a.SleepStart).Validate(hhmm),
			huh.NewInput().Title("Sleep ends (HH:MM)").Value(&a.SleepEnd).Validate(hhmm),
		)); err != nil {
			return a, err
		}
	}
	return a, nil
}

// isTerminal reports whether r is an interactive terminal (not merely a
// character device: /dev/null is one too).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

type oneByteReader struct{ r io.Reader }

func (o oneByteReader) Read(p []byte) (int, error) {
	if len(p) > 1 {
		p = p[:1]
	}
	return o.r.Read(p)
}

// secretInput hides what is typed; in accessible mode (line-by-line prompts,
// possibly not a terminal) huh cannot hide input, so the title says so.
func secretInput(f *setupFlags, title string, v *string) *huh.Input {
	if f.accessible {
		return huh.NewInput().Title(title + " (visible while typed in accessible mode)").Value(v)
	}
	return huh.NewInput().Title(title).EchoMode(huh.EchoModePassword).Value(v)
}
