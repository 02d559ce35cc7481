// Package yamledit edits one YAML document in place and keeps what the
// user wrote: comments, key order, quoting, line ends and every unrelated
// byte. It is the project's one YAML editor, used by the client adapters
// (adapters/internal/edit) and by `metaclaw config set/unset`
// (host/config), for one-line and block values alike.
//
// Doc (doc.go) is that editor: every step (Set, Delete, UpsertItem) is a
// minimal text patch located through the parsed nodes' line/column
// positions, then re-parsed and compared with the intended data (the
// previous data plus the edit). A patch that would say anything else is
// refused with an error and the text is left as it was; nothing is ever
// re-encoded from the node tree. New strings are quoted by the Doc's
// Quoting (QuoteSafe for the adapters, QuoteMinimal for MetaClaw's own
// config), and a replaced value keeps its quote style.
//
// It depends on the YAML library only, so both host/ and adapters/ may use it.
package yamledit

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"go.yaml.in/yaml/v3"
)

// ErrNotSection is wrapped by Doc.Set when the path runs through a value that
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
