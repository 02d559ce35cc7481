package edit

import (
	"bytes"
	"errors"
	"strings"
)

// Splicing new text into a JSON document: lines, indentation, commas, and
// where a new member or element goes.

// splice replaces src[from:to] with text.
func (d *JSON) splice(from, to int, text string) error {
	var b bytes.Buffer
	b.Grow(len(d.src) + len(text))
	b.Write(d.src[:from])
	b.WriteString(text)
	b.Write(d.src[to:])
	d.src = b.Bytes()
	return nil
}

type splice struct {
	at, to int
	text   string
}

// multi applies several splices (positions refer to the current text).
func (d *JSON) multi(sp ...splice) {
	// apply from the end so offsets stay valid
	for i := 0; i < len(sp); i++ {
		for j := i + 1; j < len(sp); j++ {
			if sp[j].at > sp[i].at {
				sp[i], sp[j] = sp[j], sp[i]
			}
		}
	}
	for _, s := range sp {
		_ = d.splice(s.at, s.to, s.text)
	}
}

func (d *JSON) nl() string {
	if d.crlf {
		return "\r\n"
	}
	return "\n"
}

// lineStart returns the offset of the start of the line holding off.
func lineStart(b []byte, off int) int {
	i := bytes.LastIndexByte(b[:off], '\n')
	return i + 1
}

// indentAt is the leading whitespace of the line holding off.
func (d *JSON) indentAt(off int) string {
	ls := lineStart(d.src, off)
	i := ls
	for i < len(d.src) && (d.src[i] == ' ' || d.src[i] == '\t') {
		i++
	}
	return string(d.src[ls:i])
}

// firstOnLine reports whether off is the first non-blank byte of its line.
func (d *JSON) firstOnLine(off int) bool {
	return strings.TrimLeft(string(d.src[lineStart(d.src, off):off]), " \t") == ""
}

// lineEndAfter scans from off over blanks, an optional comma and a trailing
// comment; it returns the offset of the line break that ends the line (or -1
// when something else follows on the same line) and whether a comma was seen.
func (d *JSON) lineEndAfter(off int) (int, bool) {
	b := d.src
	i := off
	comma := false
	for i < len(b) {
		switch {
		case b[i] == ' ' || b[i] == '\t':
			i++
		case b[i] == ',' && !comma:
			comma = true
			i++
		case b[i] == '\r' && i+1 < len(b) && b[i+1] == '\n':
			return i, comma
		case b[i] == '\n':
			return i, comma
		case bytes.HasPrefix(b[i:], []byte("//")):
			for i < len(b) && b[i] != '\n' {
				i++
			}
			if i > 0 && b[i-1] == '\r' {
				return i - 1, comma
			}
			return i, comma
		case bytes.HasPrefix(b[i:], []byte("/*")):
			end := bytes.Index(b[i+2:], []byte("*/"))
			if end < 0 || bytes.IndexByte(b[i:i+2+end], '\n') >= 0 {
				return -1, comma
			}
			i += end + 4
		default:
			return -1, comma
		}
	}
	return len(b), comma
}

func (d *JSON) trailingCommas(n *jnode) bool {
	if d.strict {
		return false
	}
	if len(n.members) > 0 {
		return n.members[len(n.members)-1].comma >= 0
	}
	if len(n.elems) > 0 {
		return n.elems[len(n.elems)-1].comma >= 0
	}
	// empty: follow the document (any multi-line container with a trailing comma)
	return bytes.Contains(d.src, []byte(",\n")) && d.anyTrailingComma(d.root)
}

func (d *JSON) anyTrailingComma(n *jnode) bool {
	switch n.kind {
	case '{':
		if len(n.members) > 0 && n.members[len(n.members)-1].comma >= 0 {
			return true
		}
		for _, m := range n.members {
			if d.anyTrailingComma(m.val) {
				return true
			}
		}
	case '[':
		if len(n.elems) > 0 && n.elems[len(n.elems)-1].comma >= 0 {
			return true
		}
		for _, e := range n.elems {
			if d.anyTrailingComma(e.val) {
				return true
			}
		}
	}
	return false
}

// multiLineAt reports whether a container's last child (starting at
// childStart, value ending at valEnd, comma at comma or -1) sits on its own
// line, so a new child goes on a new line after it.
func (d *JSON) multiLineAt(childStart, valEnd, comma int) bool {
	from := valEnd
	if comma >= 0 {
		from = comma + 1
	}
	eol, _ := d.lineEndAfter(from)
	return d.firstOnLine(childStart) && eol >= 0
}

// insertAfterLast inserts item (already rendered, without separators) after
// the last child of a container whose last child value ends at valEnd with a
// comma at comma (-1 if none).
func (d *JSON) insertAfterLast(valEnd, comma int, childStart int, item string, trailing bool) {
	from := valEnd
	if comma >= 0 {
		from = comma + 1
	}
	if d.multiLineAt(childStart, valEnd, comma) {
		eol, _ := d.lineEndAfter(from)
		ind := d.indentAt(childStart)
		text := d.nl() + ind + item
		if trailing {
			text += ","
		}
		if comma >= 0 {
			d.multi(splice{at: eol, to: eol, text: text})
		} else {
			d.multi(splice{at: eol, to: eol, text: text}, splice{at: valEnd, to: valEnd, text: ","})
		}
		return
	}
	// inline container: `{ a: 1 }` → `{ a: 1, k: v }`
	if comma >= 0 {
		d.multi(splice{at: comma + 1, to: comma + 1, text: " " + item + ","})
		return
	}
	d.multi(splice{at: valEnd, to: valEnd, text: ", " + item})
}

// insertIntoEmpty fills `{}`/`[]` (possibly holding blanks or comments).
func (d *JSON) insertIntoEmpty(n *jnode, item string, trailing bool) {
	open := n.start
	inner := string(d.src[open+1 : n.end-1])
	parent := d.indentAt(open)
	ind := parent + d.unit
	if trailing {
		item += ","
	}
	if strings.TrimSpace(inner) == "" {
		d.multi(splice{at: open + 1, to: n.end - 1, text: d.nl() + ind + item + d.nl() + parent})
		return
	}
	d.multi(splice{at: open + 1, to: open + 1, text: d.nl() + ind + item})
}

func (d *JSON) insertMember(obj *jnode, key string, v any) error {
	if obj.kind != '{' {
		return errors.New("not an object")
	}
	var ind string
	if len(obj.members) > 0 && d.firstOnLine(obj.members[len(obj.members)-1].keyStart) {
		ind = d.indentAt(obj.members[len(obj.members)-1].keyStart)
	} else {
		ind = d.indentAt(obj.start) + d.unit
	}
	trailing := d.trailingCommas(obj)
	var item string
	if len(obj.members) > 0 {
		last := obj.members[len(obj.members)-1]
		if d.multiLineAt(last.keyStart, last.val.end, last.comma) {
			item = d.renderKey(key, obj) + ": " + d.render(v, ind)
		} else {
			item = d.renderKey(key, obj) + ": " + d.renderInline(v)
		}
	} else {
		item = d.renderKey(key, obj) + ": " + d.render(v, ind)
	}
	if len(obj.members) == 0 {
		d.insertIntoEmpty(obj, item, trailing)
		return nil
	}
	last := obj.members[len(obj.members)-1]
	d.insertAfterLast(last.val.end, last.comma, last.keyStart, item, trailing)
	return nil
}

func (d *JSON) insertElem(arr *jnode, v any) error {
	var ind string
	if len(arr.elems) > 0 && d.firstOnLine(arr.elems[len(arr.elems)-1].val.start) {
		ind = d.indentAt(arr.elems[len(arr.elems)-1].val.start)
	} else {
		ind = d.indentAt(arr.start) + d.unit
	}
	trailing := d.trailingCommas(arr)
	if len(arr.elems) == 0 {
		// a short scalar list stays on one line: ["a"]
		if isScalar(v) {
			d.multi(splice{at: arr.start + 1, to: arr.end - 1, text: d.render(v, "")})
			return nil
		}
		d.insertIntoEmpty(arr, d.render(v, d.indentAt(arr.start)+d.unit), trailing)
		return nil
	}
	last := arr.elems[len(arr.elems)-1]
	item := d.renderInline(v)
	if d.multiLineAt(last.val.start, last.val.end, last.comma) {
		item = d.render(v, ind)
	}
	d.insertAfterLast(last.val.end, last.comma, last.val.start, item, trailing)
	return nil
}
