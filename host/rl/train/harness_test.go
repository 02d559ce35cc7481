package train

import (
	"context"
	"fmt"
	"math"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/backend/tinker"
	"github.com/metaclaw-go/metaclaw/host/rl/backend/weaver"
	"github.com/metaclaw-go/metaclaw/host/rl/batch"
	"github.com/metaclaw-go/metaclaw/host/rl/connect"
	"github.com/metaclaw-go/metaclaw/host/rl/samples"
	"github.com/metaclaw-go/metaclaw/host/scheduler"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/faketinker"
	"github.com/metaclaw-go/metaclaw/internal/faketinker/toy"
	"github.com/metaclaw-go/metaclaw/internal/fakeweaver"
)

const testModel = "toy" // vocabulary 0..31, EOS 31

// tenv is a training loop against a fake service, with the host's store.
type tenv struct {
	t       *testing.T
	kind    string
	fake    *faketinker.Server
	weaver  *fakeweaver.Server
	url     string
	cfg     *config.Config
	st      *store.SQLite
	samples *samples.Store
	steps   *Store
	gen     int64
	genMu   sync.Mutex
	b       backend.Backend
	loop    *Loop
	cur     *backend.Current
	base    backend.Sampler // the base model, for sampling test answers
}

type envOpts struct {
	kind    string // tinker (default), mint, weaver
	latency time.Duration
	config  func(*config.Config)
	windows bool
	// dir reuses a state dir (a restart); "" = a new one.
	dir  string
	fake *faketinker.Server // reuse a fake (a restart against the same service)
}

func newEnv(t *testing.T, o envOpts) *tenv {
	t.Helper()
	if o.kind == "" {
		o.kind = connect.Tinker
	}
	e := &tenv{t: t, kind: o.kind}
	switch o.kind {
	case connect.Weaver:
		e.weaver = fakeweaver.New(fakeweaver.Options{APIKey: "sk-w", Latency: o.latency})
		ts := httptest.NewServer(e.weaver)
		t.Cleanup(func() { ts.Close(); e.weaver.Close() })
		e.url = ts.URL
	default:
		e.fake = o.fake
		if e.fake == nil {
			e.fake = faketinker.New(faketinker.Options{Flavor: faketinker.Flavor(o.kind), APIKey: "tml-k", Latency: o.latency, LongPoll: 20 * time.Millisecond})
			t.Cleanup(e.fake.Close)
		}
		ts := httptest.NewServer(e.fake)
		t.Cleanup(ts.Close)
		e.url = ts.URL
	}
	dir := o.dir
	if dir == "" {
		dir = t.TempDir()
	}
	cfg := config.Default(dir)
	cfg.Mode = "rl"
	cfg.RL.Backend, cfg.RL.BaseURL, cfg.RL.Model, cfg.RL.LoRARank = o.kind, e.url, testModel, 8
	cfg.RL.APIKey = "tml-k"
	if o.kind == connect.Weaver {
		cfg.RL.APIKey = "sk-w"
	}
	cfg.RL.BatchSize, cfg.RL.CheckpointEvery, cfg.RL.LearningRate = 4, 2, 0.05
	if o.config != nil {
		o.config(cfg)
	}
	e.cfg = cfg
	st, err := store.OpenSQLite(context.Background(), filepath.Join(dir, store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e.st, e.samples, e.steps = st, samples.New(st.Writer(), st.Reader()), NewStore(st.Writer(), st.Reader())
	e.b = e.connect()
	e.loop = New(Options{Config: cfg, Samples: e.samples, Steps: e.steps, Windows: o.windows,
		Generation: func(context.Context) (int64, error) { e.genMu.Lock(); defer e.genMu.Unlock(); return e.gen, nil },
		Poll:       20 * time.Millisecond, Backoff: func(int) time.Duration { return 20 * time.Millisecond },
		Connect: func(ctx context.Context) (backend.Backend, error) { return e.open(ctx) },
		Log:     zerolog.Nop()})
	base, err := e.b.Sampler(ctx(t), backend.SamplerSpec{BaseModel: testModel})
	if err != nil {
		t.Fatal(err)
	}
	e.base = base
	e.cur = &backend.Current{}
	return e
}

func (e *tenv) open(ctx context.Context) (backend.Backend, error) {
	return connect.Open(ctx, e.cfg, connect.Options{Getenv: func(string) string { return "" }, Logger: zerolog.Nop(),
		Tinker: tinker.Options{RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond, MaxRetries: 3, BillingPause: time.Millisecond,
			PollDelay: func(string) time.Duration { return time.Millisecond }},
		Weaver: weaver.Options{PollBase: time.Millisecond, PollMax: 20 * time.Millisecond, RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond}})
}

func (e *tenv) connect() backend.Backend {
	e.t.Helper()
	b, err := e.open(ctx(e.t))
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { _ = b.Close() })
	return b
}

// start inits the trainer (as the runtime does) and runs the loop.
func (e *tenv) start() {
	e.t.Helper()
	s, step, err := e.loop.Init(ctx(e.t), e.b, e.cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	e.cur.Swap(s, step)
	e.loop.Start(context.Background(), e.cur)
	e.t.Cleanup(func() { e.loop.Stop(5 * time.Second) })
}

func (e *tenv) setGeneration(g int64) {
	e.genMu.Lock()
	e.gen = g
	e.genMu.Unlock()
	e.loop.Wake()
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

var prompt = []int32{151644, 872, 198, 5, 7}

// answer samples the base model on prompt with completion first token tok
// forced by prompting until the sampler gives it (deterministic seeds).
// Instead of forcing, tests use the toy model's own answer and build the
// rewarded/punished pair from its first token.
func (e *tenv) sampled(seed int64) backend.Sequence {
	e.t.Helper()
	p := backend.DefaultSampling(4)
	p.Seed = &seed
	r, err := e.base.Sample(ctx(e.t), backend.SampleRequest{Prompt: prompt, Params: p})
	if err != nil {
		e.t.Fatal(err)
	}
	return r.Sequences[0]
}

// addScored stores a scored sample of the current generation as the
// serving path and the judge would.
func (e *tenv) addScored(session string, seq backend.Sequence, reward float64) int64 {
	e.t.Helper()
	c := ctx(e.t)
	e.genMu.Lock()
	gen := e.gen
	e.genMu.Unlock()
	id, err := e.samples.Add(c, samples.NewSample{SessionID: session, Agent: "default", BaseModel: testModel, Sampler: e.base.ID(),
		SkillGeneration: gen, Prompt: prompt, Completion: seq.Tokens, Logprobs: seq.Logprobs, StopReason: seq.StopReason,
		Instruction: "say something", Response: fmt.Sprint(seq.Tokens), LastMessage: "say something", NeedJudge: true})
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.samples.EndSession(c, session); err != nil {
		e.t.Fatal(err)
	}
	vote := fmt.Sprint(int(reward))
	if ok, err := e.samples.SetVerdict(c, id, "fake-judge", reward, []string{vote, vote, vote}, "Score: "+vote); err != nil || !ok {
		e.t.Fatalf("verdict: %v %v", ok, err)
	}
	e.loop.Wake()
	return id
}

// pair adds a batch of four samples of one prompt: two answers starting
// with token good rewarded +1, two with token bad punished −1.
func (e *tenv) batchOf(tag string, good, bad backend.Sequence) []int64 {
	var ids []int64
	for i := range 2 {
		ids = append(ids, e.addScored(fmt.Sprintf("%s-g%d", tag, i), good, 1))
		ids = append(ids, e.addScored(fmt.Sprintf("%s-b%d", tag, i), bad, -1))
	}
	return ids
}

// twoAnswers returns two sampled answers whose first tokens differ.
func (e *tenv) twoAnswers() (backend.Sequence, backend.Sequence) {
	e.t.Helper()
	a := e.sampled(1)
	for seed := int64(2); seed < 200; seed++ {
		b := e.sampled(seed)
		if b.Tokens[0] != a.Tokens[0] {
			return a, b
		}
	}
	e.t.Fatal("the toy model always starts with the same token")
	return a, a
}

// probe is log p(token | prompt) under s, read through the protocol.
func probe(t *testing.T, s backend.Sampler, token int32) float64 {
	t.Helper()
	in := append(append([]int32{}, prompt...), token)
	r, err := s.Sample(ctx(t), backend.SampleRequest{Prompt: in, Params: backend.DefaultSampling(1), PromptLogprobs: true})
	if err != nil {
		t.Fatal(err)
	}
	return float64(r.PromptLogprobs[len(in)-1])
}

// waitFor polls cond (an event, not a fixed sleep).
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitStep waits until step n is recorded.
func (e *tenv) waitStep(n int) StepRecord {
	e.t.Helper()
	var last *StepRecord
	waitFor(e.t, fmt.Sprintf("step %d (status: %+v)", n, e.loop.Status(context.Background())), func() bool {
		var err error
		last, err = e.steps.Last(context.Background())
		return err == nil && last != nil && last.Step >= n
	})
	return *last
}

func (e *tenv) sample(id int64) samples.Sample {
	e.t.Helper()
	s, err := e.samples.Get(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// stateDiff compares two training checkpoints (weights and Adam moments);
// "" when equal.
func stateDiff(a, b *toy.State) string {
	if a.Steps != b.Steps {
		return fmt.Sprintf("optimizer steps %d vs %d", a.Steps, b.Steps)
	}
	for name, pair := range map[string][2]map[int32][]float64{"weights": {a.W.Delta, b.W.Delta}, "adam m": {a.M, b.M}, "adam v": {a.V, b.V}} {
		x, y := pair[0], pair[1]
		if len(x) != len(y) {
			return fmt.Sprintf("%s: %d rows vs %d", name, len(x), len(y))
		}
		for k, rx := range x {
			ry := y[k]
			if len(rx) != len(ry) {
				return fmt.Sprintf("%s row %d: length %d vs %d", name, k, len(rx), len(ry))
			}
			for i := range rx {
				if math.Abs(rx[i]-ry[i]) > 1e-12*math.Max(1, math.Abs(rx[i])) {
					return fmt.Sprintf("%s row %d [%d]: %v vs %v", name, k, i, rx[i], ry[i])
				}
			}
		}
	}
	return ""
}

// reference trains a fresh LoRA on a separate fake, one step per recorded
// step, from the recorded batches and parameters, and saves a checkpoint:
// what an uninterrupted run ends with.
func reference(t *testing.T, e *tenv, steps []StepRecord) *toy.State {
	t.Helper()
	fake := faketinker.New(faketinker.Options{APIKey: "tml-k", LongPoll: 20 * time.Millisecond})
	ts := httptest.NewServer(fake)
	defer func() { ts.Close(); fake.Close() }()
	b, err := tinker.Connect(ctx(t), tinker.Options{BaseURL: ts.URL, APIKey: "tml-k", RetryBase: time.Millisecond, RetryMax: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	tr, err := b.CreateModel(ctx(t), connect.ModelConfig(e.cfg))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range steps {
		ss, err := e.samples.TrainedBy(ctx(t), r.BatchID, r.Step)
		if err != nil {
			t.Fatal(err)
		}
		built, _, err := BuildBatch(ss, batch.Mode(r.Advantage), r.KLCoef)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := backend.RunStep(ctx(t), tr, backend.StepRequest{Data: built.Datums, Loss: backend.LossFn(r.LossFn), Adam: backend.DefaultAdam(r.LearningRate)}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := tr.SaveState(ctx(t), "reference")
	if err != nil {
		t.Fatal(err)
	}
	st, ok := fake.CheckpointState(c.Path)
	if !ok {
		t.Fatal("reference checkpoint missing")
	}
	return st
}

// reporter records what the loop tells the scheduler.
type reporter struct {
	mu    sync.Mutex
	busy  []string
	idle  []string
	steps []scheduler.StepReport
}

func (r *reporter) Busy(p string) { r.mu.Lock(); r.busy = append(r.busy, p); r.mu.Unlock() }
func (r *reporter) Idle(w string) { r.mu.Lock(); r.idle = append(r.idle, w); r.mu.Unlock() }
func (r *reporter) StepDone(s scheduler.StepReport) {
	r.mu.Lock()
	r.steps = append(r.steps, s)
	r.mu.Unlock()
}
func (r *reporter) StepDuration() time.Duration { return 0 }
func (r *reporter) doneSteps() []scheduler.StepReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]scheduler.StepReport(nil), r.steps...)
}
