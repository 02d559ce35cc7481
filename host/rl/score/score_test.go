package score_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/rl/prm"
	"github.com/metaclaw-go/metaclaw/host/rl/samples"
	"github.com/metaclaw-go/metaclaw/host/rl/score"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/rltest"
)

func TestDefaultBackoff(t *testing.T) {
	want := map[int]time.Duration{1: 15 * time.Second, 2: 30 * time.Second, 3: time.Minute, 7: 15 * time.Minute, 50: 15 * time.Minute}
	for n, d := range want {
		if got := score.DefaultBackoff(n); got != d {
			t.Errorf("DefaultBackoff(%d) = %s, want %s", n, got, d)
		}
	}
}

// TestScoringSurvivesARestart: work due when one scorer stops (its judge
// down) is done by the next one, from the samples table alone.
func TestScoringSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	open := func() (*store.SQLite, *samples.Store) {
		st, err := store.OpenSQLite(ctx, filepath.Join(dir, store.DBFile))
		if err != nil {
			t.Fatal(err)
		}
		return st, samples.New(st.Writer(), st.Reader())
	}
	fake := rltest.NewJudge(t)
	fake.Down.Store(true)
	st, smp := open()
	var ids []int64
	for _, session := range []string{"a", "a", "b"} {
		id, err := smp.Add(ctx, samples.NewSample{SessionID: session, Prompt: []int32{1}, Completion: []int32{2}, Logprobs: []float32{-1}, NeedJudge: true, Response: "r", Instruction: "i"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	newScorer := func(st *store.SQLite, smp *samples.Store) *score.Scorer {
		j := prm.New(prm.Options{Endpoint: config.Endpoint{APIBase: fake.URL + "/v1", Model: "j", APIKey: "k"}, Votes: 1, Usage: st})
		return score.New(score.Options{Samples: smp, Judge: j, Votes: 1, Poll: 20 * time.Millisecond, Backoff: func(int) time.Duration { return 10 * time.Millisecond }, Log: zerolog.Nop()})
	}
	s1 := newScorer(st, smp)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { s1.Run(runCtx); close(done) }()
	// Session a's first turn is due (its next turn came); a's last and b's
	// turn wait for their sessions to end.
	if err := s1.SessionEnded(ctx, []byte(`{"session_id":"b"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s1.SessionEnded(ctx, []byte(`{`)); err == nil {
		t.Fatal("a bad payload was accepted")
	}
	waitFor(t, func() bool {
		a, _ := smp.Get(ctx, ids[0])
		b, _ := smp.Get(ctx, ids[2])
		return a.JudgeAttempts > 0 && b.JudgeAttempts > 0
	})
	stop()
	<-done
	st.Close()

	// Restart: the judge is back, session a ends now.
	fake.Down.Store(false)
	st, smp = open()
	defer st.Close()
	s2 := newScorer(st, smp)
	runCtx, stop = context.WithCancel(ctx)
	defer stop()
	go s2.Run(runCtx)
	if err := s2.SessionEnded(ctx, []byte(`{"session_id":"a"}`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		c, err := smp.Counts(ctx)
		return err == nil && c.Scored == 3
	})
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestScoredWakesTheTrainer: the Scored hook runs once per stored verdict,
// after the verdict is readable, so the training loop it wakes finds the
// sample scored.
func TestScoredWakesTheTrainer(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	smp := samples.New(st.Writer(), st.Reader())
	fake := rltest.NewJudge(t)
	fake.Down.Store(true) // the first call fails: no verdict, no wake
	for _, session := range []string{"a", "b"} {
		if _, err := smp.Add(ctx, samples.NewSample{SessionID: session, Prompt: []int32{1}, Completion: []int32{2}, Logprobs: []float32{-1}, NeedJudge: true, Response: "r", Instruction: "i"}); err != nil {
			t.Fatal(err)
		}
	}
	type wake struct{ scored int }
	wakes := make(chan wake, 8)
	j := prm.New(prm.Options{Endpoint: config.Endpoint{APIBase: fake.URL + "/v1", Model: "j", APIKey: "k"}, Votes: 1, Usage: st})
	s := score.New(score.Options{Samples: smp, Judge: j, Votes: 1, Poll: time.Hour, Backoff: func(int) time.Duration { return 10 * time.Millisecond },
		Scored: func() {
			n, _ := smp.ScoredCount(ctx, 0)
			wakes <- wake{n}
		}, Log: zerolog.Nop()})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { s.Run(runCtx); close(done) }()
	defer func() { stop(); <-done }()
	if err := s.SessionEnded(ctx, []byte(`{"session_id":"a"}`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		got, _ := smp.ScoredCount(ctx, 0)
		return got == 0 && fake.Calls() > 0
	})
	select {
	case w := <-wakes:
		t.Fatalf("woken after a failed judge call (%d scored)", w.scored)
	default:
	}
	fake.Down.Store(false)
	for n, session := range []string{"a", "b"} {
		if session == "b" {
			if err := s.SessionEnded(ctx, []byte(`{"session_id":"b"}`)); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case w := <-wakes:
			if w.scored != n+1 {
				t.Fatalf("woken with %d scored, want %d", w.scored, n+1)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("no wake for session %s's verdict", session)
		}
	}
}
