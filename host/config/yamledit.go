package config

import (
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// Editing strategy: every change is made twice. First on the node tree
// (always possible, but re-encoding loses blank lines and comment spacing),
// then as a minimal text patch located through the nodes' line/column
// positions. The patch is used when it parses to exactly the same data as
// the tree edit; otherwise the re-encoded tree is written.

// editFile is one of config.yaml / secrets.yaml during Set or Unset.
type editFile struct {
	path     string
	data     []byte // as read; nil when the file does not exist
	exists   bool
	mode     fs.FileMode
	parseErr error
	out      []byte // current text after the edits so far
	changed  bool
}

func openEditFile(path string) (*editFile, error) {
	data, mode, err := readOptional(path)
	if err != nil {
		return nil, err
	}
	ef := &editFile{path: path, data: data, exists: data != nil, mode: mode, out: data}
	if !ef.exists {
		ef.mode = 0o600
	}
	if data != nil {
		doc, err := parseYAML(path, data)
		if err == nil {
			if _, rerr := docRoot(path, doc); rerr != nil {
				err = rerr
			}
		}
		if err != nil {
			ef.parseErr = err
		}
	}
	return ef, nil
}

// doc parses the current text; parse errors were ruled out by openEditFile
// and every later text is verified, so an error here means "empty".
func (ef *editFile) doc() *yaml.Node {
	doc, err := parseYAML(ef.path, ef.out)
	if err != nil || doc == nil {
		return nil
	}
	return doc
}

func (ef *editFile) has(key string) bool {
	doc := ef.doc()
	if doc == nil {
		return false
	}
	_, ok := walkPath(doc, strings.Split(key, "."))
	return ok
}

func (ef *editFile) set(key string, val *yaml.Node) error {
	path := strings.Split(key, ".")
	tree := ef.doc()
	if tree == nil {
		tree = &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	}
	unit := indentUnit(tree)
	if err := treeSet(tree, path, val); err != nil {
		return &Error{File: ef.path, Key: key, Msg: err.Error()}
	}
	want, err := encodeNode(tree, unit)
	if err != nil {
		return wrapf(err, "render %s", ef.path)
	}
	patched, ok := patchSet(ef.out, ef.doc(), path, inlineText(val), unit)
	ef.out = chooseText(patched, ok, want)
	ef.changed = true
	return nil
}

func (ef *editFile) remove(key string) {
	path := strings.Split(key, ".")
	tree := ef.doc()
	if tree == nil || !treeDelete(tree, path) {
		return
	}
	want, err := encodeNode(tree, indentUnit(tree))
	if err != nil {
		return
	}
	patched, ok := patchDelete(ef.out, ef.doc(), path)
	ef.out = chooseText(patched, ok, want)
	ef.changed = true
}

// chooseText prefers the text patch when it means the same as the tree edit.
func chooseText(patched []byte, ok bool, want []byte) []byte {
	if ok && sameYAML(patched, want) {
		return patched
	}
	return want
}

func sameYAML(a, b []byte) bool {
	var x, y any
	if yaml.Unmarshal(a, &x) != nil || yaml.Unmarshal(b, &y) != nil {
		return false
	}
	norm := func(v any) any {
		if v == nil {
			return map[string]any{}
		}
		return v
	}
	return reflect.DeepEqual(norm(x), norm(y))
}

// inlineText renders a value node on one line, or "" if it cannot be.
func inlineText(val *yaml.Node) string {
	n := *val
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	out, err := encodeNode(&n, 2)
	if err != nil {
		return ""
	}
	s := strings.TrimSuffix(string(out), "\n")
	if strings.Contains(s, "\n") {
		return ""
	}
	return s
}

// indentUnit guesses the file's indentation step from its first nested section.
func indentUnit(doc *yaml.Node) int {
	if doc == nil || len(doc.Content) == 0 {
		return 2
	}
	m := resolve(doc.Content[0])
	if m == nil || m.Kind != yaml.MappingNode {
		return 2
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		v := m.Content[i+1]
		if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 {
			if d := v.Content[0].Column - m.Content[i].Column; d > 0 && d <= 8 {
				return d
			}
		}
	}
	return 2
}

// lastPair returns the index of the last key named name in mapping m, or -1.
func lastPair(m *yaml.Node, name string) int {
	idx := -1
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind == yaml.ScalarNode && k.Value == name && k.ShortTag() != "!!merge" {
			idx = i
		}
	}
	return idx
}

type step struct {
	m   *yaml.Node // mapping
	idx int        // index of the key in m.Content
}

// walkPath follows path through nested mappings; ok is false if a key is missing.
func walkPath(doc *yaml.Node, path []string) ([]step, bool) {
	if doc == nil || len(doc.Content) == 0 {
		return nil, false
	}
	m := resolve(doc.Content[0])
	var steps []step
	for i, seg := range path {
		if m == nil || m.Kind != yaml.MappingNode {
			return steps, false
		}
		idx := lastPair(m, seg)
		if idx < 0 {
			return steps, false
		}
		steps = append(steps, step{m, idx})
		if i < len(path)-1 {
			m = resolve(m.Content[idx+1])
		}
	}
	return steps, true
}

// treeSet sets path to val, creating sections as needed and keeping the
// old value's comments and quoting style.
func treeSet(doc *yaml.Node, path []string, val *yaml.Node) error {
	if isNull(resolve(doc.Content[0])) {
		old := doc.Content[0]
		doc.Content[0] = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", HeadComment: old.HeadComment, LineComment: old.LineComment, FootComment: old.FootComment}
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return fmt.Errorf("the top level is not a mapping")
	}
	for i, seg := range path {
		idx := lastPair(m, seg)
		if idx < 0 {
			node := val
			for j := len(path) - 1; j > i; j-- {
				node = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{strNode(path[j]), node}}
			}
			if m.Style&yaml.FlowStyle != 0 && len(m.Content) == 0 {
				m.Style = 0 // turn an empty `{}` into a normal block section
			}
			m.Content = append(m.Content, strNode(seg), node)
			return nil
		}
		cur := m.Content[idx+1]
		if cur.Kind == yaml.AliasNode || cur.Anchor != "" {
			return fmt.Errorf("`%s` uses a YAML anchor or alias; edit it by hand", strings.Join(path[:i+1], "."))
		}
		if i == len(path)-1 {
			val.HeadComment, val.LineComment, val.FootComment = cur.HeadComment, cur.LineComment, cur.FootComment
			// Keep the user's quoting of a string value ('x' stays single-quoted).
			if q := cur.Style & (yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle); q != 0 && cur.Kind == yaml.ScalarNode &&
				val.Kind == yaml.ScalarNode && val.Tag == "!!str" && (val.Style == 0 || val.Style == yaml.DoubleQuotedStyle) &&
				!strings.ContainsAny(val.Value, "\n\r") {
				val.Style = q
			}
			m.Content[idx+1] = val
			return nil
		}
		if isNull(cur) {
			cur = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", HeadComment: cur.HeadComment, LineComment: cur.LineComment, FootComment: cur.FootComment}
			m.Content[idx+1] = cur
		}
		if cur.Kind != yaml.MappingNode {
			return fmt.Errorf("`%s` is %s, not a section: %w", strings.Join(path[:i+1], "."), describe(cur), errNotSection)
		}
		if cur.Style&yaml.FlowStyle != 0 && len(cur.Content) == 0 {
			cur.Style = 0
		}
		m = cur
	}
	return nil
}

func strNode(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// treeDelete removes path and any section that becomes empty because of it.
func treeDelete(doc *yaml.Node, path []string) bool {
	steps, ok := walkPath(doc, path)
	if !ok {
		return false
	}
	lvl := deleteLevel(steps)
	s := steps[lvl]
	s.m.Content = append(s.m.Content[:s.idx], s.m.Content[s.idx+2:]...)
	return true
}

// deleteLevel is the step whose pair must go: the deepest one, or an
// ancestor section that would be left empty (never the top level).
func deleteLevel(steps []step) int {
	lvl := len(steps) - 1
	for lvl > 0 && len(steps[lvl].m.Content) == 2 {
		lvl--
	}
	return lvl
}

// --- text patching ---------------------------------------------------------

type lines []string // each with its line terminator

func splitLines(src []byte) lines { return strings.SplitAfter(string(src), "\n") }

func (ls lines) content(n int) (string, string) { // 1-based; text and terminator
	l := ls[n-1]
	body := strings.TrimRight(l, "\r\n")
	return body, l[len(body):]
}

func (ls lines) bytes() []byte { return []byte(strings.Join(ls, "")) }

// byteCol converts a 1-based character column to a byte offset in s.
func byteCol(s string, col int) int {
	off := 0
	for i := 1; i < col; i++ {
		if off >= len(s) {
			return -1
		}
		_, w := utf8.DecodeRuneInString(s[off:])
		off += w
	}
	return off
}

func indentOf(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }

// keyStartsLine reports whether node k is the first thing on its line.
func (ls lines) keyStartsLine(k *yaml.Node) bool {
	if k.Line < 1 || k.Line > len(ls) {
		return false
	}
	body, _ := ls.content(k.Line)
	return indentOf(body) == k.Column-1 && k.Column-1 <= len(body)
}

// blockEnd is the last line of the block entry whose key is on line start
// with the given indent: following lines indented deeper belong to it.
func (ls lines) blockEnd(start, indent int) int {
	end := start
	for j := start + 1; j <= len(ls); j++ {
		body, _ := ls.content(j)
		if strings.TrimSpace(body) == "" {
			continue
		}
		if indentOf(body) <= indent {
			break
		}
		end = j
	}
	return end
}

// spanEnd finds where the scalar or flow collection starting at byte start ends.
func spanEnd(s string, start int, n *yaml.Node) int {
	if start >= len(s) {
		return -1
	}
	switch {
	case n.Kind == yaml.ScalarNode && n.Style&yaml.DoubleQuotedStyle != 0:
		for i := start + 1; i < len(s); i++ {
			switch s[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
		return -1
	case n.Kind == yaml.ScalarNode && n.Style&yaml.SingleQuotedStyle != 0:
		for i := start + 1; i < len(s); i++ {
			if s[i] == '\'' {
				if i+1 < len(s) && s[i+1] == '\'' {
					i++
					continue
				}
				return i + 1
			}
		}
		return -1
	case n.Kind == yaml.ScalarNode && n.Style&(yaml.LiteralStyle|yaml.FoldedStyle|yaml.TaggedStyle) == 0:
		end := len(s)
		for i := start; i < len(s); i++ {
			if s[i] == '#' && i > start && (s[i-1] == ' ' || s[i-1] == '\t') {
				end = i
				break
			}
		}
		return start + len(strings.TrimRight(s[start:end], " \t"))
	case (n.Kind == yaml.SequenceNode || n.Kind == yaml.MappingNode) && n.Style&yaml.FlowStyle != 0:
		depth, quote := 0, byte(0)
		for i := start; i < len(s); i++ {
			c := s[i]
			switch {
			case quote != 0:
				if c == quote {
					quote = 0
				}
			case c == '"' || c == '\'':
				quote = c
			case c == '[' || c == '{':
				depth++
			case c == ']' || c == '}':
				depth--
				if depth == 0 {
					return i + 1
				}
			}
		}
	}
	return -1
}

// colonEnd returns the byte offset just after the `:` that follows key k.
func (ls lines) colonEnd(k *yaml.Node) int {
	if k.Line < 1 || k.Line > len(ls) {
		return -1
	}
	body, _ := ls.content(k.Line)
	start := byteCol(body, k.Column)
	if start < 0 || start >= len(body) {
		return -1
	}
	var end int
	if k.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		end = spanEnd(body, start, k)
	} else {
		end = start + len(k.Value)
		if end > len(body) || body[start:end] != k.Value {
			return -1
		}
	}
	if end < 0 {
		return -1
	}
	rest := body[end:]
	trimmed := strings.TrimLeft(rest, " \t")
	if !strings.HasPrefix(trimmed, ":") {
		return -1
	}
	return end + (len(rest) - len(trimmed)) + 1
}

func genBlock(path []string, text string, indent, unit int) string {
	var b strings.Builder
	for i, seg := range path {
		b.WriteString(strings.Repeat(" ", indent+i*unit) + seg + ":")
		if i == len(path)-1 {
			b.WriteString(" " + text)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// insertAfter inserts text after line n (0 = at the top).
func (ls lines) insertAfter(n int, text string) lines {
	out := append(lines(nil), ls[:n]...)
	if n > 0 && !strings.HasSuffix(out[n-1], "\n") {
		out[n-1] += "\n"
	}
	out = append(out, text)
	return append(out, ls[n:]...)
}

// patchSet edits the text for path=text; ok is false when it cannot.
func patchSet(src []byte, doc *yaml.Node, path []string, text string, unit int) ([]byte, bool) {
	if text == "" {
		return nil, false
	}
	ls := splitLines(src)
	if doc == nil { // empty or comment-only file: append
		if len(src) > 0 && !strings.HasSuffix(string(src), "\n") {
			src = append(append([]byte(nil), src...), '\n')
		}
		return append(append([]byte(nil), src...), genBlock(path, text, 0, unit)...), true
	}
	m := resolve(doc.Content[0])
	if m != doc.Content[0] {
		return nil, false
	}
	for i, seg := range path {
		if m.Kind != yaml.MappingNode || m.Style&yaml.FlowStyle != 0 || len(m.Content) == 0 {
			return nil, false
		}
		idx := lastPair(m, seg)
		if idx < 0 { // append the rest of the path after the section's last entry
			first, last := m.Content[0], m.Content[len(m.Content)-2]
			if !ls.keyStartsLine(first) || !ls.keyStartsLine(last) {
				return nil, false
			}
			end := ls.blockEnd(last.Line, last.Column-1)
			return ls.insertAfter(end, genBlock(path[i:], text, first.Column-1, unit)).bytes(), true
		}
		k, v := m.Content[idx], m.Content[idx+1]
		if v.Kind == yaml.AliasNode || v.Anchor != "" {
			return nil, false
		}
		if i == len(path)-1 {
			return ls.replaceValue(k, v, text)
		}
		if isNull(v) { // `section:` with nothing under it
			ce := ls.colonEnd(k)
			if ce < 0 || !ls.keyStartsLine(k) {
				return nil, false
			}
			body, eol := ls.content(k.Line)
			after := body[ce:]
			if v.Value != "" { // drop the `~` / `null`, keep the spacing before a comment
				t := strings.TrimLeft(after, " \t")
				if !strings.HasPrefix(t, v.Value) {
					return nil, false
				}
				after = after[:len(after)-len(t)] + t[len(v.Value):]
			}
			if c := strings.TrimSpace(after); c == "" {
				after = ""
			} else if !strings.HasPrefix(c, "#") {
				return nil, false
			}
			ls[k.Line-1] = body[:ce] + after + eol
			return ls.insertAfter(k.Line, genBlock(path[i+1:], text, k.Column-1+unit, unit)).bytes(), true
		}
		m = v
	}
	return nil, false
}

func (ls lines) replaceValue(k, v *yaml.Node, text string) ([]byte, bool) {
	if isNull(v) && v.Value == "" { // `key:` with no value: write after the colon
		ce := ls.colonEnd(k)
		if ce < 0 {
			return nil, false
		}
		body, eol := ls.content(k.Line)
		after := body[ce:]
		if strings.TrimSpace(after) == "" {
			after = ""
		} else if !strings.HasPrefix(after, " ") && !strings.HasPrefix(after, "\t") {
			after = " " + after
		}
		ls[k.Line-1] = body[:ce] + " " + text + after + eol
		return ls.bytes(), true
	}
	if v.Line < 1 || v.Line > len(ls) {
		return nil, false
	}
	body, eol := ls.content(v.Line)
	start := byteCol(body, v.Column)
	if start < 0 {
		return nil, false
	}
	end := spanEnd(body, start, v)
	if end < 0 {
		return nil, false
	}
	ls[v.Line-1] = body[:start] + text + body[end:] + eol
	return ls.bytes(), true
}

// patchDelete removes path's lines (and a section emptied by it).
func patchDelete(src []byte, doc *yaml.Node, path []string) ([]byte, bool) {
	steps, ok := walkPath(doc, path)
	if !ok {
		return nil, false
	}
	s := steps[deleteLevel(steps)]
	if s.m.Style&yaml.FlowStyle != 0 {
		return nil, false
	}
	ls := splitLines(src)
	k := s.m.Content[s.idx]
	if !ls.keyStartsLine(k) {
		return nil, false
	}
	end := ls.blockEnd(k.Line, k.Column-1)
	out := append(lines(nil), ls[:k.Line-1]...)
	return append(out, ls[end:]...).bytes(), true
}
