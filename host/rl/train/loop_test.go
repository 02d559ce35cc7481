package train

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/connect"
	"github.com/metaclaw-go/metaclaw/host/rl/samples"
	"github.com/metaclaw-go/metaclaw/host/scheduler"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/faketinker"
)

// TestStepsLearnSwapAndRecord: scored samples become a step on every
// backend; the hot-swapped sampler gives the rewarded first token a higher
// probability and the punished one a lower, the old sampler (turns in
// flight) still answers with the old weights, the samples are trained once
// and the step is recorded with its loss, reward and checkpoint.
func TestStepsLearnSwapAndRecord(t *testing.T) {
	for _, kind := range []string{connect.Tinker, connect.MinT, connect.Weaver} {
		t.Run(kind, func(t *testing.T) {
			e := newEnv(t, envOpts{kind: kind})
			e.start()
			first := e.cur.Load()
			if first == nil || first.Step != 0 {
				t.Fatalf("initial sampler %+v", first)
			}
			good, bad := e.twoAnswers()
			g0, b0 := probe(t, first.Sampler, good.Tokens[0]), probe(t, first.Sampler, bad.Tokens[0])
			ids := e.batchOf("a", good, bad)
			rec := e.waitStep(1)
			// The step is recorded, then the new sampler is swapped in.
			waitFor(t, "the step 1 sampler serving", func() bool { return e.cur.Load().Step >= 1 })
			v := e.cur.Load()
			if v.Step != 1 || v.Sampler.ID() == first.Sampler.ID() || rec.Sampler != v.Sampler.ID() {
				t.Fatalf("after step 1 serving %+v (step row sampler %q)", v, rec.Sampler)
			}
			g1, b1 := probe(t, v.Sampler, good.Tokens[0]), probe(t, v.Sampler, bad.Tokens[0])
			if !(g1 > g0 && b1 < b0) {
				t.Fatalf("did not learn: rewarded token %.4f → %.4f, punished %.4f → %.4f", g0, g1, b0, b1)
			}
			if again := probe(t, first.Sampler, good.Tokens[0]); again != g0 {
				t.Fatalf("the old sampler changed: %.4f → %.4f", g0, again)
			}
			for _, id := range ids {
				if s := e.sample(id); s.State != samples.Trained || s.Step != 1 {
					t.Fatalf("sample %d: %s step %d", id, s.State, s.Step)
				}
			}
			if rec.Samples != 4 || rec.Datums != 4 || rec.Loss == nil || rec.MeanReward == nil || *rec.MeanReward != 0 ||
				rec.LossFn != "importance_sampling" || rec.CheckpointPath != "" || rec.ModelID == "" || rec.DurationMS < 0 {
				t.Fatalf("step record %+v", rec)
			}
			e.batchOf("b", good, bad)
			rec2 := e.waitStep(2)
			if rec2.CheckpointPath == "" {
				t.Fatalf("rl.checkpoint_every 2: no checkpoint at step 2: %+v", rec2)
			}
			st := e.loop.Status(context.Background())
			if st.Step != 2 || st.LastCheckpoint == nil || st.LastCheckpoint.Step != 2 || st.LastStep == nil || st.Ready != 0 {
				t.Fatalf("status %+v", st)
			}
		})
	}
}

// TestFailedStepRetriesFromTheFailedStage: optim_step fails (a definite
// failure): the old sampler keeps serving, the batch stays open, and the
// retry starts at optim_step — forward_backward is not run again, so the
// gradients count once: the model equals an uninterrupted run's.
func TestFailedStepRetriesFromTheFailedStage(t *testing.T) {
	e := newEnv(t, envOpts{})
	var backoff atomic.Int64
	backoff.Store(int64(time.Hour))
	e.loop.o.Backoff = func(int) time.Duration { return time.Duration(backoff.Load()) }
	e.start()
	good, bad := e.twoAnswers()
	e.fake.Inject(faketinker.Fault{Endpoint: "optim_step", Category: "server"})
	e.batchOf("a", good, bad)
	waitFor(t, "the failure", func() bool {
		ob := e.loop.Status(context.Background()).OpenBatch
		return ob != nil && ob.Failures == 1
	})
	st := e.loop.Status(context.Background())
	if st.State != StateRetrying || st.OpenBatch.From != "optim_step" || e.cur.Load().Step != 0 {
		t.Fatalf("after a failed optim_step: %+v, serving step %d", st, e.cur.Load().Step)
	}
	if n, _ := e.samples.Counts(context.Background()); n.Claimed != 4 {
		t.Fatalf("the batch must stay claimed: %+v", n)
	}
	backoff.Store(int64(time.Millisecond))
	e.loop.mu.Lock()
	e.loop.open.retryAt = time.Time{}
	e.loop.mu.Unlock()
	e.loop.Wake()
	e.waitStep(1)
	if n := e.fake.Count("op:forward_backward"); n != 1 {
		t.Fatalf("forward_backward ran %d times", n)
	}
	e.batchOf("b", good, bad)
	rec := e.waitStep(2)
	got, ok := e.fake.CheckpointState(rec.CheckpointPath)
	if !ok {
		t.Fatalf("checkpoint %q missing", rec.CheckpointPath)
	}
	if diff := stateDiff(got, reference(t, e, e.history())); diff != "" {
		t.Fatalf("the model differs from an uninterrupted run: %s", diff)
	}
}

func (e *tenv) history() []StepRecord {
	e.t.Helper()
	h, err := e.steps.History(context.Background(), 0, false)
	if err != nil {
		e.t.Fatal(err)
	}
	for i, j := 0, len(h)-1; i < j; i, j = i+1, j-1 {
		h[i], h[j] = h[j], h[i]
	}
	return h
}

// TestUnknownFateResumesAndReplays: a forward_backward whose outcome the
// client cannot learn — its submission keeps failing with 5xx, or it was
// accepted (and ran) but every poll of its result fails — leaves the
// model's state unknown. The loop resumes from the last checkpoint on a new
// model, replays the step applied since, retrains the batch, and ends
// exactly where an uninterrupted run does.
func TestUnknownFateResumesAndReplays(t *testing.T) {
	for name, fault := range map[string]faketinker.Fault{
		"submission": {Endpoint: "forward_backward", Status: 503, Times: 4},
		"result":     {Endpoint: "retrieve_future", Op: "forward_backward", Status: 500, Times: 4},
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, envOpts{})
			e.start()
			good, bad := e.twoAnswers()
			for i, tag := range []string{"a", "b", "c"} {
				e.batchOf(tag, good, bad)
				e.waitStep(i + 1)
			}
			model := e.loop.Status(context.Background()).Model
			e.fake.Inject(fault)
			e.batchOf("d", good, bad)
			rec := e.waitStep(4)
			if e.fake.PendingFaults() != 0 {
				t.Fatalf("%d injected faults did not fire", e.fake.PendingFaults())
			}
			st := e.loop.Status(context.Background())
			if st.Model == model || st.Step != 4 {
				t.Fatalf("expected a new model at step 4: %+v (old model %s)", st, model)
			}
			h := e.history()
			if len(h) != 4 || h[2].Replays != 1 || h[0].Replays != 0 || h[3].CheckpointPath == "" {
				t.Fatalf("history %+v", h)
			}
			got, ok := e.fake.CheckpointState(rec.CheckpointPath)
			if !ok {
				t.Fatal("checkpoint of step 4 missing")
			}
			if diff := stateDiff(got, reference(t, e, h)); diff != "" {
				t.Fatalf("the model differs from an uninterrupted run: %s", diff)
			}
		})
	}
}

// TestRestartResumesFromTheLastCheckpoint: a new process (new session)
// finds steps 1–3 recorded, a checkpoint at step 2 and a batch claimed but
// not trained; it resumes at step 2 with the optimizer state, replays step
// 3, trains the open batch as step 4, and the model equals an uninterrupted
// run's; retention run in between (store.retain_days) takes none of it.
func TestRestartResumesFromTheLastCheckpoint(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, envOpts{dir: dir})
	e.start()
	good, bad := e.twoAnswers()
	for i, tag := range []string{"a", "b", "c"} {
		e.batchOf(tag, good, bad)
		e.waitStep(i + 1)
	}
	e.loop.Stop(time.Second)
	ids := e.batchOf("d", good, bad)
	if _, err := e.samples.ClaimBatch(context.Background(), 0, 4); err != nil { // the step the crash interrupted
		t.Fatal(err)
	}
	_ = e.b.Close()
	// Retention (store.retain_days) at its most eager prunes nothing the
	// resume needs: steps, batches and samples are not its to delete.
	if _, err := e.st.Prune(context.Background(), store.PruneOptions{Before: time.Now().Add(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}

	e2 := newEnv(t, envOpts{dir: dir, fake: e.fake})
	s, step, err := e2.loop.Init(ctx(t), e2.b, e2.cfg)
	if err != nil {
		t.Fatal(err)
	}
	st := e2.loop.Status(context.Background())
	if step != 2 || st.Replay == nil || st.Replay.Total != 1 || st.OpenBatch == nil || st.OpenBatch.Samples != 4 {
		t.Fatalf("resume point: step %d, status %+v", step, st)
	}
	e2.cur.Swap(s, step)
	e2.loop.Start(context.Background(), e2.cur)
	t.Cleanup(func() { e2.loop.Stop(5 * time.Second) })
	rec := e2.waitStep(4)
	for _, id := range ids {
		if s := e2.sample(id); s.State != samples.Trained || s.Step != 4 {
			t.Fatalf("sample %d: %s step %d", id, s.State, s.Step)
		}
	}
	if v := e2.cur.Load(); v.Step != 4 {
		t.Fatalf("serving step %d", v.Step)
	}
	got, ok := e2.fake.CheckpointState(rec.CheckpointPath)
	if !ok {
		t.Fatal("checkpoint of step 4 missing")
	}
	if diff := stateDiff(got, reference(t, e2, e2.history())); diff != "" {
		t.Fatalf("the model differs from an uninterrupted run: %s", diff)
	}
}

// TestWindows: with windows, nothing trains outside one; inside, steps run
// and are reported; Pause during a step returns once the step is done
// (trained once, recorded) and nothing new starts until the next window.
func TestWindows(t *testing.T) {
	e := newEnv(t, envOpts{windows: true, latency: 100 * time.Millisecond})
	e.start()
	good, bad := e.twoAnswers()
	e.batchOf("a", good, bad)
	waitFor(t, "waiting for a window", func() bool { return e.loop.Status(context.Background()).State == StateWaitingWindow })
	if n, _ := e.samples.Counts(context.Background()); n.Scored != 4 || n.Claimed != 0 {
		t.Fatalf("outside a window nothing is claimed: %+v", n)
	}
	rep := &reporter{}
	e.loop.Resume(scheduler.Window{ID: 1, Reason: "test", Report: rep})
	e.waitStep(1)
	waitFor(t, "StepDone", func() bool { return len(rep.doneSteps()) == 1 })
	if r := rep.doneSteps()[0]; r.Step != 1 || r.Samples != 4 || r.Duration <= 0 {
		t.Fatalf("step report %+v", r)
	}

	e.batchOf("b", good, bad)
	waitFor(t, "step 2 in flight", func() bool { return e.loop.Status(context.Background()).State == StateTraining })
	if err := e.loop.Pause(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if last, _ := e.steps.Last(context.Background()); last == nil || last.Step != 2 {
		t.Fatalf("Pause returned before the step in flight was recorded: %+v", last)
	}
	e.batchOf("c", good, bad)
	waitFor(t, "paused", func() bool { return e.loop.Status(context.Background()).State == StateWaitingWindow })
	if n, _ := e.samples.Counts(context.Background()); n.Scored != 4 || n.Trained != 8 {
		t.Fatalf("after Pause: %+v", n)
	}
	e.loop.Resume(scheduler.Window{ID: 2, Reason: "test", Report: rep})
	e.waitStep(3)
	rep.mu.Lock()
	defer rep.mu.Unlock()
	if len(rep.busy) == 0 || !strings.HasPrefix(rep.busy[0], "step ") {
		t.Fatalf("busy reports %v", rep.busy)
	}
}

// TestSupportQuerySeparationAndNothingToLearn: samples collected before
// the skills changed are dropped as stale, never trained; a batch whose
// rewards are all equal has nothing to learn under grpo and is dropped
// with that reason, without a step.
func TestSupportQuerySeparationAndNothingToLearn(t *testing.T) {
	e := newEnv(t, envOpts{config: func(c *config.Config) { c.RL.BatchSize = 2 }})
	e.start()
	good, _ := e.twoAnswers()
	e.loop.Stop(time.Second) // stop so both adds land before a claim
	old := []int64{e.addScored("s1", good, 1), e.addScored("s2", good, -1)}
	e.setGeneration(3)
	same := []int64{e.addScored("s3", good, 1), e.addScored("s4", good, 1)}
	e.loop.Start(context.Background(), e.cur)
	waitFor(t, "both batches handled", func() bool {
		return e.sample(old[0]).State == samples.Dropped && e.sample(same[1]).State == samples.Dropped
	})
	if r := e.sample(old[1]).StateReason; !strings.Contains(r, "skill generation") {
		t.Fatalf("stale reason %q", r)
	}
	if r := e.sample(same[0]).StateReason; !strings.Contains(r, "nothing to learn") {
		t.Fatalf("equal rewards reason %q", r)
	}
	if last, _ := e.steps.Last(context.Background()); last != nil {
		t.Fatalf("no step expected: %+v", last)
	}
}

// TestStepNowAndRollback: with rl.manual_train_trigger nothing trains on
// its own; StepNow trains a partial batch; RestartFrom an earlier
// checkpoint rolls the later steps back and serves that checkpoint's
// weights again.
func TestStepNowAndRollback(t *testing.T) {
	e := newEnv(t, envOpts{config: func(c *config.Config) { c.RL.ManualTrainTrigger = true }})
	e.start()
	good, bad := e.twoAnswers()
	e.addScored("p1", good, 1)
	e.addScored("p2", bad, -1)
	waitFor(t, "manual", func() bool { return e.loop.Status(context.Background()).State == StateManual })
	rec, err := e.loop.StepNow(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Step != 1 || rec.Samples != 2 {
		t.Fatalf("partial step %+v", rec)
	}
	if _, err := e.loop.StepNow(ctx(t)); err == nil || !strings.Contains(err.Error(), "no scored samples") {
		t.Fatalf("step with nothing to train: %v", err)
	}
	e.batchOf("b", good, bad)
	if _, err := e.loop.StepNow(ctx(t)); err != nil {
		t.Fatal(err)
	}
	at2 := probe(t, e.cur.Load().Sampler, good.Tokens[0])
	for range 2 {
		e.batchOf("c", good, bad)
		if _, err := e.loop.StepNow(ctx(t)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.loop.RestartFrom(ctx(t), "3"); err == nil || !strings.Contains(err.Error(), "steps with one: 4, 2") {
		t.Fatalf("unknown checkpoint: %v", err)
	}
	req, err := e.loop.RestartFrom(ctx(t), "2")
	if err != nil {
		t.Fatal(err)
	}
	if req.Step != 2 {
		t.Fatalf("resumed %+v", req)
	}
	v := e.cur.Load()
	if v.Step != 2 || probe(t, v.Sampler, good.Tokens[0]) != at2 {
		t.Fatalf("serving step %d after the rollback", v.Step)
	}
	all, _ := e.steps.History(context.Background(), 0, true)
	rolled := 0
	for _, s := range all {
		if s.State == StepRolledBack {
			rolled++
		}
	}
	if rolled != 2 {
		t.Fatalf("rolled back %d steps: %+v", rolled, all)
	}
	e.batchOf("d", good, bad)
	if rec, err := e.loop.StepNow(ctx(t)); err != nil || rec.Step != 3 {
		t.Fatalf("step after the rollback: %+v %v", rec, err)
	}
}

var _ = backend.StageOptim

// TestStepTimeoutResumes: a step slower than rl.step_timeout_minutes is
// abandoned (its outcome unknown): the trainer resumes on a new model and
// trains the batch again, which ends exactly like an uninterrupted run.
func TestStepTimeoutResumes(t *testing.T) {
	e := newEnv(t, envOpts{latency: 150 * time.Millisecond})
	var timeouts atomic.Int64
	e.loop.p.timeout = 50 * time.Millisecond
	e.start()
	good, bad := e.twoAnswers()
	model := e.loop.Status(context.Background()).Model
	e.batchOf("a", good, bad)
	waitFor(t, "a timed-out step", func() bool {
		st := e.loop.Status(context.Background())
		if strings.Contains(st.LastError, "deadline exceeded") {
			timeouts.Add(1)
		}
		return timeouts.Load() > 0
	})
	e.loop.mu.Lock()
	e.loop.p.timeout = time.Minute
	e.loop.mu.Unlock()
	rec := e.waitStep(1)
	if rec.ModelID == model {
		t.Fatalf("the step ran on the model whose state became unknown: %s", model)
	}
	e.batchOf("b", good, bad)
	rec = e.waitStep(2)
	got, ok := e.fake.CheckpointState(rec.CheckpointPath)
	if !ok {
		t.Fatal("checkpoint missing")
	}
	if diff := stateDiff(got, reference(t, e, e.history())); diff != "" {
		t.Fatalf("the model differs from an uninterrupted run: %s", diff)
	}
}
