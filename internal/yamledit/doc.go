package yamledit

// Doc: the checked, step-by-step editor (the package's only editor).

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// Doc is one YAML document edited in steps. Every edit is a text patch
// that keeps every other byte (comments, blank lines, quoting, CRLF line
// ends), and is verified: the patched text is parsed again and must hold
// exactly the intended data (the previous data plus the edit), or the edit
// is refused with an error and the document stays as it was. There is no
// re-encoding fallback.
type Doc struct {
	src     []byte
	tree    *yaml.Node // src parsed (positions); nil for an empty document
	want    *yaml.Node // the intended data: src's tree with every edit applied
	nl      string     // the file's line terminator
	unit    int        // the file's indentation step
	quoting Quoting    // how new unstyled strings are written
}

// Open parses src for editing. An empty or comment-only document is an
// empty mapping; a document YAML cannot decode (duplicate keys, bad
// syntax) is an error.
func Open(src []byte) (*Doc, error) {
	tree, err := Parse(src)
	if err != nil {
		return nil, err
	}
	if _, err := decode(tree); err != nil {
		return nil, err
	}
	d := &Doc{src: src, tree: tree, nl: "\n", unit: indentUnit(tree)}
	if bytes.Contains(src, []byte("\r\n")) {
		d.nl = "\r\n"
	}
	d.want = cloneNode(tree)
	if d.want == nil {
		d.want = emptyDoc()
	}
	return d, nil
}

func emptyDoc() *yaml.Node {
	return &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
}

// SetQuoting chooses how later edits write new strings (QuoteSafe unless
// told otherwise).
func (d *Doc) SetQuoting(q Quoting) { d.quoting = q }

// Has reports whether path (mapping keys) is present.
func (d *Doc) Has(path []string) bool {
	_, ok := walkPath(d.tree, path)
	return ok
}

// Bytes is the current text.
func (d *Doc) Bytes() []byte { return d.src }

// Data is the current text decoded (maps, slices, scalars); an empty
// document is an empty map.
func (d *Doc) Data() any {
	v, _ := decode(d.tree)
	return v
}

// Verify checks once more that the text holds the intended data.
func (d *Doc) Verify() error {
	tree, err := Parse(d.src)
	if err != nil {
		return fmt.Errorf("yaml edit verification failed: %w", err)
	}
	return sameData(tree, d.want)
}

// Set sets path (mapping keys) to val, creating sections as needed. A
// value equal to the current one leaves the text as it is. val is used as
// given (the old value's quoting is copied onto it) and must not be
// changed afterwards.
func (d *Doc) Set(path []string, val *yaml.Node) error {
	if len(path) == 0 {
		return errors.New("yamledit: empty path")
	}
	if err := checkValue(val); err != nil {
		return err
	}
	if cur, ok := walkValue(d.want, path); ok && sameNode(cur, val) {
		return nil
	}
	want := cloneNode(d.want)
	if err := treeSet(want, path, val); err != nil {
		return err
	}
	out, err := d.text(want).set(path, val)
	if err != nil {
		return fmt.Errorf("%s: %w", strings.Join(path, "."), err)
	}
	return d.commit(out, want)
}

// Delete removes path, and a section that becomes empty because of it
// (never the top level). changed is false, and the text stays as it is,
// when path is absent.
func (d *Doc) Delete(path []string) (changed bool, err error) {
	if len(path) == 0 || !d.Has(path) {
		return false, nil
	}
	want := cloneNode(d.want)
	if !treeDelete(want, path) {
		return false, fmt.Errorf("%s: the text and the data disagree; change it by hand", strings.Join(path, "."))
	}
	out, err := d.text(want).delete(path)
	if err != nil {
		return false, fmt.Errorf("%s: %w", strings.Join(path, "."), err)
	}
	if err := d.commit(out, want); err != nil {
		return false, err
	}
	return true, nil
}

// UpsertItem replaces the mapping item of the sequence at path whose
// matchKey equals item's, or appends item; a missing, null or empty
// sequence is created.
func (d *Doc) UpsertItem(path []string, matchKey string, item *yaml.Node) error {
	if len(path) == 0 {
		return errors.New("yamledit: empty path")
	}
	if err := checkValue(item); err != nil {
		return err
	}
	if item.Kind != yaml.MappingNode {
		return errors.New("yamledit: a sequence item to upsert must be a mapping")
	}
	key := pairValue(item, matchKey)
	if key == nil || key.Kind != yaml.ScalarNode {
		return fmt.Errorf("yamledit: the item has no scalar %q to match on", matchKey)
	}
	want := cloneNode(d.want)
	seq, _ := walkValue(want, path)
	if seq == nil || IsNull(seq) || (seq.Kind == yaml.SequenceNode && len(seq.Content) == 0) {
		list := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Content: []*yaml.Node{item}}
		if err := treeSet(want, path, list); err != nil {
			return err
		}
		out, err := d.text(want).set(path, list)
		if err != nil {
			return fmt.Errorf("%s: %w", strings.Join(path, "."), err)
		}
		return d.commit(out, want)
	}
	if seq.Kind != yaml.SequenceNode || seq.Style&yaml.FlowStyle != 0 {
		return fmt.Errorf("%s is not a block sequence; change it by hand", strings.Join(path, "."))
	}
	idx := matchItem(seq, matchKey, key.Value)
	if idx >= 0 && sameNode(seq.Content[idx], item) {
		return nil
	}
	if idx >= 0 {
		seq.Content[idx] = item
	} else {
		seq.Content = append(seq.Content, item)
	}
	cur, _ := walkValue(d.tree, path)
	if cur == nil || cur.Kind != yaml.SequenceNode || len(cur.Content) != len(seq.Content)-boolInt(idx < 0) {
		return fmt.Errorf("%s: the text and the data disagree; change it by hand", strings.Join(path, "."))
	}
	out, err := d.text(want).upsert(cur, idx, item)
	if err != nil {
		return fmt.Errorf("%s: %w", strings.Join(path, "."), err)
	}
	return d.commit(out, want)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// matchItem is the index of the last mapping item whose key holds value, or -1.
func matchItem(seq *yaml.Node, key, value string) int {
	idx := -1
	for i, it := range seq.Content {
		if it.Kind != yaml.MappingNode {
			continue
		}
		if v := pairValue(it, key); v != nil && v.Kind == yaml.ScalarNode && v.Value == value {
			idx = i
		}
	}
	return idx
}

func pairValue(m *yaml.Node, key string) *yaml.Node {
	if i := lastPair(m, key); i >= 0 {
		return m.Content[i+1]
	}
	return nil
}

// commit accepts out only if it parses to exactly want.
func (d *Doc) commit(out []byte, want *yaml.Node) error {
	tree, err := Parse(out)
	if err != nil {
		return fmt.Errorf("yamledit: the patched text would not parse (%v); nothing changed", err)
	}
	if err := sameData(tree, want); err != nil {
		return err
	}
	d.src, d.tree, d.want = out, tree, want
	return nil
}

// walkValue returns the value at path (no alias followed past the root).
func walkValue(doc *yaml.Node, path []string) (*yaml.Node, bool) {
	steps, ok := walkPath(doc, path)
	if !ok {
		return nil, false
	}
	s := steps[len(steps)-1]
	return s.m.Content[s.idx+1], true
}

// decode returns the data of a parsed document (an empty map for nil).
func decode(doc *yaml.Node) (v any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid YAML: decoder failure: %v", r)
		}
	}()
	if doc == nil {
		return map[string]any{}, nil
	}
	if err := doc.Decode(&v); err != nil {
		return nil, err
	}
	if v == nil {
		v = map[string]any{}
	}
	return v, nil
}

func sameNode(a, b *yaml.Node) bool {
	x, errx := decode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{a}})
	y, erry := decode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{b}})
	return errx == nil && erry == nil && reflect.DeepEqual(x, y)
}

// sameData is nil when the parsed text holds the intended data.
func sameData(got, want *yaml.Node) error {
	g, err := decode(got)
	if err != nil {
		return fmt.Errorf("yamledit: the patched text does not decode (%v); nothing changed", err)
	}
	w, err := decode(want)
	if err != nil {
		return fmt.Errorf("yamledit: the intended data does not decode (%v); nothing changed", err)
	}
	if !reflect.DeepEqual(g, w) {
		return fmt.Errorf("yamledit: the patched text would not say what was meant (got %s, want %s); nothing changed", clip(g), clip(w))
	}
	return nil
}

// clip shows at most 200 characters of v and the mark.
func clip(v any) string { return textclip.Runes(fmt.Sprint(v), 201) }

// checkValue refuses values the renderer cannot write as meant.
func checkValue(n *yaml.Node) error {
	return checkDepth(n, 0)
}

func checkDepth(n *yaml.Node, depth int) error {
	switch {
	case n == nil:
		return errors.New("yamledit: nil value")
	case depth > 32:
		return errors.New("yamledit: value nested too deeply")
	case n.Kind == yaml.AliasNode || n.Anchor != "":
		return errors.New("yamledit: values with anchors or aliases are not supported")
	case n.Kind == yaml.MappingNode && len(n.Content)%2 != 0:
		return errors.New("yamledit: a mapping with an odd number of nodes")
	case n.Kind == yaml.MappingNode:
		for i := 0; i < len(n.Content); i += 2 {
			if k := n.Content[i]; k.Kind != yaml.ScalarNode {
				return errors.New("yamledit: mapping keys must be scalars")
			}
		}
	case n.Kind != yaml.ScalarNode && n.Kind != yaml.SequenceNode:
		return errors.New("yamledit: a value must be a scalar, mapping or sequence")
	}
	for _, c := range n.Content {
		if err := checkDepth(c, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// cloneNode deep-copies a tree, aliases pointing into the copy.
func cloneNode(n *yaml.Node) *yaml.Node {
	seen := map[*yaml.Node]*yaml.Node{}
	var cp func(*yaml.Node) *yaml.Node
	cp = func(n *yaml.Node) *yaml.Node {
		if n == nil {
			return nil
		}
		if c, ok := seen[n]; ok {
			return c
		}
		c := *n
		seen[n] = &c
		c.Content = make([]*yaml.Node, len(n.Content))
		for i, k := range n.Content {
			c.Content[i] = cp(k)
		}
		c.Alias = cp(n.Alias)
		return &c
	}
	return cp(n)
}
