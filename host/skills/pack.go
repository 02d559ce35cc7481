package skills

import "strings"

// packStrings moves the short strings a snapshot keeps per skill (the
// skill's name, description, category, status, source, path, hash, tags,
// agents and warnings, and the entry's id, header and vector key) into one
// allocation. Parsing leaves each in its own heap object (~20 a skill),
// and the GC marks every one of them each cycle for as long as the
// snapshot lives; packed, a skill is a few objects (the body, long, stays
// its own). The strings are equal before and after: only where they are
// stored changes.
func packStrings(e *entry) {
	s := e.skill
	fields := [...]*string{&s.Name, &s.Description, &s.Category, &s.Status, &s.Source, &s.Path, &s.Hash, &e.id, &e.head, &e.embedHash}
	lists := [...][]string{s.Tags, s.Agents, s.Warnings}
	n := 0
	for _, f := range fields {
		n += len(*f)
	}
	for _, l := range lists {
		for _, v := range l {
			n += len(v)
		}
	}
	if n == 0 {
		return
	}
	var b strings.Builder
	b.Grow(n)
	for _, f := range fields {
		b.WriteString(*f)
	}
	for _, l := range lists {
		for _, v := range l {
			b.WriteString(v)
		}
	}
	arena, at := b.String(), 0
	next := func(v string) string {
		out := arena[at : at+len(v)]
		at += len(v)
		return out
	}
	for _, f := range fields {
		*f = next(*f)
	}
	for _, l := range lists {
		for i, v := range l {
			l[i] = next(v)
		}
	}
}
