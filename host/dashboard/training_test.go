package dashboard_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/core"
	"github.com/metaclaw-go/metaclaw/host/dashboard"
	"github.com/metaclaw-go/metaclaw/host/proxy"
	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/connect"
	"github.com/metaclaw-go/metaclaw/host/rl/samples"
	"github.com/metaclaw-go/metaclaw/host/rl/train"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/faketinker"
	"github.com/metaclaw-go/metaclaw/internal/testhost"
)

// TestTrainingTabInBrowser trains two real steps against the fake Tinker
// (judged samples in the host's store, the training loop of the host) and
// opens the Training tab: loss and reward curves with a point per step, the
// samples with their judge votes, the steps table.
func TestTrainingTabInBrowser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fake := faketinker.New(faketinker.Options{APIKey: "tml-k", LongPoll: 20 * time.Millisecond})
	ts := httptest.NewServer(fake)
	t.Cleanup(func() { ts.Close(); fake.Close() })
	cfg := config.Default(t.TempDir())
	cfg.Mode = "rl"
	cfg.RL.Backend, cfg.RL.BaseURL, cfg.RL.APIKey, cfg.RL.Model, cfg.RL.LoRARank, cfg.RL.BatchSize = "tinker", ts.URL, "tml-k", "toy", 8, 4
	var loop *train.Loop
	var ss *samples.Store
	h := testhost.Start(t, testhost.Options{
		Setup: func(c *core.Core, st *store.SQLite) []route.Route {
			ss = samples.New(st.Writer(), st.Reader())
			loop = train.New(train.Options{Config: cfg, Samples: ss, Steps: train.NewStore(st.Writer(), st.Reader()), Log: zerolog.Nop(), Poll: 20 * time.Millisecond,
				Generation: func(context.Context) (int64, error) { return 0, nil }})
			return append(dashboard.Routes(st, c), train.Routes(loop)...)
		},
		Mutate: func(o *proxy.Options) { o.APIKey = "dash-key"; o.PublicRoutes = dashboard.Public() },
	})
	b, err := connect.Open(ctx, cfg, connect.Options{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	s, step, err := loop.Init(ctx, b, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cur := &backend.Current{}
	cur.Swap(s, step)
	loop.Start(context.Background(), cur)
	t.Cleanup(func() { loop.Stop(5 * time.Second) })

	prompt := []int32{151644, 872, 198, 5}
	n := 0
	for batch := range 2 {
		for i := range 4 {
			seed := int64(n)
			r, err := s.Sample(ctx, backend.SampleRequest{Prompt: prompt, Params: backend.SamplingParams{MaxTokens: 3, Temperature: 1, TopK: -1, TopP: 1, Seed: &seed}})
			if err != nil {
				t.Fatal(err)
			}
			seq := r.Sequences[0]
			session := fmt.Sprintf("sess-%d", n)
			n++
			id, err := ss.Add(ctx, samples.NewSample{SessionID: session, Agent: "main", BaseModel: "toy", Sampler: s.ID(), Prompt: prompt,
				Completion: seq.Tokens, Logprobs: seq.Logprobs, StopReason: seq.StopReason, Instruction: fmt.Sprintf("question %d of batch %d", i, batch),
				Response: fmt.Sprint(seq.Tokens), NeedJudge: true})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := ss.EndSession(ctx, session); err != nil {
				t.Fatal(err)
			}
			score, votes := 1.0, []string{"1", "1", "-1"}
			if i%2 == 1 {
				score, votes = -1, []string{"-1", "-1", "fail"}
			}
			if _, err := ss.SetVerdict(ctx, id, "prm:judge", score, votes, "Score: "+votes[0]); err != nil {
				t.Fatal(err)
			}
		}
		deadline := time.Now().Add(30 * time.Second)
		for loop.Status(ctx).Step < batch+1 {
			if time.Now().After(deadline) {
				t.Fatalf("step %d not trained: %+v", batch+1, loop.Status(ctx))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	bctx := browser(t)
	err = chromedp.Do(bctx,
		chromedp.Navigate(h.URL+"/ui/#training"),
		chromedp.WaitVisible("#login-key"),
		chromedp.SendKeys("#login-key", "dash-key"),
		chromedp.Click("#login-form button"),
		chromedp.WaitNotVisible("#login"),
		chromedp.WaitVisible("#training-cards .card"),
		chromedp.WaitVisible("#training-samples tbody tr[data-id]"),
	)
	if err != nil {
		t.Fatal(err)
	}
	cards, _ := chromedp.Run(bctx, chromedp.Text("#training-cards"))
	if !strings.Contains(cards, "step") || !strings.Contains(cards, "last loss") || !strings.Contains(cards, "mean reward") {
		t.Fatalf("cards %q", cards)
	}
	for _, chart := range []string{"#chart-loss", "#chart-reward"} {
		pts, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("`+chart+` circle").length`))
		if err != nil || pts != 2 {
			t.Fatalf("%s has %d points (%v), want one per step", chart, pts, err)
		}
	}
	rows, _ := chromedp.Run(bctx, chromedp.Evaluate[int](`document.querySelectorAll("#training-samples tbody tr[data-id]").length`))
	table, _ := chromedp.Run(bctx, chromedp.Text("#training-samples"))
	if rows != 8 || !strings.Contains(table, "1 1 -1") || !strings.Contains(table, "-1 -1 fail") || !strings.Contains(table, "trained") {
		t.Fatalf("samples table (%d rows): %q", rows, table)
	}
	steps, _ := chromedp.Run(bctx, chromedp.Text("#training-steps"))
	if !strings.Contains(steps, "4 (4 learning)") {
		t.Fatalf("steps table %q", steps)
	}
	// The filter asks the API again.
	if err := chromedp.Do(bctx, chromedp.SetValue("#samples-state", "dropped")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.querySelector("#samples-state").dispatchEvent(new Event("change"))`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(bctx, chromedp.WaitVisible(`#training-samples td.muted`)); err != nil {
		t.Fatal(err)
	}
	screenshot(t, bctx, "dashboard-training.png")
}
