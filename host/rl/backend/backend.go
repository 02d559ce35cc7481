package backend

import (
	"context"
)

// Backend is one connected session with a training service. It is safe for
// concurrent use. Close ends the session (heartbeats stop; models and
// samplers created through it become unusable).
type Backend interface {
	// Name is the service kind: "tinker", "mint", "weaver", "plugin:<name>".
	Name() string
	// Models lists the base models the service offers.
	Models(ctx context.Context) ([]Model, error)
	// CreateModel starts a new LoRA on cfg.BaseModel.
	CreateModel(ctx context.Context, cfg ModelConfig) (Trainer, error)
	// Resume starts a LoRA like CreateModel and loads the training
	// checkpoint at path, optimizer state included.
	Resume(ctx context.Context, cfg ModelConfig, path string) (Trainer, error)
	// Sampler opens a sampler on a base model or on saved weights.
	Sampler(ctx context.Context, spec SamplerSpec) (Sampler, error)
	Close() error
}

// Trainer is one LoRA being trained. Its calls are applied by the service in
// the order they are made; a Trainer is safe for concurrent use, but the
// order of concurrent calls is then undefined, so the training loop makes
// them from one goroutine.
type Trainer interface {
	// ModelID is the service's id of the model ("<session>:train:0").
	ModelID() string
	// ForwardBackward computes the loss over data and accumulates gradients.
	// Big batches are split by the implementation; the result covers all.
	ForwardBackward(ctx context.Context, data []Datum, loss LossFn, lossConfig map[string]float64) (*ForwardBackwardResult, error)
	// OptimStep applies the accumulated gradients with Adam and clears them.
	OptimStep(ctx context.Context, adam AdamParams) (*OptimResult, error)
	// SaveForSampler freezes the current weights into a new Sampler. An
	// empty name makes ephemeral weights (valid for this session, the
	// normal case after each step); a name also makes a durable sampler
	// checkpoint whose path the Sampler reports.
	SaveForSampler(ctx context.Context, name string) (Sampler, error)
	// SaveState saves a durable training checkpoint (weights and optimizer
	// state) under name and returns it.
	SaveState(ctx context.Context, name string) (Checkpoint, error)
	// LoadState loads a training checkpoint into this model; optimizer says
	// whether the optimizer state is restored too.
	LoadState(ctx context.Context, path string, optimizer bool) error
	// Checkpoints lists the model's saved checkpoints.
	Checkpoints(ctx context.Context) ([]Checkpoint, error)
	// Close releases the model on the service (its checkpoints stay).
	Close(ctx context.Context) error
}

// Sampler is a frozen set of weights that generates. It stays usable after
// newer samplers exist (until its session ends), which is what lets turns in
// flight finish on it after a hot swap.
type Sampler interface {
	// ID is the service's handle (a sampling session id).
	ID() string
	// Path is the durable checkpoint the sampler reads, "" for ephemeral
	// weights or a base model.
	Path() string
	Sample(ctx context.Context, req SampleRequest) (*SampleResult, error)
}

// Stepper is implemented by trainers that can run a whole step faster than
// one call after another (Tinker pipelines the three requests and waits once).
// RunStep uses it when present.
type Stepper interface {
	Step(ctx context.Context, req StepRequest) (*StepResult, error)
}

// StreamSampler is implemented by samplers that hand out tokens while they
// generate (a local trainer, a streaming service). Serving then streams the
// decoded answer as it is generated; other samplers answer at once.
// SampleStream calls each with every new run of tokens and their log-probs
// of the first sequence, in order, then returns the whole result exactly as
// Sample would (NumSamples 1).
type StreamSampler interface {
	Sampler
	SampleStream(ctx context.Context, req SampleRequest, each func(tokens []int32, logprobs []float32) error) (*SampleResult, error)
}
