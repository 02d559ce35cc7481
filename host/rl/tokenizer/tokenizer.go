package tokenizer

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Tokenizer encodes text to token ids and back, as the Hugging Face
// tokenizer described by a tokenizer.json does. It is safe for concurrent
// use.
type Tokenizer struct {
	vocab     map[string]int // byte-level spelling (or added token content) → id
	idToken   []string       // id → byte-level spelling or added token content
	idBytes   [][]byte       // id → raw bytes Decode writes
	special   []bool         // id → an added token marked special
	known     []bool         // id → present in the vocab or added tokens
	added     []*AddedToken  // by id
	normalize normalizer
	pre       preTokenizer
	model     *bpe
	rawAdded  *addedMatcher
	normAdded *addedMatcher // tokens matched after normalization; nil if none

	// From tokenizer_config.json; empty when the file or the key is absent.
	eosToken, bosToken, padToken string
}

// Encode returns the ids of text. Added tokens that appear in the text
// (<|im_start|>, <think>, …) become their single ids, as Hugging Face does
// with its default split_special_tokens=false; no BOS/EOS is added. Invalid
// UTF-8 is read as U+FFFD first.
func (t *Tokenizer) Encode(text string) []int {
	if !utf8.ValidString(text) {
		text = lossyUTF8(nil, []byte(text))
	}
	ids := make([]int, 0, len(text)/3+8)
	var segs [8]segment
	for _, seg := range t.rawAdded.split(text, segs[:0]) {
		if seg.token != nil {
			ids = append(ids, seg.token.ID)
			continue
		}
		s := seg.text
		if t.normalize != nil {
			s = t.normalize(s)
		}
		if t.normAdded == nil {
			ids = t.appendText(ids, s)
			continue
		}
		for _, sub := range t.normAdded.split(s, nil) {
			if sub.token != nil {
				ids = append(ids, sub.token.ID)
			} else {
				ids = t.appendText(ids, sub.text)
			}
		}
	}
	return ids
}

// appendText pre-tokenizes normalized text and encodes every piece.
func (t *Tokenizer) appendText(ids []int, s string) []int {
	if t.pre == nil {
		return t.model.appendPiece(ids, s)
	}
	if sp, ok := t.pre.(splitPre); ok && sp.scanner != nil {
		sp.scanner.split(s, func(piece string) { ids = t.model.appendPiece(ids, piece) })
		return ids
	}
	for _, piece := range t.pre.appendPieces(nil, s) {
		ids = t.model.appendPiece(ids, piece)
	}
	return ids
}

// TokenID returns the id of a vocabulary entry or added token, spelled as in
// tokenizer.json (byte-level runes for ordinary entries: "Ġthe").
func (t *Tokenizer) TokenID(token string) (int, bool) {
	id, ok := t.vocab[token]
	return id, ok
}

// Token returns the tokenizer.json spelling of id.
func (t *Tokenizer) Token(id int) (string, bool) {
	if id < 0 || id >= len(t.known) || !t.known[id] {
		return "", false
	}
	return t.idToken[id], true
}

// TokenBytes returns the raw bytes id stands for (nil for an unknown id).
// A byte-level token can be part of a UTF-8 character.
func (t *Tokenizer) TokenBytes(id int) []byte {
	if id < 0 || id >= len(t.known) || !t.known[id] {
		return nil
	}
	return t.idBytes[id]
}

// IsSpecial reports whether id is an added token marked special.
func (t *Tokenizer) IsSpecial(id int) bool {
	return id >= 0 && id < len(t.special) && t.special[id]
}

// VocabSize is one more than the largest id.
func (t *Tokenizer) VocabSize() int { return len(t.known) }

// AddedTokens lists the added tokens by id.
func (t *Tokenizer) AddedTokens() []AddedToken {
	out := make([]AddedToken, len(t.added))
	for i, a := range t.added {
		out[i] = *a
	}
	return out
}

// EOSToken, BOSToken and PadToken are the names tokenizer_config.json gives
// (empty when it gives none).
func (t *Tokenizer) EOSToken() string { return t.eosToken }
func (t *Tokenizer) BOSToken() string { return t.bosToken }
func (t *Tokenizer) PadToken() string { return t.padToken }

// endOfTurnTokens end an assistant turn in the chat formats we know of, in
// addition to the configured eos_token: ChatML (Qwen), Llama 3, Phi, Gemma.
var endOfTurnTokens = []string{"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "<|end|>", "<end_of_turn>"}

// StopTokenIDs returns the ids that end a sampled turn: eos_token from
// tokenizer_config.json and those end-of-turn markers the vocabulary has
// (for Qwen3: <|im_end|> 151645 and <|endoftext|> 151643, as its
// generation_config.json lists).
func (t *Tokenizer) StopTokenIDs() []int {
	var ids []int
	seen := map[int]bool{}
	add := func(tok string) {
		if id, ok := t.vocab[tok]; ok && !seen[id] && tok != "" {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	add(t.eosToken)
	for _, tok := range endOfTurnTokens {
		add(tok)
	}
	return ids
}

// configJSON is the part of tokenizer_config.json the tokenizer reads.
type configJSON struct {
	EOS json.RawMessage `json:"eos_token"`
	BOS json.RawMessage `json:"bos_token"`
	Pad json.RawMessage `json:"pad_token"`
}

func (t *Tokenizer) readConfig(data []byte) error {
	var c configJSON
	if err := json.Unmarshal(data, &c); err != nil {
		return fmt.Errorf("not a tokenizer_config.json: %w", err)
	}
	var err error
	for _, f := range []struct {
		raw json.RawMessage
		dst *string
		key string
	}{{c.EOS, &t.eosToken, "eos_token"}, {c.BOS, &t.bosToken, "bos_token"}, {c.Pad, &t.padToken, "pad_token"}} {
		if *f.dst, err = TokenName(f.raw); err != nil {
			return fmt.Errorf("%s: %w", f.key, err)
		}
	}
	return nil
}

// TokenName reads a special token as tokenizer_config.json spells it: a
// string, null, or an AddedToken object {"content": …}.
func TokenName(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", fmt.Errorf("want a string or {\"content\": …}, got %s", raw)
	}
	return *obj.Content, nil
}

// ByteTokenID returns the id of the byte-level token that stands for the
// raw byte b (every byte has one).
func (t *Tokenizer) ByteTokenID(b byte) (int, bool) {
	return int(t.model.byteID[b]), true
}

// EncodePlain encodes text with added tokens treated as ordinary text
// ("<|im_end|>" typed by a user stays characters, as with
// split_special_tokens=True).
func (t *Tokenizer) EncodePlain(text string) []int {
	if !utf8.ValidString(text) {
		text = lossyUTF8(nil, []byte(text))
	}
	if t.normalize != nil {
		text = t.normalize(text)
	}
	return t.appendText(make([]int, 0, len(text)/3+8), text)
}
