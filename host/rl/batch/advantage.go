package batch

import (
	"fmt"
	"math"
)

// Mode selects how rewards become advantages (config rl.advantage).
type Mode string

// Modes.
const (
	// GRPO: samples whose group has two or more included members get
	// (r − mean(group)) / (std(group) + ε); the others are batch-normalised.
	GRPO Mode = "grpo"
	// Batch: (r − mean(batch)) / (std(batch) + ε) over the included samples,
	// ignoring groups (the Python MetaClaw's behaviour, minus its bug of
	// letting excluded samples shift the mean).
	Batch Mode = "batch"
	// Raw: the reward itself (OpenClaw-RL's choice); learns from a batch of
	// equal rewards too.
	Raw Mode = "raw"
)

// Modes lists the valid modes, for config validation.
func Modes() []string { return []string{string(GRPO), string(Batch), string(Raw)} }

// Epsilon keeps the normalisation finite when every reward is equal.
const Epsilon = 1e-8

// Item is what advantages need of a sample.
type Item struct {
	// Group identifies samples from the same prompt; "" is a group of one.
	Group  string
	Reward float64
	// Excluded samples (no verdict, dropped by the loss mask) get 0 and do
	// not take part in any mean or standard deviation.
	Excluded bool
}

// Advantages returns one advantage per item, in order. Non-finite rewards
// are an error.
func Advantages(items []Item, mode Mode) ([]float64, error) {
	out := make([]float64, len(items))
	for i, it := range items {
		if math.IsNaN(it.Reward) || math.IsInf(it.Reward, 0) {
			return nil, fmt.Errorf("sample %d has a non-finite reward %v", i, it.Reward)
		}
	}
	switch mode {
	case Raw:
		for i, it := range items {
			if !it.Excluded {
				out[i] = it.Reward
			}
		}
	case Batch:
		normalise(items, all(items), out)
	case GRPO, "":
		groups := map[string][]int{}
		for i, it := range items {
			if !it.Excluded && it.Group != "" {
				groups[it.Group] = append(groups[it.Group], i)
			}
		}
		grouped := make([]bool, len(items))
		for _, idx := range groups {
			if len(idx) < 2 {
				continue
			}
			normalise(items, idx, out)
			for _, i := range idx {
				grouped[i] = true
			}
		}
		// The rest is normalised against the whole batch's statistics.
		mean, std := stats(items, all(items))
		for i, it := range items {
			if !it.Excluded && !grouped[i] {
				out[i] = (it.Reward - mean) / (std + Epsilon)
			}
		}
	default:
		return nil, fmt.Errorf("unknown advantage mode %q (use grpo, batch or raw)", mode)
	}
	return out, nil
}

// all lists the included items.
func all(items []Item) []int {
	var idx []int
	for i, it := range items {
		if !it.Excluded {
			idx = append(idx, i)
		}
	}
	return idx
}

// normalise writes the z-scores of items[idx] into out.
func normalise(items []Item, idx []int, out []float64) {
	mean, std := stats(items, idx)
	for _, i := range idx {
		out[i] = (items[i].Reward - mean) / (std + Epsilon)
	}
}

// stats is the mean and population standard deviation of items[idx].
func stats(items []Item, idx []int) (mean, std float64) {
	if len(idx) == 0 {
		return 0, 0
	}
	for _, i := range idx {
		mean += items[i].Reward
	}
	mean /= float64(len(idx))
	for _, i := range idx {
		d := items[i].Reward - mean
		std += d * d
	}
	return mean, math.Sqrt(std / float64(len(idx)))
}
