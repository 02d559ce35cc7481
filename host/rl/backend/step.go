package backend

import (
	"context"
	"fmt"
)

// Stage is one part of a training step, in the order they run.
type Stage int

// Stages of a step.
const (
	StageForwardBackward Stage = iota
	StageOptim
	StageSampler
	StageCheckpoint
)

func (s Stage) String() string {
	switch s {
	case StageForwardBackward:
		return "forward_backward"
	case StageOptim:
		return "optim_step"
	case StageSampler:
		return "save_weights_for_sampler"
	case StageCheckpoint:
		return "save_state"
	}
	return fmt.Sprintf("stage(%d)", int(s))
}

// StepRequest is one training step: forward_backward over Data, an optimizer
// step, new sampler weights, and optionally a training checkpoint.
type StepRequest struct {
	Data       []Datum
	Loss       LossFn
	LossConfig map[string]float64
	Adam       AdamParams
	// SamplerName names a durable sampler checkpoint; "" makes ephemeral
	// sampler weights (the usual hot-swap case).
	SamplerName string
	// CheckpointName, when set, saves a training checkpoint (with optimizer
	// state) after the sampler weights.
	CheckpointName string
	// From skips the stages before it: a step that failed at stage S after
	// the earlier stages succeeded is retried with From = S, so gradients
	// are never applied twice.
	From Stage
}

// StepResult is what a step produced.
type StepResult struct {
	ForwardBackward *ForwardBackwardResult // nil when skipped
	Optim           *OptimResult           // nil when skipped
	Sampler         Sampler                // the new weights, to swap in
	Checkpoint      *Checkpoint            // when CheckpointName was set
}

// StepError says at which stage a step failed. The stages before it took
// effect on the service; Partial holds what they returned.
type StepError struct {
	Stage   Stage
	Err     error
	Partial *StepResult
}

func (e *StepError) Error() string {
	return fmt.Sprintf("training step failed at %s: %v", e.Stage, e.Err)
}
func (e *StepError) Unwrap() error { return e.Err }

// RunStep runs one step on t: pipelined when t is a Stepper, otherwise one
// call after another. On failure it returns a *StepError.
func RunStep(ctx context.Context, t Trainer, req StepRequest) (*StepResult, error) {
	if s, ok := t.(Stepper); ok {
		return s.Step(ctx, req)
	}
	return SequentialStep(ctx, t, req)
}

// SequentialStep runs the stages of req one after another on t.
func SequentialStep(ctx context.Context, t Trainer, req StepRequest) (*StepResult, error) {
	res := &StepResult{}
	fail := func(s Stage, err error) (*StepResult, error) {
		return nil, &StepError{Stage: s, Err: err, Partial: res}
	}
	if req.From <= StageForwardBackward {
		fb, err := t.ForwardBackward(ctx, req.Data, req.Loss, req.LossConfig)
		if err != nil {
			return fail(StageForwardBackward, err)
		}
		res.ForwardBackward = fb
	}
	if req.From <= StageOptim {
		o, err := t.OptimStep(ctx, req.Adam)
		if err != nil {
			return fail(StageOptim, err)
		}
		res.Optim = o
	}
	if req.From <= StageSampler {
		s, err := t.SaveForSampler(ctx, req.SamplerName)
		if err != nil {
			return fail(StageSampler, err)
		}
		res.Sampler = s
	}
	if req.CheckpointName != "" {
		c, err := t.SaveState(ctx, req.CheckpointName)
		if err != nil {
			return fail(StageCheckpoint, err)
		}
		res.Checkpoint = &c
	}
	return res, nil
}
