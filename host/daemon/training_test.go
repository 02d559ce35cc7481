package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/rl/train"
	"github.com/metaclaw-go/metaclaw/host/scheduler"
	"github.com/metaclaw-go/metaclaw/internal/faketinker"
	"github.com/metaclaw-go/metaclaw/internal/faketinker/toy"
	"github.com/metaclaw-go/metaclaw/internal/rltest"
)

// TestTrainingFollowsMode runs the host in auto and rl mode against a
// fake Tinker: in auto mode the training loop is the scheduler's trainer
// and trains only in its windows; in rl mode it trains when a batch is
// ready and no scheduler runs; the /v1/rl API answers in both.
func TestTrainingFollowsMode(t *testing.T) {
	fake := faketinker.New(faketinker.Options{APIKey: "tml-k", Models: []toy.Config{rltest.ToyModel()}, LongPoll: 20 * time.Millisecond})
	ts := httptest.NewServer(fake)
	t.Cleanup(func() { ts.Close(); fake.Close() })
	for _, tc := range []struct {
		mode, trains, trainer string
	}{
		{"auto", "in scheduler windows", "rl (tinker)"},
		{"rl", "when a batch is ready", ""},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			cfg := config.Default(t.TempDir())
			cfg.Mode, cfg.Proxy.Port = tc.mode, 0
			cfg.LLM.APIBase, cfg.LLM.APIKey = "http://127.0.0.1:1/v1", "k"
			cfg.RL.Backend, cfg.RL.BaseURL, cfg.RL.APIKey, cfg.RL.Model = "tinker", ts.URL, "tml-k", rltest.Model
			cfg.RL.TokenizerPath, cfg.RL.PRMURL, cfg.RL.PRMModel = rltest.TokenizerDir(), "http://127.0.0.1:1/v1", "judge"
			cfg.Scheduler.IdleSource = "traffic"
			cfg.Proxy.APIKey = "sk-proxy-test"
			ctx, cancel := context.WithCancel(context.Background())
			ready := make(chan Info, 1)
			done := make(chan error, 1)
			go func() { done <- Run(ctx, cfg, RunOptions{Ready: func(i Info) { ready <- i }}) }()
			var info Info
			select {
			case info = <-ready:
			case err := <-done:
				t.Fatal(err)
			case <-time.After(30 * time.Second):
				t.Fatal("host did not start")
			}
			t.Cleanup(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("run: %v", err)
				}
			})
			var st Status
			deadline := time.Now().Add(30 * time.Second)
			for {
				resp, err := getWithKey(info.URL()+"/v1/status", cfg.Proxy.APIKey)
				if err != nil {
					t.Fatal(err)
				}
				st = Status{}
				_ = json.NewDecoder(resp.Body).Decode(&st)
				resp.Body.Close()
				if st.Training != nil && st.Training.Model != "" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the trainer did not start: rl %+v training %+v", st.RL, st.Training)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if st.Training.Trains != tc.trains {
				t.Errorf("trains %q, want %q", st.Training.Trains, tc.trains)
			}
			if tc.trainer != "" && (st.Scheduler == nil || st.Scheduler.Trainer != tc.trainer || st.Scheduler.TrainerNote == scheduler.NoTrainerNote) {
				t.Errorf("scheduler %+v", st.Scheduler)
			}
			if tc.trainer == "" && st.Scheduler != nil && st.Scheduler.Enabled {
				t.Errorf("rl mode runs a scheduler: %+v", st.Scheduler)
			}
			resp, err := getWithKey(info.URL()+"/v1/rl/training", cfg.Proxy.APIKey)
			if err != nil {
				t.Fatal(err)
			}
			var ts train.Status
			_ = json.NewDecoder(resp.Body).Decode(&ts)
			resp.Body.Close()
			if resp.StatusCode != 200 || ts.Model != st.Training.Model {
				t.Errorf("/v1/rl/training: %d %+v", resp.StatusCode, ts)
			}
		})
	}
}

func getWithKey(url, key string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	return http.DefaultClient.Do(req)
}
