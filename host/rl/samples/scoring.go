package samples

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"
)

// scoredAfterJudge and scoredAfterTeacher move a pending sample to scored
// when the other score is not outstanding (an UPDATE reads the old row, so
// each names the column it is not setting).
const (
	scoredAfterJudge   = `state = CASE WHEN teacher_state IN ('done', 'none') THEN 'scored' ELSE state END`
	scoredAfterTeacher = `state = CASE WHEN judge_state IN ('done', 'none') THEN 'scored' ELSE state END`
)

// JudgeTask is a sample due for judging.
type JudgeTask struct {
	ID          int64
	SessionID   string
	Seq         int
	Instruction string
	Response    string
	NextState   string // "" for the last turn of a session
	Attempts    int
}

// DueForJudge lists pending samples whose judging is due at now, oldest
// first.
func (s *Store) DueForJudge(ctx context.Context, now time.Time, limit int) ([]JudgeTask, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, session_id, seq, instruction, response, COALESCE(next_state, ''), judge_attempts
FROM rl_samples WHERE judge_state = 'due' AND state = 'pending' AND judge_after <= ? ORDER BY judge_after, id LIMIT ?`, now.UnixMilli(), limit)
	if err != nil {
		return nil, fmt.Errorf("samples due for judging: %w", err)
	}
	defer rows.Close()
	var out []JudgeTask
	for rows.Next() {
		var t JudgeTask
		if err := rows.Scan(&t.ID, &t.SessionID, &t.Seq, &t.Instruction, &t.Response, &t.NextState, &t.Attempts); err != nil {
			return nil, fmt.Errorf("samples due for judging: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// SetVerdict records a judge's verdict on a due sample; the sample becomes
// scored when no teacher log-probs are outstanding. It reports false when the
// sample was no longer due (judged already, or dropped).
func (s *Store) SetVerdict(ctx context.Context, id int64, judge string, score float64, votes []string, text string) (bool, error) {
	if votes == nil {
		votes = []string{}
	}
	vj, err := json.Marshal(votes)
	if err != nil {
		return false, err
	}
	now := s.now().UnixMilli()
	res, err := s.w.ExecContext(ctx, `UPDATE rl_samples SET judge_state = 'done', judge = ?, reward = ?, judge_votes = ?, judge_text = ?,
    judged_at = ?, judge_error = '', updated_at = ?, `+scoredAfterJudge+`
WHERE id = ? AND state = 'pending' AND judge_state = 'due'`, judge, score, string(vj), text, now, now, id)
	return affected(res, err, "record verdict of sample %d", id)
}

// JudgeFailed records a failed judging attempt; the sample is tried again
// at retryAt.
func (s *Store) JudgeFailed(ctx context.Context, id int64, errText string, retryAt time.Time) error {
	return s.failed(ctx, "judge", id, errText, retryAt)
}

// failed records a failed judge or teacher call (kind names the columns).
func (s *Store) failed(ctx context.Context, kind string, id int64, errText string, retryAt time.Time) error {
	_, err := s.w.ExecContext(ctx, `UPDATE rl_samples SET `+kind+`_attempts = `+kind+`_attempts + 1, `+kind+`_error = ?, `+kind+`_after = ?, updated_at = ?
WHERE id = ? AND `+kind+`_state = 'due'`, errText, retryAt.UnixMilli(), s.now().UnixMilli(), id)
	if err != nil {
		return fmt.Errorf("record %s failure of sample %d: %w", kind, id, err)
	}
	return nil
}

// TeacherTask is a sample whose teacher log-probs are due.
type TeacherTask struct {
	ID         int64
	Prompt     []int32
	Completion []int32
	Attempts   int
}

// DueForTeacher lists pending samples whose teacher log-probs are due.
func (s *Store) DueForTeacher(ctx context.Context, now time.Time, limit int) ([]TeacherTask, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, prompt_ids, completion_ids, teacher_attempts
FROM rl_samples WHERE teacher_state = 'due' AND state = 'pending' AND teacher_after <= ? ORDER BY teacher_after, id LIMIT ?`, now.UnixMilli(), limit)
	if err != nil {
		return nil, fmt.Errorf("samples due for the teacher: %w", err)
	}
	defer rows.Close()
	var out []TeacherTask
	for rows.Next() {
		var t TeacherTask
		var p, c []byte
		if err := rows.Scan(&t.ID, &p, &c, &t.Attempts); err != nil {
			return nil, fmt.Errorf("samples due for the teacher: %w", err)
		}
		if t.Prompt, err = DecodeIDs(p); err == nil {
			t.Completion, err = DecodeIDs(c)
		}
		if err != nil {
			return nil, fmt.Errorf("sample %d: %w", t.ID, err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// SetTeacher records the teacher's log-probs of a sample's completion (one
// per completion id); the sample becomes scored when its verdict is in too.
func (s *Store) SetTeacher(ctx context.Context, id int64, logprobs []float32) (bool, error) {
	now := s.now().UnixMilli()
	res, err := s.w.ExecContext(ctx, `UPDATE rl_samples SET teacher_state = 'done', teacher_logprobs = ?, teacher_error = '', updated_at = ?, `+scoredAfterTeacher+`
WHERE id = ? AND state = 'pending' AND teacher_state = 'due' AND length(completion_ids) = ?`, EncodeFloats(logprobs), now, id, 4*len(logprobs))
	return affected(res, err, "record teacher log-probs of sample %d", id)
}

// TeacherFailed records a failed teacher call; it is tried again at retryAt.
func (s *Store) TeacherFailed(ctx context.Context, id int64, errText string, retryAt time.Time) error {
	return s.failed(ctx, "teacher", id, errText, retryAt)
}

// EndSession makes a session's samples that wait for a next turn due for
// judging without one (its last turn). It returns how many.
func (s *Store) EndSession(ctx context.Context, sessionID string) (int, error) {
	now := s.now().UnixMilli()
	res, err := s.w.ExecContext(ctx, `UPDATE rl_samples SET judge_state = 'due', judge_after = ?, updated_at = ?
WHERE session_id = ? AND judge_state = 'waiting' AND state = 'pending'`, now, now, sessionID)
	if err != nil {
		return 0, fmt.Errorf("end session %s: samples: %w", sessionID, err)
	}
	n, _ := res.RowsAffected()
	return int(n), nil
}

// NextDue is the earliest time a due judging or teacher call may run; ok is
// false when nothing is due.
func (s *Store) NextDue(ctx context.Context) (time.Time, bool, error) {
	var t sql.NullInt64
	err := s.r.QueryRowContext(ctx, `SELECT MIN(t) FROM (
    SELECT MIN(judge_after) AS t FROM rl_samples WHERE judge_state = 'due' AND state = 'pending'
    UNION ALL
    SELECT MIN(teacher_after) FROM rl_samples WHERE teacher_state = 'due' AND state = 'pending')`).Scan(&t)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("samples: next due: %w", err)
	}
	if !t.Valid {
		return time.Time{}, false, nil
	}
	return time.UnixMilli(t.Int64), true, nil
}

func affected(res sql.Result, err error, format string, args ...any) (bool, error) {
	if err != nil {
		return false, fmt.Errorf(format+": %w", append(args, err)...)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf(format+": %w", append(args, err)...)
	}
	return n > 0, nil
}
