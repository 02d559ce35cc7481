package toy

import (
	"fmt"
	"math"
)

// Datum is one decoded training example.
type Datum struct {
	Input      []int32
	Targets    []int64
	Weights    []float32 // cross_entropy
	Logprobs   []float32 // sampler's log q
	Advantages []float32
	ClipLow    []float32 // optional per-token thresholds (ppo, cispo)
	ClipHigh   []float32
}

// Loss names the toy model implements.
var Losses = map[string]bool{
	"cross_entropy": true, "importance_sampling": true, "ppo": true, "cispo": true,
	"truncated_importance_sampling": true,
}

// Adam holds the optimizer's settings.
type Adam struct {
	LearningRate, Beta1, Beta2, Eps, WeightDecay, GradClipNorm float64
}

// Trainer is one model under training: its adapter, the accumulated
// gradient and Adam's moments.
type Trainer struct {
	Model *Model
	W     *Weights
	grad  map[int32][]float64
	m, v  map[int32][]float64
	steps int
}

// NewTrainer starts a fresh adapter on model.
func NewTrainer(model *Model) *Trainer {
	return &Trainer{Model: model, W: NewWeights(), grad: map[int32][]float64{}, m: map[int32][]float64{}, v: map[int32][]float64{}}
}

// State is a training checkpoint: weights and optimizer state.
type State struct {
	W     *Weights
	M, V  map[int32][]float64
	Steps int
}

func cloneRows(in map[int32][]float64) map[int32][]float64 {
	out := make(map[int32][]float64, len(in))
	for k, r := range in {
		out[k] = append([]float64(nil), r...)
	}
	return out
}

// Save snapshots the trainer.
func (t *Trainer) Save() *State {
	return &State{W: t.W.Clone(), M: cloneRows(t.m), V: cloneRows(t.v), Steps: t.steps}
}

// Load restores a snapshot; without optimizer, Adam starts afresh. Any
// accumulated gradient is dropped.
func (t *Trainer) Load(s *State, optimizer bool) {
	t.W = s.W.Clone()
	t.grad = map[int32][]float64{}
	if optimizer {
		t.m, t.v, t.steps = cloneRows(s.M), cloneRows(s.V), s.Steps
	} else {
		t.m, t.v, t.steps = map[int32][]float64{}, map[int32][]float64{}, 0
	}
}

// Steps is the number of optimizer steps applied.
func (t *Trainer) Steps() int { return t.steps }

// ForwardBackward computes the loss of each datum, accumulates gradients
// (unless forwardOnly) and returns per-datum target log-probs and the summed
// loss. config holds loss_fn_config (clip thresholds).
func (t *Trainer) ForwardBackward(data []Datum, loss string, config map[string]float64, forwardOnly bool) ([][]float32, float64, error) {
	if !Losses[loss] {
		return nil, 0, fmt.Errorf("loss %q is not supported", loss)
	}
	lo, hi := clipDefaults(loss, config)
	V := len(t.Model.cfg.Vocab)
	lp := make([]float64, V)
	outs := make([][]float32, len(data))
	total := 0.0
	for di, d := range data {
		out := make([]float32, len(d.Input))
		for i, prev := range d.Input {
			target := int32(d.Targets[i])
			k := t.Model.VocabIndex(target)
			if k < 0 {
				// Counted in the loss, but no gradient reaches a fixed value.
				out[i] = OOVLogprob
				l, _ := tokenLoss(loss, d, i, OOVLogprob, lo, hi)
				total += l
				continue
			}
			t.Model.LogProbs(t.W, prev, 1, lp)
			logp := lp[k]
			out[i] = float32(logp)
			l, g := tokenLoss(loss, d, i, logp, lo, hi)
			total += l
			if forwardOnly || g == 0 {
				continue
			}
			row := t.grad[prev]
			if row == nil {
				row = make([]float64, V)
				t.grad[prev] = row
			}
			// d logp / d z_j = 1[j = k] − π_j
			for j := range row {
				p := math.Exp(lp[j])
				if j == k {
					row[j] += g * (1 - p)
				} else {
					row[j] -= g * p
				}
			}
		}
		outs[di] = out
	}
	return outs, total, nil
}

func clipDefaults(loss string, config map[string]float64) (lo, hi float64) {
	switch loss {
	case "cispo":
		lo, hi = 0, 4
	case "truncated_importance_sampling":
		lo, hi = 0, 2
	default:
		lo, hi = 0.8, 1.2
	}
	if v, ok := config["clip_low_threshold"]; ok {
		lo = v
	}
	if v, ok := config["clip_high_threshold"]; ok {
		hi = v
	}
	return lo, hi
}

// tokenLoss is the loss at position i and its derivative by log p.
func tokenLoss(loss string, d Datum, i int, logp, lo, hi float64) (l, g float64) {
	if loss == "cross_entropy" {
		w := float64(d.Weights[i])
		return -w * logp, -w
	}
	a := float64(d.Advantages[i])
	if a == 0 {
		return 0, 0
	}
	if d.ClipLow != nil {
		lo = float64(d.ClipLow[i])
	}
	if d.ClipHigh != nil {
		hi = float64(d.ClipHigh[i])
	}
	r := math.Exp(logp - float64(d.Logprobs[i]))
	switch loss {
	case "importance_sampling":
		return -r * a, -r * a
	case "truncated_importance_sampling":
		if r > hi {
			return -hi * a, 0
		}
		return -r * a, -r * a
	case "ppo":
		c := math.Min(math.Max(r, lo), hi)
		if r*a <= c*a {
			return -r * a, -r * a
		}
		return -c * a, 0
	case "cispo":
		c := math.Min(math.Max(r, lo), hi)
		return -c * a * logp, -c * a
	}
	return 0, 0
}

// OptimStep applies Adam to the accumulated gradient and clears it.
func (t *Trainer) OptimStep(p Adam) {
	t.steps++
	if p.GradClipNorm > 0 {
		norm := 0.0
		for _, row := range t.grad {
			for _, g := range row {
				norm += g * g
			}
		}
		if norm = math.Sqrt(norm); norm > p.GradClipNorm {
			s := p.GradClipNorm / norm
			for _, row := range t.grad {
				for j := range row {
					row[j] *= s
				}
			}
		}
	}
	bc1 := 1 - math.Pow(p.Beta1, float64(t.steps))
	bc2 := 1 - math.Pow(p.Beta2, float64(t.steps))
	V := len(t.Model.cfg.Vocab)
	for prev, g := range t.grad {
		w := t.W.Delta[prev]
		if w == nil {
			w = make([]float64, V)
			t.W.Delta[prev] = w
		}
		m, v := t.m[prev], t.v[prev]
		if m == nil {
			m, v = make([]float64, V), make([]float64, V)
			t.m[prev], t.v[prev] = m, v
		}
		for j := range w {
			m[j] = p.Beta1*m[j] + (1-p.Beta1)*g[j]
			v[j] = p.Beta2*v[j] + (1-p.Beta2)*g[j]*g[j]
			step := p.LearningRate * (m[j] / bc1) / (math.Sqrt(v[j]/bc2) + p.Eps)
			w[j] -= step + p.LearningRate*p.WeightDecay*w[j]
		}
	}
	t.grad = map[int32][]float64{}
}
