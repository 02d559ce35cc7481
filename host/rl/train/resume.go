package train

import (
	"context"
	"regexp"
	"strconv"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/connect"
)

// resumePoint is where a trainer starts: a training checkpoint (weights and
// optimizer state) and the step it holds, or a fresh LoRA (Path "").
type resumePoint struct {
	Path   string
	Step   int
	Source string // "last checkpoint", "metaclaw rl resume", "rl.resume_from_ckpt"
	// Rollback: steps after Step are discarded (marked rolled back), not
	// replayed — the user asked to go back to this checkpoint.
	Rollback bool
}

// resumePoint picks the starting point: a resume asked for with `metaclaw
// rl resume <checkpoint>`, else the last checkpoint in the steps table, else
// rl.resume_from_ckpt (a checkpoint from elsewhere, used only while the
// steps table has none), else a fresh LoRA.
func (l *Loop) resumePoint(ctx context.Context) (resumePoint, error) {
	req, err := l.o.Steps.PendingResume(ctx)
	if err != nil {
		return resumePoint{}, err
	}
	if req != nil {
		step := req.Step
		if step == 0 {
			if step, err = l.stepOf(ctx, req.Path); err != nil {
				return resumePoint{}, err
			}
		}
		return resumePoint{Path: req.Path, Step: step, Source: "metaclaw rl resume", Rollback: true}, nil
	}
	last, err := l.o.Steps.LastCheckpoint(ctx)
	if err != nil {
		return resumePoint{}, err
	}
	if last != nil {
		return resumePoint{Path: last.CheckpointPath, Step: last.Step, Source: "last checkpoint"}, nil
	}
	if p := l.o.Config.RL.ResumeFromCkpt; p != "" {
		step, err := l.stepOf(ctx, p)
		if err != nil {
			return resumePoint{}, err
		}
		// Steps trained on it before our first checkpoint are replayed.
		return resumePoint{Path: p, Step: step, Source: "rl.resume_from_ckpt"}, nil
	}
	// No checkpoint at all: steps recorded before are replayed on a fresh
	// LoRA (a crash before the first checkpoint).
	return resumePoint{Source: "fresh"}, nil
}

// stepOf is the step a checkpoint holds: from the steps table when it is
// ours, else from a step_N name (ours and the Python MetaClaw's), else 0.
func (l *Loop) stepOf(ctx context.Context, path string) (int, error) {
	r, err := l.o.Steps.ByCheckpoint(ctx, path)
	if err != nil {
		return 0, err
	}
	if r != nil {
		return r.Step, nil
	}
	return StepFromName(path), nil
}

var stepName = regexp.MustCompile(`(?:^|/)step_0*([0-9]{1,9})$`)

// StepFromName reads the step out of a checkpoint named step_N (0 if the
// name has no step).
func StepFromName(path string) int {
	m := stepName.FindStringSubmatch(path)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// CheckpointName is the name of step's training checkpoint.
func CheckpointName(step int) string { return "step_" + leftPad(strconv.Itoa(step), 6) }

func leftPad(s string, n int) string {
	for len(s) < n {
		s = "0" + s
	}
	return s
}

func modelConfig(cfg *config.Config) backend.ModelConfig { return connect.ModelConfig(cfg) }
