package edit

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/metaclaw-go/metaclaw/internal/yamledit"
	"go.yaml.in/yaml/v3"
)

// YAML is a YAML config edited by internal/yamledit, the one
// comment-keeping YAML editor (it patches the text, then re-parses and
// refuses any edit whose result is not exactly the intended data). This
// file only translates the adapters' paths and values into its terms.
type YAML struct{ doc *yamledit.Doc }

// ParseYAML parses YAML text (one document).
func ParseYAML(src []byte) (*YAML, error) {
	d, err := yamledit.Open(src)
	if err != nil {
		return nil, fmt.Errorf("yaml: %w", err)
	}
	return &YAML{doc: d}, nil
}

// Bytes is the current text.
func (d *YAML) Bytes() []byte { return d.doc.Bytes() }

// Get returns the decoded value at p.
func (d *YAML) Get(p Path) (any, bool) { return treeGet(d.doc.Data(), p) }

// Verify re-parses the text and checks it holds the original data plus the edits.
func (d *YAML) Verify() error { return d.doc.Verify() }

// Set sets the value at p (all segments must be mapping keys), creating
// mappings on the way.
func (d *YAML) Set(p Path, v any) error {
	keys, n, err := yamlArgs(p, v)
	if err != nil {
		return err
	}
	return d.doc.Set(keys, n)
}

// UpsertSeqItem replaces the mapping item of the sequence at p whose
// matchKey equals item's matchKey, or appends item; a missing sequence is
// created.
func (d *YAML) UpsertSeqItem(p Path, matchKey string, item Obj) error {
	keys, n, err := yamlArgs(p, item)
	if err != nil {
		return err
	}
	return d.doc.UpsertItem(keys, matchKey, n)
}

func yamlArgs(p Path, v any) ([]string, *yaml.Node, error) {
	if err := firstErr(checkValue(p), checkValue(v)); err != nil {
		return nil, nil, err
	}
	keys := make([]string, len(p))
	for i, s := range p {
		k, ok := s.(string)
		if !ok {
			return nil, nil, fmt.Errorf("yaml path %s: only mapping keys are supported", p)
		}
		keys[i] = k
	}
	n, err := yamlNode(v)
	return keys, n, err
}

// yamlNode turns an editor value into the node yamledit writes.
func yamlNode(v any) (*yaml.Node, error) {
	scalar := func(tag, val string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: val} }
	switch v := v.(type) {
	case nil:
		return scalar("!!null", "null"), nil
	case bool:
		return scalar("!!bool", strconv.FormatBool(v)), nil
	case int:
		return scalar("!!int", strconv.Itoa(v)), nil
	case int64:
		return scalar("!!int", strconv.FormatInt(v, 10)), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("yaml: %v is not a number a config can hold", v)
		}
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0" // stays a float when read back
		}
		return scalar("!!float", s), nil
	case string:
		return scalar("!!str", v), nil
	case map[string]any:
		return yamlNode(sortedObj(v))
	case Obj:
		m := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
		for _, kv := range v {
			x, err := yamlNode(kv.Value)
			if err != nil {
				return nil, err
			}
			m.Content = append(m.Content, scalar("!!str", kv.Key), x)
		}
		return m, nil
	case []string:
		return yamlNode(plainList(v))
	case []any:
		s := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq"}
		for _, it := range v {
			x, err := yamlNode(it)
			if err != nil {
				return nil, err
			}
			s.Content = append(s.Content, x)
		}
		return s, nil
	}
	return nil, fmt.Errorf("yaml: cannot write a %T", v)
}
