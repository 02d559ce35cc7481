package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/connect"
	"github.com/metaclaw-go/metaclaw/host/rl/samples"
	"github.com/metaclaw-go/metaclaw/host/rl/train"
	"github.com/metaclaw-go/metaclaw/host/skills"
	"github.com/metaclaw-go/metaclaw/host/store"
)

// rlTrainCmds are `metaclaw rl status|samples|step|history|checkpoints|resume`.
// While the host runs they use its API (/v1/rl/…), so they see the loop as
// it is; otherwise they read the store (and `rl step` trains in-process).
func rlTrainCmds() []*cobra.Command {
	return []*cobra.Command{newRLStatusCmd(), newRLSamplesCmd(), newRLStepCmd(), newRLHistoryCmd(), newRLCheckpointsCmd(), newRLResumeCmd()}
}

// rlStore is the store as the RL commands read it without a host.
type rlStore struct {
	cfg     *config.Config
	st      *store.SQLite
	samples *samples.Store
	steps   *train.Store
}

func openRLStore(ctx context.Context) (*rlStore, error) {
	cfg, err := loadConfig()
	if err != nil {
		return nil, err
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	return &rlStore{cfg: cfg, st: st, samples: samples.New(st.Writer(), st.Reader()), steps: train.NewStore(st.Writer(), st.Reader())}, nil
}

func (s *rlStore) Close() { s.st.Close() }

func (s *rlStore) generation(ctx context.Context) (int64, error) {
	return skills.LibraryGeneration(ctx, s.st.Reader())
}

// longHost is the running host's API without the 30 s cap (a step or a
// replay can take minutes; Ctrl-C ends the wait, not the work).
func longHost() *hostAPI {
	api := runningHost()
	if api != nil {
		api.client = &http.Client{}
	}
	return api
}

func newRLStatusCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Training state: step, model, last loss and reward, checkpoint, ready samples",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			var st train.Status
			if api := runningHost(); api != nil {
				if err := api.call(ctx, http.MethodGet, "/v1/rl/training", nil, &st); err != nil {
					return err
				}
			} else {
				s, err := openRLStore(ctx)
				if err != nil {
					return err
				}
				defer s.Close()
				st = train.StoredStatus(ctx, s.cfg, s.samples, s.steps, s.generation)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), st)
			}
			printTrainingDetail(cmd.OutOrStdout(), st)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (the training object of docs/status.md)")
	return cmd
}

// printTrainingDetail is `metaclaw rl status`.
func printTrainingDetail(w io.Writer, st train.Status) {
	fmt.Fprintf(w, "training  %s: %s\n", st.State, st.Reason)
	if st.State == "off" {
		return
	}
	fmt.Fprintf(w, "  trains     %s; batch of %d, loss %s, advantage %s, checkpoint every %d steps\n", st.Trains, st.BatchSize, st.LossFn, st.Advantage, st.Every)
	fmt.Fprintf(w, "  step       %d", st.Step)
	if st.Model != "" {
		fmt.Fprintf(w, " (model %s)", st.Model)
	}
	fmt.Fprintln(w)
	if l := st.LastStep; l != nil {
		fmt.Fprintf(w, "  last step  %s\n", stepLine(*l))
	}
	if c := st.LastCheckpoint; c != nil {
		fmt.Fprintf(w, "  checkpoint step %d: %s (%s)\n", c.Step, c.Path, c.At.Local().Format("2006-01-02 15:04"))
	}
	fmt.Fprintf(w, "  ready      %d of %d scored samples of skill generation %d\n", st.Ready, st.BatchSize, st.Generation)
	if r := st.Replay; r != nil {
		fmt.Fprintf(w, "  replaying  %d of %d steps lost with the weights\n", r.Done, r.Total)
	}
	if b := st.OpenBatch; b != nil {
		fmt.Fprintf(w, "  open batch %d: %d samples, next from %s", b.ID, b.Samples, b.From)
		if b.Failures > 0 {
			fmt.Fprintf(w, ", failed %d time(s): %s", b.Failures, b.LastErr)
		}
		fmt.Fprintln(w)
	}
	if st.Window != nil {
		fmt.Fprintf(w, "  window     %s\n", st.Window.Reason)
	}
}

// printTraining adds the training lines to `metaclaw status`.
func printTraining(w io.Writer, st *train.Status) {
	if st == nil {
		return
	}
	line := fmt.Sprintf("  training  %s: step %d", st.State, st.Step)
	if l := st.LastStep; l != nil {
		line += ", last " + stepLine(*l)
	}
	fmt.Fprintln(w, line)
	if st.State != train.StateTraining && st.State != train.StateWaitingBatch {
		fmt.Fprintf(w, "            %s\n", st.Reason)
	}
}

func stepLine(s train.StepRecord) string {
	loss, reward := "n/a", "n/a"
	if s.Loss != nil {
		loss = strconv.FormatFloat(*s.Loss, 'g', 4, 64)
	}
	if s.MeanReward != nil {
		reward = fmt.Sprintf("%+.2f", *s.MeanReward)
	}
	return fmt.Sprintf("step %d: loss %s, mean reward %s over %d samples, %s, %s", s.Step, loss, reward, s.Samples,
		(time.Duration(s.DurationMS) * time.Millisecond).Round(time.Millisecond), s.FinishedAt.Local().Format("01-02 15:04:05"))
}

func newRLSamplesCmd() *cobra.Command {
	var asJSON bool
	var state, session string
	var limit int
	cmd := &cobra.Command{
		Use:   "samples [id]",
		Short: "RL samples with their judge votes and state (one sample in full with its id)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if len(args) == 1 {
				id, err := strconv.ParseInt(args[0], 10, 64)
				if err != nil {
					return fmt.Errorf("sample id %q is not a number", args[0])
				}
				var s samples.Sample
				if api := runningHost(); api != nil {
					if err := api.call(ctx, http.MethodGet, "/v1/rl/samples/"+args[0], nil, &s); err != nil {
						return err
					}
				} else {
					rs, err := openRLStore(ctx)
					if err != nil {
						return err
					}
					defer rs.Close()
					if s, err = rs.samples.Get(ctx, id); err != nil {
						return err
					}
				}
				if asJSON {
					return printJSON(cmd.OutOrStdout(), s)
				}
				printSample(cmd.OutOrStdout(), s)
				return nil
			}
			switch state {
			case "", samples.Pending, samples.Scored, samples.Claimed, samples.Trained, samples.Dropped:
			default:
				return fmt.Errorf("--state %q: use pending, scored, claimed, trained or dropped", state)
			}
			var list []train.SampleSummary
			if api := runningHost(); api != nil {
				var out struct {
					Samples []train.SampleSummary `json:"samples"`
				}
				q := fmt.Sprintf("/v1/rl/samples?limit=%d&state=%s&session=%s", limit, state, urlQuery(session))
				if err := api.call(ctx, http.MethodGet, q, nil, &out); err != nil {
					return err
				}
				list = out.Samples
			} else {
				rs, err := openRLStore(ctx)
				if err != nil {
					return err
				}
				defer rs.Close()
				ss, err := rs.samples.List(ctx, samples.Filter{State: state, SessionID: session, Limit: limit})
				if err != nil {
					return err
				}
				list = train.Summaries(ss)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"samples": list})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTIME\tSESSION\tSTATE\tREWARD\tVOTES\tSTEP\tTOKENS\tINSTRUCTION")
			for _, s := range list {
				reward := "-"
				if s.Reward != nil {
					reward = fmt.Sprintf("%+g", *s.Reward)
				}
				step := "-"
				if s.Step > 0 {
					step = strconv.Itoa(s.Step)
				}
				st := s.State
				if s.StateReason != "" {
					st += " (" + clipText(s.StateReason, 40) + ")"
				}
				fmt.Fprintf(tw, "%d\t%s\t%s#%d\t%s\t%s\t%s\t%s\t%d+%d\t%s\n", s.ID, s.CreatedAt.Local().Format("01-02 15:04"), clipText(s.SessionID, 20), s.Seq,
					st, reward, strings.Join(s.Votes, ","), step, s.PromptTokens, s.CompletionTokens, clipText(oneLine(s.Instruction), 50))
			}
			tw.Flush()
			if len(list) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "(no samples)")
			}
			return nil
		},
	}
	jsonFlag(cmd, &asJSON)
	cmd.Flags().StringVar(&state, "state", "", "only samples in this state: pending, scored, claimed, trained, dropped")
	cmd.Flags().StringVar(&session, "session", "", "only this session's samples")
	cmd.Flags().IntVar(&limit, "limit", 30, "at most this many (newest first, up to 1000)")
	return cmd
}

func printSample(w io.Writer, s samples.Sample) {
	fmt.Fprintf(w, "sample %d  session %s #%d  %s\n", s.ID, s.SessionID, s.Seq, s.CreatedAt.Local().Format("2006-01-02 15:04:05"))
	fmt.Fprintf(w, "  state     %s", s.State)
	if s.StateReason != "" {
		fmt.Fprintf(w, " (%s)", s.StateReason)
	}
	if s.Step > 0 {
		fmt.Fprintf(w, ", trained by step %d", s.Step)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  sampler   %s (step %d), skill generation %d\n", s.Sampler, s.SamplerStep, s.SkillGeneration)
	fmt.Fprintf(w, "  tokens    %d prompt + %d completion (%s)\n", len(s.Prompt), len(s.Completion), s.StopReason)
	if s.Reward != nil {
		fmt.Fprintf(w, "  reward    %+g by %s, votes %s\n", *s.Reward, s.Judge, strings.Join(s.Votes, ", "))
	} else {
		fmt.Fprintf(w, "  judge     %s\n", s.JudgeState)
	}
	fmt.Fprintf(w, "  instruction\n%s\n", indentText(s.Instruction))
	fmt.Fprintf(w, "  response\n%s\n", indentText(s.Response))
	if s.JudgeText != "" {
		fmt.Fprintf(w, "  judge's reasoning\n%s\n", indentText(s.JudgeText))
	}
}

func indentText(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func urlQuery(s string) string {
	return strings.NewReplacer("%", "%25", "&", "%26", "#", "%23", "+", "%2B", " ", "%20", "?", "%3F").Replace(s)
}

func newRLHistoryCmd() *cobra.Command {
	var asJSON, all bool
	var limit int
	cmd := &cobra.Command{
		Use:   "history",
		Short: "Training steps, newest first: loss, mean reward, samples, duration, checkpoint",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			var steps []train.StepRecord
			if api := runningHost(); api != nil {
				var out struct {
					Steps []train.StepRecord `json:"steps"`
				}
				q := fmt.Sprintf("/v1/rl/steps?limit=%d", limit)
				if all {
					q += "&all=1"
				}
				if err := api.call(ctx, http.MethodGet, q, nil, &out); err != nil {
					return err
				}
				steps = out.Steps
			} else {
				rs, err := openRLStore(ctx)
				if err != nil {
					return err
				}
				defer rs.Close()
				if steps, err = rs.steps.History(ctx, limit, all); err != nil {
					return err
				}
			}
			if asJSON {
				if steps == nil {
					steps = []train.StepRecord{}
				}
				return printJSON(cmd.OutOrStdout(), map[string]any{"steps": steps})
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "STEP\tFINISHED\tSAMPLES\tLOSS\tMEAN REWARD\tTOOK\tCHECKPOINT\tNOTE")
			for _, s := range steps {
				loss, reward := "-", "-"
				if s.Loss != nil {
					loss = strconv.FormatFloat(*s.Loss, 'g', 5, 64)
				}
				if s.MeanReward != nil {
					reward = fmt.Sprintf("%+.3f", *s.MeanReward)
				}
				note := s.Note
				if s.State != train.StepApplied {
					note = strings.TrimSpace(s.State + " " + note)
				}
				if s.Replays > 0 {
					note = strings.TrimSpace(note + fmt.Sprintf(" replayed %d×", s.Replays))
				}
				fmt.Fprintf(tw, "%d\t%s\t%d (%d)\t%s\t%s\t%s\t%s\t%s\n", s.Step, s.FinishedAt.Local().Format("01-02 15:04:05"), s.Samples, s.Datums,
					loss, reward, (time.Duration(s.DurationMS) * time.Millisecond).Round(time.Millisecond), s.CheckpointPath, note)
			}
			tw.Flush()
			if len(steps) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "(no training step yet)")
			}
			return nil
		},
	}
	jsonFlag(cmd, &asJSON)
	cmd.Flags().BoolVar(&all, "all", false, "include steps rolled back by `metaclaw rl resume`")
	cmd.Flags().IntVar(&limit, "limit", 50, "at most this many steps")
	return cmd
}

func newRLCheckpointsCmd() *cobra.Command {
	var asJSON, service, all bool
	cmd := &cobra.Command{
		Use:   "checkpoints",
		Short: "Training checkpoints (weights and optimizer state) to resume from",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			var out struct {
				Checkpoints  []train.CheckpointEntry `json:"checkpoints"`
				Service      []backend.Checkpoint    `json:"service,omitempty"`
				ServiceError string                  `json:"service_error,omitempty"`
			}
			if api := runningHost(); api != nil {
				q := "/v1/rl/checkpoints?"
				if service {
					q += "service=1&"
				}
				if all {
					q += "all=1"
				}
				if err := api.call(ctx, http.MethodGet, q, nil, &out); err != nil {
					return err
				}
			} else {
				if service {
					return errors.New("--service asks the training service through the running host; start it first (metaclaw start)")
				}
				rs, err := openRLStore(ctx)
				if err != nil {
					return err
				}
				defer rs.Close()
				rows, err := rs.steps.Checkpoints(ctx, all)
				if err != nil {
					return err
				}
				out.Checkpoints = train.CheckpointList(rows)
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), out)
			}
			w := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "STEP\tSAVED\tSTATE\tPATH")
			for _, c := range out.Checkpoints {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", c.Step, c.At.Local().Format("2006-01-02 15:04"), c.State, c.Path)
			}
			tw.Flush()
			if len(out.Checkpoints) == 0 {
				fmt.Fprintln(w, "(no checkpoint yet: one is saved every rl.checkpoint_every steps)")
			}
			if service {
				fmt.Fprintf(w, "on the service (current model):\n")
				for _, c := range out.Service {
					fmt.Fprintf(w, "  %-9s %s  %s\n", c.Kind, c.Time.Local().Format("2006-01-02 15:04"), c.Path)
				}
				if out.ServiceError != "" {
					fmt.Fprintf(w, "  (could not list: %s)\n", out.ServiceError)
				}
			}
			return nil
		},
	}
	jsonFlag(cmd, &asJSON)
	cmd.Flags().BoolVar(&service, "service", false, "also list what the training service holds for the current model")
	cmd.Flags().BoolVar(&all, "all", false, "include checkpoints of rolled-back steps")
	return cmd
}

func newRLStepCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "step",
		Short: "Train one step now on the scored samples waiting (up to rl.batch_size), outside windows",
		Long: `Runs one training step now: on up to rl.batch_size scored samples of the current
skill generation (fewer are fine), whatever the mode, the scheduler's windows or
rl.manual_train_trigger say. Steps lost with the weights are replayed first.
While the host runs, the step runs there and its new sampler serves at once.
Without a host, the step runs in this process against the training backend and
saves a checkpoint, which the host resumes from at its next start.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			var rec *train.StepRecord
			if api := longHost(); api != nil {
				var out struct {
					Step *train.StepRecord `json:"step"`
				}
				err := withProgress(ctx, cmd.ErrOrStderr(), api, func() error {
					return api.call(ctx, http.MethodPost, "/v1/rl/step", struct{}{}, &out)
				})
				if err != nil {
					return err
				}
				rec = out.Step
			} else {
				var err error
				if rec, err = offlineStep(ctx, cmd.ErrOrStderr()); err != nil {
					return err
				}
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"step": rec})
			}
			fmt.Fprintln(cmd.OutOrStdout(), stepLine(*rec))
			if rec.CheckpointPath != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "checkpoint %s\n", rec.CheckpointPath)
			}
			return nil
		},
	}
	jsonFlag(cmd, &asJSON)
	return cmd
}

// offlineStep trains one step without a host: connect, resume from the last
// checkpoint (replaying what it lacks), step, checkpoint.
func offlineStep(ctx context.Context, errOut io.Writer) (*train.StepRecord, error) {
	rs, err := openRLStore(ctx)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	cfg := *rs.cfg
	if cfg.Mode == "skills_only" && !cfg.RL.Enabled {
		return nil, errors.New("mode skills_only does not train: set mode rl or auto (metaclaw config set mode rl)")
	}
	cfg.RL.ManualTrainTrigger = true // only the step asked for
	fmt.Fprintln(errOut, "metaclaw is not running: training in this process")
	b, err := connect.Open(ctx, &cfg, connect.Options{Logger: zerolog.Nop()})
	if err != nil {
		return nil, err
	}
	defer b.Close()
	l := train.New(train.Options{Config: &cfg, Samples: rs.samples, Steps: rs.steps, Generation: rs.generation, CheckpointEveryStep: true, Log: zerolog.Nop()})
	s, step, err := l.Init(ctx, b, &cfg)
	if err != nil {
		return nil, err
	}
	cur := &backend.Current{}
	cur.Swap(s, step)
	l.Start(ctx, cur)
	defer l.Stop(time.Minute)
	var rec *train.StepRecord
	err = watchProgress(ctx, errOut, func(ctx context.Context) (train.Status, error) { return l.Status(ctx), nil }, func() error {
		var err error
		rec, err = l.StepNow(ctx)
		return err
	})
	return rec, err
}

func newRLResumeCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "resume [checkpoint]",
		Short: "Restart the trainer from the last checkpoint, or roll back to an earlier one (a step number or path)",
		Long: `Without an argument: restarts the trainer from the last checkpoint and replays
the steps recorded since, ending where it was (what a restart of the host does;
useful after errors). With a step number or a checkpoint path (metaclaw rl
checkpoints): rolls training back to that checkpoint; the steps after it are
marked rolled back (their samples stay trained, their effect is discarded) and
the checkpoint's weights serve at once. A path MetaClaw did not record (another
machine's) is accepted; its step is read from a step_N name, else 0.
Without a running host the resume point is recorded and used at the next start.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			target := ""
			if len(args) == 1 {
				target = args[0]
			}
			w := cmd.OutOrStdout()
			if api := longHost(); api != nil {
				var out struct {
					From   train.ResumeRequest `json:"resumed_from"`
					Status train.Status        `json:"status"`
				}
				err := withProgress(ctx, cmd.ErrOrStderr(), api, func() error {
					return api.call(ctx, http.MethodPost, "/v1/rl/resume", map[string]string{"checkpoint": target}, &out)
				})
				if err != nil {
					return err
				}
				if asJSON {
					return printJSON(w, out)
				}
				if out.From.Path == "" {
					fmt.Fprintln(w, "restarted from a fresh LoRA (no checkpoint yet)")
				} else {
					fmt.Fprintf(w, "restarted from step %d: %s\n", out.From.Step, out.From.Path)
				}
				printTrainingDetail(w, out.Status)
				return nil
			}
			rs, err := openRLStore(ctx)
			if err != nil {
				return err
			}
			defer rs.Close()
			req, err := train.ResolveCheckpoint(ctx, rs.steps, target)
			if err != nil {
				return err
			}
			if target != "" {
				if err := rs.steps.RequestResume(ctx, req); err != nil {
					return err
				}
			}
			if asJSON {
				return printJSON(w, map[string]any{"resume_from": req, "applies": "at the next start"})
			}
			switch {
			case target != "":
				fmt.Fprintf(w, "metaclaw is not running: at its next start training resumes from step %d (%s); later steps are rolled back\n", req.Step, req.Path)
			case req.Path != "":
				fmt.Fprintf(w, "metaclaw is not running: at its next start it resumes from the last checkpoint, step %d (%s)\n", req.Step, req.Path)
			default:
				fmt.Fprintln(w, "metaclaw is not running, and no checkpoint was saved yet: training starts from a fresh LoRA")
			}
			return nil
		},
	}
	jsonFlag(cmd, &asJSON)
	return cmd
}

// withProgress runs call (a long request to the host) while showing the
// loop's progress from GET /v1/rl/training.
func withProgress(ctx context.Context, errOut io.Writer, api *hostAPI, call func() error) error {
	poll := runningHost()
	return watchProgress(ctx, errOut, func(ctx context.Context) (train.Status, error) {
		var st train.Status
		err := poll.call(ctx, http.MethodGet, "/v1/rl/training", nil, &st)
		return st, err
	}, call)
}

// stderrIsTerminal decides between a live bar and plain lines.
func stderrIsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
