// Package prompt turns a chat request into the exact token ids a policy
// model is sampled with: the model's chat template (host/rl/chattemplate)
// rendered and encoded with its tokenizer (host/rl/tokenizer), plus the
// stop ids and what the completion parser needs to know about the prompt.
package prompt

import (
	"fmt"
	"strings"

	"github.com/metaclaw-go/metaclaw/host/rl/chattemplate"
	"github.com/metaclaw-go/metaclaw/host/rl/tokenizer"
)

// Codec pairs a tokenizer with its chat template. It is safe for
// concurrent use.
type Codec struct {
	Tokenizer *tokenizer.Tokenizer
	Template  *chattemplate.Template
}

// Load reads tokenizer.json and the chat template from a model directory
// (rl.tokenizer_path).
func Load(dir string) (*Codec, error) {
	tok, err := tokenizer.Load(dir)
	if err != nil {
		return nil, err
	}
	tmpl, err := chattemplate.Load(dir)
	if err != nil {
		return nil, err
	}
	return &Codec{Tokenizer: tok, Template: tmpl}, nil
}

// Prompt is a rendered and encoded chat.
type Prompt struct {
	Text string
	IDs  []int
	// InReasoning is true when the prompt ends inside an open <think>
	// block (templates that start the answer's reasoning themselves), so
	// the completion begins with reasoning text.
	InReasoning bool
}

// EncodeChat renders conv with the template and encodes the text; added
// tokens in it (the template's markers, and any a user typed) become their
// single ids, as apply_chat_template(tokenize=True) does.
func (c *Codec) EncodeChat(conv chattemplate.Conversation, opts chattemplate.Options) (Prompt, error) {
	text, err := c.Template.Render(conv.Messages, conv.Tools, opts)
	if err != nil {
		return Prompt{}, err
	}
	if text == "" {
		return Prompt{}, fmt.Errorf("the chat template rendered an empty prompt")
	}
	return Prompt{Text: text, IDs: c.Tokenizer.Encode(text), InReasoning: endsInReasoning(text)}, nil
}

// StopTokenIDs are the ids that end a sampled turn (Tokenizer.StopTokenIDs).
func (c *Codec) StopTokenIDs() []int { return c.Tokenizer.StopTokenIDs() }

func endsInReasoning(text string) bool {
	open := strings.LastIndex(text, "<think>")
	return open >= 0 && strings.LastIndex(text, "</think>") < open
}
