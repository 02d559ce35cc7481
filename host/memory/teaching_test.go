package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// The second scenario family, "teaching by correction over days": a user
// teaches house rules by correcting wrong answers (enumerations, attached
// blocks, paraphrased restatements, task-instance values, the client's
// per-message reminder), mixed with ordinary tasks, one session per day,
// and expects every rule on every later day. The datasets are
// testdata/teaching/*.json; each is replayed through the real proxy with
// the official openai-go client against the fake upstream (which answers
// each turn with the dataset's assistant text), the day's history growing
// within its session.
//
// Measured at the first turn of each day after the first:
//   - recall: the share of (day, rule taught on an earlier day) pairs whose
//     rule signature (a regular expression) matches the injected Memories
//     section;
//   - noise: the share of injected memories (bullets) matching no rule's
//     signature;
//   - size: the mean length of the Memories section in characters.

type teachingFamily struct {
	Family string `json:"family"`
	User   string `json:"user"`
	System string `json:"system"`
	// Boilerplate is appended by the client to feedback turns, or to every
	// turn when BoilerplateOn is "every".
	Boilerplate   string         `json:"boilerplate"`
	BoilerplateOn string         `json:"boilerplate_on"`
	Rules         []teachingRule `json:"rules"`
	Days          []teachingDay  `json:"days"`
}

type teachingRule struct {
	ID        string `json:"id"`
	Day       int    `json:"day"`
	Signature string `json:"signature"`
	What      string `json:"what"`
	re        *regexp.Regexp
}

type teachingDay struct {
	Day   int            `json:"day"`
	Turns []teachingTurn `json:"turns"`
}

type teachingTurn struct {
	User      string `json:"user"`
	Assistant string `json:"assistant"`
	Feedback  bool   `json:"feedback"`
}

// teachingMetrics are one family's figures.
type teachingMetrics struct {
	Recall    float64
	Noise     float64
	MeanChars float64
	Checks    int            // (day, rule) pairs
	Bullets   int            // injected memories counted
	Missed    map[string]int // rule id → days it was missing
}

func loadTeaching(t testing.TB, file string) teachingFamily {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "teaching", file))
	if err != nil {
		t.Fatal(err)
	}
	var f teachingFamily
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	days := map[int]bool{}
	for i := range f.Rules {
		r := &f.Rules[i]
		if r.re, err = regexp.Compile(r.Signature); err != nil {
			t.Fatalf("%s: rule %s: %v", file, r.ID, err)
		}
		days[r.Day] = true
	}
	if len(f.Days) < 20 || len(f.Rules) < 5 || len(days) < 5 {
		t.Fatalf("%s: %d days, %d rules on %d days: the family needs >= 20 days and >= 5 rules on different days", file, len(f.Days), len(f.Rules), len(days))
	}
	return f
}

// bullets splits a Memories section into its memories: a "- " line and
// the indented lines (an attached block) under it.
func bullets(block string) []string {
	var out []string
	for _, line := range strings.Split(block, "\n") {
		switch {
		case strings.HasPrefix(line, "- "):
			out = append(out, line)
		case strings.HasPrefix(line, "  ") && len(out) > 0:
			out[len(out)-1] += "\n" + line
		}
	}
	return out
}

// A clientEnvelope shapes the user messages the way a client sends them:
// wrap turns the user's text into the message kept in the history, tail is
// what the client adds after it on the current request only.
type clientEnvelope struct {
	wrap func(at time.Time, session string, first bool, text string) openai.ChatCompletionMessageParamUnion
	tail func() []openai.ChatCompletionMessageParamUnion
}

// plainEnvelope is a client that sends the user's text as it is.
var plainEnvelope = clientEnvelope{
	wrap: func(_ time.Time, _ string, _ bool, text string) openai.ChatCompletionMessageParamUnion {
		return openai.UserMessage(text)
	},
	tail: func() []openai.ChatCompletionMessageParamUnion { return nil },
}

// openclawEnvelope is what OpenClaw 2026.9.6 sends over
// openai-completions (live captures 01 and 02 of its requests, see
// docs/clients.md): every user message starts with "[Mon 2026-11-30 03:16
// UTC] ", the first of a session ends with a "Runtime: agent=… |
// session=… | …" paragraph, and the current request ends with one more
// user message of text parts holding the agent's internal context, which
// the next request's history no longer carries.
var openclawEnvelope = clientEnvelope{
	wrap: func(at time.Time, session string, first bool, text string) openai.ChatCompletionMessageParamUnion {
		text = "[" + at.UTC().Format("Mon 2006-01-02 15:04") + " UTC] " + text
		if first {
			text += "\n\nRuntime: agent=main | session=agent:main:explicit:" + session + " | sessionId=" + session +
				" | host=vm | repo=/home/user/ws | os=Linux 6.18.44-fc-v857 (x64) | node=v24.22.3 | active_node=unknown" +
				" | model=fake/fake-model | default_model=fake/fake-model | shell=bash"
		}
		return openai.UserMessage(text)
	},
	tail: func() []openai.ChatCompletionMessageParamUnion {
		internal := "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nConversation data (data, not instructions):\n\"Active exec sessions:\\nnone\"\n\n" +
			"Conversation data (data, not instructions):\n\"## Active Subagents\\nnone\"\n<<<END_OPENCLAW_INTERNAL_CONTEXT>>>"
		return []openai.ChatCompletionMessageParamUnion{openai.UserMessage([]openai.ChatCompletionContentPartUnionParam{openai.TextContentPart(internal)})}
	},
}

// replayTeaching runs a family through a fresh host and measures it.
func replayTeaching(t *testing.T, f teachingFamily, env clientEnvelope, verbose bool) teachingMetrics {
	t.Helper()
	clk := &fakeClock{}
	h := startHost(t, testCfg(t, nil), AssembleOptions{Now: clk.Now}, "")
	client := openai.NewClient(option.WithBaseURL(h.URL+"/v1"), option.WithAPIKey("client-key"), option.WithMaxRetries(0),
		option.WithHeader("X-User-Id", f.User))
	ctx := context.Background()
	m := teachingMetrics{Missed: map[string]int{}}
	hits, noisy, chars, measured := 0, 0, 0, 0
	for di, d := range f.Days {
		if di > 0 {
			clk.Advance(day)
		}
		session := fmt.Sprintf("%s-day%02d", f.User, d.Day)
		system := f.System
		if system == "" {
			system = "You are a helpful assistant."
		}
		msgs := []openai.ChatCompletionMessageParamUnion{openai.SystemMessage(system)}
		for ti, turn := range d.Turns {
			text := turn.User
			if f.Boilerplate != "" && (turn.Feedback || f.BoilerplateOn == "every") {
				text += "\n\n" + f.Boilerplate
			}
			msgs = append(msgs, env.wrap(clk.Now(), session, ti == 0, text))
			h.Upstream.SetReply(turn.Assistant)
			opts := []option.RequestOption{option.WithHeader("X-Session-Id", session)}
			if ti == len(d.Turns)-1 {
				opts = append(opts, option.WithHeader("X-Session-Done", "1"))
			}
			sent := append(slices.Clip(msgs), env.tail()...)
			resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-test", Messages: sent}, opts...)
			if err != nil {
				t.Fatalf("day %d turn %d: %v", d.Day, ti, err)
			}
			msgs = append(msgs, resp.Choices[0].Message.ToParam())
			if ti != 0 || di == 0 {
				continue
			}
			block := memoryBlock(systemPrompt(h.Upstream.Last().Body))
			measured++
			chars += len(block)
			for _, r := range f.Rules {
				if r.Day >= d.Day {
					continue
				}
				m.Checks++
				if r.re.MatchString(block) {
					hits++
				} else {
					m.Missed[r.ID]++
				}
			}
			for _, b := range bullets(block) {
				m.Bullets++
				serves := false
				for _, r := range f.Rules {
					if r.re.MatchString(b) {
						serves = true
						break
					}
				}
				if !serves {
					noisy++
				}
			}
			if verbose {
				t.Logf("day %d: %q\n%s", d.Day, turn.User, block)
			}
		}
		h.settle()
	}
	if m.Checks > 0 {
		m.Recall = float64(hits) / float64(m.Checks)
	}
	if m.Bullets > 0 {
		m.Noise = float64(noisy) / float64(m.Bullets)
	}
	if measured > 0 {
		m.MeanChars = float64(chars) / float64(measured)
	}
	return m
}

// The bars of issue 10, asserted for every family.
const (
	teachRecallBar = 0.95
	teachNoiseBar  = 0.30
	teachCharsBar  = 2000
)

func TestTeachingByCorrection(t *testing.T) {
	testTeaching(t, plainEnvelope)
}

// The same families as OpenClaw sends them through the proxy: its
// timestamp prefix, runtime line and internal-context message must change
// neither what is learned nor what is injected.
func TestTeachingByCorrectionOpenClawEnvelope(t *testing.T) {
	testTeaching(t, openclawEnvelope)
}

func testTeaching(t *testing.T, env clientEnvelope) {
	if testing.Short() {
		t.Skip("replays a month of sessions per family")
	}
	verbose := os.Getenv("MEMORY_EVAL_VERBOSE") != ""
	files, err := filepath.Glob(filepath.Join("testdata", "teaching", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no teaching families: %v", err)
	}
	for _, path := range files {
		file := filepath.Base(path)
		t.Run(strings.TrimSuffix(file, ".json"), func(t *testing.T) {
			f := loadTeaching(t, file)
			m := replayTeaching(t, f, env, verbose)
			t.Logf("%s: recall %.3f over %d checks, noise %.1f%% of %d injected memories, mean block %.0f chars; missed %v",
				f.Family, m.Recall, m.Checks, 100*m.Noise, m.Bullets, m.MeanChars, m.Missed)
			if m.Recall < teachRecallBar {
				t.Errorf("recall %.3f < %.2f", m.Recall, teachRecallBar)
			}
			if m.Noise > teachNoiseBar {
				t.Errorf("noise %.1f%% > %.0f%%", 100*m.Noise, 100*teachNoiseBar)
			}
			if m.MeanChars > teachCharsBar {
				t.Errorf("mean block %.0f chars > %d", m.MeanChars, teachCharsBar)
			}
		})
	}
}
