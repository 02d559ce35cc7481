// Package samples is the durable store of RL samples: every main turn the
// user's policy model answered, with the exact prompt ids sent to the
// sampler and the exact ids and log-probs it returned (never re-tokenised),
// its judge verdict and teacher log-probs, and its place in training.
//
// A sample moves pending → scored → claimed → trained, or to dropped (with
// why) from any state but trained. Scoring (host/rl/score) fills the judge
// and teacher columns; the training loop claims scored samples in batches
// (ClaimBatch) and finishes or releases each batch exactly once.
package samples

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/metaclaw-go/metaclaw/host/rl/batch"
)

// States of a sample.
const (
	Pending = "pending" // waiting for its judge verdict and/or teacher log-probs
	Scored  = "scored"  // ready to train
	Claimed = "claimed" // in an open training batch
	Trained = "trained" // a training step used it
	Dropped = "dropped" // never to be trained; StateReason says why
)

// Judge states: waiting for the next main turn of the session or its end,
// due (to be judged once JudgeAfter has passed), done, or none (no judge).
const (
	JudgeWaiting = "waiting"
	JudgeDue     = "due"
	JudgeDone    = "done"
	JudgeNone    = "none"
)

// Teacher states (OPD): due, done or none (no teacher).
const (
	TeacherDue  = "due"
	TeacherDone = "done"
	TeacherNone = "none"
)

// Reasons for samples dropped when they are added.
const (
	ReasonNoRewardSource = "no reward source: neither a judge (rl.prm_url, plugins.judge) nor a teacher (opd.enabled) is configured"
	ReasonNoLogprobs     = "the sampler returned no log-probs for the sampled tokens"
	ReasonEmpty          = "the sampler returned no tokens"
)

// ErrNotFound is returned for an unknown sample or batch.
var ErrNotFound = errors.New("not found")

// Store reads and writes samples. w is the store's single writer
// connection pool, r its read pool (store.Tables: Writer and Reader).
type Store struct {
	w, r *sql.DB
	now  func() time.Time
}

// New returns a Store over the host's database.
func New(w, r *sql.DB) *Store { return &Store{w: w, r: r, now: time.Now} }

// NewSample is a sample to add: one main turn as the policy answered it.
type NewSample struct {
	SessionID, Agent string
	BaseModel        string
	Sampler          string // the sampling session or weights path
	SamplerStep      int
	SkillGeneration  int64
	// Prompt is exactly what was sent to the sampler; Completion and
	// Logprobs exactly what it returned (one log-prob per id).
	Prompt     []int32
	Completion []int32
	Logprobs   []float32
	StopReason string
	// Instruction is the user's last message, Response the answer as the
	// client got it (for the judge), LastMessage the request's newest
	// message (the previous sample's next state).
	Instruction, Response, LastMessage string
	// NeedJudge and NeedTeacher say which scores the sample waits for.
	NeedJudge, NeedTeacher bool
}

// Add stores a sample and returns its id. In the same transaction the
// session's previous sample gets this turn's newest message as its next
// state and becomes due for judging (the last sample of a session is made
// due by EndSession).
func (s *Store) Add(ctx context.Context, n NewSample) (int64, error) {
	if n.SessionID == "" || len(n.Prompt) == 0 {
		return 0, errors.New("add sample: a session id and prompt ids are required")
	}
	state, reason := Pending, ""
	judgeState, teacherState := JudgeWaiting, TeacherDue
	if !n.NeedJudge {
		judgeState = JudgeNone
	}
	if !n.NeedTeacher {
		teacherState = TeacherNone
	}
	switch {
	case len(n.Completion) == 0:
		state, reason = Dropped, ReasonEmpty
	case len(n.Logprobs) != len(n.Completion):
		state, reason = Dropped, ReasonNoLogprobs
	case !n.NeedJudge && !n.NeedTeacher:
		state, reason = Dropped, ReasonNoRewardSource
	}
	if state == Dropped {
		judgeState, teacherState = JudgeNone, TeacherNone
	}
	now := s.now().UnixMilli()
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("add sample: %w", err)
	}
	defer tx.Rollback()
	var seq int
	if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) + 1 FROM rl_samples WHERE session_id = ?`, n.SessionID).Scan(&seq); err != nil {
		return 0, fmt.Errorf("add sample: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `UPDATE rl_samples SET next_state = ?, judge_state = ?, judge_after = ?, updated_at = ?
WHERE session_id = ? AND seq = ? AND judge_state = ?`, n.LastMessage, JudgeDue, now, now, n.SessionID, seq-1, JudgeWaiting); err != nil {
		return 0, fmt.Errorf("add sample: previous turn: %w", err)
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO rl_samples (session_id, agent, seq, created_at, updated_at, base_model, sampler, sampler_step,
    skill_generation, prompt_ids, completion_ids, logprobs, prompt_hash, stop_reason, instruction, response, last_message,
    judge_state, teacher_state, state, state_reason)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		n.SessionID, n.Agent, seq, now, now, n.BaseModel, n.Sampler, n.SamplerStep, n.SkillGeneration,
		EncodeIDs(n.Prompt), EncodeIDs(n.Completion), EncodeFloats(n.Logprobs), PromptHash(n.Prompt), n.StopReason,
		n.Instruction, n.Response, n.LastMessage, judgeState, teacherState, state, reason)
	if err != nil {
		return 0, fmt.Errorf("add sample: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("add sample: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("add sample: commit: %w", err)
	}
	return id, nil
}

// LinkTurn records which recorded turn a sample answered.
func (s *Store) LinkTurn(ctx context.Context, id, turnID int64, turnIndex int) error {
	if _, err := s.w.ExecContext(ctx, `UPDATE rl_samples SET turn_id = ?, turn_index = ? WHERE id = ?`, turnID, turnIndex, id); err != nil {
		return fmt.Errorf("link sample %d to turn %d: %w", id, turnID, err)
	}
	return nil
}

// Sample is a stored sample.
type Sample struct {
	ID              int64     `json:"id"`
	SessionID       string    `json:"session_id"`
	Agent           string    `json:"agent"`
	Seq             int       `json:"seq"`
	TurnID          int64     `json:"turn_id,omitempty"`
	TurnIndex       int       `json:"turn_index,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
	BaseModel       string    `json:"base_model"`
	Sampler         string    `json:"sampler"`
	SamplerStep     int       `json:"sampler_step"`
	SkillGeneration int64     `json:"skill_generation"`
	Prompt          []int32   `json:"prompt_ids"`
	Completion      []int32   `json:"completion_ids"`
	Logprobs        []float32 `json:"logprobs"`
	PromptHash      string    `json:"prompt_hash"`
	StopReason      string    `json:"stop_reason"`
	Instruction     string    `json:"instruction"`
	Response        string    `json:"response"`
	LastMessage     string    `json:"last_message"`
	NextState       *string   `json:"next_state"`
	JudgeState      string    `json:"judge_state"`
	JudgeAttempts   int       `json:"judge_attempts"`
	JudgeError      string    `json:"judge_error,omitempty"`
	Judge           string    `json:"judge,omitempty"`
	Reward          *float64  `json:"reward"`
	Votes           []string  `json:"judge_votes"`
	JudgeText       string    `json:"judge_text,omitempty"`
	TeacherState    string    `json:"teacher_state"`
	TeacherAttempts int       `json:"teacher_attempts"`
	TeacherError    string    `json:"teacher_error,omitempty"`
	TeacherLogprobs []float32 `json:"teacher_logprobs,omitempty"`
	State           string    `json:"state"`
	StateReason     string    `json:"state_reason,omitempty"`
	BatchID         int64     `json:"batch_id,omitempty"`
	Step            int       `json:"step,omitempty"`
}

// ForTraining is the sample as host/rl/batch builds datums from it: exact
// ids and log-probs, the judge's reward (0 without a verdict), the teacher's
// log-probs when there are any, grouped by prompt.
func (s Sample) ForTraining() batch.Sample {
	b := batch.Sample{Group: s.PromptHash, Prompt: s.Prompt, Completion: s.Completion, Logprobs: s.Logprobs, TeacherLogprobs: s.TeacherLogprobs}
	if s.Reward != nil {
		b.Reward = *s.Reward
	}
	return b
}

const sampleColumns = `id, session_id, agent, seq, turn_id, turn_index, created_at, base_model, sampler, sampler_step, skill_generation,
    prompt_ids, completion_ids, logprobs, prompt_hash, stop_reason, instruction, response, last_message, next_state,
    judge_state, judge_attempts, judge_error, judge, reward, judge_votes, judge_text,
    teacher_state, teacher_attempts, teacher_error, teacher_logprobs, state, state_reason, batch_id, step`

type scanner interface{ Scan(dest ...any) error }

func scanSample(row scanner) (Sample, error) {
	var s Sample
	var turnID, turnIndex, batchID, step sql.NullInt64
	var created int64
	var prompt, completion, lps, teacher []byte
	var votes string
	var next sql.NullString
	var reward sql.NullFloat64
	err := row.Scan(&s.ID, &s.SessionID, &s.Agent, &s.Seq, &turnID, &turnIndex, &created, &s.BaseModel, &s.Sampler, &s.SamplerStep,
		&s.SkillGeneration, &prompt, &completion, &lps, &s.PromptHash, &s.StopReason, &s.Instruction, &s.Response, &s.LastMessage, &next,
		&s.JudgeState, &s.JudgeAttempts, &s.JudgeError, &s.Judge, &reward, &votes, &s.JudgeText,
		&s.TeacherState, &s.TeacherAttempts, &s.TeacherError, &teacher, &s.State, &s.StateReason, &batchID, &step)
	if err != nil {
		return s, err
	}
	s.TurnID, s.TurnIndex, s.BatchID, s.Step = turnID.Int64, int(turnIndex.Int64), batchID.Int64, int(step.Int64)
	s.CreatedAt = time.UnixMilli(created)
	if next.Valid {
		s.NextState = &next.String
	}
	if reward.Valid {
		r := reward.Float64
		s.Reward = &r
	}
	if err := json.Unmarshal([]byte(votes), &s.Votes); err != nil {
		return s, fmt.Errorf("sample %d: votes: %w", s.ID, err)
	}
	if s.Prompt, err = DecodeIDs(prompt); err == nil {
		if s.Completion, err = DecodeIDs(completion); err == nil {
			if s.Logprobs, err = DecodeFloats(lps); err == nil && teacher != nil {
				s.TeacherLogprobs, err = DecodeFloats(teacher)
			}
		}
	}
	if err != nil {
		return s, fmt.Errorf("sample %d: %w", s.ID, err)
	}
	return s, nil
}

// Get returns one sample.
func (s *Store) Get(ctx context.Context, id int64) (Sample, error) {
	out, err := scanSample(s.r.QueryRowContext(ctx, `SELECT `+sampleColumns+` FROM rl_samples WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return out, fmt.Errorf("sample %d: %w", id, ErrNotFound)
	}
	return out, err
}

// SessionSamples lists a session's samples in order.
func (s *Store) SessionSamples(ctx context.Context, sessionID string) ([]Sample, error) {
	return s.query(ctx, `SELECT `+sampleColumns+` FROM rl_samples WHERE session_id = ? ORDER BY seq`, sessionID)
}

func (s *Store) query(ctx context.Context, q string, args ...any) ([]Sample, error) {
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("samples: %w", err)
	}
	defer rows.Close()
	var out []Sample
	for rows.Next() {
		smp, err := scanSample(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, smp)
	}
	return out, rows.Err()
}

// EncodeIDs packs token ids as little-endian int32.
func EncodeIDs(ids []int32) []byte {
	b := make([]byte, 0, 4*len(ids))
	for _, id := range ids {
		b = binary.LittleEndian.AppendUint32(b, uint32(id))
	}
	return b
}

// DecodeIDs unpacks EncodeIDs.
func DecodeIDs(b []byte) ([]int32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("token id blob of %d bytes is not a multiple of 4", len(b))
	}
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

// EncodeFloats packs log-probs as little-endian float32.
func EncodeFloats(v []float32) []byte {
	b := make([]byte, 0, 4*len(v))
	for _, x := range v {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

// DecodeFloats unpacks EncodeFloats.
func DecodeFloats(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("float blob of %d bytes is not a multiple of 4", len(b))
	}
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out, nil
}

// PromptHash names a prompt by its ids: samples of the same prompt share it
// (their GRPO group).
func PromptHash(ids []int32) string {
	sum := sha256.Sum256(EncodeIDs(ids))
	return hex.EncodeToString(sum[:16])
}
