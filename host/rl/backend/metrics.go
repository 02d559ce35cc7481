package backend

import (
	"math"
	"strings"
)

// MergeMetrics combines the metrics of the chunks of one forward_backward,
// by each name's ":reduction" suffix the way Tinker's SDK does: sum adds,
// mean and slack are weighted by the chunks' datum counts, min and max keep
// the extreme; unique and hash_unordered (and names without a suffix) keep
// the first value.
func MergeMetrics(parts []map[string]float64, counts []int) map[string]float64 {
	if len(parts) == 1 {
		return parts[0]
	}
	out := map[string]float64{}
	weight := map[string]float64{}
	total := 0
	for _, n := range counts {
		total += n
	}
	for i, m := range parts {
		w := 1.0
		if total > 0 && i < len(counts) {
			w = float64(counts[i]) / float64(total)
		}
		for name, v := range m {
			_, red, _ := strings.Cut(name, ":")
			prev, seen := out[name]
			switch red {
			case "sum":
				out[name] = prev + v
			case "mean", "slack":
				out[name] = prev + w*v
				weight[name] += w
			case "min":
				if !seen {
					prev = math.Inf(1)
				}
				out[name] = math.Min(prev, v)
			case "max":
				if !seen {
					prev = math.Inf(-1)
				}
				out[name] = math.Max(prev, v)
			default:
				if !seen {
					out[name] = v
				}
			}
		}
	}
	// A mean reported by only some chunks is renormalised over those.
	for name, w := range weight {
		if w > 0 && w < 1 {
			out[name] /= w
		}
	}
	return out
}
