package batch

import (
	"errors"
	"fmt"
	"math"

	"github.com/metaclaw-go/metaclaw/host/rl/backend"
)

// Sample is what training needs of one scored turn: the exact prompt ids
// that were sent to the sampler and the exact ids and log-probs it returned.
type Sample struct {
	Group      string // same prompt → same group (GRPO); "" = alone
	Prompt     []int32
	Completion []int32
	// Logprobs has one entry per Completion token (the sampler's log q).
	Logprobs []float32
	Reward   float64
	Excluded bool
	// TeacherLogprobs (OPD), one per Completion token; nil = no teacher.
	TeacherLogprobs []float32
}

// Options of a batch.
type Options struct {
	Advantage Mode
	// KLPenaltyCoef weights the teacher term −coef·(log p_student − log
	// p_teacher) added to each completion token's advantage (OPD).
	KLPenaltyCoef float64
}

// Skipped says why a sample produced no datum.
type Skipped struct {
	Index  int
	Reason string
}

// Built is a batch ready for forward_backward.
type Built struct {
	Datums []backend.Datum
	// Index[i] is the sample that Datums[i] came from.
	Index []int
	// Advantages has one entry per sample (0 for excluded ones).
	Advantages []float64
	Skipped    []Skipped
}

// Build computes the advantages of samples and the datum of every included
// sample with something to learn (a non-zero advantage somewhere). A
// malformed sample is skipped with its reason, never sent.
func Build(samples []Sample, o Options) (*Built, error) {
	items := make([]Item, len(samples))
	for i, s := range samples {
		items[i] = Item{Group: s.Group, Reward: s.Reward, Excluded: s.Excluded}
	}
	adv, err := Advantages(items, o.Advantage)
	if err != nil {
		return nil, err
	}
	b := &Built{Advantages: adv}
	for i, s := range samples {
		if s.Excluded {
			b.Skipped = append(b.Skipped, Skipped{i, "excluded"})
			continue
		}
		d, err := BuildDatum(s, adv[i], o.KLPenaltyCoef)
		switch {
		case errors.Is(err, errNothingToLearn):
			b.Skipped = append(b.Skipped, Skipped{i, "zero advantage"})
		case err != nil:
			b.Skipped = append(b.Skipped, Skipped{i, err.Error()})
		default:
			b.Datums = append(b.Datums, d)
			b.Index = append(b.Index, i)
		}
	}
	return b, nil
}

var errNothingToLearn = errors.New("every advantage is zero")

// BuildDatum lays one sample out for training, with P the prompt (p ids), R
// the completion (r ids), S = P+R and T = p+r−1:
//
//	model_input   = S[:T]                       (one encoded_text chunk)
//	target_tokens = S[1:]                       int64, T
//	logprobs      = 0 × (p−1), then the sampled log-probs     float32, T
//	advantages    = 0 × (p−1), then adv (+ the OPD term)      float32, T
//
// Position i predicts token i+1, so the prompt's positions carry advantage 0
// and contribute nothing; there is no "mask" key (Tinker rejects it).
func BuildDatum(s Sample, adv float64, klCoef float64) (backend.Datum, error) {
	p, r := len(s.Prompt), len(s.Completion)
	switch {
	case p == 0:
		return backend.Datum{}, errors.New("empty prompt")
	case r == 0:
		return backend.Datum{}, errors.New("empty completion")
	case len(s.Logprobs) != r:
		return backend.Datum{}, fmt.Errorf("%d logprobs for %d completion tokens", len(s.Logprobs), r)
	case s.TeacherLogprobs != nil && len(s.TeacherLogprobs) != r:
		return backend.Datum{}, fmt.Errorf("%d teacher logprobs for %d completion tokens", len(s.TeacherLogprobs), r)
	case math.IsNaN(adv) || math.IsInf(adv, 0):
		return backend.Datum{}, fmt.Errorf("advantage is %v", adv)
	}
	t := p + r - 1
	// One allocation per kind: input and targets are two views of S.
	seq := make([]int32, p+r)
	copy(seq, s.Prompt)
	copy(seq[p:], s.Completion)
	targets := make([]int64, t)
	for i := range targets {
		targets[i] = int64(seq[i+1])
	}
	floats := make([]float32, 2*t)
	lps, advs := floats[:t:t], floats[t:]
	off := p - 1
	learn := false
	for j := 0; j < r; j++ {
		lp := s.Logprobs[j]
		if math.IsNaN(float64(lp)) || math.IsInf(float64(lp), 0) {
			return backend.Datum{}, fmt.Errorf("logprob %d is %v", j, lp)
		}
		lps[off+j] = lp
		a := adv
		if s.TeacherLogprobs != nil && klCoef != 0 {
			tl := s.TeacherLogprobs[j]
			if !math.IsNaN(float64(tl)) && !math.IsInf(float64(tl), 0) {
				a -= klCoef * float64(lp-tl)
			}
		}
		advs[off+j] = float32(a)
		if advs[off+j] != 0 {
			learn = true
		}
	}
	if !learn {
		return backend.Datum{}, errNothingToLearn
	}
	return backend.Datum{
		ModelInput: backend.Tokens(seq[:t]),
		LossFnInputs: map[string]backend.TensorData{
			backend.InputTargetTokens: {DType: backend.Int64, Ints: targets},
			backend.InputLogprobs:     backend.FloatTensor(lps),
			backend.InputAdvantages:   backend.FloatTensor(advs),
		},
	}, nil
}
