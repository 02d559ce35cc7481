package yamledit

// Rendering of new values for Doc's patches: block style, the file's
// indentation step and line ends, and conservative quoting (a string is
// written plain only when no YAML version could read it as anything else).

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

type renderer struct {
	nl   string
	unit int
}

var plainSafe = regexp.MustCompile(`^[A-Za-z_./~$][A-Za-z0-9_./:@~+$=-]*( [A-Za-z0-9_./:@~+$=-]+)*$`)

// inline reports a value written on its key's line.
func (r renderer) inline(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode || len(n.Content) == 0
}

// scalar renders an inline value.
func (r renderer) scalar(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "{}"
	case yaml.SequenceNode:
		return "[]"
	}
	switch n.ShortTag() {
	case "!!str":
		switch {
		case n.Style&yaml.DoubleQuotedStyle != 0:
			return jsonQuote(n.Value)
		case n.Style&yaml.SingleQuotedStyle != 0 && !strings.ContainsAny(n.Value, "\n\r"):
			return "'" + strings.ReplaceAll(n.Value, "'", "''") + "'"
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
