// Package yamledit edits one YAML document in place and keeps what the
// user wrote: comments, key order, quoting and every unrelated byte. It is
// the project's one YAML editor.
//
// Doc (doc.go) is the checked editor for files that must never say
// something else than meant (the client adapters): every step is a text
// patch that is re-parsed and compared with the intended data, or refused.
//
// Set and Delete below are one-shot edits for MetaClaw's own config. Every
// change is made twice. First on the node tree (always possible, but
// re-encoding loses blank lines and comment spacing), then as a minimal
// text patch located through the nodes' line/column positions. The patch is
// used when it parses to exactly the same data as the tree edit; otherwise
// the re-encoded tree is returned, so an edit never silently means
// something else than asked.
//
// It depends on the YAML library only, so both host/ and adapters/ may use it.
package yamledit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrNotSection is wrapped by Set when the path runs through a value that
// is not a mapping.
var ErrNotSection = errors.New("not a section")

// PathError is a refused edit: the path cannot be set as asked (an anchor,
// a non-mapping on the way). Msg is written for the user.
type PathError struct {
	Msg string
	err error
}

func (e *PathError) Error() string { return e.Msg }
func (e *PathError) Unwrap() error { return e.err }

// maxAliasDepth bounds alias chains followed while walking a path.
const maxAliasDepth = 16

// Parse returns the document node of src, or nil for an empty,
// comment-only or `null` document. Only the first document is read.
func Parse(src []byte) (doc *yaml.Node, err error) {
	defer func() {
		// The YAML library is not ours: a panic on hostile input is an error.
		if r := recover(); r != nil {
			doc, err = nil, fmt.Errorf("invalid YAML: parser failure: %v", r)
		}
	}()
	var n yaml.Node
	if err := yaml.NewDecoder(bytes.NewReader(src)).Decode(&n); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	if n.Kind != yaml.DocumentNode || len(n.Content) == 0 {
		return nil, nil
	}
	return &n, nil
}

// Has reports whether path (mapping keys) is present in src.
func Has(src []byte, path []string) bool {
	doc, err := Parse(src)
	if err != nil || doc == nil {
		return false
	}
	_, ok := walkPath(doc, path)
	return ok
}

// Set returns src with path set to val, creating sections as needed. The
// old value's comments and quoting are kept. val may be modified.
func Set(src []byte, path []string, val *yaml.Node) ([]byte, error) {
	if len(path) == 0 {
		return nil, errors.New("yamledit: empty path")
	}
	tree, err := Parse(src)
	if err != nil {
		return nil, err
	}
	if tree == nil {
		tree = &yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}}
	}
	unit := indentUnit(tree)
	if err := treeSet(tree, path, val); err != nil {
		return nil, err
	}
	want, err := Encode(tree, unit)
	if err != nil {
		return nil, fmt.Errorf("render YAML: %w", err)
	}
	fresh, _ := Parse(src)
	patched, ok := patchSet(src, fresh, path, inlineText(val), unit)
	if !ok { // a block value, or a shape the one-line patch does not handle
		patched, ok = docSet(src, path, val)
	}
	return chooseText(patched, ok, want), nil
}

// Delete returns src without path, and without a section that becomes
// empty because of it (never the top level). changed is false, and src
// is returned as is, when path is absent.
func Delete(src []byte, path []string) (out []byte, changed bool, err error) {
	tree, err := Parse(src)
	if err != nil {
		return nil, false, err
	}
	if tree == nil || len(path) == 0 || !treeDelete(tree, path) {
		return src, false, nil
	}
	want, err := Encode(tree, indentUnit(tree))
	if err != nil {
		return nil, false, fmt.Errorf("render YAML: %w", err)
	}
	fresh, _ := Parse(src)
	patched, ok := patchDelete(src, fresh, path)
	return chooseText(patched, ok, want), true, nil
}

// docSet patches through Doc (block values in the file's indentation).
func docSet(src []byte, path []string, val *yaml.Node) ([]byte, bool) {
	d, err := Open(src)
	if err != nil || d.Set(path, cloneNode(val)) != nil {
		return nil, false
	}
	return d.Bytes(), true
}

// Encode renders n with the given indentation step.
func Encode(n *yaml.Node, indent int) ([]byte, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(indent)
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// chooseText prefers the text patch when it means the same as the tree edit.
func chooseText(patched []byte, ok bool, want []byte) []byte {
	if ok && sameYAML(patched, want) {
		return patched
	}
	return want
}

func sameYAML(a, b []byte) bool {
	var x, y any
	if yaml.Unmarshal(a, &x) != nil || yaml.Unmarshal(b, &y) != nil {
		return false
	}
	norm := func(v any) any {
		if v == nil {
			return map[string]any{}
		}
		return v
	}
	return reflect.DeepEqual(norm(x), norm(y))
}

// inlineText renders a value node on one line, or "" if it cannot be.
func inlineText(val *yaml.Node) string {
	n := *val
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	out, err := Encode(&n, 2)
	if err != nil {
		return ""
	}
	s := strings.TrimSuffix(string(out), "\n")
	if strings.Contains(s, "\n") {
		return ""
	}
	return s
}

// Resolve follows an alias chain (bounded) to the node it names.
func Resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < maxAliasDepth; i++ {
		n = n.Alias
	}
	return n
}

// IsNull reports a missing node or a null scalar (`~`, `null`, nothing).
func IsNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// Describe names a node for an error message ("a list", "integer 3").
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int":
			return "integer " + n.Value
		case "!!float":
			return "number " + n.Value
		case "!!bool":
			return "boolean " + n.Value
		case "!!null":
			return "null"
		}
		return fmt.Sprintf("string %q", n.Value)
	}
	return "an alias"
}
