// Package rlgoldens is the golden corpus of the RL tokenizer and chat
// template: the conversations and texts under host/rl/testdata, the
// reference outputs (goldens/qwen3, made by tools/rlgoldens with the Hugging
// Face JavaScript tokenizer and Jinja), and where tests find the Qwen3
// tokenizer files.
package rlgoldens

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/apiformat"
	"github.com/metaclaw-go/metaclaw/host/rl/chattemplate"
	"github.com/metaclaw-go/metaclaw/host/rl/tokenizer"
	"github.com/metaclaw-go/metaclaw/host/rl/tokfetch"
)

// TestdataDir is host/rl/testdata in this checkout.
func TestdataDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "host", "rl", "testdata")
}

// inCI reports whether the tests run under CI (CI=1/true), where missing
// tokenizer files are a failure instead of a skip.
func inCI() bool {
	v := strings.ToLower(os.Getenv("CI"))
	return v != "" && v != "0" && v != "false"
}

// TokenizerDir returns the directory with the Qwen3 tokenizer files
// (tokfetch.DefaultDir("qwen3"), i.e. $METACLAW_TOKENIZER_CACHE/qwen3 or
// ~/.cache/metaclaw/tokenizers/qwen3). When they are missing the test fails
// under CI and is skipped, with the reason, elsewhere.
func TokenizerDir(t testing.TB) string {
	t.Helper()
	dir, err := tokfetch.DefaultDir("qwen3")
	if err == nil {
		_, err = os.Stat(filepath.Join(dir, tokenizer.TokenizerFile))
	}
	if err != nil {
		msg := fmt.Sprintf("Qwen3 tokenizer files not found (%v); run `go run ./cmd/metaclaw rl fetch-tokenizer` (or `make rl-tokenizer`) first", err)
		if inCI() {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// ChatCase is one conversation of the corpus.
type ChatCase struct {
	Name   string
	Source string
	Conv   chattemplate.Conversation
	Opts   chattemplate.Options
}

// openclawCases are the captured OpenClaw 2026.9.6 requests (see
// testdata/README.md), rendered as a main turn would be.
var openclawCases = []struct {
	name, file string
	anthropic  bool
	thinking   *bool
}{
	{"openclaw-01-turn1", "01-openai-completions.turn1.body.json", false, nil},
	{"openclaw-02-turn2", "02-openai-completions.turn2-same-session.body.json", false, nil},
	{"openclaw-04-tool-round2", "04-openai-completions.tool-round2-with-tool-result.body.json", false, nil},
	{"openclaw-04-tool-round2-nothink", "04-openai-completions.tool-round2-with-tool-result.body.json", false, ptr(false)},
	{"openclaw-07-anthropic-tool-round2", "07-anthropic-messages.tool-round2-with-tool-result.body.json", true, nil},
	{"openclaw-09-small-system", "09-openai-completions.systemPrompt-return.body.json", false, nil},
}

func ptr[T any](v T) *T { return &v }

// ChatCases reads the corpus: the OpenClaw captures (Anthropic ones
// translated with host/apiformat, as serving does) and conversations.json.
func ChatCases() ([]ChatCase, error) {
	dir := TestdataDir()
	var cases []ChatCase
	for _, oc := range openclawCases {
		body, err := os.ReadFile(filepath.Join(dir, "openclaw", oc.file))
		if err != nil {
			return nil, err
		}
		if oc.anthropic {
			if body, err = apiformat.AnthropicToOpenAIRequest(body); err != nil {
				return nil, fmt.Errorf("%s: %w", oc.file, err)
			}
		}
		conv, err := chattemplate.FromOpenAI(body)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", oc.file, err)
		}
		cases = append(cases, ChatCase{Name: oc.name, Source: "openclaw/" + oc.file, Conv: conv,
			Opts: chattemplate.Options{AddGenerationPrompt: true, EnableThinking: oc.thinking}})
	}
	data, err := os.ReadFile(filepath.Join(dir, "conversations.json"))
	if err != nil {
		return nil, err
	}
	var hand []struct {
		Name                string          `json:"name"`
		AddGenerationPrompt bool            `json:"add_generation_prompt"`
		EnableThinking      *bool           `json:"enable_thinking"`
		Request             json.RawMessage `json:"request"`
	}
	if err := json.Unmarshal(data, &hand); err != nil {
		return nil, fmt.Errorf("conversations.json: %w", err)
	}
	for _, h := range hand {
		conv, err := chattemplate.FromOpenAI(h.Request)
		if err != nil {
			return nil, fmt.Errorf("conversations.json %s: %w", h.Name, err)
		}
		cases = append(cases, ChatCase{Name: h.Name, Source: "conversations.json", Conv: conv,
			Opts: chattemplate.Options{AddGenerationPrompt: h.AddGenerationPrompt, EnableThinking: h.EnableThinking}})
	}
	return cases, nil
}

// TextCase is one string of texts.json.
type TextCase struct {
	Name string `json:"name"`
	Text string `json:"text"`
}

// DecodeCase builds an id sequence from parts: raw bytes (as their
// byte-level tokens), added tokens by name, or encoded text.
type DecodeCase struct {
	Name  string `json:"name"`
	Parts []struct {
		BytesHex string `json:"bytes_hex"`
		Token    string `json:"token"`
		Text     string `json:"text"`
	} `json:"parts"`
}

// IDs resolves the parts with tok.
func (d DecodeCase) IDs(tok *tokenizer.Tokenizer) ([]int, error) {
	var ids []int
	for _, p := range d.Parts {
		switch {
		case p.BytesHex != "":
			raw, err := hex.DecodeString(p.BytesHex)
			if err != nil {
				return nil, err
			}
			for _, b := range raw {
				id, ok := tok.ByteTokenID(b)
				if !ok {
					return nil, fmt.Errorf("no token for byte %#x", b)
				}
				ids = append(ids, id)
			}
		case p.Token != "":
			id, ok := tok.TokenID(p.Token)
			if !ok {
				return nil, fmt.Errorf("no token %q", p.Token)
			}
			ids = append(ids, id)
		default:
			ids = append(ids, tok.Encode(p.Text)...)
		}
	}
	return ids, nil
}

// Texts reads texts.json.
func Texts() ([]TextCase, []DecodeCase, error) {
	data, err := os.ReadFile(filepath.Join(TestdataDir(), "texts.json"))
	if err != nil {
		return nil, nil, err
	}
	var f struct {
		Texts   []TextCase   `json:"texts"`
		Decodes []DecodeCase `json:"decodes"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, nil, fmt.Errorf("texts.json: %w", err)
	}
	return f.Texts, f.Decodes, nil
}

// Inputs is what the reference generator (tools/rlgoldens/gen.mjs) reads:
// every case in the exact form the Go template sees.
type Inputs struct {
	Chat []InputChat `json:"chat"`
	// Texts to encode and decode.
	Texts []TextCase `json:"texts"`
	// Decodes are id sequences to decode.
	Decodes []InputDecode `json:"decodes"`
}

// InputChat is one conversation for the reference renderer.
type InputChat struct {
	Name                string                 `json:"name"`
	Messages            []chattemplate.Message `json:"messages"`
	Tools               []json.RawMessage      `json:"tools"`
	AddGenerationPrompt bool                   `json:"add_generation_prompt"`
	EnableThinking      *bool                  `json:"enable_thinking,omitempty"`
}

// InputDecode is one id sequence for the reference decoder.
type InputDecode struct {
	Name string `json:"name"`
	IDs  []int  `json:"ids"`
}

// BuildInputs assembles the reference generator's input.
func BuildInputs(tok *tokenizer.Tokenizer) (Inputs, error) {
	var in Inputs
	cases, err := ChatCases()
	if err != nil {
		return in, err
	}
	for _, c := range cases {
		in.Chat = append(in.Chat, InputChat{Name: c.Name, Messages: c.Conv.Messages, Tools: c.Conv.Tools,
			AddGenerationPrompt: c.Opts.AddGenerationPrompt, EnableThinking: c.Opts.EnableThinking})
	}
	texts, decodes, err := Texts()
	if err != nil {
		return in, err
	}
	in.Texts = texts
	for _, d := range decodes {
		ids, err := d.IDs(tok)
		if err != nil {
			return in, fmt.Errorf("decode case %s: %w", d.Name, err)
		}
		in.Decodes = append(in.Decodes, InputDecode{Name: d.Name, IDs: ids})
	}
	return in, nil
}

// ChatGolden is the reference result for one conversation. Small results
// are stored whole; large ones as a SHA-256 (a byte-for-byte check all the
// same) plus the tail of the ids, where the conversation differs from the
// shared system prompt.
type ChatGolden struct {
	Name           string `json:"name"`
	RenderedLen    int    `json:"rendered_len"`
	RenderedSHA256 string `json:"rendered_sha256"`
	Rendered       string `json:"rendered,omitempty"`
	IDsLen         int    `json:"ids_len"`
	IDsSHA256      string `json:"ids_sha256"`
	IDs            []int  `json:"ids,omitempty"`
	IDsTail        []int  `json:"ids_tail,omitempty"`
}

// TextGolden is the reference encoding and decoding of one text.
type TextGolden struct {
	Name               string `json:"name"`
	IDs                []int  `json:"ids"`
	Decoded            string `json:"decoded"`
	DecodedSkipSpecial string `json:"decoded_skip_special"`
}

// DecodeGolden is the reference decoding of one id sequence.
type DecodeGolden struct {
	Name               string `json:"name"`
	IDs                []int  `json:"ids"`
	Decoded            string `json:"decoded"`
	DecodedSkipSpecial string `json:"decoded_skip_special"`
}

// Goldens is goldens/qwen3/goldens.json.
type Goldens struct {
	Generator string         `json:"generator"`
	Chat      []ChatGolden   `json:"chat"`
	Texts     []TextGolden   `json:"texts"`
	Decodes   []DecodeGolden `json:"decodes"`
}

// GoldensFile is where the Qwen3 goldens live.
func GoldensFile() string {
	return filepath.Join(TestdataDir(), "goldens", "qwen3", "goldens.json")
}

// LoadGoldens reads the Qwen3 goldens.
func LoadGoldens() (Goldens, error) {
	var g Goldens
	data, err := os.ReadFile(GoldensFile())
	if err != nil {
		return g, err
	}
	return g, json.Unmarshal(data, &g)
}

// SHA256 is the hex SHA-256 of s (rendered prompts).
func SHA256(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// IDsSHA256 hashes ids the way the generator does: decimal, comma-joined.
func IDsSHA256(ids []int) string {
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(id))
	}
	return SHA256(b.String())
}

// CheckChat compares a rendered prompt and its ids with a golden, and on a
// mismatch reports where the two first differ.
func CheckChat(t testing.TB, want ChatGolden, text string, ids []int, decode func([]int) string) {
	t.Helper()
	if want.Rendered != "" && text != want.Rendered {
		i := firstDiff(text, want.Rendered)
		t.Errorf("rendered text differs at byte %d:\n got: %q\nwant: %q", i, clip(text, i), clip(want.Rendered, i))
	} else if len(text) != want.RenderedLen || SHA256(text) != want.RenderedSHA256 {
		t.Errorf("rendered text differs: %d bytes, sha256 %s; want %d bytes, %s", len(text), SHA256(text), want.RenderedLen, want.RenderedSHA256)
	}
	if ids == nil {
		return
	}
	ref := want.IDs
	off := 0
	if ref == nil {
		ref, off = want.IDsTail, max(0, len(ids)-len(want.IDsTail))
	}
	for i := range ref {
		if off+i >= len(ids) || ids[off+i] != ref[i] {
			got := ids[min(off+i, len(ids)):min(off+i+8, len(ids))]
			t.Errorf("ids differ at %d of %d: got %v (%q), want %v (%q)", off+i, len(ids), got, decode(got), ref[i:min(i+8, len(ref))], decode(ref[i:min(i+8, len(ref))]))
			break
		}
	}
	if len(ids) != want.IDsLen || IDsSHA256(ids) != want.IDsSHA256 {
		t.Errorf("ids differ: %d ids, sha256 %s; want %d, %s", len(ids), IDsSHA256(ids), want.IDsLen, want.IDsSHA256)
	}
}

func firstDiff(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

func clip(s string, i int) string {
	return s[max(0, i-40):min(len(s), i+60)]
}
