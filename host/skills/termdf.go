package skills

import "github.com/metaclaw-go/metaclaw/internal/strtab"

// termDF counts the skills each raw (unstemmed) term of the library occurs
// in (snapshot.df). The terms sit in a strtab.Table rather than a
// map[string]int, so the snapshot holds no pointer per term for the GC to
// follow; the in-memory BM25 index numbers its surface terms the same way
// (bm25Index.surfTok).
type termDF struct {
	terms *strtab.Table
	n     []int32 // n[i]: the skills term i occurs in
}

// index is t's number, or -1 when no skill has it (also on a nil termDF).
func (d *termDF) index(t string) int {
	if d == nil {
		return -1
	}
	return d.terms.Index(t)
}

// len is the number of distinct terms.
func (d *termDF) len() int {
	if d == nil {
		return 0
	}
	return len(d.n)
}

// docFreq counts the skills each kept raw term occurs in.
func docFreq(entries []*entry) *termDF {
	num := make(map[string]int32, 4096) // term → its number, while counting
	var n, last []int32                 // per term: its count; 1 + the index of the last entry counted
	b := strtab.NewBuilder(4096, 32<<10)
	for i, e := range entries {
		eachTerm(skillText(e.skill.Name, e.skill.Description, e.skill.Tags, e.skill.Body), func(t string) bool {
			if !keepTerm(t) {
				return true
			}
			k, ok := num[t]
			if !ok {
				k = int32(b.Add(t))
				num[t] = k
				n, last = append(n, 0), append(last, 0)
			} else if last[k] == int32(i+1) {
				return true
			}
			n[k]++
			last[k] = int32(i + 1)
			return true
		})
	}
	return &termDF{terms: b.Build(), n: append([]int32(nil), n...)}
}
