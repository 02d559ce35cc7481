package memory

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"time"

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

// item is what rendering needs of a unit.
type item struct {
	typ    Type
	said   time.Time
	id     string
	line   string
	tokens int
}

func hitItems(hits []Hit) []item {
	out := make([]item, len(hits))
	for i := range hits {
		h := &hits[i]
		out[i] = item{typ: h.Type, said: h.SaidAt, id: h.ID, line: h.line, tokens: h.tokens}
		if out[i].line == "" {
			out[i].line = renderLine(&h.Unit)
		}
	}
	return out
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
	return renderItems(hitItems(hits), budget)
}

func renderItems(items []item, budget int) core.Section {
	for len(items) > 0 {
		n := bodyTokens(items)
		if budget <= 0 || n <= budget {
			body := renderBody(items)
			size := 0
			for i := range items {
				size += len("memory:") + len(items[i].id)
			}
			var b strings.Builder // one allocation for every id
			b.Grow(size)
			for i := range items {
				b.WriteString("memory:")
				b.WriteString(items[i].id)
			}
			all := b.String()
			ids := make([]string, len(items))
			at := 0
			for i, it := range items {
				n := len("memory:") + len(it.id)
				ids[i], at = all[at:at+n], at+n
			}
			return core.Section{Title: "Memories", Body: body, IDs: ids, Tokens: n}
		}
		items = items[:len(items)-1] // best first
	}
	return core.Section{Title: "Memories"}
}

var (
	headerOnce sync.Once
	headerToks map[Type]int
)

// bodyTokens bounds the token count of renderBody(items).
func bodyTokens(items []item) int {
	headerOnce.Do(func() {
		headerToks = map[Type]int{}
		for t, title := range groupTitle {
			headerToks[t] = tokens.Count("### " + title + "\n")
		}
	})
	var seen [8]bool
	n := 0
	for i := range items {
		it := &items[i]
		if g := typeRank(it.typ); !seen[g] {
			seen[g] = true
			n += headerToks[it.typ] + 1
		}
		if it.tokens == 0 {
			it.tokens = tokens.Count(it.line)
		}
		n += it.tokens + 1
	}
	return n
}

func typeRank(t Type) int {
	for i, x := range Types {
		if x == t {
			return i
		}
	}
	return len(Types)
}

func renderBody(items []item) string {
	// The sort keys, read once per item (not once per comparison).
	type key struct {
		rank int
		sec  int64
		nsec int
		i    int
	}
	var buf [32]key
	keys := buf[:0]
	for i := range items {
		keys = append(keys, key{typeRank(items[i].typ), items[i].said.Unix(), items[i].said.Nanosecond(), i})
	}
	slices.SortFunc(keys, func(a, b key) int {
		if a.rank != b.rank {
			return cmp.Compare(a.rank, b.rank)
		}
		if a.sec != b.sec {
			return cmp.Compare(a.sec, b.sec)
		}
		if a.nsec != b.nsec {
			return cmp.Compare(a.nsec, b.nsec)
		}
		return strings.Compare(items[a.i].id, items[b.i].id)
	})
	size := 0
	for i := range items {
		size += len(items[i].line) + 1
	}
	var b strings.Builder
	b.Grow(size + 32*len(Types))
	var last Type
	for k, x := range keys {
		it := &items[x.i]
		if k == 0 || it.typ != last {
			if k > 0 {
				b.WriteString("\n")
			}
			b.WriteString("### ")
			b.WriteString(groupTitle[it.typ])
			b.WriteString("\n")
			last = it.typ
		}
		b.WriteString(it.line)
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}
