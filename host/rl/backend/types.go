package backend

import (
	"fmt"
	"math"
	"time"
)

// DType is the element type of a TensorData.
type DType string

// The dtypes Tinker accepts in loss_fn_inputs.
const (
	Int64   DType = "int64"
	Float32 DType = "float32"
)

// TensorData is a flattened tensor as the services carry it:
// {"data": [...], "dtype": "int64"|"float32", "shape": [...]}. Exactly one of
// Ints (int64) and Floats (float32) is used, by DType.
type TensorData struct {
	DType  DType
	Ints   []int64
	Floats []float32
	Shape  []int // nil: one dimension of Len()
}

// Len is the number of elements.
func (t TensorData) Len() int {
	if t.DType == Int64 {
		return len(t.Ints)
	}
	return len(t.Floats)
}

// IntTensor is a 1-D int64 tensor of ids.
func IntTensor(ids []int32) TensorData {
	v := make([]int64, len(ids))
	for i, x := range ids {
		v[i] = int64(x)
	}
	return TensorData{DType: Int64, Ints: v}
}

// FloatTensor is a 1-D float32 tensor.
func FloatTensor(v []float32) TensorData { return TensorData{DType: Float32, Floats: v} }

// Chunk is one piece of a model input. Only encoded text (token ids) is used
// by MetaClaw; images and other chunk kinds are not modelled.
type Chunk struct {
	Tokens []int32
}

// ModelInput is the token sequence fed to the model, in chunks.
type ModelInput struct {
	Chunks []Chunk
}

// Tokens returns a ModelInput of one encoded-text chunk.
func Tokens(ids []int32) ModelInput { return ModelInput{Chunks: []Chunk{{Tokens: ids}}} }

// Len is the total number of tokens.
func (m ModelInput) Len() int {
	n := 0
	for _, c := range m.Chunks {
		n += len(c.Tokens)
	}
	return n
}

// Flat returns all tokens in order (shares the slice when there is one chunk).
func (m ModelInput) Flat() []int32 {
	if len(m.Chunks) == 1 {
		return m.Chunks[0].Tokens
	}
	out := make([]int32, 0, m.Len())
	for _, c := range m.Chunks {
		out = append(out, c.Tokens...)
	}
	return out
}

// Datum is one training example: the model input and, per loss input name,
// a tensor aligned with it (position i is about token i+1 of the sequence).
type Datum struct {
	ModelInput   ModelInput
	LossFnInputs map[string]TensorData
}

// Loss input names Tinker accepts; any other key (such as "mask") is rejected.
const (
	InputTargetTokens = "target_tokens"
	InputWeights      = "weights"
	InputLogprobs     = "logprobs"
	InputAdvantages   = "advantages"
	InputClipLow      = "clip_low_threshold"
	InputClipHigh     = "clip_high_threshold"
)

// LossFn names a built-in loss.
type LossFn string

// Losses. Weaver supports CrossEntropy, ImportanceSampling and
// TruncatedImportanceSampling; Tinker and MinT the first four.
const (
	CrossEntropy                LossFn = "cross_entropy"
	ImportanceSampling          LossFn = "importance_sampling"
	PPO                         LossFn = "ppo"
	CISPO                       LossFn = "cispo"
	TruncatedImportanceSampling LossFn = "truncated_importance_sampling"
)

// RequiredInputs lists the loss inputs a loss needs.
func (l LossFn) RequiredInputs() []string {
	switch l {
	case CrossEntropy:
		return []string{InputTargetTokens, InputWeights}
	case ImportanceSampling, PPO, CISPO, TruncatedImportanceSampling:
		return []string{InputTargetTokens, InputLogprobs, InputAdvantages}
	}
	return nil
}

// Known reports whether l is one of the losses above.
func (l LossFn) Known() bool { return l.RequiredInputs() != nil }

// LoRAConfig describes the adapter a Trainer trains.
type LoRAConfig struct {
	Rank int
	// Seed initialises the adapter; nil lets the service choose.
	Seed *int64
	// Which parts are trained; DefaultLoRA sets all three.
	TrainUnembed, TrainMLP, TrainAttn bool
}

// DefaultLoRA is a rank-r LoRA on every part of the model.
func DefaultLoRA(rank int) LoRAConfig {
	return LoRAConfig{Rank: rank, TrainUnembed: true, TrainMLP: true, TrainAttn: true}
}

// ModelConfig is what CreateModel and Resume create.
type ModelConfig struct {
	BaseModel string
	LoRA      LoRAConfig
	// Metadata is attached to the model on the service (user_metadata).
	Metadata map[string]string
}

// AdamParams are the optimizer settings of one step.
type AdamParams struct {
	LearningRate float64
	Beta1, Beta2 float64
	Eps          float64
	// WeightDecay (decoupled) and GradClipNorm are sent only when non-zero
	// (servers of MinT's generation reject them).
	WeightDecay  float64
	GradClipNorm float64
}

// DefaultAdam is Tinker's default Adam with learning rate lr.
func DefaultAdam(lr float64) AdamParams {
	return AdamParams{LearningRate: lr, Beta1: 0.9, Beta2: 0.95, Eps: 1e-12}
}

// SamplingParams control one generation.
type SamplingParams struct {
	MaxTokens int
	// Seed makes sampling reproducible; nil lets the service choose.
	Seed *int64
	// Temperature 0 is greedy.
	Temperature float64
	// TopK <= 0 is off; TopP 0 or 1 is off.
	TopK int
	TopP float64
	// Stop strings (decoded by the service) and stop token ids; use one kind.
	Stop       []string
	StopTokens []int32
}

// DefaultSampling is temperature 1, no top-k/top-p, maxTokens tokens.
func DefaultSampling(maxTokens int) SamplingParams {
	return SamplingParams{MaxTokens: maxTokens, Temperature: 1, TopK: -1, TopP: 1}
}

// SampleRequest is one sampling call.
type SampleRequest struct {
	Prompt []int32
	Params SamplingParams
	// NumSamples completions of the same prompt; 0 means 1.
	NumSamples int
	// PromptLogprobs asks for the log-probability of every prompt token.
	PromptLogprobs bool
}

// Stop reasons of a Sequence.
const (
	StopReasonStop   = "stop"   // a stop token or string, or end of sequence
	StopReasonLength = "length" // max_tokens reached
)

// Sequence is one sampled completion: the exact ids and their log-probs
// under the sampler's weights (what training must use, never a re-tokenised
// text).
type Sequence struct {
	Tokens     []int32
	Logprobs   []float32
	StopReason string
}

// SampleResult holds the completions of one SampleRequest.
type SampleResult struct {
	Sequences []Sequence
	// PromptLogprobs has one entry per prompt token when asked for; the
	// first is NaN (no context to score it).
	PromptLogprobs []float32
}

// ForwardBackwardResult is what a forward_backward pass reports.
type ForwardBackwardResult struct {
	// Outputs has one entry per datum, in order; for the built-in losses it
	// carries "logprobs": the trainer's log-probs of the target tokens.
	Outputs []map[string]TensorData
	// Metrics are named "name:reduction" ("loss:sum", ...).
	Metrics map[string]float64
}

// Loss is the "loss:sum" metric (NaN when the service did not report it).
func (r *ForwardBackwardResult) Loss() float64 {
	if r == nil {
		return math.NaN()
	}
	if v, ok := r.Metrics["loss:sum"]; ok {
		return v
	}
	return math.NaN()
}

// OptimResult is what an optimizer step reports (often nothing).
type OptimResult struct {
	Metrics map[string]float64
}

// Checkpoint kinds.
const (
	CheckpointTraining = "training" // weights and optimizer state: resume from it
	CheckpointSampler  = "sampler"  // weights for sampling only
)

// Checkpoint is a saved set of weights on the service.
type Checkpoint struct {
	ID   string
	Kind string
	// Path addresses it: tinker://<model>/weights/<name>, weaver://…
	Path      string
	Time      time.Time
	SizeBytes int64
	ExpiresAt *time.Time
}

// SamplerSpec says which weights a standalone Sampler serves: a base model,
// or a saved sampler/training checkpoint path.
type SamplerSpec struct {
	BaseModel string
	Path      string
}

func (s SamplerSpec) String() string {
	if s.Path != "" {
		return s.Path
	}
	return s.BaseModel
}

// Model describes a base model a service offers.
type Model struct {
	Name             string
	MaxContextLength int // 0 = not reported
}

// errorf is fmt.Errorf, kept short for the validation messages below.
var errorf = fmt.Errorf
