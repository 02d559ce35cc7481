package batch

import (
	"reflect"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/rl/backend"
)

func TestBuildDatumLayout(t *testing.T) {
	s := Sample{Prompt: []int32{10, 11, 12}, Completion: []int32{20, 21}, Logprobs: []float32{-0.5, -1.5}}
	d, err := BuildDatum(s, 2, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.ModelInput.Flat(); !reflect.DeepEqual(got, []int32{10, 11, 12, 20}) {
		t.Errorf("model_input = %v", got)
	}
	in := d.LossFnInputs
	if len(in) != 3 {
		t.Errorf("loss inputs %v, want exactly target_tokens, logprobs, advantages (no mask)", in)
	}
	if got := in[backend.InputTargetTokens]; got.DType != backend.Int64 || !reflect.DeepEqual(got.Ints, []int64{11, 12, 20, 21}) {
		t.Errorf("target_tokens = %+v", got)
	}
	if got := in[backend.InputLogprobs]; !reflect.DeepEqual(got.Floats, []float32{0, 0, -0.5, -1.5}) {
		t.Errorf("logprobs = %v", got.Floats)
	}
	if got := in[backend.InputAdvantages]; !reflect.DeepEqual(got.Floats, []float32{0, 0, 2, 2}) {
		t.Errorf("advantages = %v", got.Floats)
	}
	if err := backend.ValidateDatum(d, backend.ImportanceSampling); err != nil {
		t.Errorf("built datum is not valid: %v", err)
	}
}

func TestBuildDatumOPD(t *testing.T) {
	s := Sample{Prompt: []int32{1}, Completion: []int32{2, 3}, Logprobs: []float32{-1, -2}, TeacherLogprobs: []float32{-0.5, -2}}
	d, err := BuildDatum(s, 1, 2)
	if err != nil {
		t.Fatal(err)
	}
	// adv − coef·(lp − teacher): 1 − 2·(−1+0.5) = 2; 1 − 2·0 = 1.
	if got := d.LossFnInputs[backend.InputAdvantages].Floats; !reflect.DeepEqual(got, []float32{2, 1}) {
		t.Errorf("advantages = %v", got)
	}
	// With a zero reward advantage the teacher term alone still trains.
	d, err = BuildDatum(s, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	if got := d.LossFnInputs[backend.InputAdvantages].Floats; !reflect.DeepEqual(got, []float32{1, 0}) {
		t.Errorf("OPD-only advantages = %v", got)
	}
}

func TestBuildDatumErrors(t *testing.T) {
	nan := float32(0)
	nan /= nan
	tests := []struct {
		name string
		s    Sample
		adv  float64
		want string
	}{
		{"empty prompt", Sample{Completion: []int32{1}, Logprobs: []float32{0}}, 1, "empty prompt"},
		{"empty completion", Sample{Prompt: []int32{1}}, 1, "empty completion"},
		{"misaligned", Sample{Prompt: []int32{1}, Completion: []int32{1, 2}, Logprobs: []float32{0}}, 1, "1 logprobs for 2"},
		{"teacher misaligned", Sample{Prompt: []int32{1}, Completion: []int32{1}, Logprobs: []float32{0}, TeacherLogprobs: []float32{}}, 1, "teacher"},
		{"nan logprob", Sample{Prompt: []int32{1}, Completion: []int32{1}, Logprobs: []float32{nan}}, 1, "logprob 0"},
		{"zero advantage", Sample{Prompt: []int32{1}, Completion: []int32{1}, Logprobs: []float32{-1}}, 0, "zero"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := BuildDatum(tc.s, tc.adv, 0)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

func TestBuild(t *testing.T) {
	mk := func(g string, r float64) Sample {
		return Sample{Group: g, Prompt: []int32{1, 2}, Completion: []int32{3}, Logprobs: []float32{-1}, Reward: r}
	}
	samples := []Sample{mk("a", 1), mk("a", -1), mk("", 1), {Excluded: true, Reward: 9}, {Prompt: []int32{1}, Reward: -1}}
	b, err := Build(samples, Options{Advantage: GRPO})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(b.Index, []int{0, 1, 2}) {
		t.Errorf("datums from samples %v, want [0 1 2]", b.Index)
	}
	if len(b.Skipped) != 2 || b.Skipped[0] != (Skipped{3, "excluded"}) || b.Skipped[1].Index != 4 {
		t.Errorf("skipped = %+v", b.Skipped)
	}
	if b.Advantages[3] != 0 {
		t.Errorf("excluded sample got advantage %v", b.Advantages[3])
	}
}
