// Package teacher reads a teacher model's log-probabilities of the tokens
// the policy sampled (on-policy distillation, opd.*), from any
// OpenAI-compatible /v1/completions endpoint that scores a prompt given as
// token ids (vLLM, SGLang): the exact prompt and completion ids are sent with
// echo and logprobs, so the teacher scores the very tokens the policy
// produced, with no re-tokenisation. Teacher and policy must share a
// tokenizer. Tokens are recorded with purpose "teacher".
package teacher

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/llm"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/host/version"
	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// Purpose is the usage purpose of teacher calls.
const Purpose = "teacher"

// Client calls one teacher endpoint.
type Client struct {
	ep    config.Endpoint
	usage llm.UsageRecorder
	http  *http.Client
}

// New returns a client; timeout bounds each call (default 2 min).
func New(ep config.Endpoint, usage llm.UsageRecorder, timeout time.Duration) *Client {
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	return &Client{ep: ep, usage: usage, http: &http.Client{Timeout: timeout}}
}

// Name is "teacher:<model>".
func (c *Client) Name() string { return "teacher:" + c.ep.Model }

type completionsAnswer struct {
	Model   string `json:"model"`
	Choices []struct {
		Logprobs *struct {
			TokenLogprobs []*float64 `json:"token_logprobs"`
		} `json:"logprobs"`
	} `json:"choices"`
	Usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// Logprobs returns the teacher's log-probability of every completion id
// given the prompt ids and the completion ids before it.
func (c *Client) Logprobs(ctx context.Context, prompt, completion []int32) ([]float32, error) {
	if len(prompt) == 0 || len(completion) == 0 {
		return nil, fmt.Errorf("teacher: empty prompt or completion")
	}
	ids := append(append(make([]int32, 0, len(prompt)+len(completion)), prompt...), completion...)
	// max_tokens 1: some servers refuse 0; the one generated token is ignored.
	body, err := json.Marshal(map[string]any{"model": c.ep.Model, "prompt": ids, "echo": true, "logprobs": 1, "max_tokens": 1, "temperature": 0})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.ep.APIBase, "/")+"/completions", bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("teacher: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "metaclaw/"+version.Version)
	if c.ep.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.ep.APIKey)
	}
	var ans completionsAnswer
	lps, err := c.call(req, &ans, len(prompt), len(completion))
	if c.usage != nil {
		u := store.Usage{Purpose: Purpose, Model: c.ep.Model, InputTokens: ans.Usage.PromptTokens, OutputTokens: ans.Usage.CompletionTokens, OK: err == nil}
		if ans.Model != "" {
			u.Model = ans.Model
		}
		_ = c.usage.RecordUsage(context.WithoutCancel(ctx), u)
	}
	return lps, err
}

func (c *Client) call(req *http.Request, ans *completionsAnswer, p, r int) ([]float32, error) {
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("teacher call: %w", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("teacher call: read answer: %w", err)
	}
	if resp.StatusCode >= 400 {
		msg := string(raw)
		msg = textclip.Ellipsis(msg, 500)
		return nil, fmt.Errorf("teacher call: HTTP %d: %s", resp.StatusCode, msg)
	}
	if err := json.Unmarshal(raw, ans); err != nil {
		return nil, fmt.Errorf("teacher call: answer is not a completions response: %w", err)
	}
	if len(ans.Choices) == 0 || ans.Choices[0].Logprobs == nil {
		return nil, fmt.Errorf("teacher call: no logprobs in the answer (does the endpoint support echo with logprobs?)")
	}
	all := ans.Choices[0].Logprobs.TokenLogprobs
	if len(all) < p+r {
		return nil, fmt.Errorf("teacher call: %d log-probs for %d prompt + %d completion tokens (does the teacher accept token-id prompts, with the same tokenizer?)", len(all), p, r)
	}
	out := make([]float32, r)
	for i, lp := range all[p : p+r] {
		if lp == nil || math.IsNaN(*lp) || math.IsInf(*lp, 1) {
			return nil, fmt.Errorf("teacher call: no log-prob for completion token %d", i)
		}
		out[i] = float32(max(*lp, -1e4)) // -inf (an impossible token) stays finite for training
	}
	return out, nil
}
