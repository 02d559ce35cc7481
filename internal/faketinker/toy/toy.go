// Package toy is the "model" behind the fake training services: a bigram
// table (next-token logits given the previous token) over a small output
// vocabulary, with a LoRA-like delta table that forward_backward's gradients
// and Adam actually move. It is small enough to run thousands of steps in a
// test and real enough that tests assert learning, not calls: after a step
// with a positive advantage on a token, a sampler saved from the new weights
// gives that token a higher probability.
//
// Semantics (documented in docs/rl.md):
//   - position i of a datum predicts target i from input token i (bigram);
//   - the output vocabulary is Config.Vocab; a target outside it gets the
//     fixed log-probability OOVLogprob and no gradient;
//   - base logits are a deterministic hash of (base model, prev, token) in
//     [-1, 1]; the adapter adds a delta row per previous token;
//   - losses are token-level sums as Tinker documents them
//     (cross_entropy, importance_sampling, ppo, cispo, and Weaver's
//     truncated_importance_sampling);
//   - sampled log-probs are those of the untempered model, so a datum built
//     from them has importance ratio 1 under the same weights.
package toy

import (
	"fmt"
	"math"
	"sort"
)

// OOVLogprob is the log-probability reported for a target token outside the
// output vocabulary.
const OOVLogprob = -30

// Config shapes a base model.
type Config struct {
	// Name is the base model name; it seeds the base logits.
	Name string
	// Vocab is the output vocabulary (ids that can be sampled). Default
	// 0..31.
	Vocab []int32
	// VocabSize bounds accepted input ids: [0, VocabSize). Default 151936
	// (Qwen3's), so real prompt ids are accepted.
	VocabSize int
	// EOS, when in Vocab, ends a sample like a stop token. -1 = none.
	EOS int32
	// MaxContext is the model's context window (prompt + max_tokens).
	MaxContext int
}

// Model is an immutable base model.
type Model struct {
	cfg   Config
	seed  uint64
	index map[int32]int
}

// New returns the base model of cfg (defaults applied).
func New(cfg Config) *Model {
	if len(cfg.Vocab) == 0 {
		cfg.Vocab = make([]int32, 32)
		for i := range cfg.Vocab {
			cfg.Vocab[i] = int32(i)
		}
	}
	if cfg.VocabSize <= 0 {
		cfg.VocabSize = 151936
	}
	if cfg.MaxContext <= 0 {
		cfg.MaxContext = 32768
	}
	m := &Model{cfg: cfg, index: make(map[int32]int, len(cfg.Vocab))}
	for i, t := range cfg.Vocab {
		m.index[t] = i
	}
	h := uint64(1469598103934665603)
	for _, c := range []byte(cfg.Name) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	m.seed = h
	return m
}

// Config returns the model's configuration with defaults applied.
func (m *Model) Config() Config { return m.cfg }

// VocabIndex is the position of id in the output vocabulary, or -1.
func (m *Model) VocabIndex(id int32) int {
	if i, ok := m.index[id]; ok {
		return i
	}
	return -1
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// baseLogit is the base model's logit of vocab entry k after prev, in [-1, 1].
func (m *Model) baseLogit(prev int32, k int) float64 {
	h := splitmix(m.seed ^ splitmix(uint64(uint32(prev))<<20^uint64(k)))
	return float64(h>>11)/float64(1<<53)*2 - 1
}

// Weights is an adapter: a delta logit row per previous token.
type Weights struct {
	Delta map[int32][]float64
}

// NewWeights is a zero adapter (the base model's behaviour).
func NewWeights() *Weights { return &Weights{Delta: map[int32][]float64{}} }

// Clone deep-copies w (snapshots are immutable once taken).
func (w *Weights) Clone() *Weights {
	c := &Weights{Delta: make(map[int32][]float64, len(w.Delta))}
	for k, row := range w.Delta {
		c.Delta[k] = append([]float64(nil), row...)
	}
	return c
}

// LogProbs fills out (len(Vocab)) with log-softmax of the logits after prev
// under w, divided by temperature t (t <= 0 means 1).
func (m *Model) LogProbs(w *Weights, prev int32, t float64, out []float64) {
	if t <= 0 {
		t = 1
	}
	row := w.Delta[prev]
	maxv := math.Inf(-1)
	for k := range out {
		z := m.baseLogit(prev, k)
		if row != nil {
			z += row[k]
		}
		out[k] = z / t
		maxv = math.Max(maxv, out[k])
	}
	sum := 0.0
	for _, z := range out {
		sum += math.Exp(z - maxv)
	}
	lse := maxv + math.Log(sum)
	for k := range out {
		out[k] -= lse
	}
}

// Logprob is log p(target | prev) under w at temperature 1.
func (m *Model) Logprob(w *Weights, prev, target int32) float64 {
	k := m.VocabIndex(target)
	if k < 0 {
		return OOVLogprob
	}
	lp := make([]float64, len(m.cfg.Vocab))
	m.LogProbs(w, prev, 1, lp)
	return lp[k]
}

// SortedRows lists the previous-token ids that have adapter rows, sorted
// (for stable iteration).
func (w *Weights) SortedRows() []int32 {
	ids := make([]int32, 0, len(w.Delta))
	for k := range w.Delta {
		ids = append(ids, k)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// CheckTokens reports the first id outside [0, VocabSize).
func (m *Model) CheckTokens(ids []int32) error {
	for i, t := range ids {
		if t < 0 || int(t) >= m.cfg.VocabSize {
			return fmt.Errorf("token %d at position %d is outside the vocabulary [0, %d)", t, i, m.cfg.VocabSize)
		}
	}
	return nil
}
