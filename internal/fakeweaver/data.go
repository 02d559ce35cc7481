package fakeweaver

import (
	"math"

	"github.com/metaclaw-go/metaclaw/internal/faketinker/toy"
)

type tensor struct {
	Data  []float64 `json:"data"`
	DType string    `json:"dtype"`
	Shape []int     `json:"shape"`
}

type fwdInput struct {
	LossFn       string             `json:"loss_fn"`
	LossFnConfig map[string]float64 `json:"loss_fn_config"`
	Data         []struct {
		ModelInput struct {
			Chunks []struct {
				Type   string  `json:"type"`
				Tokens []int32 `json:"tokens"`
			} `json:"chunks"`
		} `json:"model_input"`
		LossFnInputs map[string]tensor `json:"loss_fn_inputs"`
	} `json:"data"`
}

// Weaver's losses and what each needs; importance sampling needs loss_mask.
var needs = map[string][]string{
	"cross_entropy":                 {"target_tokens", "weights"},
	"importance_sampling":           {"target_tokens", "logprobs", "advantages", "loss_mask"},
	"truncated_importance_sampling": {"target_tokens", "logprobs", "advantages", "loss_mask"},
}

// decodeData converts datums; a target of -100 is ignored, as is a position
// whose loss_mask is 0.
func decodeData(in fwdInput, m *toy.Model) ([]toy.Datum, *apiErr) {
	req, ok := needs[in.LossFn]
	if !ok {
		return nil, bad("loss_fn %q is not supported (cross_entropy, importance_sampling, truncated_importance_sampling)", in.LossFn)
	}
	if len(in.Data) == 0 {
		return nil, bad("data is empty")
	}
	out := make([]toy.Datum, len(in.Data))
	for i, d := range in.Data {
		var ids []int32
		for _, c := range d.ModelInput.Chunks {
			ids = append(ids, c.Tokens...)
		}
		n := len(ids)
		if n == 0 {
			return nil, bad("data[%d]: empty model_input", i)
		}
		for _, k := range req {
			t, ok := d.LossFnInputs[k]
			if !ok {
				return nil, bad("data[%d]: loss_fn %s requires %s", i, in.LossFn, k)
			}
			if len(t.Data) != n {
				return nil, bad("data[%d].%s: length %d, model_input %d", i, k, len(t.Data), n)
			}
			for _, v := range t.Data {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return nil, bad("data[%d].%s: non-finite value", i, k)
				}
			}
		}
		td := toy.Datum{Input: ids, Targets: make([]int64, n)}
		mask := d.LossFnInputs["loss_mask"].Data
		for j, v := range d.LossFnInputs["target_tokens"].Data {
			td.Targets[j] = int64(v)
			if v == -100 || (mask != nil && mask[j] == 0) {
				td.Targets[j] = int64(m.Config().Vocab[0]) // ignored below
			}
		}
		f := func(k string) []float32 {
			src, ok := d.LossFnInputs[k]
			if !ok {
				return nil
			}
			v := make([]float32, n)
			for j, x := range src.Data {
				v[j] = float32(x)
			}
			return v
		}
		td.Weights, td.Logprobs, td.Advantages = f("weights"), f("logprobs"), f("advantages")
		for j := range ids {
			ignored := d.LossFnInputs["target_tokens"].Data[j] == -100 || (mask != nil && mask[j] == 0)
			if ignored {
				if td.Weights != nil {
					td.Weights[j] = 0
				}
				if td.Advantages != nil {
					td.Advantages[j] = 0
				}
			}
		}
		out[i] = td
	}
	return out, nil
}
