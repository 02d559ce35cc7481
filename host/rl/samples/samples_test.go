package samples_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/rl/samples"
	"github.com/metaclaw-go/metaclaw/host/store"
)

func newStore(t *testing.T) *samples.Store {
	s, _ := newStoreWithDB(t)
	return s
}

func newStoreWithDB(t *testing.T) (*samples.Store, *store.SQLite) {
	t.Helper()
	st, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return samples.New(st.Writer(), st.Reader()), st
}

// TestRetentionKeepsSamples: store.retain_days prunes turns and sessions,
// never training data.
func TestRetentionKeepsSamples(t *testing.T) {
	s, st := newStoreWithDB(t)
	ctx := context.Background()
	turn := &store.Turn{SessionID: "old", Agent: "default", TurnType: "main", ClientAPI: "openai", UpstreamAPI: "openai", RequestJSON: "{}", Status: 200, CreatedAt: time.Now().Add(-48 * time.Hour)}
	if err := st.RecordTurns(ctx, []*store.Turn{turn}); err != nil {
		t.Fatal(err)
	}
	if err := st.EndSession(ctx, "old", "client", time.Now().Add(-47*time.Hour)); err != nil {
		t.Fatal(err)
	}
	smp := add(t, s, sample("old", 1, true, false))
	if err := s.LinkTurn(ctx, smp.ID, turn.ID, 1); err != nil {
		t.Fatal(err)
	}
	rep, err := st.Prune(ctx, store.PruneOptions{Before: time.Now()})
	if err != nil || rep.Turns != 1 {
		t.Fatalf("prune %+v, %v", rep, err)
	}
	got, err := s.Get(ctx, smp.ID)
	if err != nil || !slices.Equal(got.Completion, smp.Completion) || got.TurnID != turn.ID {
		t.Fatalf("the sample did not survive retention: %+v, %v", got, err)
	}
}

func sample(session string, gen int64, judge, teacher bool) samples.NewSample {
	return samples.NewSample{
		SessionID: session, Agent: "default", BaseModel: "Qwen/Qwen3-4B", Sampler: "s:sample:0", SkillGeneration: gen,
		Prompt: []int32{151644, 872, 198, 9707}, Completion: []int32{9707, 0, 151645}, Logprobs: []float32{-0.5, -1.25, -0.01},
		StopReason: "stop", Instruction: "hi", Response: "Hello!", LastMessage: "user: hi",
		NeedJudge: judge, NeedTeacher: teacher,
	}
}

func add(t *testing.T, s *samples.Store, n samples.NewSample) samples.Sample {
	t.Helper()
	ctx := context.Background()
	id, err := s.Add(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestAddKeepsExactIDsAndChainsNextState(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	first := sample("s1", 7, true, false)
	first.Completion = []int32{-1, 0, math.MaxInt32, 151645}
	first.Logprobs = []float32{float32(math.Inf(-1)), -0.0, -1e-30, -3.5}
	a := add(t, s, first)
	if !slices.Equal(a.Prompt, first.Prompt) || !slices.Equal(a.Completion, first.Completion) {
		t.Fatalf("ids changed: %v %v", a.Prompt, a.Completion)
	}
	for i, lp := range a.Logprobs {
		if math.Float32bits(lp) != math.Float32bits(first.Logprobs[i]) {
			t.Fatalf("logprob %d changed: %v != %v", i, lp, first.Logprobs[i])
		}
	}
	if a.Seq != 1 || a.State != samples.Pending || a.JudgeState != samples.JudgeWaiting || a.TeacherState != samples.TeacherNone || a.SkillGeneration != 7 {
		t.Fatalf("first sample %+v", a)
	}
	second := sample("s1", 7, true, false)
	second.LastMessage = "tool: file contents"
	b := add(t, s, second)
	a, _ = s.Get(ctx, a.ID)
	if b.Seq != 2 || a.NextState == nil || *a.NextState != "tool: file contents" || a.JudgeState != samples.JudgeDue {
		t.Fatalf("chain: first %+v, second seq %d", a, b.Seq)
	}
	if b.JudgeState != samples.JudgeWaiting || b.NextState != nil {
		t.Fatalf("second %+v", b)
	}
	other := add(t, s, sample("s2", 7, true, false))
	if other.Seq != 1 {
		t.Fatalf("other session seq %d", other.Seq)
	}
	// The session's end makes its last turn due, without a next state.
	if n, err := s.EndSession(ctx, "s1"); err != nil || n != 1 {
		t.Fatalf("EndSession = %d, %v", n, err)
	}
	due, err := s.DueForJudge(ctx, time.Now(), 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, d := range due {
		ids = append(ids, d.ID)
		if d.ID == b.ID && d.NextState != "" {
			t.Errorf("last turn has next state %q", d.NextState)
		}
	}
	if !slices.Equal(ids, []int64{a.ID, b.ID}) {
		t.Fatalf("due %v, want %v", ids, []int64{a.ID, b.ID})
	}
}

func TestAddDropsUntrainableSamples(t *testing.T) {
	s := newStore(t)
	tests := []struct {
		name   string
		mutate func(*samples.NewSample)
		reason string
	}{
		{"no reward source", func(n *samples.NewSample) { n.NeedJudge, n.NeedTeacher = false, false }, samples.ReasonNoRewardSource},
		{"no logprobs", func(n *samples.NewSample) { n.Logprobs = nil }, samples.ReasonNoLogprobs},
		{"empty completion", func(n *samples.NewSample) { n.Completion, n.Logprobs = nil, nil }, samples.ReasonEmpty},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := sample("drop-"+tc.name, 1, true, true)
			tc.mutate(&n)
			got := add(t, s, n)
			if got.State != samples.Dropped || got.StateReason != tc.reason || got.JudgeState != samples.JudgeNone || got.TeacherState != samples.TeacherNone {
				t.Fatalf("got %s %q judge %s teacher %s", got.State, got.StateReason, got.JudgeState, got.TeacherState)
			}
		})
	}
	if _, err := s.Add(context.Background(), samples.NewSample{SessionID: "x"}); err == nil {
		t.Fatal("a sample without prompt ids was accepted")
	}
}

func TestScoringNeedsBothScores(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	smp := add(t, s, sample("s", 1, true, true))
	if _, err := s.EndSession(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	// The judge is down: the attempt is recorded and retried later.
	retry := time.Now().Add(time.Hour)
	if err := s.JudgeFailed(ctx, smp.ID, "judge call: HTTP 503", retry); err != nil {
		t.Fatal(err)
	}
	if due, _ := s.DueForJudge(ctx, time.Now(), 10); len(due) != 0 {
		t.Fatalf("due before retry time: %+v", due)
	}
	if due, _ := s.DueForJudge(ctx, retry, 10); len(due) != 1 || due[0].Attempts != 1 {
		t.Fatalf("due at retry time: %+v", due)
	}
	c, err := s.Counts(ctx)
	if err != nil || c.Retrying != 1 || c.LastError != "judge call: HTTP 503" {
		t.Fatalf("counts %+v, %v", c, err)
	}
	if next, ok, err := s.NextDue(ctx); err != nil || !ok || next.After(time.Now().Add(time.Second)) {
		t.Fatalf("NextDue = %v %v %v (the teacher is due now)", next, ok, err)
	}
	ok, err := s.SetVerdict(ctx, smp.ID, "prm:gpt", 1, []string{"1", "1", "-1"}, "Score: 1")
	if err != nil || !ok {
		t.Fatalf("SetVerdict = %v, %v", ok, err)
	}
	if got, _ := s.Get(ctx, smp.ID); got.State != samples.Pending || *got.Reward != 1 || !slices.Equal(got.Votes, []string{"1", "1", "-1"}) {
		t.Fatalf("after verdict: %+v", got)
	}
	if ok, _ := s.SetVerdict(ctx, smp.ID, "prm:gpt", -1, nil, ""); ok {
		t.Fatal("a second verdict was recorded")
	}
	tasks, err := s.DueForTeacher(ctx, time.Now(), 10)
	if err != nil || len(tasks) != 1 || !slices.Equal(tasks[0].Completion, smp.Completion) {
		t.Fatalf("teacher tasks %+v, %v", tasks, err)
	}
	if ok, _ := s.SetTeacher(ctx, smp.ID, []float32{-1}); ok {
		t.Fatal("teacher log-probs of the wrong length were recorded")
	}
	if ok, err := s.SetTeacher(ctx, smp.ID, []float32{-0.4, -1, -0.02}); err != nil || !ok {
		t.Fatalf("SetTeacher = %v, %v", ok, err)
	}
	got, _ := s.Get(ctx, smp.ID)
	if got.State != samples.Scored || !slices.Equal(got.TeacherLogprobs, []float32{-0.4, -1, -0.02}) {
		t.Fatalf("after both scores: %+v", got)
	}
	tr := got.ForTraining()
	if tr.Reward != 1 || tr.Group != got.PromptHash || !slices.Equal(tr.Prompt, smp.Prompt) || len(tr.TeacherLogprobs) != 3 {
		t.Fatalf("ForTraining %+v", tr)
	}
	c, _ = s.Counts(ctx)
	if c.Scored != 1 || c.Judged != 1 || c.MeanReward == nil || *c.MeanReward != 1 || c.Retrying != 0 {
		t.Fatalf("counts %+v", c)
	}
}

func scored(t *testing.T, s *samples.Store, session string, gen int64, reward float64) int64 {
	t.Helper()
	ctx := context.Background()
	smp := add(t, s, sample(session, gen, true, false))
	if _, err := s.EndSession(ctx, session); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.SetVerdict(ctx, smp.ID, "j", reward, []string{"1"}, ""); err != nil || !ok {
		t.Fatalf("SetVerdict = %v, %v", ok, err)
	}
	return smp.ID
}

func TestBatchesAreTrainedOnce(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	var ids []int64
	for i := 0; i < 6; i++ {
		ids = append(ids, scored(t, s, "sess-"+string(rune('a'+i)), 3, float64(i%2)))
	}
	old := scored(t, s, "old", 2, 1)
	if _, err := s.ClaimBatch(ctx, 4, 10); !errors.Is(err, samples.ErrNoSamples) {
		t.Fatalf("claim of a generation without samples: %v", err)
	}
	b1, err := s.ClaimBatch(ctx, 3, 4)
	if err != nil {
		t.Fatal(err)
	}
	if b1.State != samples.BatchOpen || len(b1.Samples) != 4 || b1.Samples[0].ID != ids[0] || b1.Samples[3].ID != ids[3] {
		t.Fatalf("batch 1: %+v", b1)
	}
	b2, err := s.ClaimBatch(ctx, 3, 4)
	if err != nil || len(b2.Samples) != 2 || b2.Samples[0].ID != ids[4] {
		t.Fatalf("batch 2: %+v, %v", b2, err)
	}
	if _, err := s.ClaimBatch(ctx, 3, 4); !errors.Is(err, samples.ErrNoSamples) {
		t.Fatalf("third claim: %v", err)
	}
	open, err := s.OpenBatches(ctx)
	if err != nil || len(open) != 2 {
		t.Fatalf("open batches %d, %v", len(open), err)
	}
	if err := s.FinishBatch(ctx, b1.ID, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.FinishBatch(ctx, b1.ID, 2); !errors.Is(err, samples.ErrBatchClosed) {
		t.Fatalf("finishing twice: %v", err)
	}
	if err := s.ReleaseBatch(ctx, b1.ID, "x"); !errors.Is(err, samples.ErrBatchClosed) {
		t.Fatalf("releasing a trained batch: %v", err)
	}
	if err := s.ReleaseBatch(ctx, 999, "x"); !errors.Is(err, samples.ErrNotFound) {
		t.Fatalf("releasing an unknown batch: %v", err)
	}
	// A failed step gives its samples back; the next claim takes them again.
	if err := s.ReleaseBatch(ctx, b2.ID, "forward_backward failed"); err != nil {
		t.Fatal(err)
	}
	b3, err := s.ClaimBatch(ctx, 3, 10)
	if err != nil || len(b3.Samples) != 2 || b3.Samples[0].ID != ids[4] {
		t.Fatalf("claim after release: %+v, %v", b3, err)
	}
	if n, err := s.Drop(ctx, []int64{ids[0], ids[5]}, "datum refused"); err != nil || n != 1 {
		t.Fatalf("Drop = %d, %v (trained samples stay trained)", n, err)
	}
	if err := s.FinishBatch(ctx, b3.ID, 2); err != nil {
		t.Fatal(err)
	}
	done, _ := s.Batch(ctx, b3.ID)
	var states []string
	for _, smp := range done.Samples {
		states = append(states, smp.State)
	}
	if !slices.Equal(states, []string{samples.Trained, samples.Dropped}) || done.Samples[0].Step != 2 {
		t.Fatalf("batch 3 after finish: %v step %d", states, done.Samples[0].Step)
	}
	if n, err := s.DropStale(ctx, 3); err != nil || n != 1 {
		t.Fatalf("DropStale = %d, %v", n, err)
	}
	if got, _ := s.Get(ctx, old); got.State != samples.Dropped || got.StateReason == "" {
		t.Fatalf("stale sample %s %q", got.State, got.StateReason)
	}
	c, _ := s.Counts(ctx)
	if c.Trained != 5 || c.Dropped != 2 || c.Claimed != 0 || c.Scored != 0 {
		t.Fatalf("counts %+v", c)
	}
}

// TestConcurrentClaimsNeverOverlap claims from many goroutines: every
// scored sample lands in exactly one batch.
func TestConcurrentClaimsNeverOverlap(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	const total = 40
	for i := 0; i < total; i++ {
		scored(t, s, "c"+string(rune('A'+i)), 1, 1)
	}
	var mu sync.Mutex
	seen := map[int64]int64{}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				b, err := s.ClaimBatch(ctx, 1, 3)
				if errors.Is(err, samples.ErrNoSamples) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, smp := range b.Samples {
					if prev, dup := seen[smp.ID]; dup {
						t.Errorf("sample %d in batches %d and %d", smp.ID, prev, b.ID)
					}
					seen[smp.ID] = b.ID
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != total {
		t.Fatalf("%d samples claimed, want %d", len(seen), total)
	}
}

func TestBlobCodecs(t *testing.T) {
	ids := []int32{0, 1, -1, 151645, math.MinInt32, math.MaxInt32}
	got, err := samples.DecodeIDs(samples.EncodeIDs(ids))
	if err != nil || !slices.Equal(got, ids) {
		t.Fatalf("ids %v, %v", got, err)
	}
	if b := samples.EncodeIDs([]int32{1, 256}); !slices.Equal(b, []byte{1, 0, 0, 0, 0, 1, 0, 0}) {
		t.Fatalf("not little-endian int32: %v", b)
	}
	if _, err := samples.DecodeIDs([]byte{1, 2, 3}); err == nil {
		t.Fatal("a 3-byte blob decoded")
	}
	if _, err := samples.DecodeFloats([]byte{1}); err == nil {
		t.Fatal("a 1-byte blob decoded")
	}
	if samples.PromptHash([]int32{1, 2}) == samples.PromptHash([]int32{2, 1}) {
		t.Fatal("prompt hash ignores order")
	}
}
