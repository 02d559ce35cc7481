package yamledit

// Locating text: the user's lines, and the byte spans of parsed nodes
// found through their line/column positions (columns count characters).

import (
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

type lines []string // each with its line terminator

// splitLines splits after every line break the YAML parser counts (LF,
// CRLF, a lone CR, NEL, LS, PS), so that line i is the parser's line i.
// The last element is what follows the last break (often "").
func splitLines(src []byte) lines {
	s := string(src)
	var ls lines
	start := 0
	for i := 0; i < len(s); {
		n := breakLen(s, i)
		if n == 0 {
			i++
			continue
		}
		i += n
		ls = append(ls, s[start:i])
		start = i
	}
	return append(ls, s[start:])
}

// breakLen is the byte length of the line break at s[i], or 0.
func breakLen(s string, i int) int {
	switch {
	case strings.HasPrefix(s[i:], "\r\n"):
		return 2
	case s[i] == '\n' || s[i] == '\r':
		return 1
	case strings.HasPrefix(s[i:], "\u0085"):
		return 2
	case strings.HasPrefix(s[i:], "\u2028"), strings.HasPrefix(s[i:], "\u2029"):
		return 3
	}
	return 0
}

// endsLine reports whether l ends with a line break.
func endsLine(l string) bool { return termLen(l) > 0 }

// termLen is the byte length of the line break ending l, or 0.
func termLen(l string) int {
	for _, t := range []string{"\r\n", "\n", "\r", "\u0085", "\u2028", "\u2029"} {
		if strings.HasSuffix(l, t) {
			return len(t)
		}
	}
	return 0
}

func (ls lines) content(n int) (string, string) { // 1-based; text and terminator
	l := ls[n-1]
	body := l[:len(l)-termLen(l)]
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
