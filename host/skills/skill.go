// Package skills is MetaClaw's skill library: human-editable SKILL.md folders
// (the source of truth) indexed into the store for BM25 (SQLite FTS5) and
// optional embedding retrieval, a core.Provider that injects the few skills
// that matter for a turn within a token budget, and an evolver that turns
// finished sessions into new or improved skills, checked before they can
// reach a prompt.
package skills

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// Status values of a skill. Only active skills are ever injected.
const (
	StatusActive   = "active"
	StatusPending  = "pending"  // waiting for review (skills.review: manual)
	StatusDisabled = "disabled" // kept, never injected
)

// FileName is the skill file inside its folder.
const FileName = "SKILL.md"

// ProposalFile holds an evolver edit of an existing skill waiting for
// review; `metaclaw skills approve` replaces SKILL.md with it.
const ProposalFile = "PROPOSED.md"

// Limits on what a skill file may hold.
const (
	MaxFileBytes        = 256 << 10
	MaxNameLen          = 64
	MaxDescriptionChars = 1024
)

// Skill is one parsed SKILL.md.
type Skill struct {
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Category    string    `json:"category"`
	Tags        []string  `json:"tags,omitempty"`
	Agents      []string  `json:"agents,omitempty"` // empty: every agent
	Status      string    `json:"status"`
	Generation  int       `json:"generation"`
	Source      string    `json:"source,omitempty"` // bank | user | evolver | import | python | …
	Created     time.Time `json:"created,omitzero"`
	Updated     time.Time `json:"updated,omitzero"`
	Body        string    `json:"body"`
	// Extra keeps frontmatter keys this package does not know (e.g. the
	// Claude/OpenClaw "license" or "metadata"), so rewriting a file keeps them.
	Extra map[string]any `json:"extra,omitempty"`

	// Set by the library, never written to the file.
	Path        string   `json:"path,omitempty"`
	Hash        string   `json:"hash,omitempty"`
	HasProposal bool     `json:"has_proposal,omitempty"`
	Warnings    []string `json:"warnings,omitempty"` // lint findings that do not stop loading
}

// ID is how the skill is named in injected ids: skill:<name>@<generation>.
func (s *Skill) ID() string { return fmt.Sprintf("skill:%s@%d", s.Name, s.Generation) }

// Active reports whether the skill may be injected.
func (s *Skill) Active() bool { return s.Status == StatusActive }

// ForAgent reports whether the skill applies to an agent.
func (s *Skill) ForAgent(agent string) bool {
	if len(s.Agents) == 0 {
		return true
	}
	for _, a := range s.Agents {
		if a == agent || a == "*" {
			return true
		}
	}
	return false
}

// Clone returns a deep copy.
func (s *Skill) Clone() *Skill {
	c := *s
	c.Tags = append([]string(nil), s.Tags...)
	c.Agents = append([]string(nil), s.Agents...)
	c.Warnings = append([]string(nil), s.Warnings...)
	if s.Extra != nil {
		c.Extra = make(map[string]any, len(s.Extra))
		for k, v := range s.Extra {
			c.Extra[k] = v
		}
	}
	return &c
}

var (
	nameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	// SlugRe is the stricter form names written by MetaClaw (evolver, CLI add) take.
	SlugRe  = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z0-9]+)*$`)
	agentRe = regexp.MustCompile(`^[A-Za-z0-9*][A-Za-z0-9._:@*-]*$`)
)

// ValidName reports whether name can identify a skill: 1–64 letters, digits,
// '.', '_' or '-', starting with a letter or digit (it is also a folder name).
func ValidName(name string) error {
	switch {
	case name == "":
		return errors.New("name is empty")
	case len(name) > MaxNameLen:
		return fmt.Errorf("name is longer than %d characters", MaxNameLen)
	case !nameRe.MatchString(name) || strings.Contains(name, ".."):
		return fmt.Errorf("name %q may only hold letters, digits, '.', '_' and '-', and must start with a letter or digit", name)
	}
	return nil
}

// stringList accepts a YAML sequence or a comma-separated string.
type stringList []string

func (l *stringList) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			*l = nil
			return nil
		}
		var out []string
		for _, p := range strings.Split(n.Value, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		*l = out
		return nil
	case yaml.SequenceNode:
		var raw []string
		if err := n.Decode(&raw); err != nil {
			return err
		}
		var out []string
		for _, p := range raw {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
		*l = out
		return nil
	}
	return fmt.Errorf("line %d: expected a list or a comma-separated string", n.Line)
}

func (l stringList) MarshalYAML() (any, error) {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, s := range l {
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: s})
	}
	return n, nil
}

// flexTime accepts RFC 3339 timestamps, "2006-01-02 15:04:05" and plain dates.
type flexTime struct{ time.Time }

var timeLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05", "2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05", "2006-01-02"}

func parseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range timeLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("%q is not a date (use 2006-01-02 or RFC 3339)", s)
}

func (t *flexTime) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: expected a date", n.Line)
	}
	if n.Tag == "!!null" || strings.TrimSpace(n.Value) == "" {
		t.Time = time.Time{}
		return nil
	}
	v, err := parseTime(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	t.Time = v
	return nil
}

func (t flexTime) MarshalYAML() (any, error) { return t.UTC().Format(time.RFC3339), nil }

func (t flexTime) IsZero() bool { return t.Time.IsZero() }

type frontmatter struct {
	Name        string         `yaml:"name"`
	Description string         `yaml:"description"`
	Category    string         `yaml:"category,omitempty"`
	Tags        stringList     `yaml:"tags,omitempty"`
	Agents      stringList     `yaml:"agents,omitempty"`
	Status      string         `yaml:"status,omitempty"`
	Generation  int            `yaml:"generation,omitempty"`
	Source      string         `yaml:"source,omitempty"`
	Created     flexTime       `yaml:"created,omitempty"`
	Updated     flexTime       `yaml:"updated,omitempty"`
	Extra       map[string]any `yaml:",inline"`
}

// ParseError explains why a file is not a usable skill.
type ParseError struct {
	Path   string
	Reason string
}

func (e *ParseError) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return e.Path + ": " + e.Reason
}

func perr(format string, a ...any) error { return &ParseError{Reason: fmt.Sprintf(format, a...)} }

// Parse reads a SKILL.md: a frontmatter block between '---' lines (YAML;
// name and description required) and a Markdown body. Frontmatter that is
// not valid YAML but is the "key: value" lines Python MetaClaw wrote is read
// the way Python read it, with a warning. Parse never panics.
func Parse(data []byte) (s *Skill, err error) {
	defer func() {
		if r := recover(); r != nil {
			s, err = nil, perr("frontmatter could not be parsed: %v", r)
		}
	}()
	if len(data) > MaxFileBytes {
		return nil, perr("file is larger than %d KiB", MaxFileBytes>>10)
	}
	if !utf8.Valid(data) {
		return nil, perr("file is not valid UTF-8")
	}
	text := strings.TrimPrefix(string(data), "\ufeff")
	text = strings.ReplaceAll(text, "\r\n", "\n")
	fmText, body, ok := splitFrontmatter(text)
	if !ok {
		if strings.HasPrefix(strings.TrimLeft(text, " \t\n"), "---") {
			return nil, perr("frontmatter is not closed: add a line with only '---' after it")
		}
		return nil, perr("no frontmatter: the file must start with a '---' line, then name: and description:, then '---'")
	}
	var fm frontmatter
	var warnings []string
	if len(fmText) > maxFrontmatter {
		return nil, perr("frontmatter is larger than %d KiB", maxFrontmatter>>10)
	}
	if yerr := decodeFrontmatter(fmText, &fm); yerr != nil {
		var shape *shapeError
		if errors.As(yerr, &shape) {
			return nil, perr("frontmatter %s", shape.msg)
		}
		// Python MetaClaw split "key: value" at the first colon, so its files
		// may hold unquoted colons YAML rejects. Only that syntax error is
		// forgiven; wrong types are not.
		var typeErr *yaml.TypeError
		if errors.As(yerr, &typeErr) || !strings.Contains(yamlReason(yerr), "mapping values are not allowed") {
			return nil, perr("frontmatter is not valid YAML: %s", yamlReason(yerr))
		}
		legacy, lerr := parseLegacy(fmText)
		if lerr != nil {
			return nil, perr("frontmatter is not valid YAML: %s", yamlReason(yerr))
		}
		fm = legacy
		warnings = append(warnings, "frontmatter is not valid YAML ("+yamlReason(yerr)+"); read as 'key: value' lines like Python MetaClaw did — quote values that contain ': '")
	}
	s = &Skill{
		Name:        strings.TrimSpace(fm.Name),
		Description: strings.TrimSpace(fm.Description),
		Category:    strings.TrimSpace(fm.Category),
		Tags:        cleanList(fm.Tags),
		Agents:      cleanList(fm.Agents),
		Status:      strings.ToLower(strings.TrimSpace(fm.Status)),
		Generation:  fm.Generation,
		Source:      strings.TrimSpace(fm.Source),
		Created:     fm.Created.Time,
		Updated:     fm.Updated.Time,
		Body:        strings.TrimSpace(body),
		Extra:       fm.Extra,
		Warnings:    warnings,
	}
	if len(s.Extra) == 0 {
		s.Extra = nil
	}
	if err := s.normalize(); err != nil {
		return nil, err
	}
	return s, nil
}

// normalize fills defaults and validates; it is what Parse and the writers share.
func (s *Skill) normalize() error {
	if s.Name == "" {
		return perr("frontmatter has no name: add 'name: my-skill'")
	}
	if err := ValidName(s.Name); err != nil {
		return perr("%v", err)
	}
	if s.Description == "" {
		return perr("frontmatter has no description: add 'description: when to use this skill'")
	}
	if strings.ContainsAny(s.Description, "\x00") || strings.ContainsRune(s.Name, 0) {
		return perr("frontmatter holds a NUL character")
	}
	if s.Category == "" {
		s.Category = "general"
	}
	switch s.Status {
	case "":
		s.Status = StatusActive
	case StatusActive, StatusPending, StatusDisabled:
	default:
		return perr("status %q is not one of active, pending, disabled", s.Status)
	}
	if s.Generation < 0 {
		return perr("generation %d is negative", s.Generation)
	}
	if s.Generation == 0 {
		s.Generation = 1
	}
	for _, a := range s.Agents {
		if !agentRe.MatchString(a) || len(a) > 128 {
			return perr("agent %q is not a valid agent id", a)
		}
	}
	for _, t := range s.Tags {
		if strings.ContainsAny(t, "\n\r\x00") || len(t) > 64 {
			return perr("tag %q is too long or holds a line break", t)
		}
	}
	return nil
}

// Lint returns findings that do not stop a skill from loading.
func (s *Skill) lint(folder string) []string {
	out := append([]string(nil), s.Warnings...)
	if folder != "" && folder != s.Name {
		out = append(out, fmt.Sprintf("folder %q differs from name %q (the name identifies the skill)", folder, s.Name))
	}
	if n := utf8.RuneCountInString(s.Description); n > MaxDescriptionChars {
		out = append(out, fmt.Sprintf("description is %d characters; keep it under %d (it says when to use the skill)", n, MaxDescriptionChars))
	}
	if s.Body == "" {
		out = append(out, "body is empty: only the description will be injected")
	}
	return out
}

func cleanList(l []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, v := range l {
		v = strings.TrimSpace(v)
		if v == "" || seen[v] {
			continue
		}
		seen[v] = true
		out = append(out, v)
	}
	return out
}

func yamlReason(err error) string {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = strings.TrimSpace(strings.ReplaceAll(msg, "\n", "; "))
	}
	msg = textclip.Ellipsis(msg, 200)
	return msg
}

// splitFrontmatter cuts "---\n<yaml>\n---\n<body>". Leading blank lines are
// allowed; the closing line may also be "...".
func splitFrontmatter(text string) (fm, body string, ok bool) {
	text = strings.TrimLeft(text, "\n")
	first, rest, found := strings.Cut(text, "\n")
	if !found || strings.TrimRight(first, " \t") != "---" {
		return "", "", false
	}
	pos := 0
	for pos <= len(rest) {
		line, _, more := strings.Cut(rest[pos:], "\n")
		l := strings.TrimRight(line, " \t")
		if l == "---" || l == "..." {
			fm = rest[:pos]
			end := pos + len(line)
			if more {
				end++
			}
			return fm, rest[end:], true
		}
		if !more {
			break
		}
		pos += len(line) + 1
	}
	return "", "", false
}

var legacyLine = regexp.MustCompile(`^([A-Za-z_][A-Za-z0-9_-]*)\s*:(.*)$`)

// parseLegacy reads Python MetaClaw's frontmatter: one "key: value" per line,
// split at the first colon, optional surrounding quotes removed.
func parseLegacy(text string) (frontmatter, error) {
	var fm frontmatter
	for _, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" || strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue
		}
		m := legacyLine.FindStringSubmatch(line)
		if m == nil {
			return fm, errors.New("not key: value")
		}
		v := strings.TrimSpace(m[2])
		if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
			v = v[1 : len(v)-1]
		}
		switch strings.ToLower(m[1]) {
		case "name":
			fm.Name = v
		case "description":
			fm.Description = v
		case "category":
			fm.Category = v
		case "status":
			fm.Status = v
		case "source":
			fm.Source = v
		case "tags":
			fm.Tags = splitComma(strings.Trim(v, "[]"))
		case "agents":
			fm.Agents = splitComma(strings.Trim(v, "[]"))
		}
	}
	if fm.Name == "" || fm.Description == "" {
		return fm, errors.New("missing name or description")
	}
	return fm, nil
}

func splitComma(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.Trim(strings.TrimSpace(p), `"'`); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// maxFrontmatter bounds the YAML part of a skill file.
const maxFrontmatter = 32 << 10

// shapeError is frontmatter that parses but is not allowed.
type shapeError struct{ msg string }

func (e *shapeError) Error() string { return e.msg }

// decodeFrontmatter parses YAML into a node tree first, refusing aliases
// (a skill needs none, and expanding them is how "billion laughs" files
// eat memory) and oversized trees, then decodes the tree.
func decodeFrontmatter(text string, fm *frontmatter) error {
	var root yaml.Node
	if err := yaml.Unmarshal([]byte(text), &root); err != nil {
		return err
	}
	nodes := 0
	var walk func(n *yaml.Node) error
	walk = func(n *yaml.Node) error {
		nodes++
		if nodes > 5000 {
			return &shapeError{"has too many entries"}
		}
		if n.Kind == yaml.AliasNode || n.Anchor != "" {
			return &shapeError{"uses YAML anchors/aliases (&, *), which skills do not support"}
		}
		for _, c := range n.Content {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(&root); err != nil {
		return err
	}
	if root.Kind == 0 {
		return nil // empty document
	}
	if len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return &shapeError{"must be a mapping of keys to values (name: …, description: …)"}
	}
	return root.Decode(fm)
}

// Format renders the skill as a SKILL.md file. Known keys come first in a
// fixed order, unknown ones after, sorted; Parse(Format(s)) gives s back.
func Format(s *Skill) ([]byte, error) {
	fm := frontmatter{
		Name: s.Name, Description: s.Description, Tags: s.Tags, Agents: s.Agents,
		Generation: s.Generation, Source: s.Source, Created: flexTime{s.Created}, Updated: flexTime{s.Updated},
		Extra: s.Extra,
	}
	if s.Category != "general" {
		fm.Category = s.Category
	}
	if s.Status != StatusActive {
		fm.Status = s.Status
	}
	for _, k := range []string{"name", "description", "category", "tags", "agents", "status", "generation", "source", "created", "updated"} {
		if _, clash := fm.Extra[k]; clash {
			return nil, fmt.Errorf("extra frontmatter key %q clashes with a known key", k)
		}
	}
	var buf bytes.Buffer
	buf.WriteString("---\n")
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&fm); err != nil {
		return nil, fmt.Errorf("format skill %s: %w", s.Name, err)
	}
	if err := enc.Close(); err != nil {
		return nil, fmt.Errorf("format skill %s: %w", s.Name, err)
	}
	buf.WriteString("---\n\n")
	if body := strings.TrimSpace(s.Body); body != "" {
		buf.WriteString(body)
		buf.WriteString("\n")
	}
	return buf.Bytes(), nil
}

// Slugify turns free text into a name MetaClaw would write: lowercase ASCII
// letters and digits joined by single hyphens, at most 64 characters.
func Slugify(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)) {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
		} else {
			dash = true
		}
	}
	out := b.String()
	if out != "" && out[0] >= '0' && out[0] <= '9' {
		out = "s-" + out
	}
	if len(out) > MaxNameLen {
		cut := out[:MaxNameLen]
		if out[MaxNameLen] != '-' {
			if i := strings.LastIndexByte(cut, '-'); i > 0 {
				cut = cut[:i]
			}
		}
		out = strings.Trim(cut, "-")
	}
	return out
}
