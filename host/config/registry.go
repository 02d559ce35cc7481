package config

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// KeyInfo describes one leaf key; Keys returns one per key, in schema order.
// It feeds `metaclaw config keys`, the README and manifest.json.
type KeyInfo struct {
	Path        string   `json:"path"`              // dotted key, e.g. "llm.api_base"
	Type        string   `json:"type"`              // string | int | float | bool | list
	Default     string   `json:"default"`           // "$METACLAW_HOME" stands for the state dir
	Secret      bool     `json:"secret,omitempty"`  // lives in secrets.yaml, masked on display
	Description string   `json:"description"`       // includes the compatibility note, if any
	Env         string   `json:"env"`               // override variable, e.g. METACLAW_LLM_API_BASE
	Allowed     []string `json:"allowed,omitempty"` // enum values, canonical spellings only
	Status      string   `json:"status,omitempty"`  // "", "compat" or "legacy" (see schema.go)
}

type kind int

const (
	kSection kind = iota
	kString
	kInt
	kFloat
	kBool
	kList
)

func (k kind) String() string {
	switch k {
	case kSection:
		return "section"
	case kString:
		return "string"
	case kInt:
		return "int"
	case kFloat:
		return "float"
	case kBool:
		return "bool"
	case kList:
		return "list"
	}
	return "?"
}

// field is the parsed form of one schema field (leaf or section).
type field struct {
	path    string
	name    string
	index   []int
	kind    kind
	def     string // raw default tag
	desc    string
	enum    []string
	aliases map[string]string
	min     *float64
	minExcl bool
	max     *float64
	check   string
	derive  string
	sameAs  string
	secret  bool
	status  string

	children []*field
	byName   map[string]*field
}

type registry struct {
	root   *field
	byPath map[string]*field
	leaves []*field
}

var (
	regOnce sync.Once
	reg     *registry
)

// schema returns the registry built from the Config struct tags.
// A malformed tag is a programming error caught by the package tests.
func schema() *registry {
	regOnce.Do(func() {
		r := &registry{byPath: map[string]*field{}}
		r.root = &field{kind: kSection, byName: map[string]*field{}}
		r.walk(r.root, reflect.TypeOf(Config{}), nil)
		reg = r
	})
	return reg
}

func (r *registry) walk(parent *field, t reflect.Type, index []int) {
	for i := 0; i < t.NumField(); i++ {
		sf := t.Field(i)
		name := strings.Split(sf.Tag.Get("yaml"), ",")[0]
		if !sf.IsExported() || name == "" || name == "-" {
			continue
		}
		f := &field{
			name:   name,
			index:  append(append([]int(nil), index...), i),
			def:    sf.Tag.Get("default"),
			desc:   sf.Tag.Get("desc"),
			check:  sf.Tag.Get("check"),
			derive: sf.Tag.Get("derive"),
			sameAs: sf.Tag.Get("sameas"),
			secret: sf.Tag.Get("secret") != "",
			status: sf.Tag.Get("status"),
		}
		f.path = name
		if parent.path != "" {
			f.path = parent.path + "." + name
		}
		switch sf.Type.Kind() {
		case reflect.Struct:
			f.kind = kSection
			f.byName = map[string]*field{}
		case reflect.String:
			f.kind = kString
		case reflect.Int:
			f.kind = kInt
		case reflect.Float64:
			f.kind = kFloat
		case reflect.Bool:
			f.kind = kBool
		case reflect.Slice:
			if sf.Type.Elem().Kind() != reflect.String {
				panic("config: unsupported slice type for " + f.path)
			}
			f.kind = kList
		default:
			panic("config: unsupported field type for " + f.path)
		}
		if e := sf.Tag.Get("enum"); e != "" {
			f.enum = strings.Split(e, ",")
		}
		if a := sf.Tag.Get("alias"); a != "" {
			f.aliases = map[string]string{}
			for _, pair := range strings.Split(a, ",") {
				from, to, _ := strings.Cut(pair, "=")
				f.aliases[from] = to
			}
		}
		if m := sf.Tag.Get("min"); m != "" {
			if strings.HasPrefix(m, ">") {
				f.minExcl = true
				m = m[1:]
			}
			v := mustFloat(f.path, m)
			f.min = &v
		}
		if m := sf.Tag.Get("max"); m != "" {
			v := mustFloat(f.path, m)
			f.max = &v
		}
		parent.children = append(parent.children, f)
		parent.byName[name] = f
		r.byPath[f.path] = f
		if f.kind == kSection {
			r.walk(f, sf.Type, f.index)
		} else {
			r.leaves = append(r.leaves, f)
		}
	}
}

func mustFloat(path, s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		panic(fmt.Sprintf("config: bad bound %q on %s", s, path))
	}
	return v
}

// lookup returns the field for a dotted path, or nil.
func (r *registry) lookup(path string) *field { return r.byPath[path] }

// envName is the override variable of a key: METACLAW_ + upper(path, . → _).
func envName(path string) string {
	return "METACLAW_" + strings.ToUpper(strings.ReplaceAll(path, ".", "_"))
}

// Keys lists every leaf key with its metadata, in schema order.
func Keys() []KeyInfo {
	r := schema()
	def := base("$METACLAW_HOME")
	def.derive()
	v := reflect.ValueOf(def).Elem()
	out := make([]KeyInfo, 0, len(r.leaves))
	for _, f := range r.leaves {
		desc := f.desc
		switch f.status {
		case "compat":
			desc += " (Accepted for compatibility; not used yet.)"
		case "legacy":
			desc += " (Legacy: accepted for compatibility and ignored.)"
		}
		out = append(out, KeyInfo{
			Path:        f.path,
			Type:        f.kind.String(),
			Default:     formatValue(f, v.FieldByIndex(f.index)),
			Secret:      f.secret,
			Description: desc,
			Env:         envName(f.path),
			Allowed:     append([]string(nil), f.enum...),
			Status:      f.status,
		})
	}
	return out
}

// formatValue renders a leaf value the way Get prints it and Set reads it.
func formatValue(f *field, v reflect.Value) string {
	switch f.kind {
	case kString:
		return v.String()
	case kInt:
		return strconv.FormatInt(v.Int(), 10)
	case kFloat:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case kBool:
		return strconv.FormatBool(v.Bool())
	case kList:
		return strings.Join(v.Interface().([]string), ",")
	}
	return ""
}

// parseValue converts text (CLI argument, env value or default tag) to the
// field's Go type. The error says what was expected, without the key name.
func parseValue(f *field, s string) (any, error) {
	switch f.kind {
	case kString:
		return f.canonical(s), nil
	case kInt:
		n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 0)
		if err != nil {
			// Accept integral floats such as "30000.0" the way Python's int() of a YAML float does.
			fl, ferr := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if ferr != nil || fl != math.Trunc(fl) || math.Abs(fl) > math.MaxInt32 {
				return nil, fmt.Errorf("expected an integer, got %q", s)
			}
			n = int64(fl)
		}
		return int(n), nil
	case kFloat:
		fl, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || math.IsNaN(fl) || math.IsInf(fl, 0) {
			return nil, fmt.Errorf("expected a number, got %q", s)
		}
		return fl, nil
	case kBool:
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true", "yes", "on", "1":
			return true, nil
		case "false", "no", "off", "0":
			return false, nil
		}
		return nil, fmt.Errorf("expected a boolean (true/false/yes/no/1/0), got %q", s)
	case kList:
		return parseList(s)
	}
	return nil, fmt.Errorf("%s is a section, not a value", f.path)
}

// parseList reads "a, b" or a YAML flow sequence "[a, b]".
func parseList(s string) ([]string, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "[") {
		var items []string
		if err := yamlUnmarshalStrings(t, &items); err != nil {
			return nil, fmt.Errorf("expected a list like [a, b]: %w", err)
		}
		return cleanList(items), nil
	}
	return cleanList(strings.Split(t, ",")), nil
}

func cleanList(items []string) []string {
	out := []string{}
	for _, it := range items {
		if it = strings.TrimSpace(it); it != "" {
			out = append(out, it)
		}
	}
	return out
}

// canonical rewrites an accepted alias spelling to its canonical value.
func (f *field) canonical(s string) string {
	if to, ok := f.aliases[s]; ok {
		return to
	}
	if f.enum != nil {
		// Enums are case-insensitive on input ("Auto" works) but stored canonical.
		for _, e := range f.enum {
			if strings.EqualFold(e, s) {
				return e
			}
		}
		if to, ok := f.aliases[strings.ToLower(s)]; ok {
			return to
		}
	}
	return s
}

// allowed reports whether s is an accepted value of an enum field.
func (f *field) allowed(s string) bool {
	if f.enum == nil {
		return true
	}
	if _, ok := f.aliases[s]; ok {
		return true
	}
	for _, e := range f.enum {
		if e == s {
			return true
		}
	}
	return false
}

// example is a one-line YAML sample used in type-error messages.
func (f *field) example() string {
	v := f.def
	switch f.kind {
	case kInt:
		if v == "" {
			v = "0"
		}
	case kFloat:
		if v == "" {
			v = "1.0"
		}
	case kBool:
		if v == "" {
			v = "false"
		}
	case kList:
		v = "[a, b]"
	case kString:
		if f.enum != nil {
			v = f.enum[0]
		} else if f.check == "hhmm" {
			v = `"` + v + `"`
		} else if v == "" {
			v = `"…"`
		}
	case kSection:
		return f.name + ":\n  key: value"
	}
	v = strings.ReplaceAll(v, "$METACLAW_HOME", "~/.metaclaw")
	return f.name + ": " + v
}

// suggest finds the known key closest to an unknown one: a sibling within a
// small edit distance, or a key of the same name elsewhere (`port` → `proxy.port`).
func (r *registry) suggest(parent *field, name string) string {
	best, bestD := "", 1<<30
	for _, c := range parent.children {
		if d := editDistance(strings.ToLower(name), c.name); d < bestD {
			best, bestD = c.path, d
		}
	}
	if limit := max(1, len(name)/3); bestD <= limit {
		return best
	}
	var same []string
	for p, f := range r.byPath {
		if f.name == strings.ToLower(name) {
			same = append(same, p)
		}
	}
	if len(same) > 0 {
		sort.Strings(same)
		return same[0]
	}
	return ""
}

// editDistance is the Levenshtein distance, with adjacent swaps counting one.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
