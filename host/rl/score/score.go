// Package score scores RL samples in the background: the judge's verdict
// on every main turn (once the session's next main turn or its end is
// known) and the teacher's log-probs of the sampled tokens (OPD). The
// samples table is the queue, so the work is durable: a restart picks up
// whatever is due, and a judge or teacher that is down only delays scoring
// (each failure is recorded and retried with back-off, for as long as it
// takes). Serving never waits for any of it.
package score

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/rl/judge"
	"github.com/metaclaw-go/metaclaw/host/rl/samples"
)

// Teacher returns a teacher's log-probs of completion given prompt.
type Teacher interface {
	Name() string
	Logprobs(ctx context.Context, prompt, completion []int32) ([]float32, error)
}

// Options configure a Scorer.
type Options struct {
	Samples *samples.Store
	Judge   judge.Judge // nil: no judge
	Teacher Teacher     // nil: no teacher
	// Votes asked of the judge per turn (rl.prm_m).
	Votes int
	// Concurrency bounds calls in flight (default 4).
	Concurrency int
	// Backoff is the wait before attempt n+1 after n failures (default
	// 15 s·2^(n-1), at most 15 min).
	Backoff func(failures int) time.Duration
	// CallTimeout bounds one judge or teacher call (default 5 min).
	CallTimeout time.Duration
	// Poll is the longest sleep between passes (default 30 s).
	Poll time.Duration
	// Scored, if set, is called after a verdict or teacher log-probs are
	// stored, so the training loop looks for a ready batch now instead of
	// at its next poll.
	Scored func()
	Log    zerolog.Logger
}

// Scorer runs the scoring loop.
type Scorer struct {
	o        Options
	wake     chan struct{}
	sem      chan struct{}
	mu       sync.Mutex
	inflight map[string]bool
	// finished notes when each call ended, so a due list read before a
	// call ended does not start it again.
	finished map[string]time.Time
}

// New returns a Scorer; Run starts it.
func New(o Options) *Scorer {
	if o.Concurrency <= 0 {
		o.Concurrency = 4
	}
	if o.Backoff == nil {
		o.Backoff = DefaultBackoff
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = 5 * time.Minute
	}
	if o.Poll <= 0 {
		o.Poll = 30 * time.Second
	}
	return &Scorer{o: o, wake: make(chan struct{}, 1), sem: make(chan struct{}, o.Concurrency), inflight: map[string]bool{}, finished: map[string]time.Time{}}
}

// DefaultBackoff is 15 s, 30 s, 1 min, … up to 15 min.
func DefaultBackoff(failures int) time.Duration {
	d := 15 * time.Second
	for i := 1; i < failures && d < 15*time.Minute; i++ {
		d *= 2
	}
	return min(d, 15*time.Minute)
}

// Wake makes the loop look for due work now (a sample was added, a session
// ended).
func (s *Scorer) Wake() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// SessionEnded is the durable session-end job (core.OnSessionEnd): the
// session's last sample becomes due for judging, without a next state.
func (s *Scorer) SessionEnded(ctx context.Context, payload json.RawMessage) error {
	var p struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return fmt.Errorf("rl session end: %w", err)
	}
	n, err := s.o.Samples.EndSession(ctx, p.SessionID)
	if err != nil {
		return err
	}
	if n > 0 {
		s.Wake()
	}
	return nil
}

// Run scores due samples until ctx ends, then waits for calls in flight.
func (s *Scorer) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		s.pass(ctx, &wg)
		wait := s.o.Poll
		if next, ok, err := s.o.Samples.NextDue(ctx); err == nil && ok {
			wait = min(wait, max(time.Until(next), 10*time.Millisecond))
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-timer.C:
		}
	}
}

// pass starts a call for every due sample not already in flight.
func (s *Scorer) pass(ctx context.Context, wg *sync.WaitGroup) {
	now := time.Now()
	s.mu.Lock()
	for k, at := range s.finished {
		if now.Sub(at) > time.Minute {
			delete(s.finished, k)
		}
	}
	s.mu.Unlock()
	if s.o.Judge != nil {
		tasks, err := s.o.Samples.DueForJudge(ctx, now, 64)
		if err != nil {
			s.o.Log.Error().Err(err).Msg("read samples due for judging")
		}
		for _, t := range tasks {
			s.start(ctx, wg, now, fmt.Sprintf("j%d", t.ID), func(ctx context.Context) { s.judgeOne(ctx, t) })
		}
	}
	if s.o.Teacher != nil {
		tasks, err := s.o.Samples.DueForTeacher(ctx, now, 16)
		if err != nil {
			s.o.Log.Error().Err(err).Msg("read samples due for the teacher")
		}
		for _, t := range tasks {
			s.start(ctx, wg, now, fmt.Sprintf("t%d", t.ID), func(ctx context.Context) { s.teachOne(ctx, t) })
		}
	}
}

// start runs fn for key unless it is in flight or ended after readAt (the
// time the due list was read).
func (s *Scorer) start(ctx context.Context, wg *sync.WaitGroup, readAt time.Time, key string, fn func(context.Context)) {
	s.mu.Lock()
	if s.inflight[key] || !s.finished[key].Before(readAt) {
		s.mu.Unlock()
		return
	}
	s.inflight[key] = true
	s.mu.Unlock()
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer func() {
			s.mu.Lock()
			delete(s.inflight, key)
			s.finished[key] = time.Now()
			s.mu.Unlock()
			s.Wake()
		}()
		select {
		case s.sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		defer func() { <-s.sem }()
		cctx, cancel := context.WithTimeout(ctx, s.o.CallTimeout)
		defer cancel()
		fn(cctx)
	}()
}

func (s *Scorer) judgeOne(ctx context.Context, t samples.JudgeTask) {
	v, err := s.o.Judge.Score(ctx, judge.Request{
		Instruction: t.Instruction, Response: t.Response, NextState: t.NextState, Votes: s.o.Votes, SessionID: t.SessionID, Turn: int64(t.Seq),
	})
	bg := context.WithoutCancel(ctx) // bookkeeping lands even when stopping
	if err != nil {
		s.retryLater(ctx, "judge", t.ID, t.Attempts, err, s.o.Samples.JudgeFailed)
		return
	}
	if _, err := s.o.Samples.SetVerdict(bg, t.ID, s.o.Judge.Name(), v.Score, v.Votes, v.Text); err != nil {
		s.o.Log.Error().Err(err).Int64("sample", t.ID).Msg("record verdict")
		return
	}
	s.scored()
}

func (s *Scorer) scored() {
	if s.o.Scored != nil {
		s.o.Scored()
	}
}

func (s *Scorer) teachOne(ctx context.Context, t samples.TeacherTask) {
	lps, err := s.o.Teacher.Logprobs(ctx, t.Prompt, t.Completion)
	if err == nil && len(lps) != len(t.Completion) {
		err = fmt.Errorf("teacher returned %d log-probs for %d tokens", len(lps), len(t.Completion))
	}
	bg := context.WithoutCancel(ctx)
	if err != nil {
		s.retryLater(ctx, "teacher", t.ID, t.Attempts, err, s.o.Samples.TeacherFailed)
		return
	}
	if _, err := s.o.Samples.SetTeacher(bg, t.ID, lps); err != nil {
		s.o.Log.Error().Err(err).Int64("sample", t.ID).Msg("record teacher log-probs")
		return
	}
	s.scored()
}

// retryLater records a failed call so the sample is tried again after the
// back-off; a call cut short by stopping leaves the sample due as it was.
func (s *Scorer) retryLater(ctx context.Context, kind string, id int64, attempts int, err error,
	record func(ctx context.Context, id int64, errText string, retryAt time.Time) error) {
	if cerr := ctx.Err(); cerr != nil && !errors.Is(cerr, context.DeadlineExceeded) {
		return
	}
	retry := time.Now().Add(s.o.Backoff(attempts + 1))
	s.o.Log.Warn().Err(err).Int64("sample", id).Int("attempt", attempts+1).Time("retry_at", retry).Msgf("%s unavailable; tried again later", kind)
	if rerr := record(context.WithoutCancel(ctx), id, err.Error(), retry); rerr != nil {
		s.o.Log.Error().Err(rerr).Msgf("record %s failure", kind)
	}
}
