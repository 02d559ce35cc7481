package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/gofrs/flock"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/metaclaw-go/metaclaw/host/daemon"
	"github.com/metaclaw-go/metaclaw/host/rl/connect"
	"github.com/metaclaw-go/metaclaw/host/rl/samples"
	"github.com/metaclaw-go/metaclaw/host/rl/train"
	"github.com/metaclaw-go/metaclaw/host/scheduler"
	"github.com/metaclaw-go/metaclaw/internal/fakellm"
	"github.com/metaclaw-go/metaclaw/internal/rltest"
)

// autoHost is the real binary in auto mode against a fake Tinker whose
// first optimizer step the test holds (a step slowed down at will).
type autoHost struct {
	t      *testing.T
	c      *cli
	svc    *rlService
	base   string
	served int
}

// TestRLAutoTrainsInWindowsAndStepsAsideForTheUser runs the real metaclaw
// binary in mode auto: sleep hours that cover now open a window, and each
// main turn of the user closes it for scheduler.return_grace_minutes (1).
// The turns are served by the policy, judged, and trained only inside
// windows. It walks the three ways the user can come back:
//   - during collection (a window open, no batch ready): the window closes at
//     once and the partial batch stays scored, nothing claimed;
//   - during a step (the fake trainer's optimizer step held): the chat turn
//     is answered while the step is still held — serving never waits on
//     training — the scheduler sits in pausing until the step reaches its
//     safe point, and the step trains its batch once; the next batch waits
//     for the next window;
//   - right after a swap: the next turn is served by the new sampler.
//
// Then kill -9 and a restart resume at the checkpointed step; every turn is
// one sample, and every trained sample was trained by exactly one step.
func TestRLAutoTrainsInWindowsAndStepsAsideForTheUser(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the real binary through a return grace of a minute")
	}
	h := &autoHost{t: t, svc: newRLService(t, connect.Tinker, 1)}
	h.svc.tap.pass = true
	judge := rltest.NewJudge(t)
	judge.Verdict = func(prompt string) string {
		if strings.Contains(prompt, "(even)") {
			return "Score: 1"
		}
		return "Score: -1"
	}
	up := fakellm.New()
	t.Cleanup(up.Close)
	h.c = newCLI(t)
	now := time.Now().UTC()
	cfgText := fmt.Sprintf(`mode: auto
llm:
  api_base: %s/v1
  api_key: sk-upstream
  model_id: gpt-test
rl:
  backend: tinker
  base_url: %s
  api_key: %s
  model: %s
  tokenizer_path: %s
  prm_url: %s/v1
  prm_model: judge-1
  prm_api_key: judge-key
  batch_size: 4
  checkpoint_every: 1
  learning_rate: 0.3
  fallback_to_llm: false
scheduler:
  sleep_start: "%s"
  sleep_end: "%s"
  timezone: UTC
  idle_source: traffic
  idle_threshold_minutes: 0
  min_window_minutes: 0
  return_grace_minutes: 1
skills:
  auto_evolve: false
memory:
  enabled: false
`, up.URL, h.svc.url, h.svc.key, rltest.Model, rltest.TokenizerDir(), judge.URL, now.Add(-time.Hour).Format("15:04"), now.Add(3*time.Hour).Format("15:04"))
	if err := os.WriteFile(filepath.Join(h.c.home, "config.yaml"), []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	h.start()
	c := h.c

	// The window of the sleep hours is open; there is nothing to train.
	st := c.waitRL("a window opens", func(s rlStatus) bool {
		return s.Scheduler != nil && s.Scheduler.State == scheduler.StateWindowOpen && s.Training != nil && s.Training.Window != nil
	})
	if st.Training.Trains != "in scheduler windows" || st.Scheduler.Trainer != "rl (tinker)" {
		t.Fatalf("auto mode: training %+v, scheduler trainer %q", st.Training, st.Scheduler.Trainer)
	}

	// 1. The user returns during collection.
	h.chat(0)
	baseline := h.chat(1) // warm: the first turn pays one-time costs
	st = c.waitRL("the window closes for the user", func(s rlStatus) bool {
		return s.Scheduler.State == scheduler.StateIdleWait && strings.Contains(s.Scheduler.Now, "the user is active")
	})
	if st.Training.State != train.StateWaitingWindow {
		t.Errorf("training %s (%s) outside a window", st.Training.State, st.Training.Reason)
	}
	h.waitSamples("both turns judged", func(by map[string]int) bool { return by["scored"] == 2 })

	// 2. Six more turns: two batches are ready, and the user stays away.
	for i := 2; i < 8; i++ {
		h.chat(i)
	}
	h.waitSamples("all eight turns judged", func(by map[string]int) bool { return by["scored"] == 8 })
	select {
	case <-h.svc.tap.held:
	case <-time.After(3 * time.Minute):
		t.Fatalf("no step started after the return grace; status %+v %+v\n%s", c.rlStatus().Scheduler, c.rlStatus().Training, c.logs())
	}
	st = c.rlStatus()
	if st.Scheduler.State != scheduler.StateUpdating || st.Training.State != train.StateTraining {
		t.Fatalf("a step in flight: scheduler %s, training %s", st.Scheduler.State, st.Training.State)
	}

	// The user returns during the step: the turn is answered while the
	// optimizer step is still held at the service.
	during := h.chat(8)
	select {
	case <-h.svc.tap.release:
		t.Fatal("released early")
	default:
	}
	st = c.waitRL("the scheduler waits for the step's safe point", func(s rlStatus) bool { return s.Scheduler.State == scheduler.StatePausing })
	if by := h.sampleStates(); by["claimed"] != 4 {
		t.Fatalf("during the step: samples %v, want the 4 of its batch claimed", by)
	}
	close(h.svc.tap.release)
	st = c.waitRL("the step finishes and the trainer stops", func(s rlStatus) bool {
		return s.Scheduler.State == scheduler.StateIdleWait && s.Training.Step == 1
	})
	if st.Training.OpenBatch != nil || st.RL.Sampler == nil || st.RL.Sampler.Step != 1 {
		t.Fatalf("after the step: open batch %+v, serving %+v", st.Training.OpenBatch, st.RL.Sampler)
	}
	if by := h.sampleStates(); by["trained"] != 4 || by["claimed"] != 0 || by["scored"] != 5 {
		t.Fatalf("after the step the window stays closed: samples %v", by)
	}

	// 3. Right after the swap: served by the new sampler.
	after := h.chat(9)
	list := h.samples()
	for _, s := range list {
		// The partial batch the user interrupted was kept: it is in step 1.
		if (s.SessionID == "auto-0" || s.SessionID == "auto-1") && (s.State != "trained" || s.Step != 1) {
			t.Errorf("%s: %s by step %d, want trained by step 1", s.SessionID, s.State, s.Step)
		}
		want := -1
		switch s.SessionID {
		case "auto-8":
			want = 0 // answered while step 1 was in flight: the old sampler
		case "auto-9":
			want = 1
		}
		if want >= 0 && s.SamplerStep != want {
			t.Errorf("%s was sampled at step %d, want %d", s.SessionID, s.SamplerStep, want)
		}
	}
	t.Logf("chat latency: baseline %v, during a held step %v, right after the swap %v", baseline, during, after)

	st = c.rlStatus()
	if st.Training.LastCheckpoint == nil || st.Training.LastCheckpoint.Step != 1 {
		t.Fatalf("rl.checkpoint_every 1: last checkpoint %+v", st.Training.LastCheckpoint)
	}
	var tr []string
	for _, x := range st.Scheduler.Transitions {
		tr = append(tr, string(x.From)+"→"+string(x.To))
	}
	for _, want := range []string{"window_open→idle_wait", "idle_wait→window_open", "window_open→updating", "updating→pausing", "pausing→idle_wait"} {
		if !strings.Contains(strings.Join(tr, " "), want) {
			t.Errorf("scheduler transitions lack %s: %v", want, tr)
		}
	}
	out, _ := c.run("status")
	for _, want := range []string{"training  ", "mean reward", "scheduler"} {
		if !strings.Contains(out, want) {
			t.Errorf("metaclaw status lacks %q:\n%s", want, out)
		}
	}
	if out, code := c.run("rl", "status"); code != 0 || !strings.Contains(out, "in scheduler windows") {
		t.Errorf("metaclaw rl status: %d %s", code, out)
	}
	h.checkUI()

	// kill -9 and restart: the trainer resumes at step 1 from its checkpoint.
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
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
	h.start()
	st = c.waitRL("the trainer resumed", func(s rlStatus) bool { return s.Training != nil && s.Training.Model != "" })
	if st.Training.Step != 1 || st.RL.Sampler == nil || st.RL.Sampler.Step != 1 {
		t.Fatalf("after kill -9: training step %d, serving %+v", st.Training.Step, st.RL.Sampler)
	}
	if out, code := c.run("stop", "--timeout", "30s"); code != 0 {
		t.Fatalf("stop: %s", out)
	}
	h.checkBooks(1, 4)
}

func (h *autoHost) start() {
	h.t.Helper()
	if out, code := h.c.run("start", "--port", "0"); code != 0 {
		h.t.Fatalf("start: %d %s\n%s", code, out, h.c.logs())
	}
	h.c.waitRL("the policy serves", func(s rlStatus) bool { return s.RL.State == "serving" })
	out, _ := h.c.run("status", "--json")
	var s struct {
		Listen string `json:"listen"`
	}
	_ = json.Unmarshal([]byte(out), &s)
	h.base = "http://" + s.Listen
}

// chat is one main turn of the user (a one-turn session, so it is judged at
// once), from the OpenAI SDK for even i and the Anthropic SDK for odd i.
// The judge rewards the even ones. It returns the turn's latency.
func (h *autoHost) chat(i int) time.Duration {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	id, parity := fmt.Sprintf("auto-%d", i), "odd"
	if i%2 == 0 {
		parity = "even"
	}
	text := fmt.Sprintf("Question %d (%s)?", i, parity)
	start := time.Now()
	var err error
	if i%2 == 0 {
		oc := openai.NewClient(option.WithBaseURL(h.base+"/v1"), option.WithAPIKey(h.c.proxyKey()), option.WithMaxRetries(0),
			option.WithHeader("X-Session-Id", id), option.WithHeader("X-Session-Done", "true"))
		_, err = oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-test", MaxTokens: openai.Int(6),
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(text)}})
	} else {
		ac := anthropic.NewClient(aoption.WithBaseURL(h.base), aoption.WithAPIKey(h.c.proxyKey()), aoption.WithMaxRetries(0),
			aoption.WithHeader("X-Session-Id", id), aoption.WithHeader("X-Session-Done", "true"))
		_, err = ac.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-test", MaxTokens: 6,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(text))}})
	}
	if err != nil {
		h.t.Fatalf("turn %d: %v\n%s", i, err, h.c.logs())
	}
	h.served++
	return time.Since(start)
}

// samples lists every sample through `metaclaw rl samples --json`.
func (h *autoHost) samples() []train.SampleSummary {
	h.t.Helper()
	out, code := h.c.run("rl", "samples", "--limit", "1000", "--json")
	var list struct {
		Samples []train.SampleSummary `json:"samples"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil {
		h.t.Fatalf("rl samples: %d %.300s", code, out)
	}
	return list.Samples
}

func (h *autoHost) sampleStates() map[string]int {
	by := map[string]int{}
	for _, s := range h.samples() {
		by[s.State]++
	}
	return by
}

func (h *autoHost) waitSamples(what string, cond func(map[string]int) bool) {
	h.t.Helper()
	var by map[string]int
	waitUntil(h.t, what, func() bool {
		by = h.sampleStates()
		if by["claimed"] != 0 && by["trained"] == 0 {
			h.t.Fatalf("a batch was claimed outside a window: %v", by)
		}
		return cond(by)
	})
}

// checkUI: the dashboard serves its Training tab and the API it draws.
func (h *autoHost) checkUI() {
	h.t.Helper()
	resp, err := http.Get(h.base + "/ui/")
	if err != nil {
		h.t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(page), "Training") {
		h.t.Fatalf("/ui/: %d, Training tab present: %v", resp.StatusCode, strings.Contains(string(page), "Training"))
	}
	req, _ := http.NewRequest(http.MethodGet, h.base+"/v1/rl/steps?limit=500", nil)
	req.Header.Set("Authorization", "Bearer "+h.c.proxyKey())
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"mean_reward"`) {
		h.t.Fatalf("/v1/rl/steps: %d %.300s", resp.StatusCode, body)
	}
}

// checkBooks: every turn is one sample (one per session, none twice), none
// is left claimed, and every trained one was trained by exactly one step.
func (h *autoHost) checkBooks(steps, trained int) {
	h.t.Helper()
	ctx := context.Background()
	db := openRLDB(h.t, h.c.home)
	defer db.Close()
	ss, st := samples.New(db.Writer(), db.Reader()), train.NewStore(db.Writer(), db.Reader())
	list, err := ss.List(ctx, samples.Filter{Limit: 1000})
	if err != nil {
		h.t.Fatal(err)
	}
	seen := map[string]int{}
	for _, s := range list {
		seen[s.SessionID]++
	}
	if len(list) != h.served || len(seen) != h.served {
		h.t.Fatalf("%d turns served, %d samples over %d sessions", h.served, len(list), len(seen))
	}
	counts, err := ss.Counts(ctx)
	if err != nil || counts.Claimed != 0 || counts.Trained != trained {
		h.t.Fatalf("samples %+v (%v), want %d trained and none claimed", counts, err, trained)
	}
	hist, err := st.History(ctx, 0, false)
	if err != nil || len(hist) != steps {
		h.t.Fatalf("steps %+v (%v), want %d", hist, err, steps)
	}
	total := 0
	for _, r := range hist {
		got, err := ss.TrainedBy(ctx, r.BatchID, r.Step)
		if err != nil || len(got) != r.Samples {
			h.t.Fatalf("step %d: %d samples recorded, %d trained by it (%v)", r.Step, r.Samples, len(got), err)
		}
		total += len(got)
	}
	if total != trained {
		h.t.Fatalf("steps trained %d samples, the table says %d", total, trained)
	}
}
