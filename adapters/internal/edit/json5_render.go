package edit

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// How JSON writes new keys and values in the document's own style: quoting,
// indentation unit, inline or one item a line.

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
