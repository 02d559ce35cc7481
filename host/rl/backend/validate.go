package backend

import (
	"errors"
	"math"
)

var allowedInputs = map[string]DType{
	InputTargetTokens: Int64,
	InputWeights:      Float32,
	InputLogprobs:     Float32,
	InputAdvantages:   Float32,
	InputClipLow:      Float32,
	InputClipHigh:     Float32,
}

// ValidateDatum checks d the way Tinker's server does before it is sent: only
// known loss inputs (no "mask"), the dtypes, every input the loss needs, all
// tensors as long as the model input, finite values. Checking first keeps a
// bad datum from failing one chunk of a batch after others were applied.
func ValidateDatum(d Datum, loss LossFn) error {
	n := d.ModelInput.Len()
	if n == 0 {
		return errors.New("model_input is empty")
	}
	for _, c := range d.ModelInput.Chunks {
		for _, t := range c.Tokens {
			if t < 0 {
				return errorf("model_input has a negative token id %d", t)
			}
		}
	}
	for name, t := range d.LossFnInputs {
		want, ok := allowedInputs[name]
		if !ok {
			return errorf("loss_fn_inputs has unknown key %q (accepted: target_tokens, weights, logprobs, advantages, clip_low_threshold, clip_high_threshold)", name)
		}
		if t.DType != want {
			return errorf("loss_fn_inputs %s must be %s, got %s", name, want, t.DType)
		}
		if t.Len() != n {
			return errorf("loss_fn_inputs %s has %d elements, model_input has %d tokens", name, t.Len(), n)
		}
		if len(t.Shape) > 1 || (len(t.Shape) == 1 && t.Shape[0] != n) {
			return errorf("loss_fn_inputs %s has shape %v, want [%d]", name, t.Shape, n)
		}
		for i, v := range t.Floats {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return errorf("loss_fn_inputs %s[%d] is %v (NonFiniteInTensor)", name, i, v)
			}
		}
		for i, v := range t.Ints {
			if name == InputTargetTokens && v < 0 {
				return errorf("target_tokens[%d] is negative (%d)", i, v)
			}
		}
	}
	for _, name := range loss.RequiredInputs() {
		if _, ok := d.LossFnInputs[name]; !ok {
			return errorf("loss %s needs loss_fn_inputs %s", loss, name)
		}
	}
	if !loss.Known() {
		return errorf("unknown loss %q", loss)
	}
	return nil
}
