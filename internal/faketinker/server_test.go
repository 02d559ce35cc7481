package faketinker

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// These tests speak raw JSON, as the protocol notes describe it, so the fake
// is checked independently of our own client.

type raw struct {
	t   *testing.T
	url string
	key string
}

func newRaw(t *testing.T, o Options) (*raw, *Server) {
	t.Helper()
	s := New(o)
	ts := httptest.NewServer(s)
	t.Cleanup(func() { ts.Close(); s.Close() })
	return &raw{t: t, url: ts.URL, key: "tml-test"}, s
}

func (c *raw) do(method, path string, body any, hdr ...string) (int, map[string]any) {
	c.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	req, _ := http.NewRequest(method, c.url+"/api/v1/"+path, rd)
	req.Header.Set("Content-Type", "application/json")
	if c.key != "" {
		req.Header.Set("X-API-Key", c.key)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(b, &out)
	return resp.StatusCode, out
}

func (c *raw) post(path string, body any, hdr ...string) map[string]any {
	c.t.Helper()
	st, out := c.do("POST", path, body, hdr...)
	if st != 200 {
		c.t.Fatalf("POST %s: %d %v", path, st, out)
	}
	return out
}

// wait polls retrieve_future until a result (bounded).
func (c *raw) wait(reqID any) map[string]any {
	c.t.Helper()
	for i := 0; i < 200; i++ {
		st, out := c.do("POST", "retrieve_future", map[string]any{"request_id": reqID})
		if st == 408 || (st == 200 && out["type"] == "try_again") {
			continue
		}
		if st != 200 {
			c.t.Fatalf("retrieve_future: %d %v", st, out)
		}
		return out
	}
	c.t.Fatal("future never finished")
	return nil
}

func (c *raw) session() string {
	return c.post("create_session", map[string]any{"tags": []string{}, "user_metadata": map[string]any{}, "sdk_version": "0.16.1", "type": "create_session"})["session_id"].(string)
}

func (c *raw) model(sess string) string {
	f := c.post("create_model", map[string]any{"session_id": sess, "model_seq_id": 0, "base_model": "toy",
		"lora_config": map[string]any{"rank": 8}, "type": "create_model"})
	return c.wait(f["request_id"])["model_id"].(string)
}

func datumJSON(prompt []int, target int, q float64, adv float64) map[string]any {
	seq := append(append([]int{}, prompt...), target)
	n := len(seq) - 1
	tt, lp, ad := make([]int, n), make([]float64, n), make([]float64, n)
	for i := 0; i < n; i++ {
		tt[i] = seq[i+1]
	}
	lp[n-1], ad[n-1] = q, adv
	return map[string]any{
		"model_input": map[string]any{"chunks": []any{map[string]any{"type": "encoded_text", "tokens": seq[:n]}}},
		"loss_fn_inputs": map[string]any{
			"target_tokens": map[string]any{"data": tt, "dtype": "int64", "shape": []int{n}},
			"logprobs":      map[string]any{"data": lp, "dtype": "float32"},
			"advantages":    map[string]any{"data": ad, "dtype": "float32"},
		},
	}
}

func TestAuth(t *testing.T) {
	c, _ := newRaw(t, Options{APIKey: "tml-right"})
	if st, out := c.do("POST", "create_session", map[string]any{"sdk_version": "x"}); st != 401 || out["detail"] == nil {
		t.Errorf("wrong key: %d %v", st, out)
	}
	c.key = ""
	if st, _ := c.do("GET", "healthz", nil); st != 401 {
		t.Errorf("no key: %d", st)
	}
	c.key = "tml-right"
	if st, out := c.do("GET", "healthz", nil); st != 200 || out["status"] != "ok" {
		t.Errorf("healthz: %d %v", st, out)
	}
}

func TestStrictDecoding(t *testing.T) {
	c, _ := newRaw(t, Options{})
	// Unknown field → 400; missing type and defaulted fields are fine.
	if st, _ := c.do("POST", "create_session", map[string]any{"sdk_version": "0.6.0", "surprise": 1}); st != 400 {
		t.Errorf("unknown field: %d", st)
	}
	if st, _ := c.do("POST", "create_session", map[string]any{"sdk_version": "0.6.0", "type": "sample"}); st != 400 {
		t.Errorf("wrong type: %d", st)
	}
	sess := c.post("create_session", map[string]any{"sdk_version": "0.6.0"})["session_id"].(string)
	f := c.post("create_model", map[string]any{"session_id": sess, "model_seq_id": 0, "base_model": "toy", "lora_config": map[string]any{"rank": 4}})
	mid := c.wait(f["request_id"])["model_id"].(string)
	if want := sess + ":train:0"; mid != want {
		t.Errorf("model id %q, want %q", mid, want)
	}
	bad := []struct {
		name string
		d    map[string]any
	}{
		{"mask key", func() map[string]any {
			d := datumJSON([]int{1, 2}, 3, -1, 1)
			d["loss_fn_inputs"].(map[string]any)["mask"] = map[string]any{"data": []float64{1, 1}, "dtype": "float32"}
			return d
		}()},
		{"misaligned", func() map[string]any {
			d := datumJSON([]int{1, 2}, 3, -1, 1)
			d["loss_fn_inputs"].(map[string]any)["advantages"] = map[string]any{"data": []float64{1}, "dtype": "float32"}
			return d
		}()},
		{"missing input", func() map[string]any {
			d := datumJSON([]int{1, 2}, 3, -1, 1)
			delete(d["loss_fn_inputs"].(map[string]any), "logprobs")
			return d
		}()},
		{"wrong dtype", func() map[string]any {
			d := datumJSON([]int{1, 2}, 3, -1, 1)
			d["loss_fn_inputs"].(map[string]any)["target_tokens"].(map[string]any)["dtype"] = "float32"
			return d
		}()},
	}
	for i, b := range bad {
		st, out := c.do("POST", "forward_backward", map[string]any{"forward_backward_input": map[string]any{"data": []any{b.d}, "loss_fn": "importance_sampling"}, "model_id": mid, "seq_id": i + 1})
		if st != 400 {
			t.Errorf("%s: %d %v", b.name, st, out)
		}
	}
	// Non-finite values cannot be written as JSON numbers; a string is a
	// decoding error, also 400.
	if st, _ := c.do("POST", "forward_backward", `{"forward_backward_input":{"data":[{"model_input":{"chunks":[{"tokens":[1]}]},"loss_fn_inputs":{"target_tokens":{"data":[2],"dtype":"int64"},"logprobs":{"data":["NaN"],"dtype":"float32"},"advantages":{"data":[1],"dtype":"float32"}}}],"loss_fn":"ppo"},"model_id":"`+mid+`","seq_id":1}`); st != 400 {
		t.Errorf("NaN: %d", st)
	}
	// Defaults: adam_params with only a learning rate.
	f = c.post("optim_step", map[string]any{"adam_params": map[string]any{"learning_rate": 0.1}, "model_id": mid, "seq_id": 1})
	if out := c.wait(f["request_id"]); out["metrics"] != nil || out["error"] != nil {
		t.Errorf("optim_step result %v", out)
	}
}

func TestFIFOBySeqID(t *testing.T) {
	c, s := newRaw(t, Options{})
	sess := c.session()
	mid := c.model(sess)
	// seq 2 arrives first: it must not run before seq 1.
	f2 := c.post("optim_step", map[string]any{"adam_params": map[string]any{"learning_rate": 0.1}, "model_id": mid, "seq_id": 2, "type": "optim_step"})
	if st, out := c.do("POST", "retrieve_future", map[string]any{"request_id": f2["request_id"]}); st != 408 || out["queue_state"] != "active" {
		t.Fatalf("seq 2 before seq 1: %d %v", st, out)
	}
	if n := s.Count("op:optim_step"); n != 0 {
		t.Fatalf("optim_step ran %d times before seq 1 arrived", n)
	}
	f1 := c.post("forward_backward", map[string]any{"forward_backward_input": map[string]any{"data": []any{datumJSON([]int{1}, 2, -3, 1)}, "loss_fn": "importance_sampling"}, "model_id": mid, "seq_id": 1})
	out := c.wait(f1["request_id"])
	if _, ok := out["metrics"].(map[string]any)["loss:sum"]; !ok {
		t.Errorf("forward_backward result %v", out)
	}
	c.wait(f2["request_id"])
	// A repeated seq_id is the same request.
	again := c.post("optim_step", map[string]any{"adam_params": map[string]any{"learning_rate": 0.1}, "model_id": mid, "seq_id": 2, "type": "optim_step"})
	if again["request_id"] != f2["request_id"] || s.Count("op:optim_step") != 1 {
		t.Errorf("repeated seq_id: %v vs %v, ran %d times", again["request_id"], f2["request_id"], s.Count("op:optim_step"))
	}
	// The same seq_id with another body is refused.
	if st, _ := c.do("POST", "optim_step", map[string]any{"adam_params": map[string]any{"learning_rate": 0.5}, "model_id": mid, "seq_id": 2}); st != 400 {
		t.Errorf("reused seq_id with another body: %d", st)
	}
}

func TestIdempotencyKeyAndLostAnswer(t *testing.T) {
	c, s := newRaw(t, Options{})
	sess := c.session()
	mid := c.model(sess)
	s.Inject(Fault{Endpoint: "optim_step", Status: 503, AfterApply: true})
	body := map[string]any{"adam_params": map[string]any{"learning_rate": 0.1}, "model_id": mid, "seq_id": 1}
	st, _ := c.do("POST", "optim_step", body, "X-Idempotency-Key", "k1")
	if st != 503 {
		t.Fatalf("injected: %d", st)
	}
	out := c.post("optim_step", body, "X-Idempotency-Key", "k1")
	c.wait(out["request_id"])
	if n := s.Count("op:optim_step"); n != 1 {
		t.Errorf("optim_step ran %d times", n)
	}
}

func TestRetrieveFaultsAnd410(t *testing.T) {
	c, s := newRaw(t, Options{})
	sess := c.session()
	mid := c.model(sess)
	body := map[string]any{"adam_params": map[string]any{"learning_rate": 0.1}, "model_id": mid, "seq_id": 1}
	f := c.post("optim_step", body)
	s.Inject(Fault{Endpoint: "retrieve_future", TryAgain: true})
	s.Inject(Fault{Endpoint: "retrieve_future", Status: 429, RetryAfter: 1})
	s.Inject(Fault{Endpoint: "retrieve_future", Status: 500})
	s.Inject(Fault{Endpoint: "retrieve_future", Status: 410})
	for _, want := range []int{200, 429, 500, 410, 410} {
		st, out := c.do("POST", "retrieve_future", map[string]any{"request_id": f["request_id"]})
		if st != want {
			t.Errorf("poll: %d %v, want %d", st, out, want)
		}
		if want == 200 && out["type"] != "try_again" {
			t.Errorf("try_again body %v", out)
		}
	}
	// Re-submitting after the 410 gives a new request id for the same work.
	f2 := c.post("optim_step", body)
	if f2["request_id"] == f["request_id"] {
		t.Fatal("re-submission after 410 got the broken request id")
	}
	c.wait(f2["request_id"])
	if n := s.Count("op:optim_step"); n != 1 {
		t.Errorf("optim_step ran %d times", n)
	}
	// A failed operation answers {"error","category"}.
	s.Inject(Fault{Endpoint: "optim_step", Category: "server"})
	f3 := c.post("optim_step", map[string]any{"adam_params": map[string]any{}, "model_id": mid, "seq_id": 2})
	if out := c.wait(f3["request_id"]); out["category"] != "server" || out["error"] == nil {
		t.Errorf("failed op: %v", out)
	}
	if st, _ := c.do("POST", "retrieve_future", map[string]any{"request_id": "nope"}); st != 404 {
		t.Errorf("unknown request: %d", st)
	}
}

func TestCheckpointsAndSamplers(t *testing.T) {
	c, _ := newRaw(t, Options{})
	sess := c.session()
	mid := c.model(sess)
	f := c.post("save_weights", map[string]any{"model_id": mid, "path": "step_0001", "seq_id": 1, "type": "save_weights"})
	p := c.wait(f["request_id"])["path"]
	if want := "tinker://" + mid + "/weights/step_0001"; p != want {
		t.Errorf("path %v, want %s", p, want)
	}
	if st, out := c.do("POST", "save_weights", map[string]any{"model_id": mid, "path": "step_0001", "seq_id": 2}); st != 409 {
		t.Errorf("duplicate name: %d %v", st, out)
	}
	f = c.post("save_weights", map[string]any{"model_id": mid, "path": "step_0001", "seq_id": 2, "overwrite": true})
	c.wait(f["request_id"])
	if st, _ := c.do("POST", "load_weights", map[string]any{"model_id": mid, "path": "tinker://nope/weights/x", "seq_id": 3, "optimizer": true}); st != 404 {
		t.Errorf("unknown path: %d", st)
	}
	f = c.post("load_weights", map[string]any{"model_id": mid, "path": p, "seq_id": 3, "optimizer": true, "type": "load_weights"})
	c.wait(f["request_id"])
	f = c.post("save_weights_for_sampler", map[string]any{"model_id": mid, "seq_id": 4, "sampling_session_seq_id": 0, "type": "save_weights_for_sampler"})
	out := c.wait(f["request_id"])
	if out["sampling_session_id"] != sess+":sample:0" || out["path"] != nil {
		t.Errorf("ephemeral save: %v", out)
	}
	f = c.post("save_weights_for_sampler", map[string]any{"model_id": mid, "seq_id": 5, "path": "s1"})
	sp := c.wait(f["request_id"])["path"].(string)
	if !strings.HasSuffix(sp, "/sampler_weights/s1") {
		t.Errorf("named sampler path %s", sp)
	}
	if st, _ := c.do("POST", "create_sampling_session", map[string]any{"session_id": sess, "sampling_session_seq_id": 1, "model_path": "tinker://x/sampler_weights/none"}); st != 404 {
		t.Errorf("unknown model_path: %d", st)
	}
	sid := c.post("create_sampling_session", map[string]any{"session_id": sess, "sampling_session_seq_id": 1, "model_path": sp, "type": "create_sampling_session"})["sampling_session_id"]
	if sid != sess+":sample:1" {
		t.Errorf("sampler id %v", sid)
	}
	st, list := c.do("GET", "training_runs/"+mid+"/checkpoints", nil)
	if st != 200 || len(list["checkpoints"].([]any)) != 2 {
		t.Errorf("checkpoints: %d %v", st, list)
	}
	if st, _ := c.do("DELETE", "training_runs/"+mid+"/checkpoints/sampler_weights/s1", nil); st != 200 {
		t.Errorf("delete: %d", st)
	}
	if st, _ := c.do("DELETE", "training_runs/"+mid+"/checkpoints/sampler_weights/s1", nil); st != 404 {
		t.Errorf("delete again: %d", st)
	}
}

func TestSamplingDeterministicAndContext(t *testing.T) {
	c, _ := newRaw(t, Options{})
	sess := c.session()
	sid := c.post("create_sampling_session", map[string]any{"session_id": sess, "sampling_session_seq_id": 0, "base_model": "toy"})["sampling_session_id"]
	req := func(seq int, seed any) map[string]any {
		sp := map[string]any{"max_tokens": 12, "temperature": 1.0}
		if seed != nil {
			sp["seed"] = seed
		}
		return map[string]any{"num_samples": 2, "prompt": map[string]any{"chunks": []any{map[string]any{"type": "encoded_text", "tokens": []int{151000, 5}}}},
			"sampling_params": sp, "sampling_session_id": sid, "seq_id": seq, "prompt_logprobs": true, "topk_prompt_logprobs": 2, "type": "sample"}
	}
	a := c.wait(c.post("asample", req(0, 7))["request_id"])
	b := c.wait(c.post("asample", req(1, 7))["request_id"])
	if fmt.Sprint(a["sequences"]) != fmt.Sprint(b["sequences"]) {
		t.Errorf("same seed, different samples:\n%v\n%v", a["sequences"], b["sequences"])
	}
	seqs := a["sequences"].([]any)
	s0 := seqs[0].(map[string]any)
	if len(s0["tokens"].([]any)) != len(s0["logprobs"].([]any)) || len(seqs) != 2 {
		t.Errorf("sequences %v", seqs)
	}
	pl := a["prompt_logprobs"].([]any)
	if len(pl) != 2 || pl[0] != nil || pl[1] == nil {
		t.Errorf("prompt_logprobs %v", pl)
	}
	big := req(2, nil)
	big["sampling_params"].(map[string]any)["max_tokens"] = 5000
	if st, out := c.do("POST", "asample", big); st != 400 || !strings.Contains(fmt.Sprint(out["detail"]), "context window: 2 + 5000 > 4096") {
		t.Errorf("context: %d %v", st, out)
	}
}

func TestMinTFlavor(t *testing.T) {
	c, _ := newRaw(t, Options{Flavor: MinT})
	if st, _ := c.do("POST", "client/config", map[string]any{"sdk_version": "0.6.0"}); st != 404 {
		t.Errorf("client/config: %d", st)
	}
	sess := c.session()
	mid := c.model(sess)
	if st, _ := c.do("POST", "optim_step", map[string]any{"adam_params": map[string]any{"learning_rate": 0.1, "weight_decay": 0.0}, "model_id": mid, "seq_id": 1}); st != 400 {
		t.Errorf("weight_decay on MinT: %d", st)
	}
	f := c.post("optim_step", map[string]any{"adam_params": map[string]any{"learning_rate": 0.1}, "model_id": mid, "seq_id": 1})
	if st, _ := c.do("POST", "retrieve_future", map[string]any{"request_id": f["request_id"], "allow_metadata_only": false}); st != 400 {
		t.Errorf("allow_metadata_only on MinT: %d", st)
	}
	c.wait(f["request_id"])
	_, caps := c.do("GET", "get_server_capabilities", nil)
	if m := caps["supported_models"].([]any)[0].(map[string]any); m["max_context_length"] != nil {
		t.Errorf("MinT capabilities carry max_context_length: %v", m)
	}
}

func TestHeartbeatAndExpiry(t *testing.T) {
	var clock atomic.Int64 // seconds after an arbitrary start
	now := func() time.Time { return time.Unix(1_800_000_000+clock.Load(), 0) }
	c, s := newRaw(t, Options{SessionTTL: time.Minute, Now: now})
	sess := c.session()
	c.post("session_heartbeat", map[string]any{"session_id": sess, "type": "session_heartbeat"})
	if s.Heartbeats(sess) != 1 {
		t.Error("heartbeat not counted")
	}
	clock.Add(61) // a minute without a heartbeat
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if st, _ := c.do("POST", "session_heartbeat", map[string]any{"session_id": sess}); st == 404 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Error("a session without heartbeats did not expire")
}
