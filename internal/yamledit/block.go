package yamledit

// Block patches for Doc: a value replaced in place, or whole lines
// inserted or replaced (block mappings and sequences rendered with the
// file's indentation and line ends). Positions come from the parsed nodes;
// their columns count characters, so they are turned into byte offsets
// before any slicing.

import (
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// textDoc is one patch in progress on a copy of the document's lines.
type textDoc struct {
	src  []byte
	tree *yaml.Node
	want *yaml.Node // the intended data after this edit
	ls   lines      // 0-based here, each with its terminator
	r    renderer
}

func (d *Doc) text(want *yaml.Node) *textDoc {
	return &textDoc{src: d.src, tree: d.tree, want: want, ls: splitLines(d.src), r: renderer{nl: d.nl, unit: d.unit, quoting: d.quoting}}
}

func (t *textDoc) out() []byte { return t.ls.bytes() }

// body is line i (0-based) without its terminator.
func (t *textDoc) body(i int) string {
	b, _ := t.ls.content(i + 1)
	return b
}

func isBlankOrComment(s string) bool {
	s = strings.TrimSpace(s)
	return s == "" || strings.HasPrefix(s, "#")
}

// endLine is the 0-based index of the last line of n's content; owner is
// the indentation of the line that owns n (its key or its dash).
func (t *textDoc) endLine(n *yaml.Node, owner int) int {
	switch {
	case n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle == 0 && len(n.Content) > 0:
		k := n.Content[len(n.Content)-2]
		return max(k.Line-1, t.endLine(n.Content[len(n.Content)-1], k.Column-1))
	case n.Kind == yaml.SequenceNode && n.Style&yaml.FlowStyle == 0 && len(n.Content) > 0:
		last := n.Content[len(n.Content)-1]
		return t.endLine(last, t.dashColumn(last))
	}
	if n.Line < 1 || n.Line > len(t.ls) {
		return max(n.Line-1, 0)
	}
	block := n.Kind == yaml.ScalarNode && n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0
	end := n.Line - 1
	for i := n.Line; i < len(t.ls); i++ {
		b := t.body(i)
		if block && strings.TrimSpace(b) == "" || !block && isBlankOrComment(b) {
			continue
		}
		if indentOf(b) <= owner {
			break
		}
		end = i
	}
	return end
}

// absorbComments extends end over the comment lines right after it that
// are indented deeper than owner: they describe the preceding value.
func (t *textDoc) absorbComments(end, owner int) int {
	for i := end + 1; i < len(t.ls); i++ {
		b := t.body(i)
		if !strings.HasPrefix(strings.TrimSpace(b), "#") || indentOf(b) <= owner {
			break
		}
		end = i
	}
	return end
}

// dashColumn is the byte offset of the '-' that starts a sequence item.
func (t *textDoc) dashColumn(item *yaml.Node) int {
	if item.Line < 1 || item.Line > len(t.ls) {
		return 0
	}
	b := t.body(item.Line - 1)
	c := byteCol(b, item.Column)
	if c < 0 {
		c = len(b)
	}
	for c--; c >= 0 && (b[c] == ' ' || b[c] == '\t'); c-- {
	}
	if c >= 0 && b[c] == '-' {
		return c
	}
	return max(c, 0)
}

// replaceLines replaces lines from..to (0-based, inclusive) with text.
func (t *textDoc) replaceLines(from, to int, text string) {
	out := append(lines(nil), t.ls[:from]...)
	out = append(out, text)
	t.ls = append(out, t.ls[to+1:]...)
}

// insertAfter inserts text (whole lines) after line i (0-based).
func (t *textDoc) insertAfter(i int, text string) {
	i = min(i, len(t.ls)-1)
	if i >= 0 && !endsLine(t.ls[i]) {
		t.ls[i] += t.r.nl
	}
	t.replaceLines(i+1, i, text)
}

func (t *textDoc) root() (*yaml.Node, error) {
	if t.tree == nil || len(t.tree.Content) == 0 || IsNull(t.tree.Content[0]) {
		return nil, nil
	}
	if r := t.tree.Content[0]; r.Kind == yaml.MappingNode {
		return r, nil
	}
	return nil, errors.New("the document is not a mapping")
}

// set patches path = val.
func (t *textDoc) set(path []string, val *yaml.Node) ([]byte, error) {
	m, err := t.root()
	if err != nil {
		return nil, err
	}
	if m == nil { // empty document, maybe only comments: append
		text := t.r.pair(path[0], nest(path[1:], val), 0)
		if len(t.src) > 0 && !endsLine(string(t.src)) {
			text = t.r.nl + text
		}
		return append(append([]byte(nil), t.src...), text...), nil
	}
	for i, key := range path {
		idx := lastPair(m, key)
		if idx < 0 {
			return t.insertPair(m, key, nest(path[i+1:], val))
		}
		k, v := m.Content[idx], m.Content[idx+1]
		if v.Kind == yaml.AliasNode || v.Anchor != "" {
			return nil, errors.New("uses a YAML anchor or alias; change it by hand")
		}
		if i == len(path)-1 {
			return t.replaceValue(k, v, val)
		}
		switch {
		case v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0:
			m = v
		case IsNull(v) || (v.Kind == yaml.MappingNode && len(v.Content) == 0):
			return t.replaceValue(k, v, nest(path[i+1:], val))
		case v.Kind == yaml.MappingNode:
			return t.rewriteFlow(k, v, path[:i+1])
		default:
			return nil, fmt.Errorf("%s is not a block mapping; change it by hand", strings.Join(path[:i+1], "."))
		}
	}
	return nil, errors.New("unreachable")
}

// rewriteFlow writes the flow collection v (the value of key k at path)
// again from the intended data: an edit inside `{a: 1, b: 2}` rewrites
// the braces, which hold no comments.
func (t *textDoc) rewriteFlow(k, v *yaml.Node, path []string) ([]byte, error) {
	nv, ok := walkValue(t.want, path)
	if !ok || nv.Kind != v.Kind || nv.Style&yaml.FlowStyle == 0 {
		return nil, fmt.Errorf("%s is not a block mapping; change it by hand", strings.Join(path, "."))
	}
	return t.replaceValue(k, v, nv)
}

// inlineText renders an inline value replacing old. In a flow collection,
// every scalar that old already held at the same place (same key, same
// index) keeps its spelling from the text.
func (t *textDoc) inlineText(val, old *yaml.Node) string {
	if val.Kind == yaml.ScalarNode {
		return t.r.scalar(val)
	}
	return t.r.flowKeep(val, old, t.source)
}

// source is old's text when old is a one-line scalar of the current text
// holding the same value as n.
func (t *textDoc) source(n, old *yaml.Node) (string, bool) {
	if old == nil || old.Kind != yaml.ScalarNode || old.Line < 1 || old.Line > len(t.ls) ||
		old.Style&(yaml.LiteralStyle|yaml.FoldedStyle|yaml.TaggedStyle) != 0 || !sameNode(old, n) {
		return "", false
	}
	b := t.body(old.Line - 1)
	from := byteCol(b, old.Column)
	if from < 0 {
		return "", false
	}
	if old.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) == 0 { // plain: the text is the value
		if old.Value != "" && strings.HasPrefix(b[from:], old.Value) {
			return old.Value, true
		}
		return "", false
	}
	if to := spanEnd(b, from, old); to > from {
		return b[from:to], true
	}
	return "", false
}

// nest wraps val in mappings named by keys.
func nest(keys []string, val *yaml.Node) *yaml.Node {
	for i := len(keys) - 1; i >= 0; i-- {
		val = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{strNode(keys[i]), val}}
	}
	return val
}

// insertPair adds key: val at the end of block mapping m.
func (t *textDoc) insertPair(m *yaml.Node, key string, val *yaml.Node) ([]byte, error) {
	if m.Style&yaml.FlowStyle != 0 || len(m.Content) == 0 {
		return nil, fmt.Errorf("cannot add %s to a flow mapping; change it by hand", key)
	}
	first, last := m.Content[0], m.Content[len(m.Content)-2]
	if !t.ls.keyStartsLine(first) && !t.isItemKey(first) {
		return nil, fmt.Errorf("unusual layout before %s; change it by hand", key)
	}
	ind := t.keyIndent(first)
	end := max(last.Line-1, t.endLine(m.Content[len(m.Content)-1], t.keyIndent(last)))
	t.insertAfter(t.absorbComments(end, t.keyIndent(last)), t.r.pair(key, val, ind))
	return t.out(), nil
}

// keyIndent is the byte column where key k starts on its line.
func (t *textDoc) keyIndent(k *yaml.Node) int {
	if k.Line < 1 || k.Line > len(t.ls) {
		return k.Column - 1
	}
	if c := byteCol(t.body(k.Line-1), k.Column); c >= 0 {
		return c
	}
	return k.Column - 1
}

// isItemKey reports a key that follows a sequence dash (`- name: x`).
func (t *textDoc) isItemKey(k *yaml.Node) bool {
	if k.Line < 1 || k.Line > len(t.ls) {
		return false
	}
	c := t.keyIndent(k)
	b := t.body(k.Line - 1)
	return c <= len(b) && strings.Trim(b[:c], " -") == "" && strings.Contains(b[:c], "-")
}

// replaceValue replaces the value of key node k.
func (t *textDoc) replaceValue(k, old, val *yaml.Node) ([]byte, error) {
	kl := k.Line - 1
	if kl < 0 || kl >= len(t.ls) {
		return nil, errors.New("cannot locate the key; change it by hand")
	}
	line, eol := t.ls.content(kl + 1)
	ind := t.keyIndent(k)
	sameLine := old.Line == k.Line && !(IsNull(old) && old.Value == "")
	oneLine := old.Kind == yaml.ScalarNode && old.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 ||
		old.Kind != yaml.ScalarNode && old.Style&yaml.FlowStyle != 0
	if t.r.inline(val) && sameLine && oneLine && t.endLine(old, ind) == kl {
		from := byteCol(line, old.Column)
		if to := spanEnd(line, max(from, 0), old); from >= 0 && to >= 0 {
			text := t.inlineText(val, old)
			if line[from:to] == text {
				return t.out(), nil
			}
			t.ls[kl] = line[:from] + text + line[to:] + eol
			return t.out(), nil
		}
	}
	ce := t.ls.colonEnd(k)
	if ce < 0 {
		return nil, fmt.Errorf("cannot find the ':' after %s; change it by hand", k.Value)
	}
	// A comment after the old value on the key's line stays.
	rest := line[ce:]
	if sameLine {
		rest = ""
		if s := byteCol(line, old.Column); s >= 0 {
			if e := spanEnd(line, s, old); e >= 0 {
				rest = line[e:]
			}
		}
	}
	comment := ""
	if c := strings.TrimLeft(rest, " \t"); strings.HasPrefix(c, "#") {
		comment = rest
		if !strings.HasPrefix(rest, " ") && !strings.HasPrefix(rest, "\t") {
			comment = " " + rest
		}
	}
	end := kl
	if !(IsNull(old) && old.Value == "") || old.Line > k.Line {
		end = max(kl, t.endLine(old, ind))
	}
	var text string
	if t.r.inline(val) {
		text = line[:ce] + " " + t.inlineText(val, old) + comment + t.r.nl
	} else {
		text = line[:ce] + comment + t.r.nl + t.r.block(val, ind+t.r.unit)
	}
	t.replaceLines(kl, end, text)
	return t.out(), nil
}

// upsert replaces item idx of block sequence seq, or appends (idx < 0).
func (t *textDoc) upsert(seq *yaml.Node, idx int, item *yaml.Node) ([]byte, error) {
	if seq.Style&yaml.FlowStyle != 0 || len(seq.Content) == 0 {
		return nil, errors.New("not a block sequence; change it by hand")
	}
	if idx < 0 {
		last := seq.Content[len(seq.Content)-1]
		dash := t.dashColumn(last)
		t.insertAfter(t.absorbComments(t.endLine(last, dash), dash), t.r.item(item, dash))
		return t.out(), nil
	}
	it := seq.Content[idx]
	dash := t.dashColumn(it)
	start := it.Line - 1
	if start < 0 || start >= len(t.ls) || strings.TrimSpace(t.body(start)[:min(dash+1, len(t.body(start)))]) != "-" {
		return nil, errors.New("unusual layout of the sequence; change it by hand")
	}
	t.replaceLines(start, t.endLine(it, dash), t.r.item(item, dash))
	return t.out(), nil
}

// delete removes the pair at path, or the section it would leave empty
// (never the top level): its lines go, with the comments indented under
// it. Inside a flow collection, the outermost flow collection on the path
// is written again from the intended data.
func (t *textDoc) delete(path []string) ([]byte, error) {
	steps, ok := walkPath(t.tree, path)
	if !ok {
		return nil, errors.New("cannot locate the key; change it by hand")
	}
	lvl := deleteLevel(steps)
	for i, s := range steps[:lvl+1] {
		if i > 0 {
			if pv := steps[i-1].m.Content[steps[i-1].idx+1]; pv != s.m || pv.Anchor != "" {
				return nil, fmt.Errorf("%s uses a YAML anchor or alias; change it by hand", strings.Join(path[:i], "."))
			}
		}
		if s.m.Style&yaml.FlowStyle == 0 {
			continue
		}
		if i == 0 {
			return nil, errors.New("the document is a flow mapping; change it by hand")
		}
		p := steps[i-1]
		return t.rewriteFlow(p.m.Content[p.idx], s.m, path[:i])
	}
	s := steps[lvl]
	k, v := s.m.Content[s.idx], s.m.Content[s.idx+1]
	if !t.ls.keyStartsLine(k) {
		return nil, fmt.Errorf("unusual layout at %s; change it by hand", strings.Join(path[:lvl+1], "."))
	}
	ind := t.keyIndent(k)
	end := t.absorbComments(max(k.Line-1, t.endLine(v, ind)), ind)
	t.replaceLines(k.Line-1, end, "")
	return t.out(), nil
}
