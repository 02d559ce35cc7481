package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/dlclark/regexp2/v2"
	jsonv2 "github.com/go-json-experiment/json"
)

// File names inside a tokenizer directory (rl.tokenizer_path).
const (
	TokenizerFile = "tokenizer.json"
	ConfigFile    = "tokenizer_config.json"
)

// fileJSON is the part of tokenizer.json we read.
type fileJSON struct {
	AddedTokens  []*AddedToken   `json:"added_tokens"`
	Normalizer   json.RawMessage `json:"normalizer"`
	PreTokenizer json.RawMessage `json:"pre_tokenizer"`
	Decoder      json.RawMessage `json:"decoder"`
	Model        struct {
		Type                    string          `json:"type"`
		Vocab                   map[string]int  `json:"vocab"`
		Merges                  json.RawMessage `json:"merges"`
		Dropout                 *float64        `json:"dropout"`
		ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
		EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
		IgnoreMerges            bool            `json:"ignore_merges"`
	} `json:"model"`
}

// Load reads dir/tokenizer.json (and, when present, the special-token names
// of dir/tokenizer_config.json).
func Load(dir string) (*Tokenizer, error) {
	data, err := os.ReadFile(filepath.Join(dir, TokenizerFile))
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t, err := FromJSON(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", filepath.Join(dir, TokenizerFile), err)
	}
	cfgPath := filepath.Join(dir, ConfigFile)
	cfg, err := os.ReadFile(cfgPath)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return nil, fmt.Errorf("tokenizer: %w", err)
	default:
		if err := t.readConfig(cfg); err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", cfgPath, err)
		}
	}
	return t, nil
}

// FromJSON builds a tokenizer from the contents of a tokenizer.json. Only
// byte-level BPE models are supported (GPT-2, Llama 3, Qwen, DeepSeek, …);
// anything else is refused with the name of the component we lack.
func FromJSON(data []byte) (*Tokenizer, error) {
	var f fileJSON
	// json v2 decodes the 150k-entry vocab several times faster than
	// encoding/json; load time is startup time for rl serving.
	if err := jsonv2.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("not a tokenizer.json: %w", err)
	}
	if f.Model.Type != "BPE" && !(f.Model.Type == "" && f.Model.Vocab != nil) {
		return nil, fmt.Errorf("model type %q is not supported (only byte-level BPE)", f.Model.Type)
	}
	if f.Model.Dropout != nil && *f.Model.Dropout != 0 {
		return nil, fmt.Errorf("BPE dropout %v is not supported", *f.Model.Dropout)
	}
	if p := f.Model.ContinuingSubwordPrefix; p != nil && *p != "" {
		return nil, fmt.Errorf("BPE continuing_subword_prefix %q is not supported", *p)
	}
	if p := f.Model.EndOfWordSuffix; p != nil && *p != "" {
		return nil, fmt.Errorf("BPE end_of_word_suffix %q is not supported", *p)
	}
	if f.Model.IgnoreMerges {
		return nil, errors.New("BPE ignore_merges is not supported")
	}
	t := &Tokenizer{
		vocab: make(map[string]int, len(f.Model.Vocab)+len(f.AddedTokens)),
		model: &bpe{cache: map[string][]int{}},
	}
	var err error
	if t.normalize, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	byteLevel := false
	if t.pre, byteLevel, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	if err := checkDecoder(f.Decoder); err != nil {
		return nil, err
	}
	if !byteLevel {
		return nil, errors.New("pre_tokenizer has no ByteLevel step: only byte-level BPE is supported")
	}

	maxID := -1
	for tok, id := range f.Model.Vocab {
		if id < 0 {
			return nil, fmt.Errorf("vocab entry %q has negative id %d", tok, id)
		}
		t.vocab[tok] = id
		maxID = max(maxID, id)
	}
	for _, a := range f.AddedTokens {
		if a.ID < 0 {
			return nil, fmt.Errorf("added token %q has negative id %d", a.Content, a.ID)
		}
		maxID = max(maxID, a.ID)
	}
	const maxVocab = 1 << 24
	if maxID >= maxVocab {
		return nil, fmt.Errorf("token id %d is too large", maxID)
	}
	t.idBytes = make([][]byte, maxID+1)
	t.idToken = make([]string, maxID+1)
	t.special = make([]bool, maxID+1)
	t.known = make([]bool, maxID+1)
	for tok, id := range f.Model.Vocab {
		raw, ok := byteLevelDecode(tok)
		if !ok {
			raw = []byte(tok)
		}
		t.idBytes[id], t.idToken[id], t.known[id] = raw, tok, true
	}
	for b := 0; b < 256; b++ {
		id, ok := f.Model.Vocab[string(byteToRune[b])]
		if !ok {
			return nil, fmt.Errorf("vocab lacks the byte-level token for byte 0x%02x", b)
		}
		t.model.byteID[b] = int32(id)
	}
	if err := t.model.loadMerges(f.Model.Merges, f.Model.Vocab); err != nil {
		return nil, err
	}

	// Added tokens: matched on raw text (normalized=false, all of Qwen's)
	// or on normalized text; Decode spells them as their content.
	var raw, normalized []*AddedToken
	for _, a := range f.AddedTokens {
		t.added = append(t.added, a)
		t.vocab[a.Content] = a.ID
		t.idToken[a.ID], t.idBytes[a.ID], t.known[a.ID] = a.Content, addedTokenBytes(a.Content), true
		t.special[a.ID] = a.Special
		if a.Normalized {
			normalized = append(normalized, a)
		} else {
			raw = append(raw, a)
		}
	}
	t.rawAdded = newAddedMatcher(raw)
	if len(normalized) > 0 {
		t.normAdded = newAddedMatcher(normalized)
	}
	sort.Slice(t.added, func(i, j int) bool { return t.added[i].ID < t.added[j].ID })
	return t, nil
}

// addedTokenBytes is how the byte-level decoder spells an added token: its
// runes mapped back to bytes when they are all in the byte alphabet, else its
// own UTF-8.
func addedTokenBytes(content string) []byte {
	if raw, ok := byteLevelDecode(content); ok {
		return raw
	}
	return []byte(content)
}

func (m *bpe) loadMerges(data json.RawMessage, vocab map[string]int) error {
	var pairs [][2]string
	var asStrings []string
	if err := jsonv2.Unmarshal(data, &asStrings); err == nil {
		pairs = make([][2]string, 0, len(asStrings))
		for i, s := range asStrings {
			a, b, ok := strings.Cut(s, " ")
			if !ok || strings.Contains(b, " ") {
				return fmt.Errorf("merge %d %q is not two tokens separated by a space", i, s)
			}
			pairs = append(pairs, [2]string{a, b})
		}
	} else if err := jsonv2.Unmarshal(data, &pairs); err != nil {
		return fmt.Errorf("model.merges is neither [\"a b\", …] nor [[\"a\", \"b\"], …]: %w", err)
	}
	m.merges = make(map[uint64]mergeRule, len(pairs))
	for rank, p := range pairs {
		a, okA := vocab[p[0]]
		b, okB := vocab[p[1]]
		ab, okAB := vocab[p[0]+p[1]]
		if !okA || !okB || !okAB {
			return fmt.Errorf("merge %d (%q, %q) refers to tokens missing from the vocab", rank, p[0], p[1])
		}
		key := pairKey(int32(a), int32(b))
		if _, dup := m.merges[key]; !dup {
			m.merges[key] = mergeRule{rank: int32(rank), newID: int32(ab)}
		}
	}
	return nil
}

type component struct {
	Type          string            `json:"type"`
	Normalizers   []json.RawMessage `json:"normalizers"`
	Pretokenizers []json.RawMessage `json:"pretokenizers"`
	Decoders      []json.RawMessage `json:"decoders"`
	// Split
	Pattern struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior string `json:"behavior"`
	Invert   bool   `json:"invert"`
	// ByteLevel
	AddPrefixSpace bool  `json:"add_prefix_space"`
	UseRegex       *bool `json:"use_regex"`
}

func parseComponent(data json.RawMessage) (*component, error) {
	if len(bytes.TrimSpace(data)) == 0 || string(bytes.TrimSpace(data)) == "null" {
		return nil, nil
	}
	var c component
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

func parsePreTokenizer(data json.RawMessage) (preTokenizer, bool, error) {
	c, err := parseComponent(data)
	if err != nil || c == nil {
		return nil, false, err
	}
	switch c.Type {
	case "Sequence":
		var seq sequencePre
		byteLevel := false
		for _, sub := range c.Pretokenizers {
			p, bl, err := parsePreTokenizer(sub)
			if err != nil {
				return nil, false, err
			}
			if p != nil {
				seq = append(seq, p)
			}
			byteLevel = byteLevel || bl
		}
		// The common Qwen/Llama 3 shape: one regex split, then a ByteLevel
		// step that only respells bytes. Skip the no-op step.
		if len(seq) == 2 {
			if bl, ok := seq[1].(byteLevelPre); ok && !bl.addPrefixSpace && bl.split == nil {
				return seq[0], byteLevel, nil
			}
		}
		return seq, byteLevel, nil
	case "Split":
		behavior := splitBehavior(c.Behavior)
		switch behavior {
		case behaviorRemoved, behaviorIsolated, behaviorMergedWithPrevious, behaviorMergedWithNext, behaviorContiguous:
		default:
			return nil, false, fmt.Errorf("Split behavior %q is not supported", c.Behavior)
		}
		switch {
		case c.Pattern.Regex != nil:
			p, err := compileSplitRegex(*c.Pattern.Regex, behavior, c.Invert)
			if err != nil {
				return nil, false, err
			}
			return *p, false, nil
		case c.Pattern.String != nil:
			return splitPre{m: literalMatcher{*c.Pattern.String}, behavior: behavior, invert: c.Invert}, false, nil
		}
		return nil, false, errors.New("Split pre-tokenizer without a Regex or String pattern")
	case "ByteLevel":
		b := byteLevelPre{addPrefixSpace: c.AddPrefixSpace}
		if c.UseRegex == nil || *c.UseRegex {
			re, err := regexp2.Compile(gpt2Pattern, regexp2.None)
			if err != nil {
				return nil, false, err
			}
			b.split = &splitPre{m: regexMatcher{re}, behavior: behaviorIsolated}
		}
		return b, true, nil
	}
	return nil, false, fmt.Errorf("pre-tokenizer %q is not supported", c.Type)
}

func checkDecoder(data json.RawMessage) error {
	c, err := parseComponent(data)
	if err != nil {
		return fmt.Errorf("decoder: %w", err)
	}
	if c == nil {
		return nil
	}
	switch c.Type {
	case "ByteLevel":
		return nil
	case "Sequence":
		for _, d := range c.Decoders {
			if err := checkDecoder(d); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("decoder %q is not supported (only ByteLevel)", c.Type)
}
