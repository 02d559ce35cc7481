package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/gofrs/flock"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/daemon"
	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/backend/tinker"
	"github.com/metaclaw-go/metaclaw/host/rl/backend/weaver"
	"github.com/metaclaw-go/metaclaw/host/rl/batch"
	"github.com/metaclaw-go/metaclaw/host/rl/connect"
	"github.com/metaclaw-go/metaclaw/host/rl/samples"
	"github.com/metaclaw-go/metaclaw/host/rl/train"
	"github.com/metaclaw-go/metaclaw/host/scheduler"
	"github.com/metaclaw-go/metaclaw/host/skills"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/fakellm"
	"github.com/metaclaw-go/metaclaw/internal/faketinker"
	"github.com/metaclaw-go/metaclaw/internal/faketinker/toy"
	"github.com/metaclaw-go/metaclaw/internal/fakeweaver"
	"github.com/metaclaw-go/metaclaw/internal/rltest"
)

// holdTap sits in front of the fake training service and holds the n-th
// optimizer step request, so the test can kill the host (or send chat
// turns) while that step is in flight. Released, the request fails with
// 503, or with pass set reaches the service (a slow step).
type holdTap struct {
	next    http.Handler
	mu      sync.Mutex
	seen    int
	holdAt  int
	pass    bool
	held    chan struct{}
	release chan struct{}
}

func newHoldTap(next http.Handler, holdAt int) *holdTap {
	return &holdTap{next: next, holdAt: holdAt, held: make(chan struct{}), release: make(chan struct{})}
}

func (h *holdTap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && (r.URL.Path == "/api/v1/optim_step" || strings.HasSuffix(r.URL.Path, "/optimizer-steps")) {
		h.mu.Lock()
		h.seen++
		hold := h.seen == h.holdAt
		h.mu.Unlock()
		if hold {
			close(h.held)
			<-h.release
			if h.pass {
				h.next.ServeHTTP(w, r)
				return
			}
			http.Error(w, `{"detail":"gone"}`, http.StatusServiceUnavailable)
			return
		}
	}
	h.next.ServeHTTP(w, r)
}

// rlService is the fake training service of one backend kind.
type rlService struct {
	kind   string
	tinker *faketinker.Server
	weaver *fakeweaver.Server
	url    string
	key    string
	tap    *holdTap
}

func newRLService(t *testing.T, kind string, holdAt int) *rlService {
	s := &rlService{kind: kind}
	var h http.Handler
	switch kind {
	case connect.Weaver:
		s.weaver, s.key = fakeweaver.New(fakeweaver.Options{APIKey: "sk-weaver", Models: []toy.Config{rltest.ToyModel()}}), "sk-weaver"
		t.Cleanup(s.weaver.Close)
		h = s.weaver
	default:
		s.tinker = faketinker.New(faketinker.Options{Flavor: faketinker.Flavor(kind), APIKey: "tml-e2e", Models: []toy.Config{rltest.ToyModel()},
			Script: rltest.Script(rltest.Codec(t)), LongPoll: 50 * time.Millisecond})
		s.key = "tml-e2e"
		t.Cleanup(s.tinker.Close)
		h = s.tinker
	}
	s.tap = newHoldTap(h, holdAt)
	ts := httptest.NewServer(s.tap)
	t.Cleanup(func() {
		select {
		case <-s.tap.release:
		default:
			close(s.tap.release)
		}
		ts.Close()
	})
	s.url = ts.URL
	return s
}

func (s *rlService) checkpointState(path string) (*toy.State, bool) {
	if s.weaver != nil {
		return s.weaver.CheckpointState(path)
	}
	return s.tinker.CheckpointState(path)
}

// rlStatus is what the test reads of `metaclaw status --json`.
type rlStatus struct {
	PID int `json:"pid"`
	RL  struct {
		State   string `json:"state"`
		Reason  string `json:"reason"`
		Sampler *struct {
			ID   string `json:"id"`
			Step int    `json:"step"`
		} `json:"sampler"`
	} `json:"rl"`
	Training  *train.Status     `json:"training"`
	Scheduler *scheduler.Status `json:"scheduler"`
}

func (c *cli) rlStatus() rlStatus {
	c.t.Helper()
	out, code := c.run("status", "--json")
	var st rlStatus
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		c.t.Fatalf("status --json (exit %d): %v\n%s", code, err, out)
	}
	return st
}

func (c *cli) logs() string {
	var b strings.Builder
	files, _ := filepath.Glob(filepath.Join(daemon.PathsFor(c.home).LogDir, "*"))
	for _, f := range files {
		data, _ := os.ReadFile(f)
		fmt.Fprintf(&b, "== %s\n%s\n", f, data)
	}
	return b.String()
}

func (c *cli) waitRL(what string, cond func(rlStatus) bool) rlStatus {
	c.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		st := c.rlStatus()
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("timed out waiting for %s; status %+v training %+v\n%s", what, st.RL, st.Training, c.logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// firstWord is the first word of a text.
func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return strings.Trim(f[0], ".,")
	}
	return ""
}

// TestRLTrainsSwapsAndSurvivesKill9 runs the real metaclaw binary in mode rl
// against a fake training service (Tinker, MinT, Weaver), a fake judge and
// turns from the official OpenAI and Anthropic SDKs. The judge rewards
// answers that contain a word the base model's greedy answer lacks and
// punishes the others; the host trains on the judged turns and hot-swaps
// each new sampler, and the greedy answer served to the same prompt
// changes. Mid-way the host is killed
// with SIGKILL while a step is in flight; restarted, it resumes from the
// last checkpoint with the step counter, replays the step lost with the
// weights, trains the interrupted batch, and in the end every sample is
// trained once or waits, none lost, and the model equals an uninterrupted
// run's over the same batches.
func TestRLTrainsSwapsAndSurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real binary several times")
	}
	for _, kind := range []string{connect.Tinker, connect.MinT, connect.Weaver} {
		t.Run(kind, func(t *testing.T) { kill9Run(t, kind) })
	}
}

func kill9Run(t *testing.T, kind string) {
	const every, killAt, lastStep = 3, 5, 6
	svc := newRLService(t, kind, killAt)
	judge := rltest.NewJudge(t)
	var w0Mu sync.Mutex
	w0, w0Ready, target := "", make(chan struct{}), ""
	judge.Verdict = func(prompt string) string {
		<-w0Ready
		resp := prompt[strings.Index(prompt, "Response:\n")+len("Response:\n"):]
		resp, _, _ = strings.Cut(resp, "\n\n")
		w0Mu.Lock()
		defer w0Mu.Unlock()
		if strings.Contains(resp, target) {
			// One such turn in four (by its text, so that the prm_m votes
			// on one turn agree) scores 0: once the policy says the word
			// every time, a batch still holds rewards to tell apart (GRPO
			// learns nothing from equal ones) and training goes on to
			// lastStep; a run whose policy converged by step 5 never got
			// to step 6.
			h := fnv.New32a()
			io.WriteString(h, prompt)
			if h.Sum32()%4 == 0 {
				return "Score: 0"
			}
			return "Score: 1"
		}
		return "Score: -1"
	}
	up := fakellm.New()
	t.Cleanup(up.Close)
	c := newCLI(t)
	// As after `setup --install-bank=false`: the bank's skills in the
	// prompt would change what the toy policy samples.
	if err := skills.DeclineBank(filepath.Join(c.home, "skills")); err != nil {
		t.Fatal(err)
	}
	cfgText := fmt.Sprintf(`mode: rl
llm:
  api_base: %s/v1
  api_key: sk-upstream
  model_id: gpt-test
rl:
  backend: %s
  base_url: %s
  api_key: %s
  model: %s
  tokenizer_path: %s
  prm_url: %s/v1
  prm_model: judge-1
  prm_api_key: judge-key
  batch_size: 4
  checkpoint_every: %d
  learning_rate: 0.3
  fallback_to_llm: false
skills:
  auto_evolve: false
memory:
  enabled: false
`, up.URL, kind, svc.url, svc.key, rltest.Model, rltest.TokenizerDir(), judge.URL, every)
	if err := os.WriteFile(filepath.Join(c.home, "config.yaml"), []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	start := func() string {
		t.Helper()
		out, code := c.run("start", "--port", "0")
		if code != 0 {
			t.Fatalf("start: %d %s\n%s", code, out, c.logs())
		}
		st := c.waitRL("the policy serves", func(s rlStatus) bool { return s.RL.State == "serving" })
		out, _ = c.run("status", "--json")
		var s struct {
			Listen string `json:"listen"`
		}
		_ = json.Unmarshal([]byte(out), &s)
		_ = st
		return "http://" + s.Listen
	}
	base := start()
	ctx := context.Background()
	served := 0
	probe := func(base, session string) string {
		t.Helper()
		oc := openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey(c.proxyKey()), option.WithMaxRetries(0),
			option.WithHeader("X-Session-Id", session), option.WithHeader("X-Session-Done", "true"))
		cc, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-test", Temperature: openai.Float(0), MaxTokens: openai.Int(6),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Say something.")}})
		if err != nil {
			t.Fatalf("probe: %v\n%s", err, c.logs())
		}
		served++
		return cc.Choices[0].Message.Content
	}
	before := probe(base, "probe-before")
	w0Mu.Lock()
	w0, target = firstWord(before), "help"
	if strings.Contains(before, target) {
		target = "file"
	}
	w0Mu.Unlock()
	close(w0Ready)
	if w0 == "" {
		t.Fatalf("greedy answer %q has no first word", before)
	}

	// A session of two turns from an SDK (alternating OpenAI and Anthropic);
	// the second ends the session, so both turns are judged.
	session := func(base string, i int) {
		t.Helper()
		id := fmt.Sprintf("s%03d", i)
		if i%2 == 0 {
			oc := openai.NewClient(option.WithBaseURL(base+"/v1"), option.WithAPIKey(c.proxyKey()), option.WithMaxRetries(0), option.WithHeader("X-Session-Id", id))
			msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage(fmt.Sprintf("Question number %d?", i))}
			for turn := range 2 {
				opts := []option.RequestOption{}
				if turn == 1 {
					opts = append(opts, option.WithHeader("X-Session-Done", "true"))
				}
				cc, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-test", Temperature: openai.Float(1), MaxTokens: openai.Int(6), Messages: msgs}, opts...)
				if err != nil {
					t.Fatalf("session %s turn %d: %v\n%s", id, turn, err, c.logs())
				}
				served++
				msgs = append(msgs, cc.Choices[0].Message.ToParam(), openai.UserMessage("And then?"))
			}
			return
		}
		ac := anthropic.NewClient(aoption.WithBaseURL(base), aoption.WithAPIKey(c.proxyKey()), aoption.WithMaxRetries(0), aoption.WithHeader("X-Session-Id", id))
		msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(fmt.Sprintf("Question number %d?", i)))}
		for turn := range 2 {
			opts := []aoption.RequestOption{}
			if turn == 1 {
				opts = append(opts, aoption.WithHeader("X-Session-Done", "1"))
			}
			m, err := ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-test", MaxTokens: 6, Messages: msgs}, opts...)
			if err != nil {
				t.Fatalf("session %s turn %d: %v\n%s", id, turn, err, c.logs())
			}
			served++
			msgs = append(msgs, m.ToParam(), anthropic.NewUserMessage(anthropic.NewTextBlock("And then?")))
		}
	}

	// caughtUp waits until the loop has claimed what the judge scored (fewer
	// than a batch ready) or the tap holds a step, and says which. Sessions
	// sent faster than the loop trains would pile up hundreds of samples
	// that a restart trains in one burst, past what `rl history` lists.
	caughtUp := func() (held bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for {
			select {
			case <-svc.tap.held:
				return true
			default:
			}
			if st := c.rlStatus(); st.Training != nil && st.Training.Ready < st.Training.BatchSize {
				return false
			}
			if time.Now().After(deadline) {
				t.Fatalf("the loop did not catch up; status %+v\n%s", c.rlStatus().Training, c.logs())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// Phase 1: train until the killAt-th step's optimizer request arrives
	// (held by the tap), then SIGKILL the host.
	i := 0
	for held := false; !held; i++ {
		if i > 400 {
			t.Fatalf("no step %d after %d sessions; status %+v\n%s", killAt, i, c.rlStatus().Training, c.logs())
		}
		session(base, i)
		held = caughtUp()
	}
	pid := c.rlStatus().PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	lock := flock.New(daemon.PathsFor(c.home).Lock)
	waitUntil(t, "the killed host released its lock", func() bool {
		ok, _ := lock.TryLock()
		if ok {
			lock.Unlock()
		}
		return ok
	})
	close(svc.tap.release)

	db := openRLDB(t, c.home)
	steps, ss := train.NewStore(db.Writer(), db.Reader()), samples.New(db.Writer(), db.Reader())
	open, err := ss.OpenBatches(ctx)
	if err != nil || len(open) != 1 || len(open[0].Samples) != 4 {
		t.Fatalf("after the kill: open batches %v (%v)", open, err)
	}
	if last, _ := steps.Last(ctx); last == nil || last.Step != killAt-1 {
		t.Fatalf("after the kill the last step is %+v, want %d", last, killAt-1)
	}
	db.Close()

	// Phase 2: restart; the host resumes from the checkpoint of step 3.
	base = start()
	st := c.rlStatus()
	if st.Training == nil || st.Training.LastCheckpoint == nil || st.Training.Step < every {
		t.Fatalf("after the restart: %+v", st.Training)
	}
	c.waitRL("the interrupted batch trained", func(s rlStatus) bool { return s.Training != nil && s.Training.Step >= killAt })
	// Sessions, paced, until step lastStep; then the open batch finishes.
	for ; c.rlStatus().Training.Step < lastStep; i++ {
		if i > 800 {
			t.Fatalf("no step %d; status %+v\n%s", lastStep, c.rlStatus().Training, c.logs())
		}
		session(base, i)
		caughtUp()
	}
	c.waitRL("the last open batch trained", func(s rlStatus) bool { return s.Training != nil && s.Training.OpenBatch == nil })
	after := probe(base, "probe-after")
	if after == before {
		t.Errorf("after %d steps the greedy answer is unchanged: %q", lastStep, after)
	}
	if out, _ := c.run("status"); !strings.Contains(out, "training  ") || !strings.Contains(out, "mean reward") {
		t.Errorf("metaclaw status shows no training line:\n%s", out)
	}
	// The CLI reads the same through the host's API.
	out, code := c.run("rl", "history", "--json")
	var hist struct {
		Steps []train.StepRecord `json:"steps"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &hist) != nil || len(hist.Steps) < lastStep {
		t.Fatalf("rl history: %d %s", code, out)
	}
	if out, code := c.run("stop", "--timeout", "30s"); code != 0 {
		t.Fatalf("stop: %s", out)
	}

	// Every turn is a sample; none lost; every trained sample was trained by
	// exactly one recorded step; nothing is left claimed.
	db = openRLDB(t, c.home)
	defer db.Close()
	steps, ss = train.NewStore(db.Writer(), db.Reader()), samples.New(db.Writer(), db.Reader())
	counts, err := ss.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	total := counts.Pending + counts.Scored + counts.Claimed + counts.Trained + counts.Dropped
	if total != served || counts.Claimed != 0 {
		t.Fatalf("%d turns served, samples %+v", served, counts)
	}
	applied, err := steps.History(ctx, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	for k, j := 0, len(applied)-1; k < j; k, j = k+1, j-1 {
		applied[k], applied[j] = applied[j], applied[k]
	}
	trained := 0
	replayed := false
	for n, r := range applied {
		if r.Step != n+1 {
			t.Fatalf("steps are not 1..n: %+v", applied)
		}
		got, err := ss.TrainedBy(ctx, r.BatchID, r.Step)
		if err != nil || len(got) != r.Samples {
			t.Fatalf("step %d: %d samples recorded, %d trained by it (%v)", r.Step, r.Samples, len(got), err)
		}
		trained += len(got)
		if r.Step == killAt-1 && r.Replays == 1 {
			replayed = true
		}
	}
	if trained != counts.Trained || !replayed {
		t.Fatalf("trained samples %d vs %d; step %d replayed: %v", trained, counts.Trained, killAt-1, replayed)
	}
	var final *train.StepRecord
	for k := range applied {
		if applied[k].CheckpointPath != "" {
			final = &applied[k]
		}
	}
	if final == nil || final.Step < lastStep {
		t.Fatalf("no checkpoint at step %d: %+v", lastStep, applied)
	}
	got, ok := svc.checkpointState(final.CheckpointPath)
	if !ok {
		t.Fatalf("checkpoint %s not on the service", final.CheckpointPath)
	}
	want := referenceRun(t, kind, ss, applied[:final.Step])
	if got.Steps != want.Steps || !sameRows(got.W.Delta, want.W.Delta) || !sameRows(got.M, want.M) || !sameRows(got.V, want.V) {
		t.Fatalf("the model after the kill differs from an uninterrupted run (optimizer steps %d vs %d)", got.Steps, want.Steps)
	}
	if kind == connect.Tinker {
		offlineCLI(t, c, svc, ss, applied[len(applied)-1].Step)
	}
}

// offlineCLI drives `metaclaw rl …` with no host running: the commands read
// the store, `rl step` trains in-process and checkpoints, and `rl resume N`
// rolls back at the next start.
func offlineCLI(t *testing.T, c *cli, svc *rlService, ss *samples.Store, last int) {
	ctx := context.Background()
	out, code := c.run("rl", "status", "--json")
	var st train.Status
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || st.State != "stopped" || st.Step != last || st.LastCheckpoint == nil {
		t.Fatalf("rl status offline: %d %s", code, out)
	}
	if out, code := c.run("rl", "history"); code != 0 || !strings.Contains(out, "replayed 1×") || !strings.Contains(out, "MEAN REWARD") {
		t.Fatalf("rl history offline: %d %s", code, out)
	}
	out, code = c.run("rl", "checkpoints", "--json")
	var cps struct {
		Checkpoints []train.CheckpointEntry `json:"checkpoints"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &cps) != nil || len(cps.Checkpoints) < 2 {
		t.Fatalf("rl checkpoints offline: %d %s", code, out)
	}
	out, code = c.run("rl", "samples", "--state", "trained", "--limit", "1000", "--json")
	var list struct {
		Samples []train.SampleSummary `json:"samples"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list.Samples) == 0 || len(list.Samples[0].Votes) != 3 {
		t.Fatalf("rl samples offline: %d %.300s", code, out)
	}
	if out, code := c.run("rl", "samples", fmt.Sprint(list.Samples[0].ID)); code != 0 || !strings.Contains(out, "reward") || !strings.Contains(out, "trained by step") {
		t.Fatalf("rl samples <id>: %d %s", code, out)
	}
	// One more judged turn, as serving and the judge would store it; `rl
	// step` trains it without a host.
	old, err := ss.Get(ctx, list.Samples[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	for k, r := range []float64{1, -1} {
		session := fmt.Sprintf("offline-%d", k)
		id, err := ss.Add(ctx, samples.NewSample{SessionID: session, Agent: "main", BaseModel: old.BaseModel, Sampler: old.Sampler, Prompt: old.Prompt,
			Completion: old.Completion, Logprobs: old.Logprobs, StopReason: old.StopReason, Instruction: "offline", Response: old.Response, NeedJudge: true})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ss.EndSession(ctx, session); err != nil {
			t.Fatal(err)
		}
		if _, err := ss.SetVerdict(ctx, id, "prm:judge-1", r, []string{"1"}, ""); err != nil {
			t.Fatal(err)
		}
	}
	ready, err := ss.ScoredCount(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	countsBefore, err := ss.Counts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, code = c.run("rl", "step", "--json")
	var stepped struct {
		Step train.StepRecord `json:"step"`
	}
	// A claimed batch with nothing to learn (equal rewards) is dropped with
	// its reason and the next one trained, so the step trains up to a batch
	// of what the drops left.
	countsAfter, _ := ss.Counts(ctx)
	dropped := countsAfter.Dropped - countsBefore.Dropped
	if code != 0 || json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &stepped) != nil || stepped.Step.Step != last+1 || stepped.Step.CheckpointPath == "" ||
		stepped.Step.Samples == 0 || stepped.Step.Samples != min(ready-dropped, 4) {
		t.Fatalf("rl step offline (%d ready, %d dropped): %d %s", ready, dropped, code, out)
	}
	if _, ok := svc.checkpointState(stepped.Step.CheckpointPath); !ok {
		t.Fatalf("offline step's checkpoint %s is not on the service", stepped.Step.CheckpointPath)
	}
	if got, _ := ss.TrainedBy(ctx, stepped.Step.BatchID, stepped.Step.Step); len(got) != stepped.Step.Samples {
		t.Fatalf("the offline step trained %d samples, recorded %d", len(got), stepped.Step.Samples)
	}
	// Every scored sample is either still scored, trained by this step, or
	// dropped by it.
	if left, _ := ss.ScoredCount(ctx, 0); left != ready-stepped.Step.Samples-dropped {
		t.Fatalf("%d scored before the offline step, %d after it trained %d and dropped %d", ready, left, stepped.Step.Samples, dropped)
	}
	// Roll back to step 3 at the next start.
	if out, code := c.run("rl", "resume", "3"); code != 0 || !strings.Contains(out, "resumes from step 3") {
		t.Fatalf("rl resume offline: %d %s", code, out)
	}
	// Nothing trains on its own after the restart, so the step counter read
	// is the rollback's.
	if out, code := c.run("config", "set", "rl.manual_train_trigger", "true"); code != 0 {
		t.Fatalf("config set: %s", out)
	}
	if _, code := c.run("start", "--port", "0"); code != 0 {
		t.Fatalf("start after resume\n%s", c.logs())
	}
	after := c.waitRL("the rollback", func(s rlStatus) bool { return s.Training != nil && s.Training.Model != "" })
	if after.Training.Step != 3 || after.Training.LastCheckpoint == nil || after.Training.LastCheckpoint.Step != 3 || after.RL.Sampler == nil || after.RL.Sampler.Step != 3 {
		t.Fatalf("after rl resume 3: training %+v, sampler %+v", after.Training, after.RL.Sampler)
	}
	out, _ = c.run("rl", "history", "--all", "--json")
	var hist struct {
		Steps []train.StepRecord `json:"steps"`
	}
	_ = json.Unmarshal([]byte(out), &hist)
	rolled := 0
	for _, s := range hist.Steps {
		if s.State == train.StepRolledBack {
			rolled++
		}
	}
	if rolled != last+1-3 {
		t.Fatalf("%d steps rolled back, want %d: %s", rolled, last+1-3, out)
	}
	c.run("stop", "--timeout", "30s")
}

func openRLDB(t *testing.T, home string) *store.SQLite {
	t.Helper()
	db, err := store.OpenSQLite(context.Background(), daemon.PathsFor(home).DB)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func sameRows(a, b map[int32][]float64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y := b[k]
		if len(x) != len(y) {
			return false
		}
		for i := range x {
			if d := x[i] - y[i]; d > 1e-12 || d < -1e-12 {
				return false
			}
		}
	}
	return true
}

// referenceRun trains a fresh LoRA on a separate fake of the same kind,
// one step per recorded step, from the recorded batches and parameters,
// without interruption, and returns its checkpoint.
func referenceRun(t *testing.T, kind string, ss *samples.Store, steps []train.StepRecord) *toy.State {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ref := newRLService(t, kind, 0)
	var b backend.Backend
	var err error
	if kind == connect.Weaver {
		b, err = weaver.Connect(ctx, weaver.Options{BaseURL: ref.url, APIKey: ref.key, PollBase: time.Millisecond})
	} else {
		b, err = tinker.Connect(ctx, tinker.Options{Flavor: tinker.Flavor(kind), BaseURL: ref.url, APIKey: ref.key, PollDelay: func(string) time.Duration { return time.Millisecond }})
	}
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	cfg := config.Default(t.TempDir())
	cfg.RL.Model, cfg.RL.LoRARank = rltest.Model, 32
	tr, err := b.CreateModel(ctx, connect.ModelConfig(cfg))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range steps {
		got, err := ss.TrainedBy(ctx, r.BatchID, r.Step)
		if err != nil {
			t.Fatal(err)
		}
		built, _, err := train.BuildBatch(got, batch.Mode(r.Advantage), r.KLCoef)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := backend.RunStep(ctx, tr, backend.StepRequest{Data: built.Datums, Loss: backend.LossFn(r.LossFn), Adam: backend.DefaultAdam(r.LearningRate)}); err != nil {
			t.Fatal(err)
		}
	}
	c, err := tr.SaveState(ctx, "reference")
	if err != nil {
		t.Fatal(err)
	}
	st, ok := ref.checkpointState(c.Path)
	if !ok {
		t.Fatal("reference checkpoint missing")
	}
	return st
}
