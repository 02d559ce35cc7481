package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/metaclaw-go/metaclaw/internal/fakellm"
	"github.com/metaclaw-go/metaclaw/internal/faketinker"
	"github.com/metaclaw-go/metaclaw/internal/faketinker/toy"
	"github.com/metaclaw-go/metaclaw/internal/rltest"
)

// TestRLModeThroughTheBinary: `metaclaw start` in rl mode answers a main
// turn from the policy model (the fake Tinker), never from llm.*, scores it
// with the judge at session end, and `metaclaw status` shows it all.
func TestRLModeThroughTheBinary(t *testing.T) {
	up := fakellm.New()
	defer up.Close()
	judge := rltest.NewJudge(t)
	fake := faketinker.New(faketinker.Options{Models: []toy.Config{rltest.ToyModel()}, Script: rltest.Script(rltest.Codec(t))})
	tinker := httptest.NewServer(fake)
	defer func() { tinker.Close(); fake.Close() }()

	c := newCLI(t, "HOME="+t.TempDir(), "OPENAI_BASE_URL="+up.URL+"/v1", "OPENAI_API_KEY=sk-up")
	for _, kv := range [][2]string{
		{"mode", "rl"}, {"rl.backend", "tinker"}, {"rl.base_url", tinker.URL}, {"rl.api_key", "tml-secret-key"},
		{"rl.model", rltest.Model}, {"rl.tokenizer_path", rltest.TokenizerDir()},
		{"rl.prm_url", judge.URL + "/v1"}, {"rl.prm_model", "judge-1"}, {"rl.prm_api_key", "judge-key"},
	} {
		if out, code := c.run("config", "set", kv[0], kv[1]); code != 0 {
			t.Fatalf("config set %s: %s", kv[0], out)
		}
	}
	if out, code := c.run("start", "--port", "0"); code != 0 {
		t.Fatalf("start: %s", out)
	}
	st := c.status()
	var out string
	waitUntil(t, "the policy serves", func() bool {
		out, _ = c.run("status")
		return strings.Contains(out, "rl        serving")
	})
	req, _ := http.NewRequest(http.MethodPost, "http://"+st.Listen+"/v1/chat/completions",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"please USE-TOOL"}],"tools":[{"type":"function","function":{"name":"read","parameters":{"type":"object"}}}]}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.proxyKey())
	req.Header.Set("X-Session-Id", "bin")
	req.Header.Set("X-Session-Done", "true")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("turn: HTTP %d", resp.StatusCode)
	}
	waitUntil(t, "the turn judged", func() bool {
		out, _ = c.run("status")
		return strings.Contains(out, "1 scored") && strings.Contains(out, "mean reward +1.00")
	})
	for _, want := range []string{"backend tinker, model " + rltest.Model, "sampler ", ":sample:", "1 answered by the policy, 0 sent to llm.*", "judge prm:judge-1"} {
		if !strings.Contains(out, want) {
			t.Errorf("metaclaw status lacks %q:\n%s", want, out)
		}
	}
	t.Logf("metaclaw status:\n%s", out)
	if strings.Contains(out, "tml-secret-key") || strings.Contains(out, "judge-key") {
		t.Errorf("a key is shown:\n%s", out)
	}
	if n := len(up.Requests()); n != 0 {
		t.Errorf("llm.* received %d requests", n)
	}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestInactiveRLNamesNoBackend: in mode auto with rl.model set but no
// trainer key, `metaclaw status` (text and JSON) says RL is inactive and
// why, and names no backend or model as if one were configured.
func TestInactiveRLNamesNoBackend(t *testing.T) {
	c := newCLI(t, "HOME="+t.TempDir(), "TINKER_API_KEY=", "MINT_API_KEY=")
	for _, kv := range [][2]string{{"mode", "auto"}, {"rl.model", rltest.Model}} {
		if out, code := c.run("config", "set", kv[0], kv[1]); code != 0 {
			t.Fatalf("config set %s: %s", kv[0], out)
		}
	}
	if out, code := c.run("start", "--port", "0"); code != 0 {
		t.Fatalf("start: %s", out)
	}
	out, code := c.run("status")
	if code != 0 || !strings.Contains(out, "rl        inactive: mode auto") || strings.Contains(out, "backend tinker") || strings.Contains(out, rltest.Model) {
		t.Fatalf("metaclaw status:\n%s", out)
	}
	js, _ := c.run("status", "--json")
	var st struct {
		RL map[string]any `json:"rl"`
	}
	if err := json.Unmarshal([]byte(js), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, js)
	}
	if st.RL["state"] != "inactive" || st.RL["backend"] != nil || st.RL["model"] != nil {
		t.Fatalf("status --json rl: %v", st.RL)
	}
}
