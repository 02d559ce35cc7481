package runtime_test

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/metaclaw-go/metaclaw/host/rl/samples"
	"github.com/metaclaw-go/metaclaw/internal/rltest"
)

var readTool = openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
	Name:        "read",
	Description: openai.String("Read a file"),
	Parameters:  shared.FunctionParameters{"type": "object", "properties": map[string]any{"path": map[string]any{"type": "string"}}, "required": []string{"path"}},
})

func openaiClient(h *rlHost, session string, extra ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{option.WithBaseURL(h.URL + "/v1"), option.WithAPIKey("client-key"),
		option.WithMaxRetries(0), option.WithHeader("X-Session-Id", session)}, extra...)...)
}

// checkExact asserts that every sample of the session holds exactly the
// prompt ids the fake Tinker received and the ids and log-probs it returned.
func checkExact(t *testing.T, h *rlHost, got []samples.Sample) {
	t.Helper()
	calls := h.tinker.sampled()
	for _, s := range got {
		i := slices.IndexFunc(calls, func(c sampled) bool { return slices.Equal(c.Prompt, s.Prompt) })
		if i < 0 {
			t.Fatalf("sample %d: its prompt ids (%d) were never sent to the sampler", s.ID, len(s.Prompt))
		}
		c := calls[i]
		if !slices.Equal(c.Tokens, s.Completion) {
			t.Errorf("sample %d: completion %v, the sampler returned %v", s.ID, s.Completion, c.Tokens)
		}
		if len(c.Logprobs) != len(s.Logprobs) {
			t.Fatalf("sample %d: %d logprobs, sampler returned %d", s.ID, len(s.Logprobs), len(c.Logprobs))
		}
		for k := range c.Logprobs {
			if math.Float32bits(c.Logprobs[k]) != math.Float32bits(s.Logprobs[k]) {
				t.Errorf("sample %d: logprob %d = %v, sampler returned %v", s.ID, k, s.Logprobs[k], c.Logprobs[k])
			}
		}
	}
}

// waitScored waits until the session's n samples are all judged.
func waitScored(t *testing.T, h *rlHost, session string, n int) []samples.Sample {
	t.Helper()
	var got []samples.Sample
	waitFor(t, 15*time.Second, "every turn of "+session+" judged", func() bool {
		got = h.samples(t, session)
		if len(got) != n {
			return false
		}
		for _, s := range got {
			if s.State != samples.Scored {
				return false
			}
		}
		return true
	})
	return got
}

func TestOpenAIToolRoundServedByThePolicy(t *testing.T) {
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "whole", true: "stream"}[stream]
		t.Run(name, func(t *testing.T) {
			h := startRL(t, hostOpts{})
			ctx := context.Background()
			session := "oai-" + name
			c := openaiClient(h, session)
			msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You are a helpful agent."), openai.UserMessage("Hello, USE-TOOL on NOTE.txt")}
			ask := func(extra ...option.RequestOption) openai.ChatCompletionMessage {
				t.Helper()
				params := openai.ChatCompletionNewParams{Model: "gpt-4.1", Messages: msgs, Tools: []openai.ChatCompletionToolUnionParam{readTool}}
				if !stream {
					cc, err := c.Chat.Completions.New(ctx, params, extra...)
					if err != nil {
						t.Fatal(err)
					}
					if cc.Model != rltest.Model || cc.Usage.PromptTokens == 0 || cc.Usage.CompletionTokens == 0 {
						t.Errorf("model %q usage %+v", cc.Model, cc.Usage)
					}
					return cc.Choices[0].Message
				}
				params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
				st := c.Chat.Completions.NewStreaming(ctx, params, extra...)
				var acc openai.ChatCompletionAccumulator
				for st.Next() {
					acc.AddChunk(st.Current())
				}
				if err := st.Err(); err != nil {
					t.Fatal(err)
				}
				if acc.Usage.CompletionTokens == 0 {
					t.Errorf("no usage chunk: %+v", acc.Usage)
				}
				return acc.Choices[0].Message
			}
			// Turn 1: the policy calls the tool.
			m1 := ask()
			if len(m1.ToolCalls) != 1 || m1.ToolCalls[0].Function.Name != "read" || m1.ToolCalls[0].Function.Arguments != `{"path": "NOTE.txt"}` {
				t.Fatalf("turn 1: %+v", m1)
			}
			// Turn 2: the tool result goes back; the policy answers.
			msgs = append(msgs, m1.ToParam(), openai.ToolMessage("ok: the note is here", m1.ToolCalls[0].ID))
			m2 := ask()
			if m2.Content != "The file says ok." {
				t.Fatalf("turn 2: %q", m2.Content)
			}
			// Turn 3: a new user message, the last of the session.
			msgs = append(msgs, m2.ToParam(), openai.UserMessage("thanks"))
			ask(option.WithHeader("X-Session-Done", "true"))

			if n := len(h.Upstream.Requests()); n != 0 {
				t.Fatalf("llm.* received %d requests; main turns must be served by the policy", n)
			}
			got := waitScored(t, h, session, 3)
			checkExact(t, h, got)
			if got[0].Completion[0] != rltest.ToolCallOpen || !strings.Contains(got[0].Response, `[tool call] read({"path": "NOTE.txt"})`) {
				t.Errorf("sample 1: completion %v response %q", got[0].Completion[:3], got[0].Response)
			}
			if got[0].NextState == nil || !strings.Contains(*got[0].NextState, "ok: the note is here") {
				t.Errorf("sample 1 next state %v", got[0].NextState)
			}
			if got[1].NextState == nil || *got[1].NextState != "user: thanks" {
				t.Errorf("sample 2 next state %v", got[1].NextState)
			}
			if got[2].NextState != nil {
				t.Errorf("the last turn has a next state %q", *got[2].NextState)
			}
			for i, s := range got {
				if s.Reward == nil || *s.Reward != 1 || len(s.Votes) != 3 || s.Judge != "prm:judge-1" || s.Seq != i+1 {
					t.Errorf("sample %d: reward %v votes %v judge %q seq %d", i+1, s.Reward, s.Votes, s.Judge, s.Seq)
				}
				if s.BaseModel != rltest.Model || s.Sampler == "" || s.StopReason != "stop" || s.Instruction == "" {
					t.Errorf("sample %d: %+v", i+1, s)
				}
			}
			if got[0].Instruction != "Hello, USE-TOOL on NOTE.txt" || got[2].Instruction != "thanks" {
				t.Errorf("instructions %q, %q", got[0].Instruction, got[2].Instruction)
			}
			// Every judge call is recorded as purpose judge; turns link to samples.
			h.Flush(t)
			usage, err := h.Store.UsageByPurpose(ctx)
			if err != nil || usage["judge"].Calls != 9 || usage["judge"].InputTokens != 900 {
				t.Errorf("judge usage %+v, %v", usage["judge"], err)
			}
			turns, _ := h.Store.SessionTurns(ctx, session)
			if len(turns) != 3 {
				t.Fatalf("%d turns recorded", len(turns))
			}
			waitFor(t, 5*time.Second, "samples linked to their turns", func() bool {
				got = h.samples(t, session)
				return got[2].TurnID == turns[2].ID && got[0].TurnIndex == 1
			})
			if turns[1].ResponseText != "The file says ok." || turns[0].Model != rltest.Model {
				t.Errorf("recorded turn: %q model %q", turns[1].ResponseText, turns[0].Model)
			}
			// The judge saw the instruction, the answer and the next state.
			prompts := h.judge.Prompts()
			if len(prompts) != 9 || !strings.Contains(strings.Join(prompts, "\n"), "Next message in the conversation:\nuser: thanks") {
				t.Errorf("judge prompts: %d", len(prompts))
			}
		})
	}
}

func TestAnthropicClientServedByThePolicy(t *testing.T) {
	h := startRL(t, hostOpts{})
	ctx := context.Background()
	c := anthropic.NewClient(aoption.WithBaseURL(h.URL), aoption.WithAPIKey("client-key"), aoption.WithMaxRetries(0), aoption.WithHeader("X-Session-Id", "ant"))
	tool := anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{Name: "read", Description: anthropic.String("Read a file"),
		InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"path": map[string]any{"type": "string"}}}}}
	msgs := []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("please USE-TOOL"))}
	params := func() anthropic.MessageNewParams {
		return anthropic.MessageNewParams{Model: "claude-sonnet-4-5", MaxTokens: 256, Messages: msgs, Tools: []anthropic.ToolUnionParam{tool}}
	}
	// Turn 1, streamed: a tool_use block.
	st := c.Messages.NewStreaming(ctx, params())
	var m1 anthropic.Message
	for st.Next() {
		if err := m1.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if m1.StopReason != anthropic.StopReasonToolUse || len(m1.Content) == 0 {
		t.Fatalf("turn 1: %+v", m1)
	}
	use := m1.Content[len(m1.Content)-1].AsToolUse()
	var input map[string]string
	if err := json.Unmarshal(use.Input, &input); err != nil || use.Name != "read" || input["path"] != "NOTE.txt" {
		t.Fatalf("tool use %s %s", use.Name, use.Input)
	}
	if m1.Usage.OutputTokens == 0 {
		t.Errorf("usage %+v", m1.Usage)
	}
	// Turn 2, whole: the tool result comes back.
	msgs = append(msgs, m1.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(use.ID, "ok", false)))
	m2, err := c.Messages.New(ctx, params(), aoption.WithHeader("X-Session-Done", "1"))
	if err != nil {
		t.Fatal(err)
	}
	if m2.StopReason != anthropic.StopReasonEndTurn || m2.Content[0].AsText().Text != "The file says ok." {
		t.Fatalf("turn 2: %+v", m2)
	}
	if n := len(h.Upstream.Requests()); n != 0 {
		t.Fatalf("llm.* received %d requests", n)
	}
	got := waitScored(t, h, "ant", 2)
	checkExact(t, h, got)
}

func TestSideTurnsStillGoToTheUpstream(t *testing.T) {
	h := startRL(t, hostOpts{})
	c := openaiClient(h, "side", option.WithHeader("X-Turn-Type", "side"))
	cc, err := c.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{Model: "gpt-4.1", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("heartbeat")}})
	if err != nil {
		t.Fatal(err)
	}
	if cc.Choices[0].Message.Content != "FAKE-REPLY-OK" || len(h.Upstream.Requests()) != 1 || len(h.tinker.sampled()) != 0 {
		t.Fatalf("side turn: %q, upstream %d, sampler %d", cc.Choices[0].Message.Content, len(h.Upstream.Requests()), len(h.tinker.sampled()))
	}
	if got := h.samples(t, "side"); len(got) != 0 {
		t.Fatalf("a side turn became a sample: %+v", got)
	}
}

// TestJudgeDownDelaysScoringOnly: with the judge failing, every turn is
// still served and sampled; once it is back, scoring catches up.
func TestJudgeDownDelaysScoringOnly(t *testing.T) {
	h := startRL(t, hostOpts{})
	h.judge.Down.Store(true)
	ctx := context.Background()
	c := openaiClient(h, "down")
	var msgs []openai.ChatCompletionMessageParamUnion
	for i, text := range []string{"first", "second", "third"} {
		msgs = append(msgs, openai.UserMessage(text))
		var opts []option.RequestOption
		if i == 2 {
			opts = append(opts, option.WithHeader("X-Session-Done", "true"))
		}
		cc, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "m", Messages: msgs}, opts...)
		if err != nil {
			t.Fatalf("turn %d while the judge is down: %v", i+1, err)
		}
		msgs = append(msgs, cc.Choices[0].Message.ToParam())
	}
	waitFor(t, 10*time.Second, "failed judging recorded for every turn", func() bool {
		got := h.samples(t, "down")
		if len(got) != 3 {
			return false
		}
		for _, s := range got {
			if s.JudgeAttempts < 2 || s.State != samples.Pending {
				return false
			}
		}
		return true
	})
	st := h.rt.Status(ctx)
	if st.Samples == nil || st.Samples.Retrying != 3 || !strings.Contains(st.Samples.LastError, "503") {
		t.Fatalf("status while the judge is down: %+v", st.Samples)
	}
	h.judge.Down.Store(false)
	got := waitScored(t, h, "down", 3)
	checkExact(t, h, got)
	for _, s := range got {
		if s.JudgeError != "" || *s.Reward != 1 {
			t.Errorf("sample %d after recovery: %q %v", s.ID, s.JudgeError, *s.Reward)
		}
	}
	usage, _ := h.Store.UsageByPurpose(ctx)
	// Votes cast while the judge came back may mix failures and answers.
	if u := usage["judge"]; u.Failed == 0 || u.Calls-u.Failed < 3 {
		t.Errorf("judge usage %+v", u)
	}
	st = h.rt.Status(ctx)
	if st.Samples.Scored != 3 || st.Samples.MeanReward == nil || *st.Samples.MeanReward != 1 || st.Serving.Served != 3 {
		t.Errorf("status after recovery: %+v %+v", st.Samples, st.Serving)
	}
}

func TestStatusJSONShape(t *testing.T) {
	h := startRL(t, hostOpts{})
	st := h.rt.Status(context.Background())
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for _, k := range []string{"state", "reason", "backend", "model", "tokenizer", "sampler", "judge", "samples", "serving"} {
		if _, ok := m[k]; !ok {
			t.Errorf("status has no %q: %s", k, b)
		}
	}
	if st.State != "serving" || st.Backend != "tinker" || st.Sampler.Step != 0 || !strings.Contains(st.Sampler.ID, ":sample:") {
		t.Errorf("status %s", b)
	}
}
