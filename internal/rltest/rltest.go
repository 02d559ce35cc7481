// Package rltest holds what RL serving tests share: a small Qwen3-derived
// tokenizer (testdata/qwen3-mini, see its README), a toy policy model whose
// vocabulary is real Qwen3 word tokens, a script that makes the fake Tinker
// answer tool calls, and fake judge and teacher endpoints.
package rltest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/rl/prompt"
	"github.com/metaclaw-go/metaclaw/internal/faketinker/toy"
)

// Model is the policy's base model name in tests.
const Model = "Qwen/Qwen3-4B-Instruct-2507"

// Qwen3 ids of the special and markup tokens the tests use.
const (
	EOS          = 151645 // <|im_end|>
	ToolCallOpen = 151657 // <tool_call>
	ToolCallEnd  = 151658 // </tool_call>
)

// Words are real Qwen3 ids of whole-word tokens: the toy model samples
// among them (and EOS), so its answers decode to words.
var Words = map[string]int32{
	"Hello": 9707, " there": 1052, " I": 358, " can": 646, " help": 1492, ".": 13, " The": 576, " file": 1034,
	" says": 2727, " ok": 5394, " you": 498, " with": 448, " that": 429, " Sure": 22555, ",": 11, " here": 1588,
	" is": 374, " the": 279, "The": 785, " answer": 4226, " note": 5185, " read": 1349, " it": 432, " now": 1431, " done": 2814,
}

// TokenizerDir is the mini tokenizer: Qwen3's 256 byte tokens, the word
// tokens above and the added tokens, all with their real ids, no merges
// (text encodes byte by byte), and Qwen3's real tokenizer_config.json with
// its chat template.
func TokenizerDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "qwen3-mini")
}

// Codec loads the mini tokenizer.
func Codec(t testing.TB) *prompt.Codec {
	t.Helper()
	c, err := prompt.Load(TokenizerDir())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// ToyModel is the policy as the fake Tinker serves it.
func ToyModel() toy.Config {
	vocab := []int32{EOS}
	for _, id := range Words {
		vocab = append(vocab, id)
	}
	return toy.Config{Name: Model, Vocab: sortIDs(vocab), EOS: EOS, MaxContext: 32768}
}

func sortIDs(v []int32) []int32 {
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && v[j] < v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
	return v
}

// Script makes the fake answer like an agent model: a prompt whose newest
// user message asks "USE-TOOL" gets a call of tool read {"path":"NOTE.txt"};
// one that ends with a tool result gets "The file says ok."; others are
// sampled by the toy model.
func Script(c *prompt.Codec) func(prompt []int32) ([]int32, bool) {
	return func(p []int32) ([]int32, bool) {
		ids := make([]int, len(p))
		for i, id := range p {
			ids[i] = int(id)
		}
		text := c.Tokenizer.Decode(ids)
		last := text[strings.LastIndex(text, "<|im_start|>user")+1:]
		switch {
		case strings.Contains(last, "<tool_response>"):
			return []int32{Words["The"], Words[" file"], Words[" says"], Words[" ok"], Words["."], EOS}, true
		case strings.Contains(last, "USE-TOOL"):
			out := []int32{ToolCallOpen}
			for _, id := range c.Tokenizer.Encode("\n{\"name\": \"read\", \"arguments\": {\"path\": \"NOTE.txt\"}}\n") {
				out = append(out, int32(id))
			}
			return append(out, ToolCallEnd, EOS), true
		}
		return nil, false
	}
}

// Judge is a fake OpenAI-compatible judge endpoint.
type Judge struct {
	*httptest.Server
	// Down makes every call fail with a 503.
	Down atomic.Bool
	mu   sync.Mutex
	// Prompts are the user messages of the calls that were answered.
	prompts []string
	calls   atomic.Int64
	// Verdict picks the score line for a prompt (default "Score: 1").
	Verdict func(prompt string) string
}

// NewJudge starts a fake judge.
func NewJudge(t testing.TB) *Judge {
	j := &Judge{}
	j.Server = httptest.NewServer(http.HandlerFunc(j.serve))
	t.Cleanup(j.Close)
	return j
}

func (j *Judge) serve(w http.ResponseWriter, r *http.Request) {
	j.calls.Add(1)
	if j.Down.Load() {
		http.Error(w, `{"error":{"message":"judge overloaded","type":"server_error"}}`, http.StatusServiceUnavailable)
		return
	}
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path != "/v1/chat/completions" || json.Unmarshal(body, &req) != nil || len(req.Messages) == 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	user := req.Messages[len(req.Messages)-1].Content
	j.mu.Lock()
	j.prompts = append(j.prompts, user)
	j.mu.Unlock()
	verdict := "Score: 1"
	if j.Verdict != nil {
		verdict = j.Verdict(user)
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"j","object":"chat.completion","model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":100,"completion_tokens":7,"total_tokens":107}}`,
		req.Model, "The response follows the instruction.\n"+verdict)
}

// Prompts returns the user messages of answered calls.
func (j *Judge) Prompts() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.prompts...)
}

// Calls counts calls, failed ones included.
func (j *Judge) Calls() int64 { return j.calls.Load() }

// Teacher is a fake /v1/completions endpoint that scores token-id prompts:
// the log-prob of token i is Logprob(id).
type Teacher struct {
	*httptest.Server
	Down  atomic.Bool
	calls atomic.Int64
}

// TeacherLogprob is the fake teacher's log-prob of a token.
func TeacherLogprob(id int32) float32 { return -float32(id%97+1) / 16 }

// NewTeacher starts a fake teacher.
func NewTeacher(t testing.TB) *Teacher {
	tt := &Teacher{}
	tt.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tt.calls.Add(1)
		if tt.Down.Load() {
			http.Error(w, "down", http.StatusBadGateway)
			return
		}
		var req struct {
			Prompt    []int32 `json:"prompt"`
			Echo      bool    `json:"echo"`
			Logprobs  int     `json:"logprobs"`
			MaxTokens int     `json:"max_tokens"`
		}
		if r.URL.Path != "/v1/completions" || json.NewDecoder(r.Body).Decode(&req) != nil || !req.Echo || len(req.Prompt) == 0 {
			http.Error(w, `{"error":{"message":"want a token-id prompt with echo"}}`, http.StatusBadRequest)
			return
		}
		lps := []any{nil}
		for _, id := range req.Prompt[1:] {
			lps = append(lps, TeacherLogprob(id))
		}
		for range req.MaxTokens {
			lps = append(lps, -0.1) // generated tokens
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"object": "text_completion", "model": "teacher",
			"choices": []any{map[string]any{"index": 0, "text": "", "logprobs": map[string]any{"token_logprobs": lps}}},
			"usage":   map[string]int{"prompt_tokens": len(req.Prompt), "completion_tokens": req.MaxTokens},
		})
	}))
	t.Cleanup(tt.Close)
	return tt
}

// Calls counts calls.
func (tt *Teacher) Calls() int64 { return tt.calls.Load() }
