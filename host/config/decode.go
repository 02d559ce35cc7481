package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/metaclaw-go/metaclaw/internal/yamledit"
)

// maxDepth bounds alias/merge-key recursion; the schema is only 3 levels deep.
const maxDepth = 16

// maxSteps bounds the total work on one file, so that merge keys over
// aliases (a "billion laughs" document) cannot make Load run forever.
const maxSteps = 100000

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): `)

// parseYAML parses one YAML document and returns its root node, or nil for
// an empty (or comment-only, or `null`) document.
func parseYAML(file string, data []byte) (root *yaml.Node, err error) {
	defer func() {
		// The YAML library is not ours; a panic on hostile input must not
		// take the daemon down.
		if r := recover(); r != nil {
			root, err = nil, &Error{File: file, Msg: fmt.Sprintf("invalid YAML: parser failure: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, yamlSyntaxError(file, data, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &Error{File: file, Line: extra.Line, Msg: "more than one YAML document (`---`); keep a single document"}
	} else if !errors.Is(err, io.EOF) {
		return nil, yamlSyntaxError(file, data, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	return &doc, nil
}

func yamlSyntaxError(file string, data []byte, err error) *Error {
	msg := err.Error()
	line := 0
	if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = msg[len(m[0]):]
		line = syntaxErrorLine(data, err.Error(), line)
	} else {
		msg = strings.TrimPrefix(msg, "yaml: ")
	}
	return &Error{File: file, Line: line, Msg: "invalid YAML: " + msg + "; fix the syntax (indent with spaces, quote values containing `: ` or `#`)", Err: err}
}

// maxLineSearch bounds syntaxErrorLine's work (one parse per line).
const maxLineSearch = 2000

// syntaxErrorLine finds the line a YAML syntax error is on. The YAML library
// reports the line where the broken construct's context starts, and for
// most errors counts it from 0 (`key: [unclosed` on line 3 is reported on
// line 2; a tab on line 4 inside a value begun on line 3, on line 3). The
// line a person must fix is the first one whose text makes the document
// fail this way: the shortest prefix of the file (in whole lines) that fails
// with the very same error (message and reported line, so a construct cut
// in half elsewhere does not count). When no prefix reproduces it, the
// library's line is kept.
func syntaxErrorLine(data []byte, want string, reported int) int {
	lines := bytes.SplitAfter(data, []byte("\n"))
	if len(lines) > maxLineSearch {
		return reported
	}
	for n := max(reported, 1); n <= len(lines); n++ {
		if err := parseAll(bytes.Join(lines[:n], nil)); err != nil && err.Error() == want {
			return n
		}
	}
	return reported
}

// parseAll parses every document of data and returns the first error.
func parseAll(data []byte) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("parser failure: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// docRoot returns the top mapping of a parsed document, or nil when the
// document is empty; a non-mapping top level is reported.
func docRoot(file string, doc *yaml.Node) (*yaml.Node, *Error) {
	if doc == nil {
		return nil, nil
	}
	n := yamledit.Resolve(doc.Content[0])
	if yamledit.IsNull(n) {
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: n.Line, Msg: "the top level must be a mapping of keys (e.g. `mode: auto`), got " + yamledit.Describe(n)}
	}
	return n, nil
}

// decoder applies one file's tree to a Config.
type decoder struct {
	c           *Config
	file        string // path for messages
	label       string // Sources value: "config" or "secrets"
	secretsOnly bool
	errs        *errList
	steps       int
}

// tick counts work and reports false once the budget is spent.
func (d *decoder) tick(n *yaml.Node) bool {
	d.steps++
	if d.steps == maxSteps {
		d.fail(n, "", "too many YAML aliases or merge keys; write the values out")
	}
	return d.steps < maxSteps
}

func (d *decoder) fail(n *yaml.Node, key, msg string) {
	line := 0
	if n != nil {
		line = n.Line
	}
	d.errs.add(&Error{File: d.file, Line: line, Key: key, Msg: msg})
}

func (d *decoder) mapping(sec *field, n *yaml.Node, depth int) {
	if depth > maxDepth {
		d.fail(n, sec.path, "nested too deeply (YAML aliases/merge keys)")
		return
	}
	// Merge keys (`<<: *base`) first, so explicit keys override them.
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !d.tick(n) {
			return
		}
		if k := n.Content[i]; k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			d.merge(sec, n.Content[i+1], depth+1)
		}
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if !d.tick(n) {
			return
		}
		k, v := yamledit.Resolve(n.Content[i]), n.Content[i+1]
		if k == nil || k.Kind != yaml.ScalarNode {
			d.fail(n.Content[i], sec.path, "keys must be plain names, got "+yamledit.Describe(n.Content[i]))
			continue
		}
		if k.ShortTag() == "!!merge" {
			continue
		}
		path := k.Value
		if sec.path != "" {
			path = sec.path + "." + k.Value
		}
		if first, dup := seen[k.Value]; dup {
			d.fail(k, path, fmt.Sprintf("defined twice (first at line %d); keep one", first))
			continue
		}
		seen[k.Value] = k.Line
		f := sec.byName[k.Value]
		if f == nil {
			msg := "unknown key"
			if s := schema().suggest(sec, k.Value); s != "" {
				msg += "; did you mean `" + s + "`?"
			} else {
				msg += "; see `metaclaw config keys` for the valid keys"
			}
			d.fail(k, path, msg)
			continue
		}
		d.value(f, k, v, depth+1)
	}
}

func (d *decoder) merge(sec *field, v *yaml.Node, depth int) {
	v = yamledit.Resolve(v)
	switch {
	case v == nil:
	case v.Kind == yaml.MappingNode:
		d.mapping(sec, v, depth)
	case v.Kind == yaml.SequenceNode:
		for _, item := range v.Content {
			if !d.tick(v) {
				return
			}
			d.merge(sec, item, depth+1)
		}
	default:
		d.fail(v, sec.path, "a merge key (<<) must refer to a mapping")
	}
}

func (d *decoder) value(f *field, k, v *yaml.Node, depth int) {
	v = yamledit.Resolve(v)
	if yamledit.IsNull(v) {
		return // null means "use the default"
	}
	if f.kind == kSection {
		if v.Kind != yaml.MappingNode {
			d.fail(v, f.path, "must be a section (a mapping of keys), got "+yamledit.Describe(v)+"; for example:\n  "+strings.ReplaceAll(sectionExample(f), "\n", "\n  "))
			return
		}
		d.mapping(f, v, depth)
		return
	}
	if d.secretsOnly && !f.secret {
		d.fail(k, f.path, "is not a secret and does not belong in secrets.yaml; move it to config.yaml")
		return
	}
	val, err := nodeValue(f, v)
	if err != nil {
		d.fail(v, f.path, err.Error())
		return
	}
	setField(d.c, f, val)
	if f.secret && val != "" {
		if d.c.fileSecrets == nil {
			d.c.fileSecrets = map[string][]string{}
		}
		d.c.fileSecrets[d.label] = append(d.c.fileSecrets[d.label], f.path)
	}
	d.c.Sources[f.path] = d.label
	d.c.loc[f.path] = location{file: d.file, line: k.Line}
}

func sectionExample(f *field) string {
	s := f.name + ":"
	for _, c := range f.children {
		if c.kind != kSection {
			s += "\n  " + c.example()
			break
		}
	}
	return s
}

// nodeValue converts a YAML node to the field's Go type, accepting what
// Python MetaClaw accepted (quoted numbers, yes/no booleans, lists as a
// comma-separated string) and rejecting the rest with an example.
func nodeValue(f *field, v *yaml.Node) (any, error) {
	typeErr := func() error {
		want := map[kind]string{kString: "a string", kInt: "an integer", kFloat: "a number", kBool: "a boolean (true/false)", kList: "a list"}[f.kind]
		return fmt.Errorf("expected %s, got %s; for example `%s`", want, yamledit.Describe(v), f.example())
	}
	if f.kind == kList {
		switch v.Kind {
		case yaml.SequenceNode:
			items := make([]string, 0, len(v.Content))
			for _, it := range v.Content {
				it = yamledit.Resolve(it)
				if it == nil || it.Kind != yaml.ScalarNode {
					return nil, typeErr()
				}
				if !yamledit.IsNull(it) {
					items = append(items, it.Value)
				}
			}
			return cleanList(items), nil
		case yaml.ScalarNode:
			return cleanList(strings.Split(v.Value, ",")), nil
		}
		return nil, typeErr()
	}
	if v.Kind != yaml.ScalarNode {
		return nil, typeErr()
	}
	tag := v.ShortTag()
	switch f.kind {
	case kString:
		return f.canonical(v.Value), nil
	case kInt:
		switch tag {
		case "!!int":
			var n int
			if err := v.Decode(&n); err != nil {
				return nil, typeErr()
			}
			return n, nil
		case "!!float", "!!str":
			if x, err := parseValue(f, v.Value); err == nil {
				return x, nil
			}
		}
	case kFloat:
		switch tag {
		case "!!int", "!!float":
			var x float64
			if err := v.Decode(&x); err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return nil, typeErr()
			}
			return x, nil
		case "!!str":
			if x, err := parseValue(f, v.Value); err == nil {
				return x, nil
			}
		}
	case kBool:
		switch tag {
		case "!!bool":
			var b bool
			if err := v.Decode(&b); err != nil {
				return nil, typeErr()
			}
			return b, nil
		case "!!str", "!!int":
			if x, err := parseValue(f, v.Value); err == nil {
				return x, nil
			}
		}
	}
	return nil, typeErr()
}

// setField stores a parsed value into the Config field described by f.
func setField(c *Config, f *field, val any) {
	reflect.ValueOf(c).Elem().FieldByIndex(f.index).Set(reflect.ValueOf(val))
}

func getField(c *Config, f *field) reflect.Value {
	return reflect.ValueOf(c).Elem().FieldByIndex(f.index)
}

// yamlUnmarshalStrings parses a YAML flow sequence of scalars.
func yamlUnmarshalStrings(s string, out *[]string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("parser failure: %v", r)
		}
	}()
	return yaml.Unmarshal([]byte(s), out)
}
