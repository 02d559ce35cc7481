package memory

import (
	"sort"
	"strings"
	"sync"

	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/tokens"
)

var groupTitle = map[Type]string{
	Preference:     "Preferences and rules",
	Semantic:       "Facts",
	ProjectState:   "Project state",
	Episodic:       "Events",
	WorkingSummary: "Recent sessions",
}

// Render writes the hits as the "Memories" section: grouped by type in a
// fixed order, each group in the order things were said, so the same set of
// memories always renders to the same text. Hits beyond the budget (as
// measured by the real tokenizer) are dropped, lowest score first.
//
// Sizes come from each unit's line, counted with the real tokenizer when the
// unit was written, plus the group headers: an upper bound of the body's
// count (lines are joined by newlines, which BPE never merges into fewer
// tokens than the parts), so the request path does not tokenize.
func Render(hits []Hit, budget int) core.Section {
	for len(hits) > 0 {
		n := bodyTokens(hits)
		if budget <= 0 || n <= budget {
			body := renderBody(hits)
			ids := make([]string, len(hits))
			for i, h := range hits {
				ids[i] = "memory:" + h.ID
			}
			return core.Section{Title: "Memories", Body: body, IDs: ids, Tokens: n}
		}
		hits = hits[:len(hits)-1] // hits are best first
	}
	return core.Section{Title: "Memories"}
}

var (
	headerOnce sync.Once
	headerToks map[Type]int
)

// bodyTokens bounds the token count of renderBody(hits).
func bodyTokens(hits []Hit) int {
	headerOnce.Do(func() {
		headerToks = map[Type]int{}
		for t, title := range groupTitle {
			headerToks[t] = tokens.Count("### " + title + "\n")
		}
	})
	seen := map[Type]bool{}
	n := 0
	for i := range hits {
		h := &hits[i]
		if !seen[h.Type] {
			seen[h.Type] = true
			n += headerToks[h.Type] + 1
		}
		if h.tokens == 0 {
			h.tokens = tokens.Count(renderLine(&h.Unit))
		}
		n += h.tokens + 1
	}
	return n
}

func renderBody(hits []Hit) string {
	byType := map[Type][]Hit{}
	for _, h := range hits {
		byType[h.Type] = append(byType[h.Type], h)
	}
	var b strings.Builder
	for _, t := range Types {
		group := byType[t]
		if len(group) == 0 {
			continue
		}
		sort.Slice(group, func(i, j int) bool {
			if !group[i].SaidAt.Equal(group[j].SaidAt) {
				return group[i].SaidAt.Before(group[j].SaidAt)
			}
			return group[i].ID < group[j].ID
		})
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		b.WriteString("### ")
		b.WriteString(groupTitle[t])
		b.WriteString("\n")
		for _, h := range group {
			b.WriteString(renderLine(&h.Unit))
			b.WriteString("\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
