package edit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

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

// inlineStyle reports whether the document writes some non-empty objects on
// one line (`cost: { input: 0, output: 0 }`), so small new objects may be too.
func (d *JSON) inlineStyle() bool {
	var walk func(n *jnode) bool
	walk = func(n *jnode) bool {
		if n.kind == '{' && len(n.members) > 0 && !bytes.Contains(d.src[n.start:n.end], []byte("\n")) && n != d.root {
			return true
		}
		for _, m := range n.members {
			if walk(m.val) {
				return true
			}
		}
		for _, e := range n.elems {
			if walk(e.val) {
				return true
			}
		}
		return false
	}
	return walk(d.root)
}

func (d *JSON) inlineArrayStyle() bool {
	in, multi := 0, 0
	var walk func(n *jnode)
	walk = func(n *jnode) {
		if n.kind == '[' && len(n.elems) > 0 {
			scalars := true
			for _, e := range n.elems {
				scalars = scalars && e.val.kind != '{' && e.val.kind != '['
			}
			if scalars {
				if bytes.Contains(d.src[n.start:n.end], []byte("\n")) {
					multi++
				} else {
					in++
				}
			}
		}
		for _, m := range n.members {
			walk(m.val)
		}
		for _, e := range n.elems {
			walk(e.val)
		}
	}
	walk(d.root)
	return in >= multi
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

func isScalar(v any) bool {
	switch v.(type) {
	case Obj, map[string]any, []any, []string:
		return false
	}
	return true
}

// mostlyQuoted reports whether most object keys in the document are quoted.
func (d *JSON) mostlyQuoted() bool {
	q, u := 0, 0
	var walk func(n *jnode)
	walk = func(n *jnode) {
		for _, m := range n.members {
			if c := d.src[m.keyStart]; c == '"' || c == '\'' {
				q++
			} else {
				u++
			}
			walk(m.val)
		}
		for _, e := range n.elems {
			walk(e.val)
		}
	}
	walk(d.root)
	return q >= u
}

func (d *JSON) renderKey(key string, obj *jnode) string {
	quoted := d.quoted
	if !d.strict && obj != nil && len(obj.members) > 0 {
		q := 0
		for _, m := range obj.members {
			if c := d.src[m.keyStart]; c == '"' || c == '\'' {
				q++
			}
		}
		quoted = q*2 > len(obj.members)
	}
	if !quoted && isIdent(key) {
		return key
	}
	return jsonString(key)
}

// isIdent reports whether s can be an unquoted JSON5 key.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		switch {
		case r == '$' || r == '_' || (r < utf8.RuneSelf && ('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z')):
		case i > 0 && '0' <= r && r <= '9':
		default:
			return false
		}
	}
	switch s {
	case "true", "false", "null", "Infinity", "NaN":
		return false
	}
	return true
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	// json.Marshal escapes <, > and & for HTML; configs read better without.
	out := strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(b))
	return out
}

// render formats v as JSON text whose continuation lines start with ind.
func (d *JSON) render(v any, ind string) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case string:
		return jsonString(v)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case []string:
		return d.render(plainList(v), ind)
	case []any:
		if len(v) == 0 {
			return "[]"
		}
		allScalar := true
		for _, x := range v {
			allScalar = allScalar && isScalar(x)
		}
		if allScalar && d.inlineArrays {
			parts := make([]string, len(v))
			for i, x := range v {
				parts[i] = d.render(x, ind)
			}
			return "[" + strings.Join(parts, ", ") + "]"
		}
		var b strings.Builder
		b.WriteString("[")
		inner := ind + d.unit
		for i, x := range v {
			b.WriteString(d.nl() + inner + d.render(x, inner))
			if i < len(v)-1 || (!d.strict && d.anyTrailingComma(d.root)) {
				b.WriteString(",")
			}
		}
		b.WriteString(d.nl() + ind + "]")
		return b.String()
	case map[string]any:
		return d.render(sortedObj(v), ind)
	case Obj:
		if len(v) == 0 {
			return "{}"
		}
		if d.inline && len(v) <= 4 {
			small := true
			for _, kv := range v {
				small = small && isScalar(kv.Value)
			}
			if s := d.renderInline(v); small && len(s) <= 60 {
				return s
			}
		}
		var b strings.Builder
		b.WriteString("{")
		inner := ind + d.unit
		trailing := !d.strict && d.anyTrailingComma(d.root)
		for i, kv := range v {
			k := jsonString(kv.Key)
			if !d.quoted && isIdent(kv.Key) {
				k = kv.Key
			}
			b.WriteString(d.nl() + inner + k + ": " + d.render(kv.Value, inner))
			if i < len(v)-1 || trailing {
				b.WriteString(",")
			}
		}
		b.WriteString(d.nl() + ind + "}")
		return b.String()
	case RawJSON:
		return string(v)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return "null"
		}
		return string(b)
	}
}

// renderInline formats v on one line: { k: v, … } and [a, b].
func (d *JSON) renderInline(v any) string {
	switch v := v.(type) {
	case []string:
		return d.renderInline(plainList(v))
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = d.renderInline(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		return d.renderInline(sortedObj(v))
	case Obj:
		if len(v) == 0 {
			return "{}"
		}
		parts := make([]string, len(v))
		for i, kv := range v {
			k := jsonString(kv.Key)
			if !d.quoted && isIdent(kv.Key) {
				k = kv.Key
			}
			parts[i] = k + ": " + d.renderInline(kv.Value)
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	default:
		return d.render(v, "")
	}
}

// RawJSON is inserted as is (it must be a valid value).
type RawJSON string

func plainList(v []string) []any {
	out := make([]any, len(v))
	for i, s := range v {
		out[i] = s
	}
	return out
}

func sortedObj(m map[string]any) Obj {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	o := make(Obj, 0, len(m))
	for _, k := range keys {
		o = append(o, KV{Key: k, Value: m[k]})
	}
	return o
}

// detectUnit guesses the indentation unit from the first indented line.
func detectUnit(src []byte) string {
	for _, line := range bytes.Split(src, []byte("\n")) {
		t := bytes.TrimLeft(line, " \t")
		if len(t) == 0 || len(t) == len(line) {
			continue
		}
		ws := line[:len(line)-len(t)]
		if ws[0] == '\t' {
			return "\t"
		}
		if n := len(ws); n >= 1 && n <= 8 {
			return strings.Repeat(" ", n)
		}
	}
	return "  "
}

// ---- parser ----

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
				return "", p.errorf("bad string %s: %v", clip(string(raw), 40), err)
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
