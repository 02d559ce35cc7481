package faketinker

import (
	"encoding/json"
	"fmt"
)

// The request bodies, as the server decodes them: strictly (unknown fields
// are rejected), with "type" and defaulted fields optional. These are
// written from the protocol notes independently of any client.

type createSessionReq struct {
	Tags         []string       `json:"tags"`
	UserMetadata map[string]any `json:"user_metadata"`
	SDKVersion   string         `json:"sdk_version"`
	ProjectID    *string        `json:"project_id"`
	Type         *string        `json:"type"`
}

type heartbeatReq struct {
	SessionID string  `json:"session_id"`
	Type      *string `json:"type"`
}

type clientConfigReq struct {
	SDKVersion string `json:"sdk_version"`
}

type loraConfig struct {
	Rank         int    `json:"rank"`
	Seed         *int64 `json:"seed"`
	TrainUnembed *bool  `json:"train_unembed"`
	TrainMLP     *bool  `json:"train_mlp"`
	TrainAttn    *bool  `json:"train_attn"`
}

type createModelReq struct {
	SessionID    string         `json:"session_id"`
	ModelSeqID   *int           `json:"model_seq_id"`
	BaseModel    string         `json:"base_model"`
	UserMetadata map[string]any `json:"user_metadata"`
	LoraConfig   *loraConfig    `json:"lora_config"`
	Type         *string        `json:"type"`
}

type modelIDReq struct {
	ModelID string  `json:"model_id"`
	Type    *string `json:"type"`
}

type chunk struct {
	Type   *string `json:"type"`
	Tokens []int32 `json:"tokens"`
}

type modelInput struct {
	Chunks []chunk `json:"chunks"`
}

type tensor struct {
	Data  []float64 `json:"data"`
	DType string    `json:"dtype"`
	Shape []int     `json:"shape"`
}

type datum struct {
	ModelInput   modelInput        `json:"model_input"`
	LossFnInputs map[string]tensor `json:"loss_fn_inputs"`
}

type fwdInput struct {
	Data         []datum            `json:"data"`
	LossFn       string             `json:"loss_fn"`
	LossFnConfig map[string]float64 `json:"loss_fn_config"`
}

// forward_backward and forward carry no "type" in the documented body; a
// strict server rejects one.
type forwardBackwardReq struct {
	ForwardBackwardInput *fwdInput `json:"forward_backward_input"`
	ModelID              string    `json:"model_id"`
	SeqID                *int      `json:"seq_id"`
}

type forwardReq struct {
	ForwardInput *fwdInput `json:"forward_input"`
	ModelID      string    `json:"model_id"`
	SeqID        *int      `json:"seq_id"`
}

// adamParams: weight_decay and grad_clip_norm exist only in the newer
// protocol; the MinT flavour rejects them (see decodeAdam).
type adamParams struct {
	LearningRate *float64 `json:"learning_rate"`
	Beta1        *float64 `json:"beta1"`
	Beta2        *float64 `json:"beta2"`
	Eps          *float64 `json:"eps"`
	WeightDecay  *float64 `json:"weight_decay"`
	GradClipNorm *float64 `json:"grad_clip_norm"`
}

type optimStepReq struct {
	AdamParams *json.RawMessage `json:"adam_params"`
	ModelID    string           `json:"model_id"`
	SeqID      *int             `json:"seq_id"`
	Type       *string          `json:"type"`
}

type saveWeightsReq struct {
	ModelID    string  `json:"model_id"`
	Path       *string `json:"path"`
	SeqID      *int    `json:"seq_id"`
	TTLSeconds *int    `json:"ttl_seconds"`
	Overwrite  *bool   `json:"overwrite"`
	Type       *string `json:"type"`
}

type saveForSamplerReq struct {
	ModelID              string  `json:"model_id"`
	Path                 *string `json:"path"`
	SeqID                *int    `json:"seq_id"`
	SamplingSessionSeqID *int    `json:"sampling_session_seq_id"`
	TTLSeconds           *int    `json:"ttl_seconds"`
	Type                 *string `json:"type"`
}

type loadWeightsReq struct {
	ModelID   string  `json:"model_id"`
	Path      string  `json:"path"`
	Optimizer *bool   `json:"optimizer"`
	SeqID     *int    `json:"seq_id"`
	Type      *string `json:"type"`
}

type createSamplingSessionReq struct {
	SessionID            string  `json:"session_id"`
	SamplingSessionSeqID *int    `json:"sampling_session_seq_id"`
	BaseModel            *string `json:"base_model"`
	ModelPath            *string `json:"model_path"`
	Type                 *string `json:"type"`
}

type samplingParams struct {
	MaxTokens   *int            `json:"max_tokens"`
	Seed        *int64          `json:"seed"`
	Stop        json.RawMessage `json:"stop"`
	Temperature *float64        `json:"temperature"`
	TopK        *int            `json:"top_k"`
	TopP        *float64        `json:"top_p"`
}

type sampleReq struct {
	NumSamples         *int            `json:"num_samples"`
	Prompt             *modelInput     `json:"prompt"`
	SamplingParams     *samplingParams `json:"sampling_params"`
	SamplingSessionID  *string         `json:"sampling_session_id"`
	BaseModel          *string         `json:"base_model"`
	ModelPath          *string         `json:"model_path"`
	SeqID              *int            `json:"seq_id"`
	PromptLogprobs     *bool           `json:"prompt_logprobs"`
	TopkPromptLogprobs *int            `json:"topk_prompt_logprobs"`
	Type               *string         `json:"type"`
}

type retrieveFutureReq struct {
	RequestID string `json:"request_id"`
	// AllowMetadataOnly is newer than MinT's protocol (rejected there).
	AllowMetadataOnly *bool   `json:"allow_metadata_only"`
	ModelID           *string `json:"model_id"` // deprecated, accepted
}

type weightsInfoReq struct {
	TinkerPath string `json:"tinker_path"`
}

// stopSpec decodes sampling_params.stop: a string, a list of strings, or a
// list of token ids.
func stopSpec(raw json.RawMessage) (strs []string, ids []int32, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil, nil
	}
	if json.Unmarshal(raw, &strs) == nil {
		return strs, nil, nil
	}
	if json.Unmarshal(raw, &ids) == nil {
		return nil, ids, nil
	}
	return nil, nil, fmt.Errorf("sampling_params.stop must be a string, a list of strings or a list of token ids")
}
