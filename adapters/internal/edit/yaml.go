package edit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// YAML edits YAML text. yaml.v3's node tree gives the line and column of
// every key and value; edits replace a scalar in place or insert/replace
// whole lines, so comments, blank lines and quoting elsewhere stay as they
// were. Flow-style collections on the edited path are refused.
type YAML struct {
	src  []byte
	want any
	crlf bool
	unit int
	doc  *yaml.Node
}

// ParseYAML parses YAML text (one document).
func ParseYAML(src []byte) (*YAML, error) {
	d := &YAML{src: src, crlf: bytes.Contains(src, []byte("\r\n"))}
	if err := d.reparse(); err != nil {
		return nil, err
	}
	var want any
	if err := yaml.Unmarshal(src, &want); err != nil {
		return nil, fmt.Errorf("yaml: %w", err)
	}
	if want == nil {
		want = map[string]any{}
	}
	d.want = want
	d.unit = d.detectUnit()
	return d, nil
}

func (d *YAML) reparse() error {
	var doc yaml.Node
	if err := yaml.Unmarshal(d.src, &doc); err != nil {
		return fmt.Errorf("yaml: %w", err)
	}
	d.doc = &doc
	return nil
}

// Bytes is the current text.
func (d *YAML) Bytes() []byte { return d.src }

// Data is the decoded current text.
func (d *YAML) Data() any { return deepCopy(d.want) }

// Get returns the decoded value at p.
func (d *YAML) Get(p Path) (any, bool) { return treeGet(d.want, p) }

// Verify re-parses the text and checks it holds the original data plus the edits.
func (d *YAML) Verify() error {
	var got any
	if err := yaml.Unmarshal(d.src, &got); err != nil {
		return fmt.Errorf("yaml edit verification failed: %w", err)
	}
	if got == nil {
		got = map[string]any{}
	}
	if Canon(got) != Canon(d.want) {
		return mismatch("yaml", got, d.want)
	}
	return nil
}

func (d *YAML) nl() string {
	if d.crlf {
		return "\r\n"
	}
	return "\n"
}

func (d *YAML) root() *yaml.Node {
	if d.doc.Kind == yaml.DocumentNode && len(d.doc.Content) > 0 {
		r := d.doc.Content[0]
		if r.Kind == yaml.MappingNode {
			return r
		}
	}
	return nil
}

func (d *YAML) detectUnit() int {
	r := d.root()
	if r == nil {
		return 2
	}
	for i := 1; i < len(r.Content); i += 2 {
		v := r.Content[i]
		if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 {
			if u := v.Content[0].Column - r.Content[i-1].Column; u > 0 && u <= 8 {
				return u
			}
		}
	}
	return 2
}

// lines returns the text split after each '\n'.
func (d *YAML) lines() []string { return strings.SplitAfter(string(d.src), "\n") }

func indentOf(s string) int { return len(s) - len(strings.TrimLeft(s, " ")) }

func isBlankOrComment(s string) bool {
	t := strings.TrimSpace(s)
	return t == "" || strings.HasPrefix(t, "#")
}

// endLine is the 0-based index of the last line of n's content; owner is
// the indentation of the line that owns n (its key or its dash).
func (d *YAML) endLine(n *yaml.Node, owner int) int {
	ls := d.lines()
	switch {
	case n.Kind == yaml.MappingNode && n.Style&yaml.FlowStyle == 0 && len(n.Content) > 0:
		k := n.Content[len(n.Content)-2]
		return max(k.Line-1, d.endLine(n.Content[len(n.Content)-1], k.Column-1))
	case n.Kind == yaml.SequenceNode && n.Style&yaml.FlowStyle == 0 && len(n.Content) > 0:
		last := n.Content[len(n.Content)-1]
		return d.endLine(last, dashColumn(ls, last))
	case n.Kind == yaml.ScalarNode && (n.Style&(yaml.LiteralStyle|yaml.FoldedStyle)) != 0:
		end := n.Line - 1
		for i := n.Line; i < len(ls); i++ {
			if strings.TrimSpace(ls[i]) == "" {
				continue
			}
			if indentOf(ls[i]) <= owner {
				break
			}
			end = i
		}
		return end
	default:
		if n.Line == 0 {
			return 0
		}
		end := n.Line - 1
		for i := n.Line; i < len(ls); i++ {
			if isBlankOrComment(ls[i]) {
				continue
			}
			if indentOf(ls[i]) <= owner {
				break
			}
			end = i
		}
		return end
	}
}

// absorbComments extends end over the comment lines right after it that
// are indented deeper than owner: they describe the preceding value.
func (d *YAML) absorbComments(end, owner int) int {
	ls := d.lines()
	for i := end + 1; i < len(ls); i++ {
		t := strings.TrimSpace(ls[i])
		if !strings.HasPrefix(t, "#") || indentOf(ls[i]) <= owner {
			break
		}
		end = i
	}
	return end
}

// dashColumn is the 0-based column of the '-' that starts a sequence item.
func dashColumn(ls []string, item *yaml.Node) int {
	if item.Line == 0 || item.Line > len(ls) {
		return 0
	}
	line := ls[item.Line-1]
	c := item.Column - 2
	for c >= 0 && c < len(line) && line[c] == ' ' {
		c--
	}
	if c >= 0 && c < len(line) && line[c] == '-' {
		return c
	}
	return max(item.Column-3, 0)
}

func (d *YAML) setLines(ls []string) error {
	d.src = []byte(strings.Join(ls, ""))
	return d.reparse()
}

// insertAfter inserts text (whole lines) after 0-based line idx.
func (d *YAML) insertAfter(idx int, text string) error {
	ls := d.lines()
	if idx >= len(ls) {
		idx = len(ls) - 1
	}
	if idx >= 0 && !strings.HasSuffix(ls[idx], "\n") {
		ls[idx] += d.nl()
	}
	out := append([]string{}, ls[:idx+1]...)
	out = append(out, text)
	out = append(out, ls[idx+1:]...)
	return d.setLines(out)
}

func (d *YAML) mapPair(m *yaml.Node, key string) (k, v *yaml.Node) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			k, v = m.Content[i], m.Content[i+1]
		}
	}
	return k, v
}

// Set sets the value at p (all segments must be mapping keys), creating
// mappings on the way.
func (d *YAML) Set(p Path, v any) error {
	if err := firstErr(checkValue(p), checkValue(v)); err != nil {
		return err
	}
	keys, err := stringPath(p)
	if err != nil {
		return err
	}
	if cur, ok := treeGet(d.want, p); ok && Canon(cur) == Canon(plain(v)) {
		return nil // same value: keep the file's own spelling
	}
	if err := d.set(keys, v); err != nil {
		return err
	}
	w, err := treeSet(d.want, p, v)
	if err != nil {
		return err
	}
	d.want = w
	return nil
}

func stringPath(p Path) ([]string, error) {
	keys := make([]string, len(p))
	for i, s := range p {
		k, ok := s.(string)
		if !ok {
			return nil, fmt.Errorf("yaml path %s: only mapping keys are supported", p)
		}
		keys[i] = k
	}
	if len(keys) == 0 {
		return nil, errors.New("empty path")
	}
	return keys, nil
}

func (d *YAML) set(keys []string, v any) error {
	m := d.root()
	if m == nil {
		if d.doc.Kind == yaml.DocumentNode && len(d.doc.Content) > 0 && !isNullNode(d.doc.Content[0]) {
			return errors.New("the document is not a mapping")
		}
		// empty document (maybe only comments): append at the end
		return d.appendTop(nest(keys, v))
	}
	for i, key := range keys {
		k, val := d.mapPair(m, key)
		if k == nil {
			return d.insertPair(m, key, nest(keys[i+1:], v))
		}
		if i == len(keys)-1 {
			return d.replaceValue(k, val, v)
		}
		switch {
		case val.Kind == yaml.MappingNode && val.Style&yaml.FlowStyle == 0 && len(val.Content) > 0:
			m = val
		case isNullNode(val) || (val.Kind == yaml.MappingNode && len(val.Content) == 0):
			return d.replaceValue(k, val, nest(keys[i+1:], v))
		default:
			return fmt.Errorf("%s is not a block mapping; change it by hand", strings.Join(keys[:i+1], "."))
		}
	}
	return nil
}

func isNullNode(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// nest wraps v in mappings named by keys.
func nest(keys []string, v any) any {
	for i := len(keys) - 1; i >= 0; i-- {
		v = Obj{{Key: keys[i], Value: v}}
	}
	return v
}

func (d *YAML) appendTop(v any) error {
	o, ok := v.(Obj)
	if !ok {
		return errors.New("cannot set a value at the top of the document")
	}
	var b strings.Builder
	for _, kv := range o {
		b.WriteString(d.renderPair(kv.Key, kv.Value, 0))
	}
	text := b.String()
	if len(d.src) > 0 && !bytes.HasSuffix(d.src, []byte("\n")) {
		text = d.nl() + text
	}
	d.src = append(d.src, text...)
	return d.reparse()
}

// insertPair adds key: v at the end of mapping m.
func (d *YAML) insertPair(m *yaml.Node, key string, v any) error {
	if m.Style&yaml.FlowStyle != 0 {
		return fmt.Errorf("cannot add %s to a flow mapping; change it by hand", key)
	}
	if len(m.Content) == 0 {
		return errors.New("empty mapping")
	}
	firstKey := m.Content[0]
	ind := firstKey.Column - 1
	lastKey := m.Content[len(m.Content)-2]
	end := max(lastKey.Line-1, d.endLine(m.Content[len(m.Content)-1], lastKey.Column-1))
	return d.insertAfter(d.absorbComments(end, lastKey.Column-1), d.renderPair(key, v, ind))
}

// replaceValue replaces the value of key node k.
func (d *YAML) replaceValue(k, old *yaml.Node, v any) error {
	ls := d.lines()
	kl := k.Line - 1
	ind := k.Column - 1
	if isScalar(v) && old.Kind == yaml.ScalarNode && old.Line == k.Line && old.Style&(yaml.LiteralStyle|yaml.FoldedStyle) == 0 && !isNullNode(old) {
		line := ls[kl]
		from := old.Column - 1
		to := scalarEnd(line, from, old.Style)
		if to < 0 {
			return fmt.Errorf("cannot find the end of %s's value; change it by hand", k.Value)
		}
		text := d.scalar(v)
		if sv, ok := v.(string); ok {
			switch {
			case old.Style&yaml.DoubleQuotedStyle != 0:
				b, _ := json.Marshal(sv)
				text = string(b)
			case old.Style&yaml.SingleQuotedStyle != 0 && !strings.ContainsAny(sv, "\n\r"):
				text = "'" + strings.ReplaceAll(sv, "'", "''") + "'"
			}
		}
		if line[from:to] == text {
			return nil
		}
		ls[kl] = line[:from] + text + line[to:]
		return d.setLines(ls)
	}
	colon := keyColon(ls[kl], k)
	if colon < 0 {
		return fmt.Errorf("cannot find the ':' after %s; change it by hand", k.Value)
	}
	end := kl
	if !isNullNode(old) || old.Line > k.Line {
		end = max(kl, d.endLine(old, ind))
	}
	var text string
	if isScalar(v) {
		text = ls[kl][:colon+1] + " " + d.scalar(v) + d.nl()
	} else {
		text = ls[kl][:colon+1] + d.nl() + d.renderBlock(v, ind+d.unit)
	}
	out := append([]string{}, ls[:kl]...)
	out = append(out, text)
	out = append(out, ls[end+1:]...)
	return d.setLines(out)
}

// keyColon returns the byte offset of the ':' that ends key node k on its line.
func keyColon(line string, k *yaml.Node) int {
	i := k.Column - 1
	if i >= len(line) {
		return -1
	}
	switch line[i] {
	case '"', '\'':
		e := scalarEnd(line, i, k.Style)
		if e < 0 {
			return -1
		}
		i = e
	default:
		i += len(k.Value)
	}
	for i < len(line) && line[i] == ' ' {
		i++
	}
	if i < len(line) && line[i] == ':' {
		return i
	}
	return -1
}

// scalarEnd returns the end offset of a single-line scalar starting at from.
func scalarEnd(line string, from int, style yaml.Style) int {
	if from >= len(line) {
		return -1
	}
	switch line[from] {
	case '"':
		for i := from + 1; i < len(line); i++ {
			switch line[i] {
			case '\\':
				i++
			case '"':
				return i + 1
			}
		}
		return -1
	case '\'':
		for i := from + 1; i < len(line); i++ {
			if line[i] == '\'' {
				if i+1 < len(line) && line[i+1] == '\'' {
					i++
					continue
				}
				return i + 1
			}
		}
		return -1
	}
	end := strings.TrimRight(line, "\r\n")
	if i := strings.Index(end[from:], " #"); i >= 0 {
		end = end[:from+i]
	}
	return len(strings.TrimRight(end, " \t"))
}

// UpsertSeqItem replaces the mapping item of the sequence at p whose
// matchKey equals item's matchKey, or appends item; a missing sequence is
// created.
func (d *YAML) UpsertSeqItem(p Path, matchKey string, item Obj) error {
	if err := firstErr(checkValue(p), checkValue(item)); err != nil {
		return err
	}
	keys, err := stringPath(p)
	if err != nil {
		return err
	}
	want, _ := item.Get(matchKey)
	seq := d.lookup(keys)
	idx := -1
	if seq != nil && seq.Kind == yaml.SequenceNode {
		for i, it := range seq.Content {
			if it.Kind != yaml.MappingNode {
				continue
			}
			if _, v := d.mapPair(it, matchKey); v != nil && v.Kind == yaml.ScalarNode && v.Value == fmt.Sprint(want) {
				idx = i
			}
		}
	}
	switch {
	case seq == nil || isNullNode(seq) || (seq.Kind == yaml.SequenceNode && len(seq.Content) == 0):
		if err := d.set(keys, []any{item}); err != nil {
			return err
		}
	case seq.Kind != yaml.SequenceNode || seq.Style&yaml.FlowStyle != 0:
		return fmt.Errorf("%s is not a block sequence; change it by hand", strings.Join(keys, "."))
	default:
		ls := d.lines()
		if idx >= 0 {
			it := seq.Content[idx]
			dash := dashColumn(ls, it)
			start := it.Line - 1
			if strings.TrimSpace(ls[start][:min(dash+1, len(ls[start]))]) != "-" {
				return fmt.Errorf("unusual layout of %s; change it by hand", strings.Join(keys, "."))
			}
			end := d.endLine(it, dash)
			out := append([]string{}, ls[:start]...)
			out = append(out, d.renderItem(item, dash))
			out = append(out, ls[end+1:]...)
			if err := d.setLines(out); err != nil {
				return err
			}
		} else {
			last := seq.Content[len(seq.Content)-1]
			dash := dashColumn(ls, last)
			if err := d.insertAfter(d.absorbComments(d.endLine(last, dash), dash), d.renderItem(item, dash)); err != nil {
				return err
			}
		}
	}
	cur, _ := treeGet(d.want, p)
	arr, _ := cur.([]any)
	arr = append([]any{}, arr...)
	if idx >= 0 {
		arr[idx] = plain(item)
	} else {
		arr = append(arr, plain(item))
	}
	w, err := treeSet(d.want, p, arr)
	if err != nil {
		return err
	}
	d.want = w
	return nil
}

func (d *YAML) lookup(keys []string) *yaml.Node {
	m := d.root()
	for i, key := range keys {
		if m == nil || m.Kind != yaml.MappingNode {
			return nil
		}
		_, v := d.mapPair(m, key)
		if v == nil {
			return nil
		}
		if i == len(keys)-1 {
			return v
		}
		m = v
	}
	return nil
}

// ---- rendering ----

var plainSafe = regexp.MustCompile(`^[A-Za-z_./~$][A-Za-z0-9_./:@~+$=-]*( [A-Za-z0-9_./:@~+$=-]+)*$`)

func (d *YAML) scalar(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case string:
		if plainSafe.MatchString(v) && !yamlSpecial(v) && !strings.Contains(v, ": ") {
			return v
		}
		b, _ := json.Marshal(v)
		return strings.NewReplacer(`\u003c`, "<", `\u003e`, ">", `\u0026`, "&").Replace(string(b))
	case []any:
		if len(v) == 0 {
			return "[]"
		}
	case Obj:
		if len(v) == 0 {
			return "{}"
		}
	}
	return fmt.Sprint(v)
}

// yamlSpecial reports words YAML 1.1 or 1.2 would read as something other
// than a string.
func yamlSpecial(s string) bool {
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~", ".inf", ".nan", "-.inf":
		return true
	}
	if _, err := strconv.ParseFloat(s, 64); err == nil {
		return true
	}
	return false
}

func yamlEmpty(v any) bool {
	switch v := v.(type) {
	case []any:
		return len(v) == 0
	case []string:
		return len(v) == 0
	case Obj:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// renderPair renders `key: value` at indent ind (whole lines).
func (d *YAML) renderPair(key string, v any, ind int) string {
	pad := strings.Repeat(" ", ind)
	k := d.scalar(key)
	if isScalar(v) || yamlEmpty(v) {
		return pad + k + ": " + d.scalarOrEmpty(v) + d.nl()
	}
	return pad + k + ":" + d.nl() + d.renderBlock(v, ind+d.unit)
}

func (d *YAML) scalarOrEmpty(v any) string {
	if yamlEmpty(v) {
		switch v.(type) {
		case Obj, map[string]any:
			return "{}"
		}
		return "[]"
	}
	return d.scalar(v)
}

// renderBlock renders a mapping or sequence whose lines start at indent ind.
func (d *YAML) renderBlock(v any, ind int) string {
	switch v := v.(type) {
	case map[string]any:
		return d.renderBlock(sortedObj(v), ind)
	case Obj:
		var b strings.Builder
		for _, kv := range v {
			b.WriteString(d.renderPair(kv.Key, kv.Value, ind))
		}
		return b.String()
	case []string:
		return d.renderBlock(plainList(v), ind)
	case []any:
		var b strings.Builder
		for _, x := range v {
			b.WriteString(d.renderItem(x, ind))
		}
		return b.String()
	}
	return strings.Repeat(" ", ind) + d.scalar(v) + d.nl()
}

// renderItem renders one sequence item whose dash is at column dash.
func (d *YAML) renderItem(v any, dash int) string {
	pad := strings.Repeat(" ", dash)
	switch o := v.(type) {
	case map[string]any:
		return d.renderItem(sortedObj(o), dash)
	case Obj:
		if len(o) == 0 {
			return pad + "- {}" + d.nl()
		}
		first := d.renderPair(o[0].Key, o[0].Value, dash+2)
		var b strings.Builder
		b.WriteString(pad + "- " + first[dash+2:])
		for _, kv := range o[1:] {
			b.WriteString(d.renderPair(kv.Key, kv.Value, dash+2))
		}
		return b.String()
	}
	if isScalar(v) || yamlEmpty(v) {
		return pad + "- " + d.scalarOrEmpty(v) + d.nl()
	}
	return pad + "-" + d.nl() + d.renderBlock(v, dash+2)
}
