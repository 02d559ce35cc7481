package toy

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
)

// SampleParams mirror Tinker's sampling_params.
type SampleParams struct {
	MaxTokens   int
	Temperature float64 // 0 = greedy
	TopK        int     // <= 0 = off
	TopP        float64 // <= 0 or >= 1 = off
	StopTokens  []int32
	StopStrings []string
	// Decode turns ids into text for stop strings; nil = stop strings never
	// match (the toy model has no tokenizer).
	Decode func([]int32) string
}

// Sample generates one completion after prompt under w with rng. Log-probs
// are those of the untempered model (see the package comment).
func (m *Model) Sample(w *Weights, prompt []int32, p SampleParams, rng *rand.Rand) (tokens []int32, logprobs []float32, stop string) {
	V := len(m.cfg.Vocab)
	lp := make([]float64, V)
	lpT := make([]float64, V)
	order := make([]int, V)
	prev := int32(-1)
	if len(prompt) > 0 {
		prev = prompt[len(prompt)-1]
	}
	stopSet := map[int32]bool{}
	for _, s := range p.StopTokens {
		stopSet[s] = true
	}
	if m.VocabIndex(m.cfg.EOS) >= 0 {
		stopSet[m.cfg.EOS] = true
	}
	for len(tokens) < p.MaxTokens {
		m.LogProbs(w, prev, 1, lp)
		var k int
		if p.Temperature <= 0 {
			k = argmax(lp)
		} else {
			m.LogProbs(w, prev, p.Temperature, lpT)
			k = draw(lpT, order, p.TopK, p.TopP, rng)
		}
		tok := m.cfg.Vocab[k]
		tokens = append(tokens, tok)
		logprobs = append(logprobs, float32(lp[k]))
		prev = tok
		if stopSet[tok] {
			return tokens, logprobs, "stop"
		}
		if p.Decode != nil && len(p.StopStrings) > 0 {
			text := p.Decode(tokens)
			for _, s := range p.StopStrings {
				if s != "" && strings.Contains(text, s) {
					return tokens, logprobs, "stop"
				}
			}
		}
	}
	return tokens, logprobs, "length"
}

// Force is Sample with the tokens given: they are cut at MaxTokens or after
// a stop token, and carry the model's (untempered) log-probs of them.
func (m *Model) Force(w *Weights, prompt, tokens []int32, p SampleParams) (out []int32, logprobs []float32, stop string) {
	stopSet := map[int32]bool{}
	for _, s := range p.StopTokens {
		stopSet[s] = true
	}
	if m.VocabIndex(m.cfg.EOS) >= 0 {
		stopSet[m.cfg.EOS] = true
	}
	prev := int32(-1)
	if len(prompt) > 0 {
		prev = prompt[len(prompt)-1]
	}
	for _, tok := range tokens {
		if len(out) >= p.MaxTokens {
			return out, logprobs, "length"
		}
		out = append(out, tok)
		logprobs = append(logprobs, float32(m.Logprob(w, prev, tok)))
		prev = tok
		if stopSet[tok] {
			return out, logprobs, "stop"
		}
	}
	if len(out) < p.MaxTokens {
		return out, logprobs, "stop" // the script ended: end of sequence
	}
	return out, logprobs, "length"
}

// PromptLogprobs scores every prompt token given the one before it; the
// first is NaN (Tinker's null).
func (m *Model) PromptLogprobs(w *Weights, prompt []int32) []float32 {
	out := make([]float32, len(prompt))
	for i := range prompt {
		if i == 0 {
			out[i] = float32(math.NaN())
			continue
		}
		out[i] = float32(m.Logprob(w, prompt[i-1], prompt[i]))
	}
	return out
}

func argmax(v []float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// draw samples an index from log-probs lp restricted by top-k and top-p.
func draw(lp []float64, order []int, topK int, topP float64, rng *rand.Rand) int {
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return lp[order[a]] > lp[order[b]] })
	n := len(order)
	if topK > 0 && topK < n {
		n = topK
	}
	if topP > 0 && topP < 1 {
		cum := 0.0
		for i := 0; i < n; i++ {
			cum += math.Exp(lp[order[i]])
			if cum >= topP {
				n = i + 1
				break
			}
		}
	}
	total := 0.0
	for i := 0; i < n; i++ {
		total += math.Exp(lp[order[i]])
	}
	x := rng.Float64() * total
	for i := 0; i < n; i++ {
		x -= math.Exp(lp[order[i]])
		if x <= 0 {
			return order[i]
		}
	}
	return order[n-1]
}
