package runtime

import (
	"context"
	"time"

	"github.com/metaclaw-go/metaclaw/host/rl/samples"
	"github.com/metaclaw-go/metaclaw/host/rl/serve"
)

// Status is the "rl" object of `metaclaw status --json` (docs/status.md).
type Status struct {
	// State is off, inactive, connecting, serving or error; Reason says why.
	State  string `json:"state"`
	Reason string `json:"reason"`
	// Backend is the training backend kind, Model the policy's base model;
	// both empty while RL is off or inactive (no backend configured).
	Backend   string `json:"backend,omitempty"`
	Model     string `json:"model,omitempty"`
	Tokenizer string `json:"tokenizer,omitempty"`
	// Sampler is the one answering main turns now.
	Sampler *SamplerStatus `json:"sampler,omitempty"`
	// Judge and Teacher score the samples ("" = none).
	Judge   string `json:"judge,omitempty"`
	Teacher string `json:"teacher,omitempty"`
	// Samples counts samples by state, with the mean reward.
	Samples *samples.Counts `json:"samples,omitempty"`
	// Serving counts main turns since start: answered by the policy, sent
	// to llm.* instead, failed.
	Serving *serve.Stats `json:"serving,omitempty"`
}

// SamplerStatus names the sampler in use.
type SamplerStatus struct {
	ID    string    `json:"id"`
	Path  string    `json:"path,omitempty"`
	Step  int       `json:"step"`
	Since time.Time `json:"since"`
}

// Status reports RL's state.
func (rt *Runtime) Status(ctx context.Context) Status {
	rt.mu.Lock()
	st := Status{State: rt.state, Reason: rt.reason}
	rt.mu.Unlock()
	if rt.samples == nil {
		return st
	}
	st.Tokenizer, st.Judge, st.Teacher = rt.tokenizerDir, rt.judgeName, rt.teacherName
	if st.State != StateInactive {
		// Inactive means no backend is configured: naming the default
		// one (and rl.model) would read as if one were.
		st.Backend, st.Model = rt.kind, rt.model
	}
	if st.Judge == "" && st.State != StateInactive {
		st.Judge = "none (set rl.prm_api_key, or rl.prm_url to a local judge, or plugins.judge)"
	}
	if v := rt.current.Load(); v != nil {
		st.Sampler = &SamplerStatus{ID: v.Sampler.ID(), Path: v.Sampler.Path(), Step: v.Step, Since: v.Since}
	}
	if c, err := rt.samples.Counts(ctx); err == nil {
		st.Samples = &c
	}
	if rt.resp != nil {
		s := rt.resp.Stats()
		st.Serving = &s
	}
	return st
}

// ConfigStatus is RL's state from the configuration alone, for a host that
// is not running.
func ConfigStatus(mode string) Status {
	if mode == "skills_only" {
		return Status{State: StateOff, Reason: "mode skills_only learns skills and memories only"}
	}
	return Status{State: StateInactive, Reason: "the host is not running"}
}
