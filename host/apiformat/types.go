package apiformat

import "encoding/json"

// Wire structs. Decoding structs name only the fields we translate; encoding
// structs are separate where omitempty would otherwise drop required fields.

// ---- OpenAI Chat Completions ----

type oaiRequest struct {
	Model               string          `json:"model"`
	Messages            []oaiMessage    `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stop                json.RawMessage `json:"stop"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	Stream              bool            `json:"stream"`
	Tools               []oaiTool       `json:"tools"`
	ToolChoice          json.RawMessage `json:"tool_choice"`
	ParallelToolCalls   *bool           `json:"parallel_tool_calls"`
	User                string          `json:"user"`
}

type oaiMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"` // string | parts | null
	ToolCalls  []oaiToolCall   `json:"tool_calls"`
	ToolCallID string          `json:"tool_call_id"`
}

type oaiPart struct {
	Type     string          `json:"type"`
	Text     string          `json:"text"`
	Refusal  string          `json:"refusal"`
	ImageURL json.RawMessage `json:"image_url"` // {url, detail} or, loosely, a string
	File     *oaiFile        `json:"file"`
}

type oaiFile struct {
	FileData string `json:"file_data,omitempty"`
	FileID   string `json:"file_id,omitempty"`
	Filename string `json:"filename,omitempty"`
}

type oaiToolCall struct {
	Index    *int            `json:"index,omitempty"` // streaming deltas only
	ID       string          `json:"id,omitempty"`
	Type     string          `json:"type,omitempty"`
	Function oaiFunctionCall `json:"function"`
}

type oaiFunctionCall struct {
	Name      string    `json:"name"`
	Arguments argString `json:"arguments"`
}

type oaiTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
	} `json:"function"`
}

type oaiRequestOut struct {
	Model             string            `json:"model"`
	Messages          []oaiMessageOut   `json:"messages"`
	MaxTokens         *int              `json:"max_tokens,omitempty"`
	Stop              []string          `json:"stop,omitempty"`
	Temperature       *float64          `json:"temperature,omitempty"`
	TopP              *float64          `json:"top_p,omitempty"`
	Stream            bool              `json:"stream,omitempty"`
	StreamOptions     *oaiStreamOptions `json:"stream_options,omitempty"`
	Tools             []oaiToolOut      `json:"tools,omitempty"`
	ToolChoice        any               `json:"tool_choice,omitempty"`
	ParallelToolCalls *bool             `json:"parallel_tool_calls,omitempty"`
	User              string            `json:"user,omitempty"`
}

type oaiStreamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type oaiMessageOut struct {
	Role       string        `json:"role"`
	Content    any           `json:"content"` // string | []any | nil (null beside tool_calls)
	ToolCalls  []oaiToolCall `json:"tool_calls,omitempty"`
	ToolCallID string        `json:"tool_call_id,omitempty"`
}

type oaiTextPart struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type oaiImagePart struct {
	Type     string      `json:"type"`
	ImageURL oaiImageURL `json:"image_url"`
}

type oaiImageURL struct {
	URL    string `json:"url"`
	Detail string `json:"detail,omitempty"`
}

type oaiFilePart struct {
	Type string  `json:"type"`
	File oaiFile `json:"file"`
}

type oaiToolOut struct {
	Type     string         `json:"type"`
	Function oaiFunctionOut `json:"function"`
}

type oaiFunctionOut struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

type oaiNamedToolChoice struct {
	Type     string `json:"type"`
	Function struct {
		Name string `json:"name"`
	} `json:"function"`
}

type oaiResponse struct {
	ID      string      `json:"id"`
	Model   string      `json:"model"`
	Choices []oaiChoice `json:"choices"`
	Usage   *oaiUsage   `json:"usage"`
}

type oaiChoice struct {
	Index        int         `json:"index"`
	Message      oaiDelta    `json:"message"` // non-streaming
	Delta        oaiDelta    `json:"delta"`   // streaming
	FinishReason looseString `json:"finish_reason"`
}

// oaiDelta is a response message or a streaming delta (same fields).
type oaiDelta struct {
	Role             string          `json:"role"`
	Content          json.RawMessage `json:"content"`
	ReasoningContent looseString     `json:"reasoning_content"` // DeepSeek, vLLM, llama.cpp
	Reasoning        looseString     `json:"reasoning"`         // OpenRouter, newer vLLM
	Refusal          looseString     `json:"refusal"`
	ToolCalls        []oaiToolCall   `json:"tool_calls"`
}

func (d *oaiDelta) reasoning() string {
	if d.ReasoningContent != "" {
		return string(d.ReasoningContent)
	}
	return string(d.Reasoning)
}

type oaiUsage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

func (u *oaiUsage) cached() int {
	if u == nil || u.PromptTokensDetails == nil {
		return 0
	}
	return u.PromptTokensDetails.CachedTokens
}

type oaiChunk struct {
	oaiResponse
	Error json.RawMessage `json:"error"`
}

type oaiErrorObj struct {
	Message looseString `json:"message"`
	Type    looseString `json:"type"`
}

type oaiResponseOut struct {
	ID      string         `json:"id"`
	Object  string         `json:"object"`
	Created int64          `json:"created"`
	Model   string         `json:"model"`
	Choices []oaiChoiceOut `json:"choices"`
	Usage   oaiUsageOut    `json:"usage"`
}

type oaiChoiceOut struct {
	Index        int             `json:"index"`
	Message      oaiRespMsgOut   `json:"message"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason string          `json:"finish_reason"`
}

type oaiRespMsgOut struct {
	Role             string        `json:"role"`
	Content          *string       `json:"content"`
	ReasoningContent string        `json:"reasoning_content,omitempty"`
	ToolCalls        []oaiToolCall `json:"tool_calls,omitempty"`
	Refusal          *string       `json:"refusal"`
}

type oaiUsageOut struct {
	PromptTokens        int              `json:"prompt_tokens"`
	CompletionTokens    int              `json:"completion_tokens"`
	TotalTokens         int              `json:"total_tokens"`
	PromptTokensDetails *oaiPromptDetail `json:"prompt_tokens_details,omitempty"`
}

type oaiPromptDetail struct {
	CachedTokens int `json:"cached_tokens"`
}

// ---- Anthropic Messages ----

type antRequest struct {
	Model         string          `json:"model"`
	Messages      []antMessage    `json:"messages"`
	System        json.RawMessage `json:"system"` // string | text blocks
	MaxTokens     *int            `json:"max_tokens"`
	StopSequences []string        `json:"stop_sequences"`
	Temperature   *float64        `json:"temperature"`
	TopP          *float64        `json:"top_p"`
	Stream        bool            `json:"stream"`
	Tools         []antTool       `json:"tools"`
	ToolChoice    *antToolChoice  `json:"tool_choice"`
	Metadata      *antMetadata    `json:"metadata"`
}

type antMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"` // string | blocks
}

// antBlock decodes every content block type we read.
type antBlock struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Source    *antSource      `json:"source"`      // image, document
	Title     string          `json:"title"`       // document
	ID        string          `json:"id"`          // tool_use
	Name      string          `json:"name"`        // tool_use
	Input     json.RawMessage `json:"input"`       // tool_use
	ToolUseID string          `json:"tool_use_id"` // tool_result
	Content   json.RawMessage `json:"content"`     // tool_result: string | blocks
	IsError   bool            `json:"is_error"`    // tool_result
	Thinking  string          `json:"thinking"`    // thinking
	Signature string          `json:"signature"`   // thinking
}

type antSource struct {
	Type      string          `json:"type"` // base64 | url | text | content | file
	MediaType string          `json:"media_type"`
	Data      string          `json:"data"`
	URL       string          `json:"url"`
	Content   json.RawMessage `json:"content"`
}

type antTool struct {
	Type        string          `json:"type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type antToolChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type antMetadata struct {
	UserID string `json:"user_id,omitempty"`
}

type antRequestOut struct {
	Model         string         `json:"model"`
	MaxTokens     int            `json:"max_tokens"`
	System        string         `json:"system,omitempty"`
	Messages      []antMsgOut    `json:"messages"`
	StopSequences []string       `json:"stop_sequences,omitempty"`
	Temperature   *float64       `json:"temperature,omitempty"`
	TopP          *float64       `json:"top_p,omitempty"`
	Stream        bool           `json:"stream,omitempty"`
	Tools         []antToolOut   `json:"tools,omitempty"`
	ToolChoice    *antToolChoice `json:"tool_choice,omitempty"`
	Metadata      *antMetadata   `json:"metadata,omitempty"`
}

type antMsgOut struct {
	Role    string `json:"role"`
	Content any    `json:"content"` // string | []any
}

type antToolOut struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

type antTextOut struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type antImageOut struct {
	Type   string       `json:"type"`
	Source antSourceOut `json:"source"`
}

type antDocumentOut struct {
	Type   string       `json:"type"`
	Source antSourceOut `json:"source"`
	Title  string       `json:"title,omitempty"`
}

type antSourceOut struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type antToolUseOut struct {
	Type  string          `json:"type"`
	ID    string          `json:"id"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

type antToolResultOut struct {
	Type      string `json:"type"`
	ToolUseID string `json:"tool_use_id"`
	Content   string `json:"content,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
}

type antThinkingOut struct {
	Type      string `json:"type"`
	Thinking  string `json:"thinking"`
	Signature string `json:"signature"`
}

type antResponse struct {
	ID         string      `json:"id"`
	Model      string      `json:"model"`
	Content    []antBlock  `json:"content"`
	StopReason looseString `json:"stop_reason"`
	Usage      *antUsage   `json:"usage"`
}

// antUsage uses pointers because message_delta carries only the fields that changed.
type antUsage struct {
	InputTokens              *int `json:"input_tokens"`
	OutputTokens             *int `json:"output_tokens"`
	CacheCreationInputTokens *int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     *int `json:"cache_read_input_tokens"`
}

func intOr0(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

type antResponseOut struct {
	ID           string      `json:"id"`
	Type         string      `json:"type"`
	Role         string      `json:"role"`
	Model        string      `json:"model"`
	Content      []any       `json:"content"`
	StopReason   string      `json:"stop_reason"`
	StopSequence *string     `json:"stop_sequence"`
	Usage        antUsageOut `json:"usage"`
}

type antUsageOut struct {
	InputTokens              int `json:"input_tokens"`
	OutputTokens             int `json:"output_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens,omitempty"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens,omitempty"`
}

// antEvent decodes any Anthropic streaming event.
type antEvent struct {
	Type         string          `json:"type"`
	Message      *antResponse    `json:"message"`       // message_start
	Index        int             `json:"index"`         // content_block_*
	ContentBlock *antBlock       `json:"content_block"` // content_block_start
	Delta        *antDelta       `json:"delta"`         // content_block_delta, message_delta
	Usage        *antUsage       `json:"usage"`         // message_delta
	Error        json.RawMessage `json:"error"`         // error
}

type antDelta struct {
	Type        string      `json:"type"`
	Text        string      `json:"text"`
	Thinking    string      `json:"thinking"`
	PartialJSON string      `json:"partial_json"`
	StopReason  looseString `json:"stop_reason"`
}

type antErrorObj struct {
	Type    looseString `json:"type"`
	Message looseString `json:"message"`
}
