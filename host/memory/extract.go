package memory

import (
	"context"
	"time"
)

// Turn is one exchange to learn from: the user's new text and the
// assistant's final text of a recorded main turn (transcript.FromTurn), or
// a turn posted to the HTTP API. Its JSON matches MetaClaw's
// {prompt_text, response_text}.
type Turn struct {
	// Source identifies the turn for exactly-once ingestion ("<host>/<turn id>").
	Source    string    `json:"source,omitempty"`
	SessionID string    `json:"session_id,omitempty"`
	Scope     string    `json:"scope_id,omitempty"`
	Agent     string    `json:"agent,omitempty"`
	User      string    `json:"prompt_text"`
	Assistant string    `json:"response_text,omitempty"`
	TurnID    int64     `json:"turn_id,omitempty"`
	At        time.Time `json:"at,omitempty"`
	// Injected are the memory ids injected into this turn (attribution).
	Injected []string `json:"injected,omitempty"`
}

// Candidate is a memory an extractor proposes; consolidation decides
// whether it is new, a repeat (merged) or a change of mind (supersedes).
type Candidate struct {
	Type       Type
	Content    string
	Subject    string // slot key, e.g. "pref:indentation", "fact:my timezone"
	Value      string // the slot's value, normalised
	Entities   []string
	Tags       []string
	Importance float64
	Confidence float64
	TTL        time.Duration // 0: no expiry
	// Correction marks a statement that corrects or replaces an earlier one
	// ("actually…", "不对，应该…", "we switched to…").
	Correction bool
	// Turn is the index of the source turn in the extracted slice.
	Turn int
}

// Extractor turns exchanges into candidate memories.
type Extractor interface {
	Name() string
	Extract(ctx context.Context, turns []Turn) ([]Candidate, error)
	// Summarize returns the working summary of a session's exchanges
	// (ok false when there is nothing worth summarising).
	Summarize(ctx context.Context, turns []Turn) (c Candidate, ok bool, err error)
}
