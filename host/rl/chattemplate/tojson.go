package chattemplate

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"
)

// pyTojson is Hugging Face's tojson filter: Python's
// json.dumps(x, ensure_ascii=False, indent=indent, separators=separators,
// sort_keys=sort_keys). Tool schemas reach the prompt through it, so its
// spacing, escapes and number spelling decide the prompt's tokens.
func pyTojson(args []jinja.Value, kwargs map[string]jinja.Value) (jinja.Value, error) {
	if len(args) < 1 {
		return jinja.Undefined(), errors.New("tojson: no value")
	}
	d := dumper{ensureASCII: false, itemSep: ", ", keySep: ": "}
	if v, ok := kwargs["ensure_ascii"]; ok {
		d.ensureASCII = v.IsTruthy()
	}
	if v, ok := kwargs["sort_keys"]; ok {
		d.sortKeys = v.IsTruthy()
	}
	if v, ok := kwargs["indent"]; ok && !v.IsNone() && !v.IsUndefined() {
		switch {
		case v.IsInt():
			d.indent = strings.Repeat(" ", max(0, int(v.AsInt())))
		case v.IsString():
			d.indent = v.AsString()
		default:
			return jinja.Undefined(), fmt.Errorf("tojson: indent must be an integer or a string, got %s", v.String())
		}
		d.indented = true
		d.itemSep = ","
	}
	if v, ok := kwargs["separators"]; ok && !v.IsNone() && !v.IsUndefined() {
		if !v.IsList() || v.AsList().Len() != 2 || !v.AsList().Get(0).IsString() || !v.AsList().Get(1).IsString() {
			return jinja.Undefined(), errors.New("tojson: separators must be a pair of strings")
		}
		d.itemSep, d.keySep = v.AsList().Get(0).AsString(), v.AsList().Get(1).AsString()
	}
	var b strings.Builder
	if err := d.dump(&b, args[0], 0); err != nil {
		return jinja.Undefined(), err
	}
	return jinja.NewString(b.String()), nil
}

type dumper struct {
	ensureASCII, sortKeys, indented bool
	indent, itemSep, keySep         string
}

func (d *dumper) newline(b *strings.Builder, depth int) {
	if d.indented {
		b.WriteByte('\n')
		b.WriteString(strings.Repeat(d.indent, depth))
	}
}

func (d *dumper) dump(b *strings.Builder, v jinja.Value, depth int) error {
	if depth > 200 {
		return errors.New("tojson: nesting too deep")
	}
	switch {
	case v.IsUndefined():
		return errors.New("tojson: value is undefined")
	case v.IsNone():
		b.WriteString("null")
	case v.IsBool():
		b.WriteString(strconv.FormatBool(v.AsBool()))
	case v.IsInt():
		b.WriteString(strconv.FormatInt(v.AsInt(), 10))
	case v.IsFloat():
		b.WriteString(pyFloatJSON(v.AsFloat()))
	case v.IsString():
		d.str(b, v.AsString())
	case v.IsList():
		items := v.AsList().Items
		if len(items) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteByte('[')
		for i, it := range items {
			if i > 0 {
				b.WriteString(d.itemSep)
			}
			d.newline(b, depth+1)
			if err := d.dump(b, it, depth+1); err != nil {
				return err
			}
		}
		d.newline(b, depth)
		b.WriteByte(']')
	case v.IsDict():
		dict := v.AsDict()
		keys := dict.OrderedKeys()
		if len(keys) == 0 {
			b.WriteString("{}")
			return nil
		}
		if d.sortKeys {
			sort.Strings(keys)
		}
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteString(d.itemSep)
			}
			d.newline(b, depth+1)
			d.str(b, k)
			b.WriteString(d.keySep)
			val, _ := dict.Get(k)
			if err := d.dump(b, val, depth+1); err != nil {
				return err
			}
		}
		d.newline(b, depth)
		b.WriteByte('}')
	default:
		return fmt.Errorf("tojson: cannot serialise %s", v.String())
	}
	return nil
}

// str writes s as Python's json module does: \" \\ \n \r \t \b \f, other
// control characters as \u00XX, everything else raw (ensure_ascii=False)
// or non-ASCII as \uXXXX with surrogate pairs (ensure_ascii=True).
func (d *dumper) str(b *strings.Builder, s string) {
	const hex = "0123456789abcdef"
	u4 := func(r rune) {
		b.WriteString(`\u`)
		for shift := 12; shift >= 0; shift -= 4 {
			b.WriteByte(hex[(r>>shift)&0xF])
		}
	}
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20:
				u4(r)
			case r < 0x7F || !d.ensureASCII:
				b.WriteRune(r)
			case r < 0x10000:
				u4(r)
			default:
				r -= 0x10000
				u4(0xD800 + (r >> 10))
				u4(0xDC00 + (r & 0x3FF))
			}
		}
	}
	b.WriteByte('"')
}

// pyFloatJSON spells f as Python's float.__repr__ (what json.dumps uses):
// the shortest digits that round-trip, a ".0" on integral values, and
// exponent notation below 1e-4 or from 1e16 on ("1e-05", "1e+16").
func pyFloatJSON(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case f == 0:
		if math.Signbit(f) {
			return "-0.0"
		}
		return "0.0"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddddde±XX
	mant, expStr, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expStr)
	neg := strings.HasPrefix(mant, "-")
	mant = strings.TrimPrefix(mant, "-")
	digits := strings.Replace(mant, ".", "", 1)
	var out string
	switch {
	case exp < -4 || exp >= 16:
		out = digits[:1]
		if len(digits) > 1 {
			out += "." + digits[1:]
		}
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		out += "e" + sign + fmt.Sprintf("%02d", exp)
	case exp < 0:
		out = "0." + strings.Repeat("0", -exp-1) + digits
	default:
		intLen := exp + 1
		if len(digits) <= intLen {
			out = digits + strings.Repeat("0", intLen-len(digits)) + ".0"
		} else {
			out = digits[:intLen] + "." + digits[intLen:]
		}
	}
	if neg {
		out = "-" + out
	}
	return out
}
