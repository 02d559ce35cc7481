package chattemplate

import (
	"fmt"
	"strings"
	"unicode"
)

// Hugging Face renders chat templates with Python Jinja2 configured as
// Environment(trim_blocks=True, lstrip_blocks=True) and its own tojson
// filter. The Go engine (github.com/ardanlabs/jinja) has its own take on
// whitespace control that differs from Jinja2's in places (it looks past
// expression tags for the text to trim, and knows no "+" modifier), and a
// Go-flavoured tojson. preprocess therefore rewrites the source:
//
//   - whitespace control is done here, exactly as Jinja2's lexer does it:
//     line breaks become \n, one trailing newline is dropped, "-" markers
//     strip, lstrip_blocks and trim_blocks apply to block and comment tags,
//     "+" markers opt out; the markers are then removed, and any newline
//     run at the start or indentation at the end of a text is printed from
//     an expression, so the engine's own trimming finds nothing to do;
//   - comments are dropped and {% raw %} bodies become string expressions;
//   - `expr | tojson(args)` becomes `__mc_tojson(expr, args)`, a function
//     with Python json.dumps output (see tojson.go).
//
// python_test.go checks the result against outputs of Python Jinja2.

// tojsonFunc is the name the rewritten templates call.
const tojsonFunc = "__mc_tojson"

// piece is a part of the rewritten source: literal text or a tag.
type piece struct {
	text  string
	isTag bool
}

func preprocess(src string) (string, error) {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	src = strings.ReplaceAll(src, "\r", "\n")
	src = strings.TrimSuffix(src, "\n")
	var pieces []piece
	ws := wsState{lineStarting: true}
	for i := 0; i <= len(src); {
		open := nextTag(src, i)
		if open < 0 {
			open = len(src)
		}
		text := ws.leading(src[i:open])
		if open == len(src) {
			pieces = append(pieces, piece{text: text})
			break
		}
		kind := src[open+1]
		end, err := tagEnd(src, open, kind)
		if err != nil {
			return "", err
		}
		block := kind == '%' || kind == '#'
		body := src[open+2 : end-2]
		text, body = ws.before(text, body, block)
		pieces = append(pieces, piece{text: text})
		raw := kind == '%' && isRawTag(body)
		// A raw opening tag has no trim_blocks; its body is data.
		i, body = ws.after(src, end, body, block && !raw)
		switch {
		case kind == '#':
			// comments print nothing
		case raw:
			j, k, err := findEndraw(src, i)
			if err != nil {
				return "", err
			}
			content := ws.leading(src[i:j])
			content, endBody := ws.before(content, src[j+2:k-2], true)
			pieces = append(pieces, piece{text: "{{ " + quote(content) + " }}", isTag: true})
			i, _ = ws.after(src, k, endBody, true)
		default:
			if body, err = rewriteTojson(body); err != nil {
				return "", err
			}
			pieces = append(pieces, piece{text: src[open:open+2] + body + src[end-2:end], isTag: true})
		}
	}
	return render(pieces), nil
}

// wsState carries Jinja2's whitespace state from one tag to the text after
// it.
type wsState struct {
	lineStarting bool // the text after the last tag starts a line
	stripNext    bool // the last tag ended with "-"
}

// leading applies the previous tag's "-" to the text that follows it.
func (w *wsState) leading(text string) string {
	if w.stripNext {
		return strings.TrimLeftFunc(text, unicode.IsSpace)
	}
	return text
}

// before applies a tag's left side to the text before it ("-" strips,
// lstrip_blocks removes a line's indentation, "+" keeps it) and returns the
// text and the tag body without its left marker.
func (w *wsState) before(text, body string, block bool) (string, string) {
	switch {
	case strings.HasPrefix(body, "-"):
		return strings.TrimRightFunc(text, unicode.IsSpace), body[1:]
	case strings.HasPrefix(body, "+") && block:
		return text, body[1:]
	case block:
		lpos := strings.LastIndexByte(text, '\n') + 1
		if (lpos > 0 || w.lineStarting) && strings.TrimLeft(text[lpos:], " \t\f\v") == "" {
			return text[:lpos], body
		}
	}
	return text, body
}

// after applies a tag's right side ("-" strips what follows, trim_blocks
// eats one newline, "+" keeps it) and returns where the next text starts
// and the body without its right marker.
func (w *wsState) after(src string, end int, body string, trim bool) (int, string) {
	w.lineStarting, w.stripNext = false, false
	switch {
	case strings.HasSuffix(body, "-"):
		w.stripNext = true
		// Jinja2 counts a line start when the stripped run ends in \n.
		rest := strings.TrimLeftFunc(src[end:], unicode.IsSpace)
		w.lineStarting = strings.HasSuffix(src[end:len(src)-len(rest)], "\n")
		return end, body[:len(body)-1]
	case strings.HasSuffix(body, "+"):
		return end, body[:len(body)-1]
	case trim && end < len(src) && src[end] == '\n':
		w.lineStarting = true
		return end + 1, body
	}
	return end, body
}

// render joins the pieces, merging adjacent texts, and moves each text's
// leading newlines and trailing indentation into expressions so the engine's
// trim_blocks and lstrip_blocks leave the text as it is.
func render(pieces []piece) string {
	var out strings.Builder
	text := ""
	flush := func() {
		if text == "" {
			return
		}
		lead := len(text) - len(strings.TrimLeft(text, "\n"))
		if lead > 0 {
			out.WriteString("{{ " + quote(text[:lead]) + " }}")
			text = text[lead:]
		}
		body := strings.TrimRight(text, " \t")
		if body != text && (body == "" || strings.HasSuffix(body, "\n")) {
			out.WriteString(body)
			out.WriteString("{{ " + quote(text[len(body):]) + " }}")
		} else {
			out.WriteString(text)
		}
		text = ""
	}
	for _, p := range pieces {
		if !p.isTag {
			text += p.text
			continue
		}
		flush()
		out.WriteString(p.text)
	}
	flush()
	return out.String()
}

// quote writes s as a Jinja string literal.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('\'')
	for _, r := range s {
		switch r {
		case '\\':
			b.WriteString(`\\`)
		case '\'':
			b.WriteString(`\'`)
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// nextTag returns the index of the next "{{", "{%" or "{#" at or after i.
func nextTag(src string, i int) int {
	for {
		k := strings.IndexByte(src[i:], '{')
		if k < 0 || i+k+1 >= len(src) {
			return -1
		}
		k += i
		if c := src[k+1]; c == '{' || c == '%' || c == '#' {
			return k
		}
		i = k + 1
	}
}

// tagEnd returns the index just past the tag that opens at src[open:],
// skipping string literals inside expression and statement tags.
func tagEnd(src string, open int, kind byte) (int, error) {
	closer := map[byte]string{'{': "}}", '%': "%}", '#': "#}"}[kind]
	if kind == '#' {
		k := strings.Index(src[open+2:], closer)
		if k < 0 {
			return 0, fmt.Errorf("unclosed comment at offset %d", open)
		}
		return open + 2 + k + 2, nil
	}
	for i := open + 2; i < len(src); i++ {
		switch c := src[i]; c {
		case '\'', '"':
			j := i + 1
			for ; j < len(src) && src[j] != c; j++ {
				if src[j] == '\\' {
					j++
				}
			}
			if j >= len(src) {
				return 0, fmt.Errorf("unterminated string in tag at offset %d", open)
			}
			i = j
		default:
			if strings.HasPrefix(src[i:], closer) {
				return i + 2, nil
			}
		}
	}
	return 0, fmt.Errorf("unclosed tag at offset %d", open)
}

func isRawTag(body string) bool {
	return strings.TrimSpace(strings.Trim(body, "-+")) == "raw"
}

// findEndraw finds the {% endraw %} tag at or after i and returns its start
// and end.
func findEndraw(src string, i int) (start, end int, err error) {
	for j := i; ; {
		k := strings.Index(src[j:], "{%")
		if k < 0 {
			return 0, 0, fmt.Errorf("{%% raw %%} at offset %d has no {%% endraw %%}", i)
		}
		k += j
		e := strings.Index(src[k+2:], "%}")
		if e < 0 {
			return 0, 0, fmt.Errorf("unclosed tag at offset %d", k)
		}
		e += k + 4
		if strings.TrimSpace(strings.Trim(src[k+2:e-2], "-+")) == "endraw" {
			return k, e, nil
		}
		j = e
	}
}

// exprToken is a lexical token of a Jinja expression, for rewriteTojson.
type exprToken struct {
	kind       byte // 'n' name, 's' string, '0' number, 'o' operator, ' ' space
	start, end int
}

func lexExpr(s string) ([]exprToken, error) {
	var toks []exprToken
	for i := 0; i < len(s); {
		c := s[i]
		start := i
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r') {
				i++
			}
			toks = append(toks, exprToken{' ', start, i})
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			for i < len(s) && (s[i] == '_' || s[i] >= 'a' && s[i] <= 'z' || s[i] >= 'A' && s[i] <= 'Z' || s[i] >= '0' && s[i] <= '9') {
				i++
			}
			toks = append(toks, exprToken{'n', start, i})
		case c >= '0' && c <= '9':
			for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.' || s[i] == '_' || s[i] == 'e' || s[i] == 'E' ||
				(s[i] == '+' || s[i] == '-') && (s[i-1] == 'e' || s[i-1] == 'E')) {
				i++
			}
			toks = append(toks, exprToken{'0', start, i})
		case c == '\'' || c == '"':
			i++
			for i < len(s) && s[i] != c {
				if s[i] == '\\' {
					i++
				}
				i++
			}
			if i >= len(s) {
				return nil, fmt.Errorf("unterminated string in %q", s)
			}
			i++
			toks = append(toks, exprToken{'s', start, i})
		default:
			i++
			if i < len(s) {
				switch s[start : i+1] {
				case "==", "!=", "<=", ">=", "//", "**":
					i++
				}
			}
			toks = append(toks, exprToken{'o', start, i})
		}
	}
	return toks, nil
}

var jinjaKeywords = map[string]bool{"and": true, "or": true, "not": true, "in": true, "is": true, "if": true, "else": true, "for": true, "set": true, "elif": true}

// rewriteTojson turns every `operand | tojson` and `operand | tojson(args)`
// in a tag body into `__mc_tojson(operand[, args])`. The operand is what a
// Jinja filter applies to: a primary with its attribute, subscript and call
// trailers, and any filters already applied to it.
func rewriteTojson(body string) (string, error) {
	for guard := 0; guard < 1000 && strings.Contains(body, "tojson"); guard++ {
		toks, err := lexExpr(body)
		if err != nil {
			return "", err
		}
		text := func(t exprToken) string { return body[t.start:t.end] }
		prev := func(j int) int {
			for j >= 0 && toks[j].kind == ' ' {
				j--
			}
			return j
		}
		next := func(j int) int {
			for j < len(toks) && toks[j].kind == ' ' {
				j++
			}
			return j
		}
		bar := -1
		for k, t := range toks {
			if t.kind == 'o' && text(t) == "|" {
				if n := next(k + 1); n < len(toks) && toks[n].kind == 'n' && text(toks[n]) == "tojson" {
					bar = k
					break
				}
			}
		}
		if bar < 0 {
			return body, nil
		}
		start, err := operandStart(toks, text, prev, bar)
		if err != nil {
			return "", fmt.Errorf("tojson in %q: %w", body, err)
		}
		name := next(bar + 1)
		end, args := toks[name].end, ""
		if p := next(name + 1); p < len(toks) && text(toks[p]) == "(" {
			closeAt, err := matchBracket(toks, text, p, +1)
			if err != nil {
				return "", fmt.Errorf("tojson in %q: %w", body, err)
			}
			args = strings.TrimSpace(body[toks[p].end:toks[closeAt].start])
			end = toks[closeAt].end
		}
		operand := strings.TrimSpace(body[toks[start].start:toks[bar].start])
		call := tojsonFunc + "(" + operand
		if args != "" {
			call += ", " + args
		}
		body = body[:toks[start].start] + call + ")" + body[end:]
	}
	return body, nil
}

func operandStart(toks []exprToken, text func(exprToken) string, prev func(int) int, bar int) (int, error) {
	j := prev(bar - 1)
	for {
		if j < 0 {
			return 0, fmt.Errorf("no operand before | tojson")
		}
		t := toks[j]
		var start int
		switch {
		case t.kind == 'o' && (text(t) == ")" || text(t) == "]" || text(t) == "}"):
			m, err := matchBracket(toks, text, j, -1)
			if err != nil {
				return 0, err
			}
			p := prev(m - 1)
			trailer := text(t) != "}" && p >= 0 &&
				(toks[p].kind == 'n' && !jinjaKeywords[text(toks[p])] || toks[p].kind == 's' ||
					toks[p].kind == 'o' && (text(toks[p]) == ")" || text(toks[p]) == "]"))
			if trailer {
				j = p
				continue
			}
			start = m
		case t.kind == 'n' && !jinjaKeywords[text(t)], t.kind == 's', t.kind == '0':
			start = j
		default:
			return 0, fmt.Errorf("unexpected %q before | tojson", text(t))
		}
		p := prev(start - 1)
		switch {
		case p >= 0 && text(toks[p]) == ".":
			j = prev(p - 1)
		case p >= 0 && text(toks[p]) == "|" && toks[start].kind == 'n':
			j = prev(p - 1) // start is a filter: include what it filters
		default:
			return start, nil
		}
	}
}

// matchBracket returns the index of the bracket matching toks[at], searching
// forward (dir +1, from an opener) or backward (dir -1, from a closer).
func matchBracket(toks []exprToken, text func(exprToken) string, at, dir int) (int, error) {
	pairs := map[string]string{"(": ")", "[": "]", "{": "}", ")": "(", "]": "[", "}": "{"}
	self := text(toks[at])
	other := pairs[self]
	depth := 0
	for j := at; j >= 0 && j < len(toks); j += dir {
		if toks[j].kind != 'o' {
			continue
		}
		switch text(toks[j]) {
		case self:
			depth++
		case other:
			depth--
			if depth == 0 {
				return j, nil
			}
		}
	}
	return 0, fmt.Errorf("unbalanced %q", self)
}
