package edit

import (
	"bytes"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/titanous/json5"

	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// The concrete-syntax parser behind JSON: it reads JSON, JSONC and JSON5 and
// records the byte range of every key and value, so edits can splice.

func (p *jparser) parseAll() (*jnode, error) {
	p.skip()
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skip()
	if p.err != nil {
		return nil, p.err
	}
	if p.i != len(p.b) {
		return nil, p.errorf("trailing data")
	}
	return n, nil
}

type jparser struct {
	b   []byte
	i   int
	err error
}

const maxDepth = 500

func (p *jparser) errorf(format string, a ...any) error {
	line := 1 + bytes.Count(p.b[:min(p.i, len(p.b))], []byte("\n"))
	return fmt.Errorf("line %d: %s", line, fmt.Sprintf(format, a...))
}

func (p *jparser) peekRune() rune {
	if p.i >= len(p.b) {
		return utf8.RuneError
	}
	r, _ := utf8.DecodeRune(p.b[p.i:])
	return r
}

// skip passes whitespace and comments (JSON5 whitespace includes a BOM and
// Unicode space separators).
func (p *jparser) skip() {
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			p.i++
		case c == '/' && p.i+1 < len(p.b) && p.b[p.i+1] == '/':
			for p.i < len(p.b) && p.b[p.i] != '\n' && p.b[p.i] != '\r' {
				r, n := utf8.DecodeRune(p.b[p.i:])
				if r == '\u2028' || r == '\u2029' {
					break
				}
				p.i += n
			}
		case c == '/' && p.i+1 < len(p.b) && p.b[p.i+1] == '*':
			end := bytes.Index(p.b[p.i+2:], []byte("*/"))
			if end < 0 {
				p.err = p.errorf("unterminated comment")
				p.i = len(p.b)
				return
			}
			p.i += end + 4
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(p.b[p.i:])
			if r == '\uFEFF' || r == '\u00A0' || r == '\u2028' || r == '\u2029' || unicode.Is(unicode.Zs, r) {
				p.i += n
				continue
			}
			return
		default:
			return
		}
	}
}

func (p *jparser) value(depth int) (*jnode, error) {
	if p.err != nil {
		return nil, p.err
	}
	if depth > maxDepth {
		return nil, p.errorf("nested too deeply")
	}
	if p.i >= len(p.b) {
		return nil, p.errorf("unexpected end of input")
	}
	start := p.i
	switch c := p.b[p.i]; {
	case c == '{':
		return p.object(depth)
	case c == '[':
		return p.array(depth)
	case c == '"' || c == '\'':
		if _, err := p.str(); err != nil {
			return nil, err
		}
		return &jnode{kind: '"', start: start, end: p.i}, nil
	case c == '-' || c == '+' || c == '.' || ('0' <= c && c <= '9'):
		if err := p.number(); err != nil {
			return nil, err
		}
		return &jnode{kind: '0', start: start, end: p.i}, nil
	default:
		for _, lit := range []string{"true", "false", "null", "Infinity", "NaN"} {
			if bytes.HasPrefix(p.b[p.i:], []byte(lit)) && !identCont(p.b, p.i+len(lit)) {
				p.i += len(lit)
				return &jnode{kind: 'l', start: start, end: p.i}, nil
			}
		}
		return nil, p.errorf("unexpected %q", p.peekRune())
	}
}

func identCont(b []byte, i int) bool {
	if i >= len(b) {
		return false
	}
	r, _ := utf8.DecodeRune(b[i:])
	return r == '_' || r == '$' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

func (p *jparser) object(depth int) (*jnode, error) {
	n := &jnode{kind: '{', start: p.i}
	p.i++
	for {
		p.skip()
		if p.err != nil {
			return nil, p.err
		}
		if p.i >= len(p.b) {
			return nil, p.errorf("unterminated object")
		}
		if p.b[p.i] == '}' {
			p.i++
			n.end = p.i
			return n, nil
		}
		if len(n.members) > 0 && n.members[len(n.members)-1].comma < 0 {
			return nil, p.errorf("expected ',' or '}' in object")
		}
		m := &jmember{keyStart: p.i, comma: -1}
		var err error
		if c := p.b[p.i]; c == '"' || c == '\'' {
			m.key, err = p.str()
		} else {
			m.key, err = p.ident()
		}
		if err != nil {
			return nil, err
		}
		m.keyEnd = p.i
		p.skip()
		if p.i >= len(p.b) || p.b[p.i] != ':' {
			return nil, p.errorf("expected ':' after key %q", m.key)
		}
		p.i++
		p.skip()
		if m.val, err = p.value(depth + 1); err != nil {
			return nil, err
		}
		n.members = append(n.members, m)
		p.skip()
		if p.i < len(p.b) && p.b[p.i] == ',' {
			m.comma = p.i
			p.i++
		}
	}
}

func (p *jparser) array(depth int) (*jnode, error) {
	n := &jnode{kind: '[', start: p.i}
	p.i++
	for {
		p.skip()
		if p.err != nil {
			return nil, p.err
		}
		if p.i >= len(p.b) {
			return nil, p.errorf("unterminated array")
		}
		if p.b[p.i] == ']' {
			p.i++
			n.end = p.i
			return n, nil
		}
		if len(n.elems) > 0 && n.elems[len(n.elems)-1].comma < 0 {
			return nil, p.errorf("expected ',' or ']' in array")
		}
		v, err := p.value(depth + 1)
		if err != nil {
			return nil, err
		}
		e := &jelem{val: v, comma: -1}
		n.elems = append(n.elems, e)
		p.skip()
		if p.i < len(p.b) && p.b[p.i] == ',' {
			e.comma = p.i
			p.i++
		}
	}
}

// str reads a quoted string and returns its decoded value.
func (p *jparser) str() (string, error) {
	q := p.b[p.i]
	start := p.i
	p.i++
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == q:
			p.i++
			raw := p.b[start:p.i]
			var s string
			if err := json5.Unmarshal(raw, &s); err != nil {
				return "", p.errorf("bad string %s: %v", textclip.Ellipsis(string(raw), 40), err)
			}
			return s, nil
		case c == '\\':
			if bytes.HasPrefix(p.b[p.i+1:], []byte("\r\n")) {
				p.i++
			}
			p.i += 2
		case c == '\n' || c == '\r':
			return "", p.errorf("line break in string")
		default:
			p.i++
		}
	}
	return "", p.errorf("unterminated string")
}

func (p *jparser) ident() (string, error) {
	start := p.i
	for p.i < len(p.b) {
		r, n := utf8.DecodeRune(p.b[p.i:])
		ok := r == '_' || r == '$' || unicode.IsLetter(r) || (p.i > start && (unicode.IsDigit(r) || unicode.Is(unicode.Mn, r) || unicode.Is(unicode.Mc, r) || unicode.Is(unicode.Pc, r) || r == '\u200C' || r == '\u200D'))
		if !ok {
			break
		}
		p.i += n
	}
	if p.i == start {
		return "", p.errorf("expected a key, found %q", p.peekRune())
	}
	return string(p.b[start:p.i]), nil
}

func (p *jparser) number() error {
	start := p.i
	if c := p.b[p.i]; c == '+' || c == '-' {
		p.i++
	}
	rest := p.b[p.i:]
	switch {
	case bytes.HasPrefix(rest, []byte("Infinity")):
		p.i += len("Infinity")
	case bytes.HasPrefix(rest, []byte("NaN")):
		p.i += len("NaN")
	case bytes.HasPrefix(rest, []byte("0x")) || bytes.HasPrefix(rest, []byte("0X")):
		p.i += 2
		for p.i < len(p.b) && isHex(p.b[p.i]) {
			p.i++
		}
	default:
		for p.i < len(p.b) && (('0' <= p.b[p.i] && p.b[p.i] <= '9') || p.b[p.i] == '.' || p.b[p.i] == 'e' || p.b[p.i] == 'E' ||
			((p.b[p.i] == '+' || p.b[p.i] == '-') && (p.b[p.i-1] == 'e' || p.b[p.i-1] == 'E'))) {
			p.i++
		}
	}
	if identCont(p.b, p.i) {
		return p.errorf("bad number %q", string(p.b[start:p.i+1]))
	}
	var f any
	if err := json5.Unmarshal(p.b[start:p.i], &f); err != nil {
		return p.errorf("bad number %q", string(p.b[start:p.i]))
	}
	return nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
