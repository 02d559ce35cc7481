package edit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/titanous/json5"
)

// JSON edits JSON, JSONC (comments, trailing commas) and JSON5 (also
// unquoted keys, single quotes, hex numbers, …) text. hujson cannot read
// JSON5's unquoted keys, which OpenClaw's own docs use, so this is a small
// concrete-syntax parser: it knows the byte range of every key and value and
// edits by splicing, so everything else stays byte-for-byte.
//
// A file that was strict JSON stays strict JSON (quoted keys, no comments or
// trailing commas added).
type JSON struct {
	src          []byte
	root         *jnode
	strict       bool // the original was strict JSON: keep it that way
	want         any  // the original data plus every edit, for Verify
	crlf         bool
	unit         string
	quoted       bool // render new keys quoted
	inline       bool // the document writes small objects on one line
	inlineArrays bool // the document writes lists of scalars on one line
}

type jnode struct {
	kind    byte // '{' '[' '"' (string) '0' (number) 'l' (literal: true false null Infinity NaN)
	start   int
	end     int // exclusive
	members []*jmember
	elems   []*jelem
}

type jmember struct {
	keyStart, keyEnd int
	key              string
	val              *jnode
	comma            int // offset of the comma after the value, -1 if none
}

type jelem struct {
	val   *jnode
	comma int
}

// ParseJSON parses JSON/JSONC/JSON5 text.
func ParseJSON(src []byte) (*JSON, error) {
	p := &jparser{b: src}
	p.skip()
	root, err := p.value(0)
	if err != nil {
		return nil, err
	}
	p.skip()
	if p.err != nil {
		return nil, p.err
	}
	if p.i != len(src) {
		return nil, p.errorf("unexpected %q after the top-level value", p.peekRune())
	}
	var want any
	if err := json5.Unmarshal(src, &want); err != nil {
		return nil, fmt.Errorf("json5: %w", err)
	}
	d := &JSON{src: src, root: root, strict: json.Valid(src), want: want}
	d.crlf = bytes.Contains(src, []byte("\r\n"))
	d.unit = detectUnit(src)
	d.quoted = d.strict || d.mostlyQuoted()
	d.inline = d.inlineStyle()
	d.inlineArrays = d.inlineArrayStyle()
	return d, nil
}

// Bytes is the current text.
func (d *JSON) Bytes() []byte { return d.src }

// Strict reports whether the text is strict JSON.
func (d *JSON) Strict() bool { return d.strict }

// Data is the decoded current text.
func (d *JSON) Data() any { return deepCopy(d.want) }

// Get returns the decoded value at p.
func (d *JSON) Get(p Path) (any, bool) { return treeGet(d.want, p) }

// Verify re-parses the text and checks that it holds exactly the original
// data plus the edits, and that strict JSON is still strict JSON.
func (d *JSON) Verify() error {
	if d.strict && !json.Valid(d.src) {
		return errors.New("json edit verification failed: the result is no longer strict JSON")
	}
	var got any
	if err := json5.Unmarshal(d.src, &got); err != nil {
		return fmt.Errorf("json edit verification failed: %w", err)
	}
	if Canon(got) != Canon(d.want) {
		return mismatch("json", got, d.want)
	}
	if _, err := (&jparser{b: d.src}).parseAll(); err != nil {
		return fmt.Errorf("json edit verification failed: %w", err)
	}
	return nil
}

// reparse refreshes the syntax tree after a splice.
func (d *JSON) reparse() error {
	n, err := (&jparser{b: d.src}).parseAll()
	if err != nil {
		return fmt.Errorf("internal edit error: %w", err)
	}
	d.root = n
	return nil
}

// find walks p in the syntax tree; it returns the node, or the deepest
// existing node and how many segments were consumed.
func (d *JSON) find(p Path) (n *jnode, depth int, err error) {
	n = d.root
	for i, s := range p {
		switch s := s.(type) {
		case string:
			if n.kind != '{' {
				return n, i, fmt.Errorf("%s is not an object", p[:i])
			}
			m := n.member(s)
			if m == nil {
				return n, i, nil
			}
			n = m.val
		case int:
			if n.kind != '[' {
				return n, i, fmt.Errorf("%s is not an array", p[:i])
			}
			if s < 0 || s >= len(n.elems) {
				return n, i, fmt.Errorf("%s has no element %d", p[:i], s)
			}
			n = n.elems[s].val
		default:
			return n, i, fmt.Errorf("bad path segment %v", s)
		}
	}
	return n, len(p), nil
}

func (n *jnode) member(key string) *jmember {
	var found *jmember
	for _, m := range n.members {
		if m.key == key {
			found = m // the last duplicate wins, as in JSON.parse
		}
	}
	return found
}

// Raw returns the exact text of the value at p.
func (d *JSON) Raw(p Path) (string, bool) {
	n, depth, err := d.find(p)
	if err != nil || depth < len(p) {
		return "", false
	}
	return string(d.src[n.start:n.end]), true
}

// GetOrdered returns the value at p with objects as Obj in document order.
func (d *JSON) GetOrdered(p Path) (any, bool) {
	n, depth, err := d.find(p)
	if err != nil || depth < len(p) {
		return nil, false
	}
	return d.ordered(n), true
}

func (d *JSON) ordered(n *jnode) any {
	switch n.kind {
	case '{':
		o := Obj{}
		for _, m := range n.members {
			replaced := false
			for i := range o {
				if o[i].Key == m.key {
					o[i].Value, replaced = d.ordered(m.val), true
				}
			}
			if !replaced {
				o = append(o, KV{Key: m.key, Value: d.ordered(m.val)})
			}
		}
		return o
	case '[':
		a := make([]any, len(n.elems))
		for i, e := range n.elems {
			a[i] = d.ordered(e.val)
		}
		return a
	}
	var v any
	_ = json5.Unmarshal(d.src[n.start:n.end], &v)
	return v
}

// Set sets the value at p, creating missing objects on the way.
func (d *JSON) Set(p Path, v any) error {
	if err := firstErr(checkValue(p), checkValue(v)); err != nil {
		return err
	}
	if len(p) == 0 {
		return errors.New("cannot replace the whole document")
	}
	n, depth, err := d.find(p)
	if err != nil {
		return err
	}
	if depth == len(p) {
		// Replace an existing value.
		ind := d.indentAt(n.start)
		text := d.render(v, ind)
		if cur, ok := treeGet(d.want, p); ok && Canon(cur) == Canon(plain(v)) {
			return nil // same value: keep the file's own spelling
		}
		if err := d.splice(n.start, n.end, text); err != nil {
			return err
		}
	} else {
		if _, ok := p[depth].(string); !ok {
			return fmt.Errorf("%s has no element %v", p[:depth], p[depth])
		}
		// n is the deepest existing object; build the rest of the path.
		val := v
		for i := len(p) - 1; i > depth; i-- {
			k, ok := p[i].(string)
			if !ok {
				return fmt.Errorf("cannot create array element %s", p[:i+1])
			}
			val = Obj{{Key: k, Value: val}}
		}
		if err := d.insertMember(n, p[depth].(string), val); err != nil {
			return err
		}
	}
	w, err := treeSet(d.want, p, v)
	if err != nil {
		return err
	}
	d.want = w
	return d.reparse()
}

// Append appends v to the array at p; a missing array is created.
func (d *JSON) Append(p Path, v any) error {
	if err := firstErr(checkValue(p), checkValue(v)); err != nil {
		return err
	}
	n, depth, err := d.find(p)
	if err != nil {
		return err
	}
	if depth < len(p) {
		return d.Set(p, []any{v})
	}
	if n.kind != '[' {
		return fmt.Errorf("%s is not an array", p)
	}
	if err := d.insertElem(n, v); err != nil {
		return err
	}
	w, err := treeAppend(d.want, p, v)
	if err != nil {
		return err
	}
	d.want = w
	return d.reparse()
}
