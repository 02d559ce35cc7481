package yamledit

// Rendering of new values for Doc's patches: block style (flow style where
// the value asks for it), the file's indentation step and line ends, and
// the quoting the Doc was told to use (see Quoting).

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Quoting is how a Doc writes a new string the caller left unstyled. A
// string given a quote style (yaml.DoubleQuotedStyle, SingleQuotedStyle)
// is written in it, and a string replacing a quoted one keeps that quote
// style, whatever the Quoting.
type Quoting int

const (
	// QuoteSafe (the default) writes a string plain only when no YAML
	// version could read it as anything else (a conservative character
	// set), else double-quoted: `--agent` and non-ASCII text are quoted.
	// The client adapters' files are written this way.
	QuoteSafe Quoting = iota
	// QuoteMinimal writes a string as the YAML library does: plain unless
	// that would read as something else (`yes`, `01`, `#x`, `: x`, ""),
	// then quoted the library's way. MetaClaw's own config uses it.
	QuoteMinimal
)

type renderer struct {
	nl      string
	unit    int
	quoting Quoting
}

var plainSafe = regexp.MustCompile(`^[A-Za-z_./~$][A-Za-z0-9_./:@~+$=-]*( [A-Za-z0-9_./:@~+$=-]+)*$`)

// inline reports a value written on its key's line: a scalar, an empty
// collection or a flow-style one.
func (r renderer) inline(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode || len(n.Content) == 0 || n.Style&yaml.FlowStyle != 0
}

// scalar renders an inline value.
func (r renderer) scalar(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode, yaml.SequenceNode:
		return r.flow(n)
	}
	switch n.ShortTag() {
	case "!!str":
		switch {
		case n.Style&yaml.DoubleQuotedStyle != 0:
			return jsonQuote(n.Value)
		case n.Style&yaml.SingleQuotedStyle != 0 && !strings.ContainsAny(n.Value, "\n\r"):
			return "'" + strings.ReplaceAll(n.Value, "'", "''") + "'"
		case r.quoting == QuoteMinimal:
			return libraryString(n.Value)
		case plainSafe.MatchString(n.Value) && !yamlSpecial(n.Value) && !strings.Contains(n.Value, ": "):
			return n.Value
		}
		return jsonQuote(n.Value)
	case "!!null":
		if n.Value == "" {
			return "null"
		}
	}
	return n.Value
}

// libraryString writes s as the YAML library writes a string value; a
// form over several lines (a literal block) is double-quoted instead.
func libraryString(s string) string {
	out, err := Encode(strNode(s), 2)
	text := strings.TrimSuffix(string(out), "\n")
	if err != nil || strings.ContainsAny(text, "\n\r") {
		return jsonQuote(s)
	}
	return text
}

// flow renders a collection in flow style on one line; collections inside
// it are flow too.
func (r renderer) flow(n *yaml.Node) string { return r.flowKeep(n, nil, nil) }

// flowKeep renders n in flow style; where old (the value n replaces) held
// a scalar at the same place (same key, same index), keep may return the
// text to write for it instead.
func (r renderer) flowKeep(n, old *yaml.Node, keep func(n, old *yaml.Node) (string, bool)) string {
	switch n.Kind {
	case yaml.AliasNode:
		return "*" + n.Value
	case yaml.ScalarNode:
		if keep != nil {
			if s, ok := keep(n, old); ok {
				return s
			}
		}
		return r.flowItem(n)
	}
	parts := make([]string, 0, len(n.Content))
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			var ko, vo *yaml.Node
			if old != nil && old.Kind == yaml.MappingNode {
				if j := lastPair(old, n.Content[i].Value); j >= 0 {
					ko, vo = old.Content[j], old.Content[j+1]
				}
			}
			parts = append(parts, r.flowKeep(n.Content[i], ko, keep)+": "+r.flowKeep(n.Content[i+1], vo, keep))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	for i, it := range n.Content {
		var o *yaml.Node
		if old != nil && old.Kind == yaml.SequenceNode && i < len(old.Content) {
			o = old.Content[i]
		}
		parts = append(parts, r.flowKeep(it, o, keep))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// flowItem renders an element of a flow collection: a plain string that
// holds a flow indicator (or a colon) is quoted there.
func (r renderer) flowItem(n *yaml.Node) string {
	s := r.scalar(n)
	if n.ShortTag() == "!!str" && s == n.Value && strings.ContainsAny(s, ",[]{}:#") {
		return jsonQuote(n.Value)
	}
	return s
}

// jsonQuote writes s as a double-quoted scalar (JSON strings are YAML).
func jsonQuote(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

// yamlSpecial reports words YAML 1.1 or 1.2 would read as something other
// than a string.
func yamlSpecial(s string) bool {
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null", "~", ".inf", ".nan", "-.inf":
		return true
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// pair renders `key: value` at indent ind (whole lines).
func (r renderer) pair(key string, v *yaml.Node, ind int) string {
	return r.pairNode(strNode(key), v, ind)
}

func (r renderer) pairNode(k, v *yaml.Node, ind int) string {
	pad := strings.Repeat(" ", ind)
	if r.inline(v) {
		return pad + r.scalar(k) + ": " + r.scalar(v) + r.nl
	}
	return pad + r.scalar(k) + ":" + r.nl + r.block(v, ind+r.unit)
}

// block renders a mapping or sequence whose lines start at indent ind.
func (r renderer) block(v *yaml.Node, ind int) string {
	var b strings.Builder
	switch v.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(v.Content); i += 2 {
			b.WriteString(r.pairNode(v.Content[i], v.Content[i+1], ind))
		}
	case yaml.SequenceNode:
		for _, it := range v.Content {
			b.WriteString(r.item(it, ind))
		}
	default:
		b.WriteString(strings.Repeat(" ", ind) + r.scalar(v) + r.nl)
	}
	return b.String()
}

// item renders one sequence item whose dash is at column dash.
func (r renderer) item(v *yaml.Node, dash int) string {
	pad := strings.Repeat(" ", dash)
	switch {
	case r.inline(v):
		return pad + "- " + r.scalar(v) + r.nl
	case v.Kind == yaml.MappingNode:
		first := r.pairNode(v.Content[0], v.Content[1], dash+2)
		var b strings.Builder
		b.WriteString(pad + "- " + first[dash+2:])
		for i := 2; i+1 < len(v.Content); i += 2 {
			b.WriteString(r.pairNode(v.Content[i], v.Content[i+1], dash+2))
		}
		return b.String()
	}
	return pad + "-" + r.nl + r.block(v, dash+2)
}
