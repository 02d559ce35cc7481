package config

import (
	"fmt"
	"net"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/metaclaw-go/metaclaw/internal/yamledit"
)

// Addr is the proxy listen address, host:port.
func (c *Config) Addr() string {
	return net.JoinHostPort(strings.Trim(c.Proxy.Host, "[]"), strconv.Itoa(c.Proxy.Port))
}

// UpstreamConfigured reports whether an upstream LLM is known (llm.api_base
// set by file, env override or the OPENAI_*/ANTHROPIC_* fallback).
func (c *Config) UpstreamConfigured() bool { return strings.TrimSpace(c.LLM.APIBase) != "" }

// Source returns where key's value came from: "config", "secrets",
// "env NAME" (NAME may be OPENAI_BASE_URL etc. for the upstream fallback),
// "derived", or "default".
func (c *Config) Source(key string) string {
	if s := c.Sources[key]; s != "" {
		return s
	}
	return "default"
}

// UpstreamSource says where llm.api_base came from (see Source), or "" when
// no upstream is configured. `metaclaw status` prints it.
func (c *Config) UpstreamSource() string {
	if !c.UpstreamConfigured() {
		return ""
	}
	return c.Source("llm.api_base")
}

// Endpoint is a resolved LLM endpoint.
type Endpoint struct {
	APIBase string
	APIKey  string
	Model   string
	API     string // "openai" or "anthropic"
}

// Upstream is the endpoint the proxy forwards to.
func (c *Config) Upstream() Endpoint {
	return Endpoint{APIBase: c.LLM.APIBase, APIKey: c.LLM.APIKey, Model: c.LLM.ModelID, API: c.LLM.API}
}

// EvolverEndpoint is the LLM that writes skills: skills.evolver.* (or
// Python's rl.evolver_*), each empty field falling back to llm.*. The llm key
// is only reused when the evolver talks to the same base URL, so the
// upstream key is never sent to a different host.
func (c *Config) EvolverEndpoint() Endpoint {
	ev, up := c.Skills.Evolver, c.Upstream()
	e := Endpoint{APIBase: ev.APIBase, APIKey: ev.APIKey, Model: ev.Model, API: ev.API}
	if e.APIBase == "" {
		e.APIBase = up.APIBase
	}
	if e.APIKey == "" && strings.TrimRight(e.APIBase, "/") == strings.TrimRight(up.APIBase, "/") {
		e.APIKey = up.APIKey
	}
	if e.Model == "" {
		e.Model = up.Model
	}
	if e.API == "" {
		e.API = up.API
	}
	return e
}

// Get returns one key's value as text (lists comma-separated), or for a
// section such as "llm" the YAML of that section. Secrets are returned in
// clear; call c.Masked().Get(key) for display.
func (c *Config) Get(key string) (string, error) {
	r := schema()
	f := r.lookup(key)
	if f == nil {
		return "", unknownKeyError(key)
	}
	if f.kind != kSection {
		return formatValue(f, getField(c, f)), nil
	}
	out, err := yamledit.Encode(sectionNode(f, getField(c, f)), 2)
	if err != nil {
		return "", wrapf(err, "render %s", key)
	}
	return string(out), nil
}

func unknownKeyError(key string) *Error {
	r := schema()
	parent, name := r.root, key
	if i := strings.LastIndex(key, "."); i >= 0 {
		if p := r.lookup(key[:i]); p != nil && p.kind == kSection {
			parent, name = p, key[i+1:]
		}
	}
	msg := "unknown key"
	if s := r.suggest(parent, name); s != "" {
		msg += "; did you mean `" + s + "`?"
	} else {
		msg += "; see `metaclaw config keys`"
	}
	return &Error{Key: key, Msg: msg}
}

// mask hides a secret, keeping a short prefix of long keys so the user can
// tell which key is configured.
func mask(s string) string {
	if s == "" {
		return ""
	}
	if r := []rune(s); len(r) >= 16 {
		return string(r[:4]) + "…(masked)"
	}
	return "****"
}

// Masked returns a copy of c with every secret masked, for display.
func (c *Config) Masked() *Config {
	m := *c
	m.Warnings = append([]string(nil), c.Warnings...)
	m.Sources = map[string]string{}
	for k, v := range c.Sources {
		m.Sources[k] = v
	}
	m.OpenRouter.FallbackModels = append([]string(nil), c.OpenRouter.FallbackModels...)
	for _, f := range schema().leaves {
		if f.secret {
			v := getField(&m, f)
			v.SetString(mask(v.String()))
		}
	}
	return &m
}

// ShowYAML renders the effective configuration, secrets masked, in schema order.
func (c *Config) ShowYAML() ([]byte, error) {
	m := c.Masked()
	out, err := yamledit.Encode(sectionNode(schema().root, reflect.ValueOf(m).Elem()), 2)
	if err != nil {
		return nil, wrapf(err, "render config")
	}
	return out, nil
}

// sectionNode builds a YAML mapping from a section value in schema order.
func sectionNode(f *field, v reflect.Value) *yaml.Node {
	n := &yaml.Node{Kind: yaml.MappingNode}
	for _, ch := range f.children {
		key := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: ch.name}
		fv := v.Field(ch.index[len(ch.index)-1])
		var val *yaml.Node
		if ch.kind == kSection {
			val = sectionNode(ch, fv)
		} else {
			val = valueNode(ch, fv.Interface())
		}
		n.Content = append(n.Content, key, val)
	}
	return n
}

// valueNode renders a typed value as a YAML node that PyYAML reads back the
// same way (quoted times, floats with a dot).
func valueNode(f *field, val any) *yaml.Node {
	switch v := val.(type) {
	case string:
		n := &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: v}
		if f.check == "hhmm" || strings.ContainsAny(v, "\n\r") || yaml11NonString(v) {
			n.Style = yaml.DoubleQuotedStyle
		}
		return n
	case int:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(v)}
	case float64:
		s := strconv.FormatFloat(v, 'g', -1, 64)
		if !strings.ContainsAny(s, ".") {
			if i := strings.IndexAny(s, "eE"); i >= 0 {
				s = s[:i] + ".0" + s[i:]
			} else {
				s += ".0"
			}
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: s}
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: strconv.FormatBool(v)}
	case []string:
		n := &yaml.Node{Kind: yaml.SequenceNode, Tag: "!!seq", Style: yaml.FlowStyle}
		for _, s := range v {
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s})
		}
		return n
	}
	panic(fmt.Sprintf("config: no YAML rendering for %T", val))
}

// yaml11NonString reports plain scalars that PyYAML (YAML 1.1) would not
// read as strings although YAML 1.2 does: yes/no/on/off and times like 7:30.
func yaml11NonString(s string) bool {
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off":
		return true
	}
	return sexagesimalRE.MatchString(s)
}

var sexagesimalRE = regexp.MustCompile(`^[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+(\.[0-9_]*)?$`)
