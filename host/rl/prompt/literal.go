package prompt

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/metaclaw-go/metaclaw/host/rl/chattemplate"
)

// EncodeChatLiteral is EncodeChat for untrusted text: chat markers
// (<|im_start|>, <tool_response>, … — every added token) found in system,
// user and tool messages and in tool definitions are encoded as the
// characters they are, not as the control tokens the template uses, so a
// pasted web page or a tool result cannot open a system turn or fake a tool
// response. The template's own markers, and the assistant's earlier output,
// are encoded as in EncodeChat. The text is the same as EncodeChat's; the
// ids differ only where such markers occur (Hugging Face does not do this,
// so there is no reference for these ids).
func (c *Codec) EncodeChatLiteral(conv chattemplate.Conversation, opts chattemplate.Options) (Prompt, error) {
	h := &hider{}
	for _, a := range c.Tokenizer.AddedTokens() {
		if a.Content != "" {
			h.added = append(h.added, a.Content)
		}
	}
	safe := chattemplate.Conversation{Messages: make([]chattemplate.Message, len(conv.Messages))}
	for i, m := range conv.Messages {
		if m.Role != "assistant" {
			m.Content = h.hide(m.Content)
			m.Name = h.hide(m.Name)
			m.ToolCallID = h.hide(m.ToolCallID)
		}
		safe.Messages[i] = m
	}
	if conv.Tools != nil {
		safe.Tools = make([]json.RawMessage, len(conv.Tools))
		for i, t := range conv.Tools {
			var err error
			if safe.Tools[i], err = h.hideJSON(t); err != nil {
				return Prompt{}, err
			}
		}
	}
	if len(h.hidden) == 0 {
		return c.EncodeChat(conv, opts)
	}
	text, err := c.Template.Render(safe.Messages, safe.Tools, opts)
	if err != nil {
		return Prompt{}, err
	}
	var ids []int
	var plain strings.Builder
	for rest := text; rest != ""; {
		i := strings.Index(rest, phOpen)
		if i < 0 {
			ids = append(ids, c.Tokenizer.Encode(rest)...)
			plain.WriteString(rest)
			break
		}
		ids = append(ids, c.Tokenizer.Encode(rest[:i])...)
		plain.WriteString(rest[:i])
		rest = rest[i+len(phOpen):]
		j := strings.Index(rest, phClose)
		n, err := strconv.Atoi(rest[:max(j, 0)])
		if j < 0 || err != nil || n < 0 || n >= len(h.hidden) {
			return Prompt{}, errors.New("the chat template mangled a hidden marker")
		}
		ids = append(ids, c.Tokenizer.EncodePlain(h.hidden[n])...)
		plain.WriteString(h.hidden[n])
		rest = rest[j+len(phClose):]
	}
	out := plain.String()
	return Prompt{Text: out, IDs: ids, InReasoning: endsInReasoning(out)}, nil
}

// Placeholders are private-use characters: stable under normalization and
// split by no template.
const (
	phOpen  = "\ue000"
	phClose = "\ue001"
)

type hider struct {
	added  []string // every added token's text
	hidden []string // what placeholder n stands for
}

// hide replaces every added token's text in s with a numbered placeholder.
func (h *hider) hide(s string) string {
	if s == "" || !h.holdsMarker(s) {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		at, size := -1, 0
		for _, a := range h.added {
			if i := strings.Index(s, a); i >= 0 && (at < 0 || i < at || (i == at && len(a) > size)) {
				at, size = i, len(a)
			}
		}
		// Placeholder characters the text already holds are hidden too, so
		// the text cannot forge a placeholder.
		if i := strings.Index(s, phOpen); i >= 0 && (at < 0 || i < at) {
			at, size = i, len(phOpen)
		}
		if at < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:at])
		b.WriteString(phOpen + strconv.Itoa(len(h.hidden)) + phClose)
		h.hidden = append(h.hidden, s[at:at+size])
		s = s[at+size:]
	}
	return b.String()
}

func (h *hider) holdsMarker(s string) bool {
	if strings.Contains(s, phOpen) {
		return true
	}
	for _, a := range h.added {
		if strings.Contains(s, a) {
			return true
		}
	}
	return false
}

// hideJSON applies hide to every string (keys too) of a JSON document,
// keeping key order and number spellings.
func (h *hider) hideJSON(raw json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out bytes.Buffer
	if err := h.copyValue(dec, &out, 0); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

func (h *hider) copyValue(dec *json.Decoder, out *bytes.Buffer, depth int) error {
	if depth > 200 {
		return errors.New("tool definition nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		out.WriteByte(byte(v))
		for i := 0; dec.More(); i++ {
			if i > 0 {
				out.WriteByte(',')
			}
			if v == '{' {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				key, _ := k.(string)
				h.writeString(out, key)
				out.WriteByte(':')
			}
			if err := h.copyValue(dec, out, depth+1); err != nil {
				return err
			}
		}
		end, err := dec.Token()
		if err != nil {
			return err
		}
		out.WriteByte(byte(end.(json.Delim)))
	case string:
		h.writeString(out, v)
	case json.Number:
		out.WriteString(v.String())
	case bool:
		out.WriteString(strconv.FormatBool(v))
	case nil:
		out.WriteString("null")
	}
	return nil
}

func (h *hider) writeString(out *bytes.Buffer, s string) {
	e := json.NewEncoder(out)
	e.SetEscapeHTML(false)
	_ = e.Encode(h.hide(s))
	out.Truncate(out.Len() - 1) // Encode's newline
}
