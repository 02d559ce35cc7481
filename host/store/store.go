// Package store persists what the host observes: sessions, turns and durable
// background jobs. The Store interface keeps the rest of the host independent
// of SQLite so that a team deployment can move to another database later.
package store

import (
	"context"
	"errors"
	"time"
)

// ErrNotFound is returned when a looked-up row does not exist.
var ErrNotFound = errors.New("not found")

// Turn is one completed LLM call as the host saw it.
type Turn struct {
	ID             int64
	SessionID      string
	Agent          string
	TurnIndex      int // assigned by the store: 1-based per session and turn type
	TurnType       string
	ClientAPI      string
	UpstreamAPI    string
	Model          string
	Stream         bool
	RequestJSON    string
	ResponseText   string
	Reasoning      string
	ToolCallsJSON  string
	StopReason     string
	InputTokens    int
	OutputTokens   int
	LatencyMS      int64
	TTFBMS         int64
	Status         int
	Error          string
	InjectedJSON   string
	InjectedTokens int
	UserID         string
	WorkspaceID    string
	MemoryScope    string
	CreatedAt      time.Time
	// SampleID is the RL sample the answer came from (0: none). It is not
	// stored with the turn; turn listeners use it to link the two.
	SampleID int64
}

// Session is a conversation: turns that belong together.
type Session struct {
	ID        string
	Agent     string
	Scope     string
	StartedAt time.Time
	LastAt    time.Time
	EndedAt   *time.Time
	EndReason string
	MainTurns int
	SideTurns int
}

// Counts summarises the store for `metaclaw status`.
type Counts struct {
	Turns          int `json:"turns"`
	Sessions       int `json:"sessions"`
	OpenSessions   int `json:"open_sessions"`
	PendingJobs    int `json:"pending_jobs"`
	FailedJobs     int `json:"failed_jobs"`
	InjectedTokens int `json:"injected_tokens"`
}

// NewJob is a job to enqueue.
type NewJob struct {
	Kind     string
	Payload  string
	RunAfter time.Time // zero = now
}

// Job is a unit of durable background work.
type Job struct {
	ID        int64
	Kind      string
	Payload   string
	State     string
	Attempts  int
	RunAfter  time.Time
	LastError string
}

// Store is the persistence the host needs.
type Store interface {
	// RecordTurns saves turns in one transaction, creating or reopening their
	// sessions and assigning TurnIndex. It fills in each turn's ID and TurnIndex.
	RecordTurns(ctx context.Context, turns []*Turn) error
	// EndSession marks a session ended (unknown ids are ignored) and enqueues
	// the given follow-up jobs, all in one transaction: a crash leaves either
	// an open session or an ended one with its jobs.
	EndSession(ctx context.Context, id, reason string, at time.Time, jobs ...NewJob) error
	Session(ctx context.Context, id string) (Session, error)
	SessionTurns(ctx context.Context, sessionID string) ([]Turn, error)
	// IdleSessions lists open sessions whose last turn is before the cut-off.
	IdleSessions(ctx context.Context, before time.Time) ([]string, error)
	Counts(ctx context.Context) (Counts, error)

	EnqueueJob(ctx context.Context, kind, payload string, runAfter time.Time) (int64, error)
	// ClaimJob moves the oldest ready job of the given kinds to running.
	ClaimJob(ctx context.Context, kinds []string, now time.Time) (Job, error)
	FinishJob(ctx context.Context, id int64) error
	// FailJob records an error; the job is retried at retryAt, or marked failed when retryAt is zero.
	FailJob(ctx context.Context, id int64, errText string, retryAt time.Time) error
	// RequeueRunning returns jobs left running by a crash to pending.
	RequeueRunning(ctx context.Context) (int, error)
	// RequeueJob returns a running job to pending without counting the
	// attempt (its run was cancelled by a shutdown, not failed).
	RequeueJob(ctx context.Context, id int64) error

	// RecentTurns lists the newest turns, newest first (dashboard, CLI).
	RecentTurns(ctx context.Context, limit int) ([]TurnSummary, error)
	// Activity counts turns and injected tokens per day and agent since a time.
	Activity(ctx context.Context, since time.Time) ([]ActivityBucket, error)

	// RecordUsage notes tokens the layer spent on its own LLM calls.
	RecordUsage(ctx context.Context, u Usage) error
	// UsageByPurpose sums recorded usage per purpose.
	UsageByPurpose(ctx context.Context) (map[string]UsageTotal, error)

	Close() error
}

// TurnSummary is a turn without its bodies.
type TurnSummary struct {
	ID             int64     `json:"id"`
	At             time.Time `json:"at"`
	Agent          string    `json:"agent"`
	SessionID      string    `json:"session_id"`
	TurnIndex      int       `json:"turn_index"`
	TurnType       string    `json:"turn_type"`
	Model          string    `json:"model"`
	Status         int       `json:"status"`
	LatencyMS      int64     `json:"latency_ms"`
	InputTokens    int       `json:"input_tokens"`
	OutputTokens   int       `json:"output_tokens"`
	Injected       []string  `json:"injected"`
	InjectedTokens int       `json:"injected_tokens"`
}

// ActivityBucket is one day of one agent's turns (day in UTC, YYYY-MM-DD).
type ActivityBucket struct {
	Day            string `json:"day"`
	Agent          string `json:"agent"`
	Turns          int    `json:"turns"`
	Sessions       int    `json:"sessions"`
	InjectedTokens int    `json:"injected_tokens"`
}

// Usage is one LLM call made by the layer itself.
type Usage struct {
	Purpose      string
	Model        string
	InputTokens  int
	OutputTokens int
	OK           bool
	At           time.Time
}

// UsageTotal sums Usage rows.
type UsageTotal struct {
	Calls        int `json:"calls"`
	Failed       int `json:"failed"`
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}
