package yamledit

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// indentUnit guesses the file's indentation step from its first nested section.
func indentUnit(doc *yaml.Node) int {
	if doc == nil || len(doc.Content) == 0 {
		return 2
	}
	m := Resolve(doc.Content[0])
	if m == nil || m.Kind != yaml.MappingNode {
		return 2
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		v := m.Content[i+1]
		if v.Kind == yaml.MappingNode && v.Style&yaml.FlowStyle == 0 && len(v.Content) > 0 {
			if d := v.Content[0].Column - m.Content[i].Column; d > 0 && d <= 8 {
				return d
			}
		}
	}
	return 2
}

// lastPair returns the index of the last key named name in mapping m, or -1.
func lastPair(m *yaml.Node, name string) int {
	idx := -1
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i]; k.Kind == yaml.ScalarNode && k.Value == name && k.ShortTag() != "!!merge" {
			idx = i
		}
	}
	return idx
}

type step struct {
	m   *yaml.Node // mapping
	idx int        // index of the key in m.Content
}

// walkPath follows path through nested mappings; ok is false if a key is missing.
func walkPath(doc *yaml.Node, path []string) ([]step, bool) {
	if doc == nil || len(doc.Content) == 0 {
		return nil, false
	}
	m := Resolve(doc.Content[0])
	var steps []step
	for i, seg := range path {
		if m == nil || m.Kind != yaml.MappingNode {
			return steps, false
		}
		idx := lastPair(m, seg)
		if idx < 0 {
			return steps, false
		}
		steps = append(steps, step{m, idx})
		if i < len(path)-1 {
			m = Resolve(m.Content[idx+1])
		}
	}
	return steps, true
}

// treeSet sets path to val, creating sections as needed and keeping the
// old value's comments and quoting style.
func treeSet(doc *yaml.Node, path []string, val *yaml.Node) error {
	if IsNull(Resolve(doc.Content[0])) {
		old := doc.Content[0]
		doc.Content[0] = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", HeadComment: old.HeadComment, LineComment: old.LineComment, FootComment: old.FootComment}
	}
	m := doc.Content[0]
	if m.Kind != yaml.MappingNode {
		return &PathError{Msg: "the top level is not a mapping"}
	}
	for i, seg := range path {
		idx := lastPair(m, seg)
		if idx < 0 {
			node := val
			for j := len(path) - 1; j > i; j-- {
				node = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Content: []*yaml.Node{strNode(path[j]), node}}
			}
			if m.Style&yaml.FlowStyle != 0 && len(m.Content) == 0 {
				m.Style = 0 // turn an empty `{}` into a normal block section
			}
			m.Content = append(m.Content, strNode(seg), node)
			return nil
		}
		cur := m.Content[idx+1]
		if cur.Kind == yaml.AliasNode || cur.Anchor != "" {
			return &PathError{Msg: fmt.Sprintf("`%s` uses a YAML anchor or alias; edit it by hand", strings.Join(path[:i+1], "."))}
		}
		if i == len(path)-1 {
			val.HeadComment, val.LineComment, val.FootComment = cur.HeadComment, cur.LineComment, cur.FootComment
			// Keep the user's quoting of a string value ('x' stays single-quoted).
			if q := cur.Style & (yaml.DoubleQuotedStyle | yaml.SingleQuotedStyle); q != 0 && cur.Kind == yaml.ScalarNode &&
				val.Kind == yaml.ScalarNode && val.Tag == "!!str" && (val.Style == 0 || val.Style == yaml.DoubleQuotedStyle) &&
				!strings.ContainsAny(val.Value, "\n\r") {
				val.Style = q
			}
			m.Content[idx+1] = val
			return nil
		}
		if IsNull(cur) {
			cur = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", HeadComment: cur.HeadComment, LineComment: cur.LineComment, FootComment: cur.FootComment}
			m.Content[idx+1] = cur
		}
		if cur.Kind != yaml.MappingNode {
			return &PathError{Msg: fmt.Sprintf("`%s` is %s, not a section", strings.Join(path[:i+1], "."), Describe(cur)), err: ErrNotSection}
		}
		if cur.Style&yaml.FlowStyle != 0 && len(cur.Content) == 0 {
			cur.Style = 0
		}
		m = cur
	}
	return nil
}

func strNode(s string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s} }

// treeDelete removes path and any section that becomes empty because of it.
func treeDelete(doc *yaml.Node, path []string) bool {
	steps, ok := walkPath(doc, path)
	if !ok {
		return false
	}
	lvl := deleteLevel(steps)
	s := steps[lvl]
	s.m.Content = append(s.m.Content[:s.idx], s.m.Content[s.idx+2:]...)
	return true
}

// deleteLevel is the step whose pair must go: the deepest one, or an
// ancestor section that would be left empty (never the top level).
func deleteLevel(steps []step) int {
	lvl := len(steps) - 1
	for lvl > 0 && len(steps[lvl].m.Content) == 2 {
		lvl--
	}
	return lvl
}
