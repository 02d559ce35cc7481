package yamledit

// Text patching: the minimal change to the user's bytes, located through
// the parsed nodes' line/column positions.

import (
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

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
	m := Resolve(doc.Content[0])
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
		if IsNull(v) { // `section:` with nothing under it
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
	if IsNull(v) && v.Value == "" { // `key:` with no value: write after the colon
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
