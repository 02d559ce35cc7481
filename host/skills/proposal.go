package skills

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// ProposalSchema is the JSON Schema of the evolver's answer (it is shown to
// the evolver; ParseProposals enforces the same rules).
//
//go:embed proposal.schema.json
var ProposalSchema string

// MaxProposals bounds how many proposals one answer may carry.
const MaxProposals = 8

// Proposal is one skill the evolver wants to create or update.
type Proposal struct {
	Action      string   `json:"action"` // create | update
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Category    string   `json:"category,omitempty"`
	Tags        []string `json:"tags,omitempty"`
	Body        string   `json:"body"`
	Rationale   string   `json:"rationale"`
}

var categoryRe = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// ParseProposals decodes and strictly validates an evolver answer: exactly
// the schema's fields and types, required fields present, lengths within
// bounds. One bad proposal fails the whole answer (the model did not follow
// the contract, so none of it is trusted).
func ParseProposals(raw []byte) ([]Proposal, error) {
	var top map[string]json.RawMessage
	if err := strictObject(raw, &top); err != nil {
		return nil, fmt.Errorf("answer: %w", err)
	}
	for k := range top {
		if k != "proposals" {
			return nil, fmt.Errorf("answer: unknown field %q (only \"proposals\" is allowed)", k)
		}
	}
	list, ok := top["proposals"]
	if !ok {
		return nil, errors.New("answer: missing required field \"proposals\"")
	}
	var items []json.RawMessage
	if err := json.Unmarshal(list, &items); err != nil || bytes.HasPrefix(bytes.TrimSpace(list), []byte("null")) {
		return nil, errors.New("answer: \"proposals\" must be an array")
	}
	if len(items) > MaxProposals {
		return nil, fmt.Errorf("answer: %d proposals, at most %d allowed", len(items), MaxProposals)
	}
	out := make([]Proposal, 0, len(items))
	for i, it := range items {
		p, err := parseProposal(it)
		if err != nil {
			return nil, fmt.Errorf("proposals[%d]: %w", i, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// strictObject decodes a JSON object, rejecting duplicate keys and trailing data.
func strictObject(raw []byte, into *map[string]json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return errors.New("must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil {
		return err
	}
	m := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, ok := tok.(string)
		if !ok {
			return errors.New("malformed object")
		}
		if _, dup := m[key]; dup {
			return fmt.Errorf("duplicate field %q", key)
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return fmt.Errorf("field %q: %w", key, err)
		}
		m[key] = v
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("trailing data after the object")
	}
	*into = m
	return nil
}

func str(m map[string]json.RawMessage, key string, required bool, minLen, maxLen int) (string, error) {
	v, ok := m[key]
	if !ok {
		if required {
			return "", fmt.Errorf("missing required field %q", key)
		}
		return "", nil
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", fmt.Errorf("%s: must be a string", key)
	}
	s = strings.TrimSpace(s)
	n := utf8.RuneCountInString(s)
	if n < minLen || n > maxLen {
		return "", fmt.Errorf("%s: %d characters, must be %d–%d", key, n, minLen, maxLen)
	}
	return s, nil
}

func parseProposal(raw json.RawMessage) (Proposal, error) {
	var p Proposal
	var m map[string]json.RawMessage
	if err := strictObject(raw, &m); err != nil {
		return p, err
	}
	allowed := map[string]bool{"action": true, "name": true, "description": true, "category": true, "tags": true, "body": true, "rationale": true}
	for k := range m {
		if !allowed[k] {
			return p, fmt.Errorf("unknown field %q", k)
		}
	}
	var err error
	if p.Action, err = str(m, "action", true, 1, 16); err != nil {
		return p, err
	}
	if p.Action != "create" && p.Action != "update" {
		return p, fmt.Errorf("action: %q is not create or update", p.Action)
	}
	if p.Name, err = str(m, "name", true, 3, MaxNameLen); err != nil {
		return p, err
	}
	if !SlugRe.MatchString(p.Name) {
		return p, fmt.Errorf("name: %q is not kebab-case (a-z, 0-9, single hyphens)", p.Name)
	}
	if p.Description, err = str(m, "description", true, MinDescriptionChars, MaxDescriptionChars); err != nil {
		return p, err
	}
	if strings.ContainsAny(p.Description, "\n\r") {
		return p, errors.New("description: must be one line")
	}
	if p.Category, err = str(m, "category", false, 0, MaxProposalCategoryLen); err != nil {
		return p, err
	}
	if p.Category != "" && !categoryRe.MatchString(p.Category) {
		return p, fmt.Errorf("category: %q must be lowercase letters, digits and hyphens", p.Category)
	}
	if v, ok := m["tags"]; ok {
		var tags []json.RawMessage
		if err := json.Unmarshal(v, &tags); err != nil || bytes.HasPrefix(bytes.TrimSpace(v), []byte("null")) {
			return p, errors.New("tags: must be an array of strings")
		}
		if len(tags) > MaxProposalTags {
			return p, fmt.Errorf("tags: %d tags, at most %d", len(tags), MaxProposalTags)
		}
		for i, tv := range tags {
			var t string
			if err := json.Unmarshal(tv, &t); err != nil {
				return p, fmt.Errorf("tags[%d]: must be a string", i)
			}
			t = strings.TrimSpace(t)
			if n := utf8.RuneCountInString(t); n < 1 || n > MaxProposalTagChars || strings.ContainsAny(t, "\n\r,") {
				return p, fmt.Errorf("tags[%d]: must be 1–%d characters without commas or line breaks", i, MaxProposalTagChars)
			}
			p.Tags = append(p.Tags, t)
		}
	}
	if p.Body, err = str(m, "body", true, MinProposalBodyChars, MaxProposalBodyChars); err != nil {
		return p, err
	}
	if p.Rationale, err = str(m, "rationale", true, 1, MaxProposalRationale); err != nil {
		return p, err
	}
	return p, nil
}
