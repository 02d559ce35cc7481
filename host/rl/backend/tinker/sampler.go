package tinker

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/metaclaw-go/metaclaw/host/rl/backend"
)

// Sampler is a sampling session; it implements backend.Sampler.
type Sampler struct {
	c    *Client
	id   string
	path string

	mu  sync.Mutex
	seq int // per-sampling-client seq_id, from 0
}

var _ backend.Sampler = (*Sampler)(nil)

// ID implements backend.Sampler.
func (s *Sampler) ID() string { return s.id }

// Path implements backend.Sampler.
func (s *Sampler) Path() string { return s.path }

type sampleParamsJSON struct {
	MaxTokens   int     `json:"max_tokens"`
	Seed        *int64  `json:"seed,omitempty"`
	Stop        any     `json:"stop,omitempty"`
	Temperature float64 `json:"temperature"`
	TopK        int     `json:"top_k"`
	TopP        float64 `json:"top_p"`
}

func sampleParams(p backend.SamplingParams) (sampleParamsJSON, error) {
	out := sampleParamsJSON{MaxTokens: p.MaxTokens, Seed: p.Seed, Temperature: p.Temperature, TopK: p.TopK, TopP: p.TopP}
	if out.TopK == 0 {
		out.TopK = -1
	}
	if out.TopP == 0 {
		out.TopP = 1
	}
	switch {
	case len(p.Stop) > 0 && len(p.StopTokens) > 0:
		return out, fmt.Errorf("sampling: give stop strings or stop tokens, not both")
	case len(p.Stop) > 0:
		out.Stop = p.Stop
	case len(p.StopTokens) > 0:
		out.Stop = p.StopTokens
	}
	return out, nil
}

// Sample implements backend.Sampler (asample, then its future).
func (s *Sampler) Sample(ctx context.Context, req backend.SampleRequest) (*backend.SampleResult, error) {
	if len(req.Prompt) == 0 {
		return nil, fmt.Errorf("sample: empty prompt: %w", backend.ErrInvalid)
	}
	sp, err := sampleParams(req.Params)
	if err != nil {
		return nil, err
	}
	n := req.NumSamples
	if n <= 0 {
		n = 1
	}
	s.mu.Lock()
	seq := s.seq
	s.seq++
	s.mu.Unlock()
	body, err := json.Marshal(map[string]any{
		"num_samples": n, "prompt": backend.Tokens(req.Prompt), "sampling_params": sp,
		"sampling_session_id": s.id, "seq_id": seq, "prompt_logprobs": req.PromptLogprobs,
		"topk_prompt_logprobs": 0, "type": "sample",
	})
	if err != nil {
		return nil, err
	}
	p, err := s.c.submit(ctx, "/api/v1/asample", body, "Sample", callOpts{})
	if err != nil {
		return nil, err
	}
	raw, err := s.c.result(ctx, p)
	if err != nil {
		return nil, err
	}
	return decodeSample(raw, n)
}

func decodeSample(raw json.RawMessage, n int) (*backend.SampleResult, error) {
	var out struct {
		Sequences []struct {
			StopReason string     `json:"stop_reason"`
			Tokens     []int32    `json:"tokens"`
			Logprobs   []*float64 `json:"logprobs"`
		} `json:"sequences"`
		PromptLogprobs []*float64 `json:"prompt_logprobs"`
	}
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("sample: decode result: %w", err)
	}
	if len(out.Sequences) != n {
		return nil, fmt.Errorf("sample: %d sequences for num_samples %d", len(out.Sequences), n)
	}
	res := &backend.SampleResult{Sequences: make([]backend.Sequence, len(out.Sequences))}
	for i, q := range out.Sequences {
		if q.Logprobs != nil && len(q.Logprobs) != len(q.Tokens) {
			return nil, fmt.Errorf("sample: sequence %d has %d logprobs for %d tokens", i, len(q.Logprobs), len(q.Tokens))
		}
		res.Sequences[i] = backend.Sequence{Tokens: q.Tokens, StopReason: q.StopReason, Logprobs: backend.FloatsWithNulls(q.Logprobs)}
	}
	res.PromptLogprobs = backend.FloatsWithNulls(out.PromptLogprobs)
	return res, nil
}
