package toy

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
)

func datum(prev, target int32, q float32, adv float32) Datum {
	return Datum{Input: []int32{prev}, Targets: []int64{int64(target)}, Logprobs: []float32{q}, Advantages: []float32{adv}}
}

func TestLossesMoveTheTargetLogprob(t *testing.T) {
	adam := Adam{LearningRate: 0.05, Beta1: 0.9, Beta2: 0.95, Eps: 1e-12}
	for _, loss := range []string{"importance_sampling", "ppo", "cispo", "truncated_importance_sampling"} {
		for _, sign := range []float32{1, -1} {
			m := New(Config{Name: "base"})
			tr := NewTrainer(m)
			before := m.Logprob(tr.W, 7, 3)
			d := datum(7, 3, float32(before), sign)
			if _, _, err := tr.ForwardBackward([]Datum{d}, loss, nil, false); err != nil {
				t.Fatal(err)
			}
			tr.OptimStep(adam)
			after := m.Logprob(tr.W, 7, 3)
			if sign > 0 && !(after > before) || sign < 0 && !(after < before) {
				t.Errorf("%s with advantage %v: logprob %v -> %v", loss, sign, before, after)
			}
			// Other contexts are untouched.
			if got := m.Logprob(tr.W, 8, 3); got != m.Logprob(NewWeights(), 8, 3) {
				t.Errorf("%s changed an unrelated context", loss)
			}
		}
	}
}

func TestCrossEntropyLearnsAndOOV(t *testing.T) {
	m := New(Config{Name: "base"})
	tr := NewTrainer(m)
	d := Datum{Input: []int32{5, 6}, Targets: []int64{9, 100000}, Weights: []float32{1, 1}}
	before := m.Logprob(tr.W, 5, 9)
	outs, loss, err := tr.ForwardBackward([]Datum{d}, "cross_entropy", nil, false)
	if err != nil {
		t.Fatal(err)
	}
	if outs[0][1] != OOVLogprob {
		t.Errorf("OOV target logprob = %v", outs[0][1])
	}
	if math.Abs(loss-(-before-OOVLogprob)) > 1e-4 {
		t.Errorf("loss = %v, want %v", loss, -before-OOVLogprob)
	}
	tr.OptimStep(Adam{LearningRate: 0.1, Beta1: 0.9, Beta2: 0.95, Eps: 1e-12})
	if after := m.Logprob(tr.W, 5, 9); !(after > before) {
		t.Errorf("cross entropy did not raise the target: %v -> %v", before, after)
	}
}

func TestPPOClipStopsGradient(t *testing.T) {
	m := New(Config{Name: "base"})
	tr := NewTrainer(m)
	lp := m.Logprob(tr.W, 1, 2)
	// The sampler thought the token far less likely: ratio >> 1.2 with a
	// positive advantage is clipped, so nothing is learnt.
	d := datum(1, 2, float32(lp-2), 1)
	if _, _, err := tr.ForwardBackward([]Datum{d}, "ppo", nil, false); err != nil {
		t.Fatal(err)
	}
	tr.OptimStep(Adam{LearningRate: 0.1, Beta1: 0.9, Beta2: 0.95, Eps: 1e-12})
	if got := m.Logprob(tr.W, 1, 2); got != lp {
		t.Errorf("clipped PPO moved the logprob %v -> %v", lp, got)
	}
}

func TestSaveLoadAndSampling(t *testing.T) {
	m := New(Config{Name: "base", EOS: 31})
	tr := NewTrainer(m)
	snap := tr.Save()
	p := SampleParams{MaxTokens: 20, Temperature: 1}
	a, alp, _ := m.Sample(snap.W, []int32{4}, p, rand.New(rand.NewPCG(1, 2)))
	b, blp, _ := m.Sample(snap.W, []int32{4}, p, rand.New(rand.NewPCG(1, 2)))
	if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(alp, blp) {
		t.Error("same seed sampled differently")
	}
	for i, tok := range a {
		prev := int32(4)
		if i > 0 {
			prev = a[i-1]
		}
		if want := float32(m.Logprob(snap.W, prev, tok)); alp[i] != want {
			t.Errorf("sampled logprob %d = %v, model says %v", i, alp[i], want)
		}
	}
	d := datum(4, a[0], alp[0], 1)
	_, _, _ = tr.ForwardBackward([]Datum{d}, "importance_sampling", nil, false)
	tr.OptimStep(Adam{LearningRate: 0.1, Beta1: 0.9, Beta2: 0.95, Eps: 1e-12})
	if float32(m.Logprob(snap.W, 4, a[0])) != alp[0] {
		t.Error("a snapshot changed after training")
	}
	tr.Load(snap, true)
	if float32(m.Logprob(tr.W, 4, a[0])) != alp[0] || tr.Steps() != 0 {
		t.Error("load did not restore the snapshot")
	}
	g, _, stop := m.Sample(snap.W, []int32{4}, SampleParams{MaxTokens: 3, StopTokens: []int32{0}}, nil)
	if len(g) == 0 || (stop == "length") != (len(g) == 3) {
		t.Errorf("greedy sample %v stop %q", g, stop)
	}
}
