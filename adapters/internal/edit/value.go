// Package edit makes small structural edits to client configuration files
// (JSON, JSON5/JSONC, TOML, YAML, .env) and keeps every byte it does not need
// to change: comments, key order, quoting, indentation and line endings.
//
// Every editor works the same way: it parses the text into a tree that knows
// the byte range of each key and value, splices the new text in, and then
// re-parses the result and compares its data with the original data plus the
// intended change (Verify). A change that would alter anything else is an
// error, never a corrupt file.
package edit

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// Obj is an ordered object (JSON object, TOML inline table, YAML mapping)
// for values that editors render; map[string]any is rendered with sorted keys.
type Obj []KV

// KV is one member of an Obj.
type KV struct {
	Key   string
	Value any
}

// O builds an Obj from alternating keys and values.
func O(kv ...any) Obj {
	if len(kv)%2 != 0 {
		panic("edit.O: odd argument count")
	}
	o := make(Obj, 0, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		o = append(o, KV{Key: kv[i].(string), Value: kv[i+1]})
	}
	return o
}

// Get returns the member named key.
func (o Obj) Get(key string) (any, bool) {
	for _, kv := range o {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return nil, false
}

// Path addresses a value: string segments are object keys, int segments
// array indexes.
type Path []any

func (p Path) String() string {
	var b strings.Builder
	for i, s := range p {
		switch s := s.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", s)
		default:
			if i > 0 {
				b.WriteByte('.')
			}
			fmt.Fprint(&b, s)
		}
	}
	return b.String()
}

// P builds a Path.
func P(segs ...any) Path { return Path(segs) }

// plain converts editor values (Obj, typed slices, ints) into the generic
// tree that decoders produce: map[string]any, []any, float64/int64, string,
// bool, nil.
func plain(v any) any {
	switch v := v.(type) {
	case Obj:
		m := make(map[string]any, len(v))
		for _, kv := range v {
			m[kv.Key] = plain(kv.Value)
		}
		return m
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = plain(x)
		}
		return m
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = plain(x)
		}
		return out
	case []string:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = x
		}
		return out
	case int:
		return int64(v)
	case int32:
		return int64(v)
	default:
		return v
	}
}

// Canon renders a decoded tree as a canonical string so trees from
// different decoders (float64 vs int64 numbers, map types) compare equal
// when they hold the same data.
func Canon(v any) string {
	var b strings.Builder
	canon(&b, v)
	return b.String()
}

func canon(b *strings.Builder, v any) {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case string:
		b.WriteString(strconv.Quote(v))
	case float64:
		switch {
		case math.IsNaN(v):
			b.WriteString("NaN")
		case math.IsInf(v, 1):
			b.WriteString("+Inf")
		case math.IsInf(v, -1):
			b.WriteString("-Inf")
		case v == math.Trunc(v) && math.Abs(v) < 1e15:
			b.WriteString(strconv.FormatInt(int64(v), 10))
		default:
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		}
	case float32:
		canon(b, float64(v))
	case int:
		b.WriteString(strconv.FormatInt(int64(v), 10))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case uint64:
		b.WriteString(strconv.FormatUint(v, 10))
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(strconv.Quote(k))
			b.WriteByte(':')
			canon(b, v[k])
		}
		b.WriteByte('}')
	case []any:
		b.WriteByte('[')
		for i, x := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			canon(b, x)
		}
		b.WriteByte(']')
	case Obj, []string, int32:
		canon(b, plain(v))
	default:
		rv := reflect.ValueOf(v)
		switch rv.Kind() {
		case reflect.Map:
			m := map[string]any{}
			for _, k := range rv.MapKeys() {
				m[fmt.Sprint(k.Interface())] = rv.MapIndex(k).Interface()
			}
			canon(b, m)
		case reflect.Slice, reflect.Array:
			s := make([]any, rv.Len())
			for i := range s {
				s[i] = rv.Index(i).Interface()
			}
			canon(b, s)
		default:
			fmt.Fprintf(b, "%T(%v)", v, v)
		}
	}
}

// treeGet walks a decoded tree.
func treeGet(root any, p Path) (any, bool) {
	cur := root
	for _, s := range p {
		switch s := s.(type) {
		case string:
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[s]; !ok {
				return nil, false
			}
		case int:
			a, ok := cur.([]any)
			if !ok || s < 0 || s >= len(a) {
				return nil, false
			}
			cur = a[s]
		default:
			return nil, false
		}
	}
	return cur, true
}

// treeSet sets p in root (creating objects on the way) and returns the new
// root.
func treeSet(root any, p Path, v any) (any, error) {
	if len(p) == 0 {
		return plain(v), nil
	}
	switch s := p[0].(type) {
	case string:
		m, ok := root.(map[string]any)
		if root == nil {
			m, ok = map[string]any{}, true
		}
		if !ok {
			return nil, fmt.Errorf("%v is not an object", s)
		}
		child, err := treeSet(m[s], p[1:], v)
		if err != nil {
			return nil, err
		}
		m[s] = child
		return m, nil
	case int:
		a, ok := root.([]any)
		if !ok || s < 0 || s >= len(a) {
			return nil, fmt.Errorf("no element %d", s)
		}
		child, err := treeSet(a[s], p[1:], v)
		if err != nil {
			return nil, err
		}
		a[s] = child
		return a, nil
	}
	return nil, fmt.Errorf("bad path segment %v", p[0])
}

// treeAppend appends v to the array at p (creating it).
func treeAppend(root any, p Path, v any) (any, error) {
	cur, ok := treeGet(root, p)
	var arr []any
	if ok && cur != nil {
		a, isArr := cur.([]any)
		if !isArr {
			return nil, fmt.Errorf("%s is not an array", p)
		}
		arr = a
	}
	return treeSet(root, p, append(arr, plain(v)))
}

// treeDelete removes the member at p (the last segment must be a key).
func treeDelete(root any, p Path) any {
	if len(p) == 0 {
		return root
	}
	parent, ok := treeGet(root, p[:len(p)-1])
	if !ok {
		return root
	}
	if m, ok := parent.(map[string]any); ok {
		if k, ok := p[len(p)-1].(string); ok {
			delete(m, k)
		}
	}
	return root
}

// deepCopy copies a decoded tree.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, x := range v {
			m[k] = deepCopy(x)
		}
		return m
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = deepCopy(x)
		}
		return out
	default:
		return v
	}
}

// mismatch explains a failed verification.
func mismatch(format string, got, want any) error {
	g, w := Canon(got), Canon(want)
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	from := max(0, i-40)
	return fmt.Errorf("%s edit verification failed: result differs from the intended change near %q (want %q)",
		format, textclip.Ellipsis(g[from:], 100), textclip.Ellipsis(w[from:], 100))
}

// MarshalJSON writes an Obj as a JSON object in its order.
func (o Obj) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, kv := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(kv.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(kv.Value)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// checkValue rejects text a config file cannot hold faithfully.
func checkValue(v any) error {
	switch v := v.(type) {
	case string:
		if !utf8.ValidString(v) {
			return fmt.Errorf("value %q is not valid UTF-8", v)
		}
	case Obj:
		for _, kv := range v {
			if err := checkValue(kv.Key); err != nil {
				return err
			}
			if err := checkValue(kv.Value); err != nil {
				return err
			}
		}
	case map[string]any:
		for k, x := range v {
			if err := checkValue(k); err != nil {
				return err
			}
			if err := checkValue(x); err != nil {
				return err
			}
		}
	case []any:
		for _, x := range v {
			if err := checkValue(x); err != nil {
				return err
			}
		}
	case []string:
		for _, x := range v {
			if err := checkValue(x); err != nil {
				return err
			}
		}
	case Path:
		for _, s := range v {
			if err := checkValue(s); err != nil {
				return err
			}
		}
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
