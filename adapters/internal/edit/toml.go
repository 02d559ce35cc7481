package edit

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
)

// TOML edits TOML text. go-toml's unstable parser gives the byte range of
// every key and value; edits replace a value in place or insert whole lines
// next to their table, so comments and layout stay as they were.
type TOML struct {
	src  []byte
	want any
	crlf bool

	sections []*tsection
}

type tsection struct {
	path       []string
	array      bool // [[path]]
	header     bool // false for the root section
	lineStart  int  // start of the header line
	headerEnd  int  // end of the header line (after its newline)
	kvs        []*tkv
	contentEnd int // end of the last key line, or headerEnd
}

type tkv struct {
	key        []string // dotted parts
	start      int      // first byte of the key
	valStart   int
	valEnd     int
	lineEnd    int   // after the newline that ends the expression
	elemEnds   []int // for arrays: end offset of each scalar element (-1 if not scalar)
	isArray    bool  // value is an array
	isInline   bool  // value is an inline table
	valueKinds []unstable.Kind
}

// ParseTOML parses TOML text.
func ParseTOML(src []byte) (*TOML, error) {
	var want map[string]any
	if err := toml.Unmarshal(src, &want); err != nil {
		return nil, fmt.Errorf("toml: %w", err)
	}
	if want == nil {
		want = map[string]any{}
	}
	d := &TOML{src: src, want: normTOML(want), crlf: bytes.Contains(src, []byte("\r\n"))}
	if err := d.index(); err != nil {
		return nil, err
	}
	return d, nil
}

// normTOML turns decoded TOML into the generic tree (map[string]any, []any).
func normTOML(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			v[k] = normTOML(x)
		}
		return v
	case []any:
		for i, x := range v {
			v[i] = normTOML(x)
		}
		return v
	case []map[string]any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = normTOML(x)
		}
		return out
	default:
		return v
	}
}

// Bytes is the current text.
func (d *TOML) Bytes() []byte { return d.src }

// Data is the decoded current text.
func (d *TOML) Data() any { return deepCopy(d.want) }

// Get returns the decoded value at p.
func (d *TOML) Get(p Path) (any, bool) { return treeGet(d.want, p) }

// Verify re-parses the text and checks it holds the original data plus the edits.
func (d *TOML) Verify() error {
	var got map[string]any
	if err := toml.Unmarshal(d.src, &got); err != nil {
		return fmt.Errorf("toml edit verification failed: %w", err)
	}
	if got == nil {
		got = map[string]any{}
	}
	g := normTOML(got)
	if Canon(g) != Canon(d.want) {
		return mismatch("toml", g, d.want)
	}
	return nil
}

func (d *TOML) nl() string {
	if d.crlf {
		return "\r\n"
	}
	return "\n"
}

// index builds the section list from the parser's expressions.
func (d *TOML) index() error {
	p := unstable.Parser{}
	p.Reset(d.src)
	root := &tsection{}
	d.sections = []*tsection{root}
	cur := root
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			it := e.Key()
			var parts []string
			first, last := -1, -1
			for it.Next() {
				k := it.Node()
				parts = append(parts, string(k.Data))
				if first < 0 {
					first = int(k.Raw.Offset)
				}
				last = int(k.Raw.Offset + k.Raw.Length)
			}
			start := first
			for start > 0 && (d.src[start-1] == ' ' || d.src[start-1] == '\t' || d.src[start-1] == '[') {
				start--
			}
			close := bytes.IndexByte(d.src[last:], ']')
			if close < 0 {
				return errors.New("toml: cannot find the end of a table header")
			}
			end := last + close + 1
			if e.Kind == unstable.ArrayTable {
				end++
			}
			s := &tsection{path: parts, array: e.Kind == unstable.ArrayTable, header: true,
				lineStart: lineStart(d.src, start)}
			s.headerEnd = d.lineEnd(end)
			s.contentEnd = s.headerEnd
			d.sections = append(d.sections, s)
			cur = s
		case unstable.KeyValue:
			kv := &tkv{start: int(e.Raw.Offset)}
			it := e.Key()
			lastKeyEnd := 0
			for it.Next() {
				k := it.Node()
				kv.key = append(kv.key, string(k.Data))
				lastKeyEnd = int(k.Raw.Offset + k.Raw.Length)
			}
			i := lastKeyEnd
			for i < len(d.src) && (d.src[i] == ' ' || d.src[i] == '\t' || d.src[i] == '"' || d.src[i] == '\'') && d.src[i] != '=' {
				i++
			}
			if i >= len(d.src) || d.src[i] != '=' {
				// quoted keys: Raw may stop before the closing quote
				eq := bytes.IndexByte(d.src[lastKeyEnd:], '=')
				if eq < 0 {
					return errors.New("toml: cannot find '=' after a key")
				}
				i = lastKeyEnd + eq
			}
			i++
			for i < len(d.src) && (d.src[i] == ' ' || d.src[i] == '\t') {
				i++
			}
			kv.valStart = i
			kv.valEnd = int(e.Raw.Offset + e.Raw.Length)
			kv.lineEnd = d.lineEnd(kv.valEnd)
			v := e.Value()
			switch v.Kind {
			case unstable.Array:
				kv.isArray = true
				ch := v.Children()
				for ch.Next() {
					c := ch.Node()
					if c.Kind == unstable.Comment {
						continue
					}
					kv.valueKinds = append(kv.valueKinds, c.Kind)
					if c.Kind == unstable.Array || c.Kind == unstable.InlineTable || c.Raw.Length == 0 {
						kv.elemEnds = append(kv.elemEnds, -1)
					} else {
						kv.elemEnds = append(kv.elemEnds, int(c.Raw.Offset+c.Raw.Length))
					}
				}
			case unstable.InlineTable:
				kv.isInline = true
			}
			cur.kvs = append(cur.kvs, kv)
			cur.contentEnd = kv.lineEnd
		}
	}
	if err := p.Error(); err != nil {
		return fmt.Errorf("toml: %w", err)
	}
	return nil
}

// lineEnd returns the offset after the line break that ends the line at
// off (skipping blanks and a comment), or len(src).
func (d *TOML) lineEnd(off int) int {
	i := bytes.IndexByte(d.src[off:], '\n')
	if i < 0 {
		return len(d.src)
	}
	return off + i + 1
}

func (d *TOML) splice(from, to int, text string) error {
	var b bytes.Buffer
	b.Write(d.src[:from])
	b.WriteString(text)
	b.Write(d.src[to:])
	d.src = b.Bytes()
	return d.index()
}

func (d *TOML) section(path []string, array bool) *tsection {
	if len(path) == 0 {
		return d.sections[0]
	}
	var found *tsection
	for _, s := range d.sections[1:] {
		if s.array == array && slices.Equal(s.path, path) {
			found = s
		}
	}
	return found
}

func (s *tsection) kv(key []string) *tkv {
	for _, kv := range s.kvs {
		if slices.Equal(kv.key, key) {
			return kv
		}
	}
	return nil
}

// conflict reports a definition of path that this editor will not touch:
// dotted keys or inline tables that define it or an ancestor, or an array of
// tables on the way.
func (d *TOML) conflict(path []string) error {
	for _, s := range d.sections {
		for _, kv := range s.kvs {
			full := append(slices.Clone(s.path), kv.key...)
			// an inline value (or a plain key) at path or at one of its ancestors
			inlineAncestor := hasPrefix(path, full)
			// dotted keys that define a table on path (a.b.c = 1 defines a.b)
			table := path[:len(path)-1]
			dotted := len(kv.key) > 1 && hasPrefix(full, table) && len(s.path) < len(table)
			if inlineAncestor || dotted {
				return fmt.Errorf("%s is defined with dotted keys or an inline table (%s = …); change it by hand",
					strings.Join(path, "."), strings.Join(full, "."))
			}
		}
		if len(s.path) >= len(path) && hasPrefix(s.path, path) {
			return fmt.Errorf("%s is a table ([%s]); change it by hand", strings.Join(path, "."), strings.Join(s.path, "."))
		}
		if s.array && hasPrefix(path, s.path) {
			return fmt.Errorf("%s is inside an array of tables ([[%s]]); change it by hand", strings.Join(path, "."), strings.Join(s.path, "."))
		}
	}
	return nil
}

func hasPrefix(s, prefix []string) bool {
	return len(s) >= len(prefix) && slices.Equal(s[:len(prefix)], prefix)
}

// Set sets key in [table] (the root table when table is empty), creating the
// table after its closest relative when it does not exist.
func (d *TOML) Set(table []string, key string, v any) error {
	if err := firstErr(checkValue(plainList(table)), checkValue(key), checkValue(v)); err != nil {
		return err
	}
	full := append(slices.Clone(table), key)
	s := d.section(table, false)
	if s != nil {
		if kv := s.kv([]string{key}); kv != nil {
			text := d.render(v)
			cur, _ := treeGet(d.want, pathOf(full))
			if Canon(cur) != Canon(plain(v)) && string(d.src[kv.valStart:kv.valEnd]) != text {
				if err := d.splice(kv.valStart, kv.valEnd, text); err != nil {
					return err
				}
			}
			return d.setWant(full, v)
		}
		if err := d.conflict(full); err != nil {
			return err
		}
		line := renderKey(key) + " = " + d.render(v) + d.nl()
		at := s.contentEnd
		if !s.header && len(s.kvs) == 0 && len(d.sections) > 1 {
			at = d.sections[1].lineStart
			line += d.nl()
		}
		if err := d.splice(at, at, d.ensureNL(at)+line); err != nil {
			return err
		}
		return d.setWant(full, v)
	}
	if err := d.conflict(full); err != nil {
		return err
	}
	block := "[" + renderKeyPath(table) + "]" + d.nl() + renderKey(key) + " = " + d.render(v) + d.nl()
	at := d.placeFor(table)
	if err := d.splice(at, at, d.ensureNL(at)+d.sep(at)+block); err != nil {
		return err
	}
	return d.setWant(full, v)
}

// ensureNL returns a line break when the text before at does not end a line.
func (d *TOML) ensureNL(at int) string {
	if at > 0 && d.src[at-1] != '\n' {
		return d.nl()
	}
	return ""
}

// sep is a blank line before a new table unless one is there already.
func (d *TOML) sep(at int) string {
	if at == 0 {
		return ""
	}
	if at >= 2 && d.src[at-1] == '\n' && (d.src[at-2] == '\n' || (d.src[at-2] == '\r' && at >= 3 && d.src[at-3] == '\n')) {
		return ""
	}
	return d.nl()
}

// placeFor finds where a new [table] goes: after the last section that
// shares the longest key prefix with it (with that section's sub-tables),
// else at the end of the file.
func (d *TOML) placeFor(table []string) int {
	best, bestLen := -1, 0
	for i, s := range d.sections[1:] {
		n := 0
		for n < len(s.path) && n < len(table) && s.path[n] == table[n] {
			n++
		}
		if n >= bestLen && n > 0 {
			best, bestLen = i+1, n
		}
	}
	if best < 0 {
		return len(d.src)
	}
	return d.sections[best].contentEnd
}

// Remove deletes key from [table] (its whole line).
func (d *TOML) Remove(table []string, key string) error {
	s := d.section(table, false)
	if s == nil {
		return nil
	}
	kv := s.kv([]string{key})
	if kv == nil {
		return nil
	}
	ls := lineStart(d.src, kv.start)
	if strings.TrimSpace(string(d.src[ls:kv.start])) != "" {
		return fmt.Errorf("%s.%s does not start its line; change it by hand", strings.Join(table, "."), key)
	}
	if err := d.splice(ls, kv.lineEnd, ""); err != nil {
		return err
	}
	d.want = treeDelete(d.want, pathOf(append(slices.Clone(table), key)))
	return nil
}

// AppendToArray appends v to the inline array table.key (created when missing).
func (d *TOML) AppendToArray(table []string, key string, v any) error {
	if err := firstErr(checkValue(plainList(table)), checkValue(key), checkValue(v)); err != nil {
		return err
	}
	s := d.section(table, false)
	var kv *tkv
	if s != nil {
		kv = s.kv([]string{key})
	}
	if kv == nil {
		return d.Set(table, key, []any{v})
	}
	if !kv.isArray {
		return fmt.Errorf("%s.%s is not an array", strings.Join(table, "."), key)
	}
	if err := d.appendInline(kv, d.render(v)); err != nil {
		return fmt.Errorf("%s.%s: %w", strings.Join(table, "."), key, err)
	}
	cur, _ := treeGet(d.want, pathOf(append(slices.Clone(table), key)))
	arr, _ := cur.([]any)
	return d.setWant(append(slices.Clone(table), key), append(slices.Clone(arr), plain(v)))
}

// appendInline adds an element to the inline array value of kv.
func (d *TOML) appendInline(kv *tkv, elem string) error {
	if len(kv.elemEnds) == 0 {
		inner := strings.TrimSpace(string(d.src[kv.valStart+1 : kv.valEnd-1]))
		if inner != "" {
			return errors.New("array holds only comments; change it by hand")
		}
		return d.splice(kv.valStart, kv.valEnd, "["+elem+"]")
	}
	last := kv.elemEnds[len(kv.elemEnds)-1]
	if last < 0 {
		// the last element is a table or array: find its end by scanning back from ']'
		i := kv.valEnd - 2
		for i > kv.valStart && (d.src[i] == ' ' || d.src[i] == '\t' || d.src[i] == '\n' || d.src[i] == '\r' || d.src[i] == ',') {
			i--
		}
		if d.src[i] != '}' && d.src[i] != ']' {
			return errors.New("cannot find the last element; change it by hand")
		}
		last = i + 1
	}
	return d.splice(last, last, ", "+elem)
}

// AppendArrayTable adds an element to the array of tables at path:
// [[path]] blocks, or the inline array `key = [...]` when that is how the
// file defines it.
func (d *TOML) AppendArrayTable(path []string, o Obj) error {
	if err := firstErr(checkValue(plainList(path)), checkValue(o)); err != nil {
		return err
	}
	if len(path) == 0 {
		return errors.New("empty path")
	}
	parent, key := path[:len(path)-1], path[len(path)-1]
	if s := d.section(parent, false); s != nil {
		if kv := s.kv([]string{key}); kv != nil {
			if !kv.isArray {
				return fmt.Errorf("%s is not an array", strings.Join(path, "."))
			}
			if err := d.appendInline(kv, d.render(o)); err != nil {
				return fmt.Errorf("%s: %w", strings.Join(path, "."), err)
			}
			return d.appendWant(path, o)
		}
	}
	for _, s := range d.sections {
		for _, kv := range s.kvs {
			full := append(slices.Clone(s.path), kv.key...)
			if hasPrefix(path, full) || (hasPrefix(full, path) && !(len(full) > len(path))) {
				return fmt.Errorf("%s is defined inline; change it by hand", strings.Join(path, "."))
			}
		}
	}
	var b strings.Builder
	b.WriteString("[[" + renderKeyPath(path) + "]]" + d.nl())
	for _, kv := range o {
		b.WriteString(renderKey(kv.Key) + " = " + d.render(kv.Value) + d.nl())
	}
	at := -1
	for i, s := range d.sections {
		if s.array && slices.Equal(s.path, path) {
			at = s.contentEnd
			for _, t := range d.sections[i+1:] {
				if !hasPrefix(t.path, path) || (t.array && slices.Equal(t.path, path)) {
					break
				}
				at = t.contentEnd
			}
		}
	}
	if at < 0 {
		at = d.placeFor(path)
	}
	if err := d.splice(at, at, d.ensureNL(at)+d.sep(at)+b.String()); err != nil {
		return err
	}
	return d.appendWant(path, o)
}

func (d *TOML) appendWant(path []string, o Obj) error {
	w, err := treeAppend(d.want, pathOf(path), o)
	if err != nil {
		return err
	}
	d.want = w
	return nil
}

func (d *TOML) setWant(path []string, v any) error {
	w, err := treeSet(d.want, pathOf(path), v)
	if err != nil {
		return err
	}
	d.want = w
	return nil
}

func pathOf(s []string) Path {
	p := make(Path, len(s))
	for i, x := range s {
		p[i] = x
	}
	return p
}

func renderKey(k string) string {
	if k == "" {
		return `""`
	}
	for _, r := range k {
		if !(r == '_' || r == '-' || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') || ('0' <= r && r <= '9')) {
			return tomlString(k)
		}
	}
	return k
}

func renderKeyPath(p []string) string {
	parts := make([]string, len(p))
	for i, k := range p {
		parts[i] = renderKey(k)
	}
	return strings.Join(parts, ".")
}

func tomlString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 || r == 0x7f {
				fmt.Fprintf(&b, `\u%04X`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

func (d *TOML) render(v any) string {
	switch v := v.(type) {
	case string:
		return tomlString(v)
	case bool:
		return strconv.FormatBool(v)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if !strings.ContainsAny(s, ".eEn") {
			s += ".0"
		}
		return s
	case []string:
		return d.render(plainList(v))
	case []any:
		parts := make([]string, len(v))
		for i, x := range v {
			parts[i] = d.render(x)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		return d.render(sortedObj(v))
	case Obj:
		if len(v) == 0 {
			return "{}"
		}
		parts := make([]string, len(v))
		for i, kv := range v {
			parts[i] = renderKey(kv.Key) + " = " + d.render(kv.Value)
		}
		return "{ " + strings.Join(parts, ", ") + " }"
	default:
		return tomlString(fmt.Sprint(v))
	}
}
