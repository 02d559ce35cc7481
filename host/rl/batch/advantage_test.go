package batch

import (
	"math"
	"testing"
)

func TestAdvantages(t *testing.T) {
	z := 1 / (1 + Epsilon)      // a z-score of ±1 with the epsilon (std 1)
	zh := 0.5 / (0.5 + Epsilon) // the same for rewards {1, 0} (std 0.5)
	tests := []struct {
		name  string
		mode  Mode
		items []Item
		want  []float64
	}{
		{"batch z-score", Batch, []Item{{Reward: 1}, {Reward: -1}}, []float64{z, -z}},
		{"batch ignores groups", Batch, []Item{{Group: "a", Reward: 1}, {Group: "a", Reward: 1}, {Reward: -1}, {Reward: -1}}, []float64{z, z, -z, -z}},
		{"equal rewards give zero", Batch, []Item{{Reward: 1}, {Reward: 1}, {Reward: 1}}, []float64{0, 0, 0}},
		{"batch of one gives zero", GRPO, []Item{{Reward: 1}}, []float64{0}},
		{"excluded take no part", Batch, []Item{{Reward: 1}, {Reward: -1}, {Reward: 5, Excluded: true}}, []float64{z, -z, 0}},
		{"raw", Raw, []Item{{Reward: 1}, {Reward: -1}, {Reward: 1, Excluded: true}}, []float64{1, -1, 0}},
		{"grpo within group", GRPO, []Item{{Group: "p", Reward: 1}, {Group: "p", Reward: 0}, {Group: "q", Reward: 1}, {Group: "q", Reward: 1}}, []float64{zh, -zh, 0, 0}},
		// Loners are scored against the whole batch: mean 0.25, std of
		// {1,0,1,-1} = sqrt(0.6875).
		{"grpo loners batch-normalised", GRPO, []Item{{Group: "p", Reward: 1}, {Group: "p", Reward: 0}, {Reward: 1}, {Reward: -1}},
			[]float64{zh, -zh, 0.75 / (math.Sqrt(0.6875) + Epsilon), -1.25 / (math.Sqrt(0.6875) + Epsilon)}},
		{"grpo group of one is a loner", GRPO, []Item{{Group: "p", Reward: 1}, {Group: "q", Reward: -1}}, []float64{z, -z}},
		{"grpo excluded member leaves a loner", GRPO, []Item{{Group: "p", Reward: 1}, {Group: "p", Reward: -1, Excluded: true}, {Reward: -1}}, []float64{z, 0, -z}},
		{"empty mode is grpo", "", []Item{{Group: "p", Reward: 2}, {Group: "p", Reward: 0}}, []float64{z, -z}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Advantages(tc.items, tc.mode)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d advantages, want %d", len(got), len(tc.want))
			}
			for i := range got {
				if math.Abs(got[i]-tc.want[i]) > 1e-9 {
					t.Errorf("advantage %d = %v, want %v (all: %v)", i, got[i], tc.want[i], got)
				}
			}
		})
	}
}

func TestAdvantagesErrors(t *testing.T) {
	if _, err := Advantages([]Item{{Reward: math.NaN()}}, Batch); err == nil {
		t.Error("NaN reward accepted")
	}
	if _, err := Advantages([]Item{{Reward: 1}}, "median"); err == nil {
		t.Error("unknown mode accepted")
	}
}
