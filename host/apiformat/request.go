package apiformat

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/metaclaw-go/metaclaw/host/msgcontent"
)

// defaultMaxTokens is sent to Anthropic when an OpenAI client gave no limit:
// Anthropic requires max_tokens, OpenAI does not.
const defaultMaxTokens = 4096

// AnthropicToOpenAIRequest translates an Anthropic Messages request body into
// an OpenAI Chat Completions request body. See the package comment for what
// is dropped.
func AnthropicToOpenAIRequest(body []byte) ([]byte, error) {
	var in antRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("apiformat: anthropic request: %w", err)
	}
	out := oaiRequestOut{
		Model:       in.Model,
		MaxTokens:   in.MaxTokens,
		Temperature: in.Temperature,
		TopP:        in.TopP,
		Stream:      in.Stream,
		Messages:    make([]oaiMessageOut, 0, len(in.Messages)+1),
	}
	if len(in.StopSequences) > 0 {
		out.Stop = in.StopSequences
	}
	if in.Stream {
		// The usage chunk is the only way to learn token counts of a stream.
		out.StreamOptions = &oaiStreamOptions{IncludeUsage: true}
	}
	sys, err := anthropicSystemText(in.System)
	if err != nil {
		return nil, err
	}
	if sys != "" {
		out.Messages = append(out.Messages, oaiMessageOut{Role: "system", Content: sys})
	}
	for i := range in.Messages {
		out.Messages, err = appendAnthropicMessage(out.Messages, &in.Messages[i])
		if err != nil {
			return nil, fmt.Errorf("apiformat: anthropic request: messages[%d]: %w", i, err)
		}
	}
	for i := range in.Tools {
		t := &in.Tools[i]
		// Server tools (web_search_20250305, bash_20250124, ...) run inside
		// Anthropic and have no OpenAI equivalent.
		if t.Type != "" && t.Type != "custom" {
			continue
		}
		schema := t.InputSchema
		if isNullOrEmpty(schema) {
			schema = emptySchema
		}
		out.Tools = append(out.Tools, oaiToolOut{Type: "function", Function: oaiFunctionOut{
			Name: t.Name, Description: t.Description, Parameters: schema,
		}})
	}
	if tc := in.ToolChoice; tc != nil && len(out.Tools) > 0 {
		switch tc.Type {
		case "auto":
			out.ToolChoice = "auto"
		case "any":
			out.ToolChoice = "required"
		case "none":
			out.ToolChoice = "none"
		case "tool":
			var named oaiNamedToolChoice
			named.Type = "function"
			named.Function.Name = tc.Name
			out.ToolChoice = named
		}
		if tc.DisableParallelToolUse {
			f := false
			out.ParallelToolCalls = &f
		}
	}
	if in.Metadata != nil {
		out.User = in.Metadata.UserID
	}
	return marshal(&out, len(body)+256)
}

var emptySchema = json.RawMessage(`{"type":"object","properties":{}}`)

// anthropicSystemText flattens a system prompt given as a string or as text
// blocks; blocks are joined with a blank line, as separate paragraphs.
func anthropicSystemText(raw json.RawMessage) (string, error) {
	c, err := msgcontent.Read(raw, msgcontent.Options{Sep: "\n\n"})
	switch {
	case errors.Is(err, msgcontent.ErrNotContent):
		return "", fmt.Errorf("apiformat: anthropic request: system must be a string or an array")
	case err != nil:
		return "", fmt.Errorf("apiformat: anthropic request: system: %w", err)
	}
	return c.Text, nil
}

func joinBlockTexts(blocks []antBlock, sep string) string {
	n, count := 0, 0
	for i := range blocks {
		if blocks[i].Type == "text" {
			n += len(blocks[i].Text) + len(sep)
			count++
		}
	}
	if count == 1 {
		for i := range blocks {
			if blocks[i].Type == "text" {
				return blocks[i].Text
			}
		}
	}
	var b strings.Builder
	b.Grow(n)
	first := true
	for i := range blocks {
		if blocks[i].Type != "text" {
			continue
		}
		if !first {
			b.WriteString(sep)
		}
		first = false
		b.WriteString(blocks[i].Text)
	}
	return b.String()
}

// appendAnthropicMessage appends the OpenAI messages for one Anthropic message.
// A user message's tool_result blocks become role:tool messages placed before
// the rest of that message, because OpenAI requires tool messages to follow
// the assistant message that made the calls.
func appendAnthropicMessage(dst []oaiMessageOut, m *antMessage) ([]oaiMessageOut, error) {
	if m.Role != "user" && m.Role != "assistant" {
		return dst, fmt.Errorf("unsupported role %q", m.Role)
	}
	switch jsonKind(m.Content) {
	case '"':
		s, err := jsonString(m.Content)
		if err != nil {
			return dst, err
		}
		return append(dst, oaiMessageOut{Role: m.Role, Content: s}), nil
	case '[':
	case 0, 'n':
		return dst, nil
	default:
		return dst, fmt.Errorf("content must be a string or an array")
	}
	var blocks []antBlock
	if err := json.Unmarshal(m.Content, &blocks); err != nil {
		return dst, err
	}
	var parts []any
	var calls []oaiToolCall
	for i := range blocks {
		b := &blocks[i]
		switch b.Type {
		case "text":
			parts = append(parts, oaiTextPart{Type: "text", Text: b.Text})
		case "image":
			if p, ok := anthropicImagePart(b.Source); ok {
				parts = append(parts, p)
			}
		case "document":
			if p, ok := anthropicDocumentPart(b); ok {
				parts = append(parts, p)
			}
		case "tool_use":
			if m.Role != "assistant" {
				continue
			}
			calls = append(calls, oaiToolCall{
				ID:       openAIToolID(b.ID),
				Type:     "function",
				Function: oaiFunctionCall{Name: b.Name, Arguments: argString(compactJSON(b.Input))},
			})
		case "tool_result":
			if m.Role != "user" {
				continue
			}
			text, images, err := flattenToolResult(b)
			if err != nil {
				return dst, err
			}
			dst = append(dst, oaiMessageOut{Role: "tool", Content: text, ToolCallID: b.ToolUseID})
			// OpenAI tool messages carry text only; images a tool returned
			// go to the user message that follows, labelled, so they are not lost.
			if len(images) > 0 {
				parts = append(parts, oaiTextPart{Type: "text", Text: "Image(s) returned by tool call " + b.ToolUseID + ":"})
				parts = append(parts, images...)
			}
		default:
			// thinking / redacted_thinking (signatures are Anthropic-only),
			// server tool blocks, search results: no OpenAI equivalent.
		}
	}
	if m.Role == "assistant" {
		if len(parts) == 0 && len(calls) == 0 {
			return dst, nil
		}
		return append(dst, oaiMessageOut{Role: "assistant", Content: partsContent(parts), ToolCalls: calls}), nil
	}
	if len(parts) > 0 {
		dst = append(dst, oaiMessageOut{Role: "user", Content: partsContent(parts)})
	}
	return dst, nil
}

// partsContent returns a lone text part as plain string content (what every
// OpenAI-compatible server accepts), nil for no parts, else the parts.
func partsContent(parts []any) any {
	switch len(parts) {
	case 0:
		return nil
	case 1:
		if t, ok := parts[0].(oaiTextPart); ok {
			return t.Text
		}
	}
	return parts
}

func anthropicImagePart(src *antSource) (oaiImagePart, bool) {
	if src == nil {
		return oaiImagePart{}, false
	}
	switch src.Type {
	case "base64":
		return oaiImagePart{Type: "image_url", ImageURL: oaiImageURL{URL: "data:" + src.MediaType + ";base64," + src.Data}}, true
	case "url":
		return oaiImagePart{Type: "image_url", ImageURL: oaiImageURL{URL: src.URL}}, true
	}
	return oaiImagePart{}, false // "file" sources point into Anthropic's Files API
}

func anthropicDocumentPart(b *antBlock) (any, bool) {
	src := b.Source
	if src == nil {
		return nil, false
	}
	switch src.Type {
	case "base64":
		name := b.Title
		if name == "" {
			name = "document"
		}
		return oaiFilePart{Type: "file", File: oaiFile{
			FileData: "data:" + src.MediaType + ";base64," + src.Data, Filename: name,
		}}, true
	case "text":
		return oaiTextPart{Type: "text", Text: src.Data}, true
	case "content":
		var blocks []antBlock
		if json.Unmarshal(src.Content, &blocks) != nil {
			return nil, false
		}
		return oaiTextPart{Type: "text", Text: joinBlockTexts(blocks, "\n\n")}, true
	}
	return nil, false
}

// flattenToolResult returns a tool_result's text (blocks joined by a blank
// line, "Error: " prefixed when is_error) and its images as OpenAI parts.
func flattenToolResult(b *antBlock) (string, []any, error) {
	var text string
	var images []any
	switch jsonKind(b.Content) {
	case '"':
		var err error
		if text, err = jsonString(b.Content); err != nil {
			return "", nil, err
		}
	case '[':
		var blocks []antBlock
		if err := json.Unmarshal(b.Content, &blocks); err != nil {
			return "", nil, err
		}
		text = joinBlockTexts(blocks, "\n\n")
		for i := range blocks {
			if blocks[i].Type == "image" {
				if p, ok := anthropicImagePart(blocks[i].Source); ok {
					images = append(images, p)
				}
			}
		}
	}
	if b.IsError {
		if text == "" {
			text = "Error"
		} else {
			text = "Error: " + text
		}
	}
	return text, images, nil
}

// OpenAIToAnthropicRequest translates an OpenAI Chat Completions request body
// into an Anthropic Messages request body. See the package comment for what
// is dropped.
func OpenAIToAnthropicRequest(body []byte) ([]byte, error) {
	var in oaiRequest
	if err := json.Unmarshal(body, &in); err != nil {
		return nil, fmt.Errorf("apiformat: openai request: %w", err)
	}
	out := antRequestOut{
		Model:       in.Model,
		MaxTokens:   defaultMaxTokens,
		Temperature: in.Temperature,
		TopP:        in.TopP,
		Stream:      in.Stream,
	}
	switch {
	case in.MaxCompletionTokens != nil:
		out.MaxTokens = *in.MaxCompletionTokens
	case in.MaxTokens != nil:
		out.MaxTokens = *in.MaxTokens
	}
	var err error
	if out.StopSequences, err = openAIStop(in.Stop); err != nil {
		return nil, err
	}

	var sys []string
	msgs := make([]antBuild, 0, len(in.Messages))
	for i := range in.Messages {
		m := &in.Messages[i]
		var blocks []any
		role := m.Role
		switch m.Role {
		case "system", "developer":
			text, err := openAIContentText(m.Content, "\n\n")
			if err != nil {
				return nil, fmt.Errorf("apiformat: openai request: messages[%d]: %w", i, err)
			}
			if text != "" {
				sys = append(sys, text)
			}
			continue
		case "user":
			blocks, err = openAIUserBlocks(m.Content)
		case "assistant":
			blocks, err = openAIAssistantBlocks(m)
		case "tool":
			var text string
			text, err = openAIContentText(m.Content, "\n\n")
			blocks = []any{antToolResultOut{Type: "tool_result", ToolUseID: anthropicToolID(m.ToolCallID), Content: text}}
			role = "user"
		case "function":
			continue // legacy function-calling; cannot be paired with a tool_use id
		default:
			return nil, fmt.Errorf("apiformat: openai request: messages[%d]: unsupported role %q", i, m.Role)
		}
		if err != nil {
			return nil, fmt.Errorf("apiformat: openai request: messages[%d]: %w", i, err)
		}
		if len(blocks) == 0 {
			continue // Anthropic rejects empty content
		}
		// Anthropic requires alternating roles: merge runs of the same role.
		if n := len(msgs); n > 0 && msgs[n-1].role == role {
			msgs[n-1].blocks = append(msgs[n-1].blocks, blocks...)
		} else {
			msgs = append(msgs, antBuild{role: role, blocks: blocks})
		}
	}
	out.System = strings.Join(sys, "\n\n")
	out.Messages = make([]antMsgOut, len(msgs))
	for i := range msgs {
		out.Messages[i] = msgs[i].finish()
	}

	for i := range in.Tools {
		t := &in.Tools[i]
		if t.Type != "function" && t.Type != "" {
			continue // custom/grammar tools have no Anthropic equivalent
		}
		schema := t.Function.Parameters
		if isNullOrEmpty(schema) {
			schema = emptySchema // input_schema is required
		}
		out.Tools = append(out.Tools, antToolOut{Name: t.Function.Name, Description: t.Function.Description, InputSchema: schema})
	}
	if len(out.Tools) > 0 {
		out.ToolChoice = openAIToolChoice(in.ToolChoice)
		if in.ParallelToolCalls != nil && !*in.ParallelToolCalls {
			if out.ToolChoice == nil {
				out.ToolChoice = &antToolChoice{Type: "auto"}
			}
			if out.ToolChoice.Type != "none" { // not allowed beside "none"
				out.ToolChoice.DisableParallelToolUse = true
			}
		}
	}
	if in.User != "" {
		out.Metadata = &antMetadata{UserID: in.User}
	}
	return marshal(&out, len(body)+256)
}

type antBuild struct {
	role   string
	blocks []any
}

// finish renders one merged message. Anthropic wants tool_result blocks first
// in a user message; a lone text block becomes plain string content.
func (b *antBuild) finish() antMsgOut {
	if b.role == "user" {
		firstNonResult := -1
		needSort := false
		for i, blk := range b.blocks {
			_, isResult := blk.(antToolResultOut)
			if !isResult && firstNonResult < 0 {
				firstNonResult = i
			} else if isResult && firstNonResult >= 0 {
				needSort = true
				break
			}
		}
		if needSort {
			sorted := make([]any, 0, len(b.blocks))
			for _, blk := range b.blocks {
				if _, ok := blk.(antToolResultOut); ok {
					sorted = append(sorted, blk)
				}
			}
			for _, blk := range b.blocks {
				if _, ok := blk.(antToolResultOut); !ok {
					sorted = append(sorted, blk)
				}
			}
			b.blocks = sorted
		}
	}
	if len(b.blocks) == 1 {
		if t, ok := b.blocks[0].(antTextOut); ok {
			return antMsgOut{Role: b.role, Content: t.Text}
		}
	}
	return antMsgOut{Role: b.role, Content: b.blocks}
}

func openAIStop(raw json.RawMessage) ([]string, error) {
	switch jsonKind(raw) {
	case 0, 'n':
		return nil, nil
	case '"':
		s, err := jsonString(raw)
		if err != nil {
			return nil, fmt.Errorf("apiformat: openai request: stop: %w", err)
		}
		if s == "" {
			return nil, nil
		}
		return []string{s}, nil
	default:
		var list []string
		if err := json.Unmarshal(raw, &list); err != nil {
			return nil, fmt.Errorf("apiformat: openai request: stop: %w", err)
		}
		return list, nil
	}
}

func openAIToolChoice(raw json.RawMessage) *antToolChoice {
	switch jsonKind(raw) {
	case '"':
		s, err := jsonString(raw)
		if err != nil {
			return nil
		}
		switch s {
		case "auto":
			return &antToolChoice{Type: "auto"}
		case "required":
			return &antToolChoice{Type: "any"}
		case "none":
			return &antToolChoice{Type: "none"}
		}
	case '{':
		var c oaiNamedToolChoice
		if json.Unmarshal(raw, &c) == nil && c.Type == "function" && c.Function.Name != "" {
			return &antToolChoice{Type: "tool", Name: c.Function.Name}
		}
	}
	return nil
}

// openAIContentText flattens string or text-part content; a refusal part is
// what the model said, so it is text too.
func openAIContentText(raw json.RawMessage, sep string) (string, error) {
	c, err := msgcontent.Read(raw, msgcontent.Options{Sep: sep, Refusals: true})
	if errors.Is(err, msgcontent.ErrNotContent) {
		return "", fmt.Errorf("content must be a string, an array or null")
	}
	return c.Text, err
}

// nonBlank reports whether s has a non-whitespace character; Anthropic
// rejects text blocks that are empty or only whitespace.
func nonBlank(s string) bool {
	return strings.TrimSpace(s) != ""
}

func openAIUserBlocks(raw json.RawMessage) ([]any, error) {
	switch jsonKind(raw) {
	case 0, 'n':
		return nil, nil
	case '"':
		s, err := jsonString(raw)
		if err != nil {
			return nil, err
		}
		if !nonBlank(s) {
			return nil, nil
		}
		return []any{antTextOut{Type: "text", Text: s}}, nil
	case '[':
	default:
		return nil, fmt.Errorf("content must be a string, an array or null")
	}
	var parts []oaiPart
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, err
	}
	blocks := make([]any, 0, len(parts))
	for i := range parts {
		p := &parts[i]
		switch p.Type {
		case "text":
			if nonBlank(p.Text) {
				blocks = append(blocks, antTextOut{Type: "text", Text: p.Text})
			}
		case "image_url":
			if blk, ok := openAIImageBlock(p.ImageURL); ok {
				blocks = append(blocks, blk)
			}
		case "file":
			if p.File != nil {
				if media, data, ok := parseDataURL(p.File.FileData); ok {
					blocks = append(blocks, antDocumentOut{Type: "document", Title: p.File.Filename,
						Source: antSourceOut{Type: "base64", MediaType: media, Data: data}})
				}
			}
		default:
			// input_audio and file_id references cannot be carried over.
		}
	}
	return blocks, nil
}

func openAIImageBlock(raw json.RawMessage) (antImageOut, bool) {
	var u string
	switch jsonKind(raw) {
	case '"':
		var err error
		if u, err = jsonString(raw); err != nil {
			return antImageOut{}, false
		}
	case '{':
		var obj oaiImageURL
		if json.Unmarshal(raw, &obj) != nil {
			return antImageOut{}, false
		}
		u = obj.URL
	default:
		return antImageOut{}, false
	}
	if media, data, ok := parseDataURL(u); ok {
		return antImageOut{Type: "image", Source: antSourceOut{Type: "base64", MediaType: media, Data: data}}, true
	}
	if u == "" || strings.HasPrefix(u, "data:") {
		return antImageOut{}, false // non-base64 data URLs cannot be expressed
	}
	return antImageOut{Type: "image", Source: antSourceOut{Type: "url", URL: u}}, true
}

func openAIAssistantBlocks(m *oaiMessage) ([]any, error) {
	var blocks []any
	switch jsonKind(m.Content) {
	case '"':
		s, err := jsonString(m.Content)
		if err != nil {
			return nil, err
		}
		if nonBlank(s) {
			blocks = append(blocks, antTextOut{Type: "text", Text: s})
		}
	case '[':
		var parts []oaiPart
		if err := json.Unmarshal(m.Content, &parts); err != nil {
			return nil, err
		}
		for i := range parts {
			t := parts[i].Text
			if parts[i].Type == "refusal" {
				t = parts[i].Refusal
			} else if parts[i].Type != "text" {
				continue
			}
			if nonBlank(t) {
				blocks = append(blocks, antTextOut{Type: "text", Text: t})
			}
		}
	case 0, 'n':
	default:
		return nil, fmt.Errorf("content must be a string, an array or null")
	}
	for i := range m.ToolCalls {
		tc := &m.ToolCalls[i]
		blocks = append(blocks, antToolUseOut{
			Type:  "tool_use",
			ID:    anthropicToolID(tc.ID),
			Name:  tc.Function.Name,
			Input: toolInput(string(tc.Function.Arguments)),
		})
	}
	return blocks, nil
}

// toolInput turns OpenAI's arguments string into Anthropic's input object.
// Anthropic requires an object; arguments that are not a JSON object (models
// do emit truncated or invalid JSON) are kept verbatim as {"_raw": "..."} so
// nothing is lost and the request stays valid.
func toolInput(args string) json.RawMessage {
	if strings.TrimSpace(args) == "" {
		return json.RawMessage("{}")
	}
	if jsonKind([]byte(args)) == '{' && json.Valid([]byte(args)) {
		return json.RawMessage(args)
	}
	b := append([]byte(`{"_raw":`), appendString(nil, args)...)
	return append(b, '}')
}
