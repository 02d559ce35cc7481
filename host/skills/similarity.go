package skills

import (
	"math"
	"strings"
)

// Near-duplicate thresholds: a proposal this close to an existing skill
// updates that skill instead of adding a twin. Distinct skills of the
// built-in bank stay well below them (TestBankSkillsAreDistinct).
const (
	DupTextCosine = 0.6  // cosine of term counts over description + tags + body
	DupDescCosine = 0.75 // cosine over descriptions alone
	DupNameJacc   = 0.75 // Jaccard over name words
)

func cosine(a, b map[string]int) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	var dot, na, nb float64
	for k, x := range a {
		dot += float64(x * b[k])
		na += float64(x * x)
	}
	for _, y := range b {
		nb += float64(y * y)
	}
	return dot / math.Sqrt(na*nb)
}

func jaccard(a, b map[string]int) float64 {
	if len(a) == 0 || len(b) == 0 {
		return 0
	}
	inter := 0
	for k := range a {
		if _, ok := b[k]; ok {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

func nameWords(name string) map[string]int {
	m := map[string]int{}
	for _, w := range strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return r == '-' || r == '_' || r == '.' }) {
		m[stem(w)]++
	}
	return m
}

// similarity scores how close a candidate skill is to an existing one.
type similarity struct {
	name, text, desc float64
}

func (s similarity) duplicate() bool {
	return s.name >= DupNameJacc || s.text >= DupTextCosine || s.desc >= DupDescCosine
}

func (s similarity) max() float64 { return max(s.name, s.text, s.desc) }

func similar(name, description string, tags []string, body string, e *entry) similarity {
	return newCandidate(name, description, tags, body).against(e)
}

// candidate is a proposed skill's term counts, computed once for a pass
// over the library.
type candidate struct {
	name, text, desc map[string]int
}

func newCandidate(name, description string, tags []string, body string) candidate {
	return candidate{
		name: nameWords(name),
		text: termCounts(name + " " + description + " " + strings.Join(tags, " ") + " " + body),
		desc: termCounts(description),
	}
}

// against compares the candidate with an existing skill. The skill's term
// counts are computed here rather than kept per entry: near-duplicate
// checks run once per proposal, while the maps would sit on the heap (and
// be marked by every GC cycle) for the daemon's lifetime.
func (c candidate) against(e *entry) similarity {
	s := e.skill
	return similarity{
		name: jaccard(c.name, nameWords(s.Name)),
		text: cosine(c.text, termCounts(s.Name+" "+s.Description+" "+strings.Join(s.Tags, " ")+" "+s.Body)),
		desc: cosine(c.desc, termCounts(s.Description)),
	}
}

// nearest finds the existing skill most similar to a candidate, if any is a
// near-duplicate. Exact name matches are handled by the caller.
func (l *Library) nearest(name, description string, tags []string, body string) (*entry, similarity) {
	var best *entry
	var bestSim similarity
	c := newCandidate(name, description, tags, body)
	for _, e := range l.snap.Load().sorted {
		s := c.against(e)
		if s.duplicate() && (best == nil || s.max() > bestSim.max()) {
			best, bestSim = e, s
		}
	}
	return best, bestSim
}
